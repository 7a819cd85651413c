// A Chakra replay over processes (MPI ranks): the WRITE descriptors sent to
// the receiver's process between windows, barriers and the end summed over
// the processes, and each trace rank's result packed where it ran and
// gathered. With one process the same records are made and read back.
#include <cstring>
#include <stdexcept>

#include "sim/byte_packing.h"
#include "sim/chakra_replay.h"

namespace uroce::sim {

void ChakraReplay::spread_over(RankGroup& processes, const std::function<std::uint32_t(std::uint32_t host)>& process_of) {
  processes_ = &processes;
  process_of_rank_.clear();
  for (auto& rank : ranks_) {
    process_of_rank_.push_back(process_of(spec_.hosts[rank->index]));
    rank->here = process_of_rank_.back() == processes.rank();
  }
}

// A WRITE posted in a window lands a link delay later at the soonest, past
// the window's end: its receiver's queue has it by then.
void ChakraReplay::ship_writes() {
  std::vector<Bytes> to_each(processes_->size());
  for (auto& rank : ranks_) {
    for (const Shipped& shipped : rank->shipping) {
      Bytes& out = to_each[process_of_rank_[shipped.to_rank]];
      std::size_t at = out.size();
      out.resize(at + sizeof shipped);
      std::memcpy(out.data() + at, &shipped, sizeof shipped);
    }
    rank->shipping.clear();
  }
  for (const Bytes& from : processes_->exchange(to_each)) {
    if (from.size() % sizeof(Shipped) != 0) throw std::runtime_error("chakra replay: a truncated WRITE from another rank");
    for (std::size_t at = 0; at < from.size(); at += sizeof(Shipped)) {
      Shipped shipped;
      std::memcpy(&shipped, from.data() + at, sizeof shipped);
      auto queue = receiving_on_.find(shipped.arrivals);
      if (queue == receiving_on_.end()) throw std::runtime_error("chakra replay: a WRITE from another rank to no QP");
      queue->second->writes.push_back(shipped.write);  // between windows: no partition runs
    }
  }
}

// Each process counts the members it runs that reached a barrier; the
// barrier ends a barrier delay after the last, everywhere at once. The
// replay runs while a rank anywhere has nodes left and none failed.
void ChakraReplay::release_barriers_everywhere() {
  std::vector<std::uint64_t> counts(barriers_waiting_.size() + 2, 0), latest(barriers_waiting_.size(), 0);
  for (std::size_t b = 0; b < barriers_waiting_.size(); ++b) {
    const Running& running = running_[barriers_waiting_[b]];
    const std::vector<std::uint32_t>& members = plan_.collectives[barriers_waiting_[b]].ranks;
    for (std::size_t m = 0; m < members.size(); ++m) {
      if (!ranks_[members[m]]->here || running.joined[m] == kSimNever) continue;
      ++counts[b];
      latest[b] = std::max(latest[b], static_cast<std::uint64_t>(running.joined[m]));
    }
  }
  for (const auto& rank : ranks_) {
    if (!rank->here) continue;
    counts[barriers_waiting_.size()] += rank->left > 0 ? 1 : 0;
    counts[barriers_waiting_.size() + 1] += rank->failed ? 1 : 0;
  }
  processes_->sum(counts);
  processes_->max(latest);
  running_everywhere_ = counts[barriers_waiting_.size()] > 0 && counts[barriers_waiting_.size() + 1] == 0;
  std::vector<std::uint32_t> still_waiting;
  for (std::size_t b = 0; b < barriers_waiting_.size(); ++b) {
    std::uint32_t c = barriers_waiting_[b];
    if (counts[b] < plan_.collectives[c].ranks.size()) {
      still_waiting.push_back(c);
      continue;
    }
    for (std::uint32_t rank : plan_.collectives[c].ranks) {
      Rank& member = *ranks_[rank];
      if (member.here) member.world->events.schedule(static_cast<SimTime>(latest[b]) + barrier_, &member, kFirstBarrierTag + c);
    }
  }
  barriers_waiting_ = std::move(still_waiting);
}

Bytes ChakraReplay::rank_records(SimTime last) {
  Packer out;
  for (std::uint32_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = *ranks_[r];
    if (!rank.here) continue;
    account(rank, last);
    out.put(r);
    out.put(static_cast<std::uint8_t>(rank.failed));
    out.put(rank.nodes_run);
    out.put(ChakraRankResult{spec_.hosts[r], rank.finished, rank.compute, rank.communication, rank.idle});
    out.put(static_cast<std::uint32_t>(rank.skipped.size()));
    for (const auto& [type, count] : rank.skipped) {
      out.put(type);
      out.put(count);
    }
    std::vector<ChakraSpan> spans;
    for (std::uint32_t node = 0; node < rank.started.size(); ++node) {
      bool receive = spec_.ranks[r].nodes[node].type == chakra::kCommRecvNode;
      if (rank.started[node] == kSimNever || (resource_of(r, node) == none && !receive)) continue;
      SimTime ended = rank.ended[node] == kSimNever ? last : rank.ended[node];
      spans.push_back({r, node, rank.started[node], ended});
    }
    out.put(static_cast<std::uint32_t>(spans.size()));
    for (const ChakraSpan& span : spans) out.put(span);
  }
  return std::move(out.bytes());
}

void ChakraReplay::add_rank_records(const Bytes& records, ChakraResult& out) const {
  Unpacker in(records, "chakra replay");
  while (!in.done()) {
    in.get<std::uint32_t>();  // the trace rank: the result and spans carry it
    out.failed = out.failed || in.get<std::uint8_t>() != 0;
    out.nodes_run += in.get<std::uint64_t>();
    out.ranks.push_back(in.get<ChakraRankResult>());
    for (auto types = in.get<std::uint32_t>(); types > 0; --types) {
      std::string type = in.get_string();
      out.skipped[type] += in.get<std::uint64_t>();
    }
    for (auto spans = in.get<std::uint32_t>(); spans > 0; --spans) out.spans.push_back(in.get<ChakraSpan>());
  }
}

}  // namespace uroce::sim
