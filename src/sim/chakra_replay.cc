// A Chakra replay as it runs: ranks' ready nodes on their resources,
// collectives stepped by their WRITEs' completions and arrivals, sends
// matched to receives, barriers released between windows, and the time
// each rank spent computing, communicating or idle.
#include "sim/chakra_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/qp_setup.h"

namespace uroce::sim {

ChakraReplay::ChakraReplay(const ChakraSpec& spec, std::uint32_t job, const TransportSpec& transport,
                           Fabric& fabric, RankGroup& processes, SimTime barrier)
    : spec_(spec),
      job_bits_(std::uint64_t{job} << kChakraJobShift),
      plan_(plan_chakra(spec, fabric.topology())),
      barrier_(barrier) {
  for (std::uint32_t r = 0; r < spec.ranks.size(); ++r) {
    auto rank = std::make_unique<Rank>();
    const auto& nodes = spec.ranks[r].nodes;
    rank->replay = this;
    rank->index = r;
    NodeRef host{true, spec.hosts[r]};
    rank->host = fabric.holds(host) ? &fabric.host(host.index) : nullptr;
    rank->world = &fabric.world_of(host);
    rank->rkey = fabric.rkey_of(host.index);
    rank->set_event_group(spec.hosts[r]);
    rank->waiting.assign(nodes.size(), 0);
    rank->dependents.resize(nodes.size());
    rank->started.assign(nodes.size(), kSimNever);
    rank->ended.assign(nodes.size(), kSimNever);
    rank->left = nodes.size();
    std::map<std::uint64_t, std::uint32_t> index_of;
    for (std::uint32_t i = 0; i < nodes.size(); ++i) index_of[nodes[i].id] = i;
    for (std::uint32_t i = 0; i < nodes.size(); ++i) {
      for (const std::vector<std::uint64_t>* deps : {&nodes[i].deps, &nodes[i].ctrl_deps}) {
        if (deps == &nodes[i].ctrl_deps && !spec.control_dependencies) continue;
        for (std::uint64_t dep : *deps) {  // parse_trace kept only those that are there
          rank->dependents[index_of.at(dep)].push_back(i);
          ++rank->waiting[i];
        }
      }
    }
    rank_of_host_[spec.hosts[r]] = r;
    ranks_.push_back(std::move(rank));
  }
  running_.resize(plan_.collectives.size());
  barrier_arrivals_ = std::vector<std::atomic<std::uint32_t>>(plan_.collectives.size());
  for (std::uint32_t c = 0; c < plan_.collectives.size(); ++c) {
    const PlannedCollective& planned = plan_.collectives[c];
    Running& running = running_[c];
    running.joined.assign(planned.ranks.size(), kSimNever);
    running.done.assign(planned.ranks.size(), kSimNever);
    if (planned.schedules.empty() && planned.ranks.size() > 1) {
      barriers_waiting_.push_back(c);  // a barrier: let go between windows
      continue;
    }
    std::vector<const collective::Schedule*> schedules;
    for (const collective::Schedule& schedule : planned.schedules) schedules.push_back(&schedule);
    running.progress = std::make_unique<CollectiveProgress>(
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
  QpConnections connections(fabric, transport);
  for (auto [a, b] : plan_.pairs) {
    for (std::uint32_t channel = 0; channel < channels; ++channel) {
      connections.add(spec.hosts[a], spec.hosts[b], depth, depth, kChakraWork | job_bits_);
    }
  }
  connections.connect(processes);
  std::uint32_t pair = 0;
  for (auto [a, b] : plan_.pairs) {
    for (std::uint32_t channel = 0; channel < channels; ++channel) {
      auto [qpn_a, qpn_b] = connections.qpns(pair++);
      for (auto [from, to, qpn_from, qpn_to] : {std::tuple{a, b, qpn_a, qpn_b}, std::tuple{b, a, qpn_b, qpn_a}}) {
        in_flight_.push_back(std::make_unique<InFlight>());
        std::uint64_t arrivals = std::uint64_t{spec.hosts[to]} << 32 | qpn_to;
        sending_[{from, to, channel}] = {qpn_from, in_flight_.back().get(), arrivals};
        receiving_on_[arrivals] = in_flight_.back().get();
      }
    }
  }
  for (auto& rank : ranks_) rank->world->events.schedule(spec.start, rank.get(), kStartTag);
}

bool ChakraReplay::running() const {
  if (processes_->size() > 1) return running_everywhere_;  // every process must give one answer
  bool left = false;
  for (const auto& rank : ranks_) {
    if (rank->failed) return false;
    left = left || rank->left > 0;
  }
  return left;
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

void ChakraReplay::make_ready(std::uint32_t r, std::uint32_t node) {
  Resource resource = resource_of(r, node);
  if (resource == none) {
    ranks_[r]->instant.push_back(node);
  } else {
    ranks_[r]->ready[resource].insert(node);
  }
}

// Starts what the rank can start now, as long as finishing nodes make more ready.
void ChakraReplay::pump(std::uint32_t r) {
  Rank& rank = *ranks_[r];
  for (;;) {
    if (!rank.instant.empty()) {
      std::uint32_t node = rank.instant.front();
      rank.instant.pop_front();
      start(r, node, none);
      continue;
    }
    bool started = false;
    for (Resource resource : {cpu, gpu_compute, gpu_comm}) {
      if (rank.running[resource] != UINT32_MAX || rank.ready[resource].empty()) continue;
      std::uint32_t node = *rank.ready[resource].begin();
      rank.ready[resource].erase(rank.ready[resource].begin());
      start(r, node, resource);
      started = true;
      break;
    }
    if (!started) return;
  }
}

// After anything happened to a rank: start what it can, then let its host
// send the WRITEs it was given.
void ChakraReplay::settle(Rank& rank) {
  pump(rank.index);
  if (!rank.posted) return;
  rank.posted = false;
  rank.host->wake(rank.now);
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

void ChakraReplay::start(std::uint32_t r, std::uint32_t node, Resource resource) {
  Rank& rank = *ranks_[r];
  SimTime now = rank.now;
  const chakra::TraceNode& traced = spec_.ranks[r].nodes[node];
  rank.started[node] = now;
  account(rank, now);
  switch (traced.type) {
    case chakra::kCompNode:
      ++rank.computing;
      rank.running[resource] = node;
      rank.world->events.schedule(now + static_cast<SimTime>(traced.duration_us) * kPicosecondsPerUs, &rank,
                                  resource);
      return;
    case chakra::kCommSendNode: {
      ++rank.communicating;
      rank.running[resource] = node;
      Write write;
      write.message = true;
      write.rank = r;
      write.node = node;
      post_write(r, *traced.comm_dst, 0, 0, 0, std::max<std::uint64_t>(traced.comm_size, 1), write);
      return;
    }
    case chakra::kCommRecvNode: {
      ++rank.communicating;
      Channel channel{*traced.comm_src, r, traced.comm_tag};
      rank.receiving[channel].push_back(node);
      deliver(rank, channel);
      return;
    }
    case chakra::kCommCollNode:
      if (resource == gpu_comm) {
        ++rank.communicating;
        rank.running[resource] = node;
        join(plan_.collective_of[r][node], r);
        return;
      }
      ++rank.skipped[std::string("comm_coll:") +
                     (traced.comm_type ? chakra::comm_type_name(*traced.comm_type) : "untyped")];
      break;
    default:
      ++rank.skipped[chakra::node_type_name(traced.type)];
      break;
  }
  finish(r, node);
}

void ChakraReplay::finish(std::uint32_t r, std::uint32_t node) {
  Rank& rank = *ranks_[r];
  SimTime now = rank.now;
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
  if (ran) ++rank.nodes_run;
  rank.ended[node] = now;
  for (std::uint32_t dependent : rank.dependents[node]) {
    if (--rank.waiting[dependent] == 0) make_ready(r, dependent);
  }
  if (--rank.left == 0) rank.finished = now;
}

void ChakraReplay::Rank::on_event(SimTime at, std::uint32_t tag) {
  now = at;
  if (tag == kStartTag) {
    since = at;
    if (left == 0) finished = at;
    for (std::uint32_t node = 0; node < waiting.size(); ++node) {
      if (waiting[node] == 0) replay->make_ready(index, node);
    }
  } else if (tag >= kFirstBarrierTag) {  // a barrier this rank reached is over
    std::uint32_t c = tag - kFirstBarrierTag;
    std::uint32_t member = replay->member_of(c, index);
    replay->running_[c].done[member] = at;
    replay->finish(index, replay->plan_.collectives[c].nodes[member]);
  } else {
    replay->finish(index, running[tag]);
  }
  replay->settle(*this);
}

std::uint32_t ChakraReplay::member_of(std::uint32_t c, std::uint32_t rank) const {
  const std::vector<std::uint32_t>& members = plan_.collectives[c].ranks;
  return static_cast<std::uint32_t>(std::find(members.begin(), members.end(), rank) - members.begin());
}

void ChakraReplay::join(std::uint32_t c, std::uint32_t rank) {
  Running& running = running_[c];
  std::uint32_t member = member_of(c, rank);
  running.joined[member] = ranks_[rank]->now;
  if (running.progress) {
    running.progress->join(member);
  } else {
    barrier_arrivals_[c].fetch_add(1, std::memory_order_relaxed);  // between_windows lets it go
  }
}

// A barrier every member reached ends a barrier delay after the last
// arrived, which is past the window that saw it arrive.
void ChakraReplay::between_windows() {
  if (processes_->size() > 1) {
    ship_writes();
    release_barriers_everywhere();
    return;
  }
  std::erase_if(barriers_waiting_, [this](std::uint32_t c) {
    Running& running = running_[c];
    if (barrier_arrivals_[c].load(std::memory_order_relaxed) < running.joined.size()) return false;
    SimTime last = *std::max_element(running.joined.begin(), running.joined.end());
    const PlannedCollective& planned = plan_.collectives[c];
    for (std::uint32_t rank : planned.ranks) {
      Rank& member = *ranks_[rank];
      member.world->events.schedule(last + barrier_, &member, kFirstBarrierTag + c);
    }
    return true;
  });
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
  std::uint32_t channel = channel_of(id.slice, spec_.channels);
  post_write(planned.ranks[id.member], planned.ranks[transfer.to], channel, transfer.offset + offset,
             receive_buffer + transfer.remote_offset + offset, bytes, write);
}

void ChakraReplay::member_done(std::uint32_t c, std::uint32_t member) {
  std::uint32_t r = plan_.collectives[c].ranks[member];
  running_[c].done[member] = ranks_[r]->now;
  finish(r, plan_.collectives[c].nodes[member]);
}

// Posts the WRITE and queues what it is for on its QP; the host sends it
// when settle() wakes it.
void ChakraReplay::post_write(std::uint32_t from_rank, std::uint32_t to_rank, std::uint32_t channel,
                              std::uint64_t offset, std::uint64_t remote_offset, std::uint64_t bytes,
                              const Write& write) {
  Rank& from = *ranks_[from_rank];
  std::uint64_t slot;
  if (from.free_writes.empty()) {
    slot = from.writes.size();
    if (slot >= (1ull << kChakraJobShift)) throw std::runtime_error("chakra replay: more than 2^40 WRITEs in flight");
    from.writes.push_back(write);
  } else {
    slot = from.free_writes.back();
    from.free_writes.pop_back();
    from.writes[slot] = write;
  }
  Sge sge{HostNode::kRegionBase + offset, static_cast<std::uint32_t>(bytes), from.host->region().lkey};
  SendWr wr;
  wr.wr_id = kChakraWork | job_bits_ | slot;
  wr.opcode = WrOpcode::rdma_write_with_imm;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {HostNode::kRegionBase + remote_offset, ranks_[to_rank]->rkey};
  const Connection& connection = sending_.at({from_rank, to_rank, channel});
  if (std::errc refused = from.host->engine().post_send(connection.qpn, wr); refused != std::errc{}) {
    throw std::runtime_error(fmt::format("chakra replay: rank {}: a WRITE of {} bytes to rank {} refused: {}",
                                         from_rank, bytes, to_rank, std::make_error_code(refused).message()));
  }
  if (!ranks_[to_rank]->here) {  // another process runs the receiver: sent there between windows
    from.shipping.push_back({connection.arrivals, to_rank, write});
  } else {
    InFlight& queue = *connection.in_flight;
    std::lock_guard<std::mutex> hold(queue.lock);
    queue.writes.push_back(write);
  }
  from.posted = true;
}

void ChakraReplay::completed(std::uint32_t host, const WorkCompletion& completion, SimTime now) {
  auto found = rank_of_host_.find(host);
  if (found == rank_of_host_.end()) return;
  Rank& rank = *ranks_[found->second];
  if (rank.failed) return;
  if (completion.status != WcStatus::success) {
    rank.failed = true;
    return;
  }
  rank.now = now;
  if (completion.opcode == WcOpcode::recv_rdma_with_imm) {
    arrived(rank, completion.qp_num);
  } else {
    sent(rank, completion.wr_id & ((1ull << kChakraJobShift) - 1));
  }
  settle(rank);
}

// The rank's WRITE completed: a send's node ends, a collective's sender moves on.
void ChakraReplay::sent(Rank& rank, std::uint64_t slot) {
  if (slot >= rank.writes.size()) return;
  Write write = rank.writes[slot];
  rank.free_writes.push_back(slot);
  if (write.message) {
    finish(write.rank, write.node);
  } else {
    running_[write.collective].progress->sent(write.transfer);
  }
}

// A WRITE landed in the rank (its receive is posted again): the oldest in
// flight on that QP. A receive may end; a collective's receiver moves on.
void ChakraReplay::arrived(Rank& rank, std::uint32_t qpn) {
  post_arrival_receive(*rank.host, qpn, kChakraWork | job_bits_);
  auto queue = receiving_on_.find(std::uint64_t{rank.host->id()} << 32 | qpn);
  if (queue == receiving_on_.end()) return;
  Write write;
  {
    std::lock_guard<std::mutex> hold(queue->second->lock);
    if (queue->second->writes.empty()) return;
    write = queue->second->writes.front();
    queue->second->writes.pop_front();
  }
  if (write.message) {
    Channel channel{write.rank, rank.index, spec_.ranks[write.rank].nodes[write.node].comm_tag};
    ++rank.arrived[channel];
    deliver(rank, channel);
  } else {
    CollectiveProgress& progress = *running_[write.collective].progress;
    progress.arrived(write.transfer.slice, progress.receiver_of(write.transfer), write.transfer.step);
  }
}

// The rank's receives waiting on a channel take the messages that have arrived, in order.
void ChakraReplay::deliver(Rank& rank, const Channel& channel) {
  auto waiting = rank.receiving.find(channel);
  auto arrived = rank.arrived.find(channel);
  while (waiting != rank.receiving.end() && !waiting->second.empty() && arrived != rank.arrived.end() &&
         arrived->second > 0) {
    std::uint32_t node = waiting->second.front();
    waiting->second.pop_front();
    --arrived->second;
    finish(rank.index, node);
  }
}

ChakraResult ChakraReplay::result(SimTime end) {
  ChakraResult out;
  // The last rank's end, over every process.
  std::uint64_t finished = 0, latest = static_cast<std::uint64_t>(spec_.start);
  for (const auto& rank : ranks_) {
    if (!rank->here || rank->finished == kSimNever) continue;
    ++finished;
    latest = std::max(latest, static_cast<std::uint64_t>(rank->finished));
  }
  processes_->sum(std::span(&finished, 1));
  processes_->max(std::span(&latest, 1));
  out.ranks_finished = static_cast<std::uint32_t>(finished);
  SimTime last = static_cast<SimTime>(latest);
  if (out.ranks_finished < ranks_.size()) last = std::max(last, end);
  out.makespan = last - spec_.start;
  for (const Bytes& records : processes_->gather_all(rank_records(last))) add_rank_records(records, out);
  std::sort(out.ranks.begin(), out.ranks.end(), [this](const ChakraRankResult& a, const ChakraRankResult& b) {
    return rank_of_host_.at(a.host) < rank_of_host_.at(b.host);
  });
  std::stable_sort(out.spans.begin(), out.spans.end(),
                   [](const ChakraSpan& a, const ChakraSpan& b) { return a.rank < b.rank; });
  // A member's join and end are its process's (kSimNever elsewhere).
  for (Running& running : running_) {
    processes_->min(running.joined);
    processes_->min(running.done);
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
    // From its first member's start to its last member's end (kSimNever if one never ended).
    const Running& running = running_[c];
    collective.start = *std::min_element(running.joined.begin(), running.joined.end());
    bool all_done = std::find(running.done.begin(), running.done.end(), kSimNever) == running.done.end();
    collective.end = all_done ? *std::max_element(running.done.begin(), running.done.end()) : kSimNever;
    out.collectives.push_back(collective);
  }
  return out;
}

}  // namespace uroce::sim
