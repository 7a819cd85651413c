// A Chakra replay as it runs: ranks' ready nodes on their resources,
// collectives stepped by their WRITEs' completions, sends matched to
// receives, and the time each rank spent computing, communicating or idle.
#include "sim/chakra_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/qp_setup.h"

namespace uroce::sim {

namespace {

constexpr std::uint32_t kStartTag = UINT32_MAX;

}  // namespace

ChakraReplay::ChakraReplay(const ChakraSpec& spec, std::uint32_t job, const TransportSpec& transport,
                           Fabric& fabric, SimWorld& world)
    : spec_(spec),
      job_bits_(std::uint64_t{job} << kChakraJobShift),
      plan_(plan_chakra(spec, fabric.topology())),
      world_(world) {
  ranks_.resize(spec.ranks.size());
  for (std::uint32_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = ranks_[r];
    const auto& nodes = spec.ranks[r].nodes;
    rank.host = &fabric.host(spec.hosts[r]);
    rank.waiting.assign(nodes.size(), 0);
    rank.dependents.resize(nodes.size());
    rank.started.assign(nodes.size(), kSimNever);
    rank.ended.assign(nodes.size(), kSimNever);
    rank.left = nodes.size();
    std::map<std::uint64_t, std::uint32_t> index_of;
    for (std::uint32_t i = 0; i < nodes.size(); ++i) index_of[nodes[i].id] = i;
    for (std::uint32_t i = 0; i < nodes.size(); ++i) {
      for (const std::vector<std::uint64_t>* deps : {&nodes[i].deps, &nodes[i].ctrl_deps}) {
        if (deps == &nodes[i].ctrl_deps && !spec.control_dependencies) continue;
        for (std::uint64_t dep : *deps) {  // parse_trace kept only those that are there
          rank.dependents[index_of.at(dep)].push_back(i);
          ++rank.waiting[i];
        }
      }
    }
  }
  ranks_left_ = ranks_.size();
  running_.resize(plan_.collectives.size());
  for (std::uint32_t c = 0; c < plan_.collectives.size(); ++c) {
    const PlannedCollective& planned = plan_.collectives[c];
    std::vector<const collective::Schedule*> schedules;
    for (const collective::Schedule& schedule : planned.schedules) schedules.push_back(&schedule);
    running_[c].progress = std::make_unique<CollectiveProgress>(
        std::move(schedules), static_cast<std::uint32_t>(planned.ranks.size()),
        slices_over(spec.slices, spec.channels),
        [this, c](const CollectiveProgress::TransferId& id, std::uint64_t offset, std::uint64_t bytes) {
          post_transfer(c, id, offset, bytes);
        },
        [this, c](std::uint32_t member) { member_done(c, member); });
  }
  std::uint32_t channels = std::max<std::uint32_t>(spec.channels, 1);
  // A rank's communication runs one collective or send at a time.
  std::uint32_t depth = send_queue_depth(spec.slices, channels);
  for (auto [a, b] : plan_.pairs) {
    for (std::uint32_t channel = 0; channel < channels; ++channel) {
      auto [mine, theirs] = connect_rc_pair(*ranks_[a].host, *ranks_[b].host, transport, depth, depth);
      for (std::uint32_t r = 0; r < depth; ++r) {
        post_arrival_receive(*ranks_[a].host, mine, kChakraWork | job_bits_);
        post_arrival_receive(*ranks_[b].host, theirs, kChakraWork | job_bits_);
      }
      qpn_[{a, b, channel}] = mine;
      qpn_[{b, a, channel}] = theirs;
    }
  }
  world_.events.schedule(spec.start, this, kStartTag);
}

ChakraReplay::Resource ChakraReplay::resource_of(std::uint32_t rank, std::uint32_t node) const {
  const chakra::TraceNode& traced = spec_.ranks[rank].nodes[node];
  switch (traced.type) {
    case chakra::kCompNode: return traced.is_cpu_op ? cpu : gpu_compute;
    case chakra::kCommSendNode: return gpu_comm;
    case chakra::kCommCollNode: return plan_.collective_of[rank][node] == kNoCollective ? none : gpu_comm;
    default: return none;  // receives, and the nodes that are skipped
  }
}

void ChakraReplay::make_ready(std::uint32_t rank, std::uint32_t node) {
  Resource resource = resource_of(rank, node);
  if (resource == none) {
    ranks_[rank].instant.push_back(node);
  } else {
    ranks_[rank].ready[resource].insert(node);
  }
  dirty_.insert(rank);
}

// Starts what rank can start now; finishing nodes can make more ready, here
// or on other ranks (drain takes those).
void ChakraReplay::pump(std::uint32_t r, SimTime now) {
  Rank& rank = ranks_[r];
  for (;;) {
    if (!rank.instant.empty()) {
      std::uint32_t node = rank.instant.front();
      rank.instant.pop_front();
      start(r, node, none, now);
      continue;
    }
    bool started = false;
    for (Resource resource : {cpu, gpu_compute, gpu_comm}) {
      if (rank.running[resource] != UINT32_MAX || rank.ready[resource].empty()) continue;
      std::uint32_t node = *rank.ready[resource].begin();
      rank.ready[resource].erase(rank.ready[resource].begin());
      start(r, node, resource, now);
      started = true;
      break;
    }
    if (!started) return;
  }
}

// Starts every rank's ready nodes, then lets the hosts given WRITEs send.
void ChakraReplay::drain(SimTime now) {
  if (draining_) return;  // the outer drain takes the ranks marked meanwhile
  draining_ = true;
  while (!dirty_.empty()) {
    std::uint32_t rank = *dirty_.begin();
    dirty_.erase(dirty_.begin());
    pump(rank, now);
  }
  draining_ = false;
  for (std::uint32_t rank : to_wake_) {
    ranks_[rank].host->wake(now);
    ranks_[rank].waking = false;
  }
  to_wake_.clear();
}

void ChakraReplay::account(Rank& rank, SimTime now) {
  SimTime elapsed = now - rank.since;
  if (rank.computing > 0) {
    rank.compute += elapsed;
  } else if (rank.communicating > 0) {
    rank.communication += elapsed;
  } else {
    rank.idle += elapsed;
  }
  rank.since = now;
}

void ChakraReplay::start(std::uint32_t r, std::uint32_t node, Resource resource, SimTime now) {
  Rank& rank = ranks_[r];
  const chakra::TraceNode& traced = spec_.ranks[r].nodes[node];
  rank.started[node] = now;
  account(rank, now);
  switch (traced.type) {
    case chakra::kCompNode:
      ++rank.computing;
      rank.running[resource] = node;
      world_.events.schedule(now + static_cast<SimTime>(traced.duration_us) * kPicosecondsPerUs, this,
                             r * 4 + resource);
      return;
    case chakra::kCommSendNode: {
      ++rank.communicating;
      rank.running[resource] = node;
      Write write;
      write.message = true;
      write.rank = r;
      write.node = node;
      write.to_rank = *traced.comm_dst;
      post_write(r, *traced.comm_dst, 0, 0, 0, std::max<std::uint64_t>(traced.comm_size, 1), write);
      return;
    }
    case chakra::kCommRecvNode: {
      ++rank.communicating;
      Channel channel{*traced.comm_src, r, traced.comm_tag};
      receiving_[channel].push_back(node);
      deliver(channel, now);
      return;
    }
    case chakra::kCommCollNode:
      if (resource == gpu_comm) {
        ++rank.communicating;
        rank.running[resource] = node;
        join(plan_.collective_of[r][node], r, now);
        return;
      }
      ++skipped_[std::string("comm_coll:") + (traced.comm_type ? chakra::comm_type_name(*traced.comm_type) : "untyped")];
      break;
    default:
      ++skipped_[chakra::node_type_name(traced.type)];
      break;
  }
  finish(r, node, now);
}

void ChakraReplay::finish(std::uint32_t r, std::uint32_t node, SimTime now) {
  Rank& rank = ranks_[r];
  const chakra::TraceNode& traced = spec_.ranks[r].nodes[node];
  account(rank, now);
  Resource resource = resource_of(r, node);
  bool ran = traced.type == chakra::kCompNode || traced.type == chakra::kCommRecvNode || resource == gpu_comm;
  if (traced.type == chakra::kCompNode) {
    --rank.computing;
  } else if (ran) {
    --rank.communicating;
  }
  if (resource != none) rank.running[resource] = UINT32_MAX;
  if (ran) ++nodes_run_;
  rank.ended[node] = now;
  for (std::uint32_t dependent : rank.dependents[node]) {
    if (--rank.waiting[dependent] == 0) make_ready(r, dependent);
  }
  dirty_.insert(r);
  if (--rank.left == 0) {
    rank.finished = now;
    --ranks_left_;
  }
}

void ChakraReplay::on_event(SimTime now, std::uint32_t tag) {
  now_ = now;
  if (tag == kStartTag) {
    for (std::uint32_t r = 0; r < ranks_.size(); ++r) {
      ranks_[r].since = now;
      if (ranks_[r].left == 0) {
        ranks_[r].finished = now;
        --ranks_left_;
      }
      for (std::uint32_t node = 0; node < ranks_[r].waiting.size(); ++node) {
        if (ranks_[r].waiting[node] == 0) make_ready(r, node);
      }
    }
  } else {
    std::uint32_t r = tag / 4;
    finish(r, ranks_[r].running[tag % 4], now);
  }
  drain(now);
}

void ChakraReplay::join(std::uint32_t c, std::uint32_t rank, SimTime now) {
  const PlannedCollective& planned = plan_.collectives[c];
  Running& running = running_[c];
  if (running.start == kSimNever) running.start = now;
  std::uint32_t member = 0;
  while (planned.ranks[member] != rank) ++member;
  running.progress->join(member);
}

void ChakraReplay::post_transfer(std::uint32_t c, const CollectiveProgress::TransferId& id, std::uint64_t offset,
                                 std::uint64_t bytes) {
  const PlannedCollective& planned = plan_.collectives[c];
  const collective::Transfer& transfer =
      running_[c].progress->schedule_of(id.slice).ranks[id.member][id.step].sends[id.index];
  std::uint64_t receive_buffer = planned.type == chakra::CommType::all_to_all ? planned.bytes : 0;
  Write write;
  write.collective = c;
  write.transfer = id;
  write.to_rank = planned.ranks[transfer.to];
  std::uint32_t channel = channel_of(id.slice, spec_.channels);
  post_write(planned.ranks[id.member], planned.ranks[transfer.to], channel, transfer.offset + offset,
             receive_buffer + transfer.remote_offset + offset, bytes, write);
}

void ChakraReplay::member_done(std::uint32_t c, std::uint32_t member) {
  Running& running = running_[c];
  if (++running.members_done == plan_.collectives[c].ranks.size()) running.end = now_;
  finish(plan_.collectives[c].ranks[member], plan_.collectives[c].nodes[member], now_);
}

// Posts the WRITE; the host sends it when drain() wakes it.
void ChakraReplay::post_write(std::uint32_t from_rank, std::uint32_t to_rank, std::uint32_t channel,
                              std::uint64_t offset, std::uint64_t remote_offset, std::uint64_t bytes,
                              const Write& write) {
  HostNode& from = *ranks_[from_rank].host;
  const HostNode& to = *ranks_[to_rank].host;
  std::uint64_t slot;
  if (free_writes_.empty()) {
    slot = writes_.size();
    if (slot > UINT32_MAX) throw std::runtime_error("chakra replay: more than 2^32 WRITEs in flight");
    writes_.push_back(write);
  } else {
    slot = free_writes_.back();
    free_writes_.pop_back();
    writes_[slot] = write;
  }
  Sge sge{HostNode::kRegionBase + offset, static_cast<std::uint32_t>(bytes), from.region().lkey};
  SendWr wr;
  wr.wr_id = kChakraWork | job_bits_ | slot;
  wr.opcode = WrOpcode::rdma_write_with_imm;
  wr.imm_data = static_cast<std::uint32_t>(slot);
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {HostNode::kRegionBase + remote_offset, to.region().rkey};
  if (std::errc refused = from.engine().post_send(qpn_.at({from_rank, to_rank, channel}), wr); refused != std::errc{}) {
    throw std::runtime_error(fmt::format("chakra replay: rank {}: a WRITE of {} bytes to rank {} refused: {}",
                                         from_rank, bytes, to_rank, std::make_error_code(refused).message()));
  }
  if (!ranks_[from_rank].waking) {
    ranks_[from_rank].waking = true;
    to_wake_.push_back(from_rank);
  }
}

void ChakraReplay::completed(const WorkCompletion& completion, SimTime now) {
  now_ = now;
  if (failed_) return;
  if (completion.status != WcStatus::success) {
    failed_ = true;
    return;
  }
  if (completion.opcode == WcOpcode::recv_rdma_with_imm) {
    arrived(completion.imm_data, completion.qp_num, now);
  } else {
    sent(completion.wr_id & ((1ull << kChakraJobShift) - 1), now);
  }
  drain(now);
}

// The sender's WRITE completed: a send's node ends, a collective's sender moves on.
void ChakraReplay::sent(std::uint64_t slot, SimTime now) {
  if (slot >= writes_.size() || writes_[slot].sent) return;
  Write& write = writes_[slot];
  write.sent = true;
  if (write.message) {
    finish(write.rank, write.node, now);
  } else {
    running_[write.collective].progress->sent(write.transfer);
  }
  release_slot(slot);
}

// The WRITE landed (its receive is posted again): a receive may end, a
// collective's receiver moves on.
void ChakraReplay::arrived(std::uint64_t slot, std::uint32_t qpn, SimTime now) {
  if (slot >= writes_.size() || writes_[slot].arrived) return;
  Write& write = writes_[slot];
  write.arrived = true;
  post_arrival_receive(*ranks_[write.to_rank].host, qpn, kChakraWork | job_bits_);
  if (write.message) {
    Channel channel{write.rank, write.to_rank, spec_.ranks[write.rank].nodes[write.node].comm_tag};
    ++arrived_[channel];
    deliver(channel, now);
  } else {
    CollectiveProgress& progress = *running_[write.collective].progress;
    progress.arrived(write.transfer.slice, progress.receiver_of(write.transfer), write.transfer.step);
  }
  release_slot(slot);
}

void ChakraReplay::release_slot(std::uint64_t slot) {
  if (!writes_[slot].sent || !writes_[slot].arrived) return;
  free_writes_.push_back(slot);
}

// Receives waiting on a channel take the messages that have arrived, in order.
void ChakraReplay::deliver(const Channel& channel, SimTime now) {
  auto waiting = receiving_.find(channel);
  auto arrived = arrived_.find(channel);
  while (waiting != receiving_.end() && !waiting->second.empty() && arrived != arrived_.end() && arrived->second > 0) {
    std::uint32_t node = waiting->second.front();
    waiting->second.pop_front();
    --arrived->second;
    finish(std::get<1>(channel), node, now);
  }
}

ChakraResult ChakraReplay::result(SimTime end) {
  ChakraResult out;
  SimTime last = spec_.start;
  for (std::uint32_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = ranks_[r];
    if (rank.finished != kSimNever) {
      ++out.ranks_finished;
      last = std::max(last, rank.finished);
    }
  }
  if (out.ranks_finished < ranks_.size()) last = std::max(last, end);
  out.makespan = last - spec_.start;
  for (std::uint32_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = ranks_[r];
    account(rank, last);
    out.ranks.push_back({spec_.hosts[r], rank.finished, rank.compute, rank.communication, rank.idle});
    for (std::uint32_t node = 0; node < rank.started.size(); ++node) {
      bool receive = spec_.ranks[r].nodes[node].type == chakra::kCommRecvNode;
      if (rank.started[node] == kSimNever || (resource_of(r, node) == none && !receive)) continue;
      SimTime ended = rank.ended[node] == kSimNever ? last : rank.ended[node];
      out.spans.push_back({r, node, rank.started[node], ended});
    }
  }
  for (std::size_t c = 0; c < plan_.collectives.size(); ++c) {
    const PlannedCollective& planned = plan_.collectives[c];
    ChakraCollectiveResult collective;
    collective.group = planned.group;
    collective.index = planned.index;
    collective.type = planned.type;
    if (!planned.schedules.empty()) collective.algorithm = planned.schedules.front().algorithm;
    collective.bytes = planned.bytes;
    collective.ranks = static_cast<std::uint32_t>(planned.ranks.size());
    collective.start = running_[c].start;
    collective.end = running_[c].end;
    out.collectives.push_back(collective);
  }
  out.failed = failed_;
  out.nodes_run = nodes_run_;
  out.skipped = skipped_;
  return out;
}

}  // namespace uroce::sim
