// Ring all-reduce steps, released by completions.
#include "sim/allreduce_runner.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/qp_setup.h"

namespace uroce::sim {

namespace {

constexpr std::uint32_t kSendQueueDepth = 4;
constexpr std::uint32_t kStartTag = UINT32_MAX;

}  // namespace

AllreduceRunner::AllreduceRunner(const AllreduceSpec& spec, const TransportSpec& transport, Fabric& fabric,
                                 SimWorld& world)
    : spec_(spec), world_(world) {
  auto n = static_cast<std::uint32_t>(spec.hosts.size());
  chunk_bytes_ = std::max<std::uint64_t>(1, spec.bytes / n);
  steps_ = 2 * (n - 1);
  members_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    members_[i].host = &fabric.host(spec.hosts[i]);
    bool straggler = spec.straggler && *spec.straggler == spec.hosts[i];
    members_[i].delay = spec.step_compute + (straggler ? spec.straggler_delay : 0);
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    members_[i].qpn = connect_rc_pair(*members_[i].host, *members_[(i + 1) % n].host, transport, kSendQueueDepth).first;
  }
  world_.events.schedule(spec.start, this, kStartTag);
}

void AllreduceRunner::start_iteration(SimTime now) {
  iteration_start_ = now;
  members_finished_ = 0;
  for (Member& member : members_) member.posted = member.done = 0;
  for (std::uint32_t i = 0; i < members_.size(); ++i) try_start(i, now);
}

// Step k needs this member's step k-1 and its predecessor's step k-1 done.
void AllreduceRunner::try_start(std::uint32_t member, SimTime now) {
  Member& m = members_[member];
  std::uint32_t step = m.posted;
  if (step == steps_ || m.done < step || members_[predecessor(member)].done < step) return;
  ++m.posted;
  world_.events.schedule(now + m.delay, this, member);
}

void AllreduceRunner::on_event(SimTime now, std::uint32_t member) {
  if (member == kStartTag) {
    start_iteration(now);
    return;
  }
  Member& m = members_[member];
  HostNode& next = *members_[(member + 1) % members_.size()].host;
  // Chunks rotate through the buffer; which one does not change the traffic.
  std::uint64_t offset = ((m.posted - 1) % members_.size()) * chunk_bytes_;
  Sge sge{HostNode::kRegionBase + offset, static_cast<std::uint32_t>(chunk_bytes_), m.host->region().lkey};
  SendWr write;
  write.wr_id = kAllreduceWork | member;
  write.opcode = WrOpcode::rdma_write;
  write.send_flags = kSendSignaled;
  write.sg_list = {&sge, 1};
  write.rdma = {HostNode::kRegionBase + offset, next.region().rkey};
  if (m.host->engine().post_send(m.qpn, write) != std::errc{}) {
    throw std::runtime_error("all-reduce member " + std::to_string(member) + ": post_send refused");
  }
  m.host->wake(now);
}

void AllreduceRunner::completed(const WorkCompletion& completion, SimTime now) {
  auto member = static_cast<std::uint32_t>(completion.wr_id & ~kAllreduceWork);
  if (member >= members_.size() || failed_) return;
  if (completion.status != WcStatus::success) {
    failed_ = true;
    return;
  }
  Member& m = members_[member];
  ++m.done;
  if (m.done == steps_ && ++members_finished_ == members_.size()) {
    iteration_times_.push_back(now - iteration_start_);
    if (iteration_times_.size() < spec_.iterations) start_iteration(now);
    return;
  }
  try_start(member, now);
  try_start(static_cast<std::uint32_t>((member + 1) % members_.size()), now);
}

}  // namespace uroce::sim
