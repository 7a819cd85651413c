// A collective's steps as RDMA WRITEs, released by completions.
#include "sim/collective_runner.h"

#include <stdexcept>
#include <string>

#include "sim/qp_setup.h"

namespace uroce::sim {

namespace {

constexpr std::uint32_t kSendQueueDepth = 4;
constexpr std::uint32_t kStartTag = UINT32_MAX;
constexpr std::uint64_t kLargestTransfer = 1ull << 30;  // a WRITE's length is 32 bits; flows keep to 1 GiB too

// wr_id: the flag, the step (bits 32..62), the transfer's index in its step
// (bits 16..31) and the member (bits 0..15); schedules have at most 65536
// ranks, and a step at most one transfer per other rank.
std::uint64_t work_id(std::uint32_t member, std::uint32_t step, std::uint32_t transfer) {
  return kCollectiveWork | (std::uint64_t{step} << 32) | (std::uint64_t{transfer} << 16) | member;
}

}  // namespace

CollectiveRunner::CollectiveRunner(const CollectiveSpec& spec, const TransportSpec& transport, Fabric& fabric,
                                   SimWorld& world)
    : spec_(spec), world_(world) {
  auto n = static_cast<std::uint32_t>(spec.hosts.size());
  auto schedule = collective::make_schedule(spec.operation, spec.algorithm, n, spec.bytes);
  if (!schedule) throw std::invalid_argument("collective: " + schedule.error());
  schedule_ = std::move(*schedule);
  for (const auto& steps : schedule_.ranks) {
    for (const collective::Step& step : steps) {
      for (const collective::Transfer& transfer : step.sends) {
        if (transfer.bytes > kLargestTransfer) {
          throw std::invalid_argument("collective: a transfer of " + std::to_string(transfer.bytes) +
                                      " bytes is more than one WRITE carries here (1 GiB)");
        }
      }
    }
  }
  members_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    members_[i].host = &fabric.host(spec.hosts[i]);
    bool straggler = spec.straggler && *spec.straggler == spec.hosts[i];
    members_[i].delay = spec.step_compute + (straggler ? spec.straggler_delay : 0);
  }
  // One RC connection per pair that exchanges data, used both ways.
  for (std::uint32_t i = 0; i < n; ++i) {
    for (const collective::Step& step : schedule_.ranks[i]) {
      for (const collective::Transfer& transfer : step.sends) {
        if (members_[i].qpn_to.count(transfer.to) != 0) continue;
        auto [mine, theirs] = connect_rc_pair(*members_[i].host, *members_[transfer.to].host, transport, kSendQueueDepth);
        members_[i].qpn_to[transfer.to] = mine;
        members_[transfer.to].qpn_to[i] = theirs;
      }
    }
  }
  world_.events.schedule(spec.start, this, kStartTag);
}

void CollectiveRunner::start_iteration(SimTime now) {
  iteration_start_ = now;
  members_finished_ = 0;
  for (Member& member : members_) {
    member.posted = 0;
    member.steps_done = 0;
    member.sends_done.assign(schedule_.steps(), 0);
    member.receives_done.assign(schedule_.steps(), 0);
  }
  for (std::uint32_t i = 0; i < members_.size(); ++i) try_start(i, now);
}

bool CollectiveRunner::step_complete(std::uint32_t member, std::uint32_t step) const {
  const collective::Step& planned = schedule_.ranks[member][step];
  const Member& m = members_[member];
  return m.sends_done[step] == planned.sends.size() && m.receives_done[step] == planned.receives_from.size();
}

// Step s needs this member's step s - 1 complete: its WRITEs done and the
// WRITEs to it arrived.
void CollectiveRunner::try_start(std::uint32_t member, SimTime now) {
  Member& m = members_[member];
  std::uint32_t step = m.posted;
  if (step == schedule_.steps() || (step > 0 && !step_complete(member, step - 1))) return;
  ++m.posted;
  world_.events.schedule(now + m.delay, this, member);
}

void CollectiveRunner::on_event(SimTime now, std::uint32_t member) {
  if (member == kStartTag) {
    start_iteration(now);
    return;
  }
  Member& m = members_[member];
  std::uint32_t step = m.posted - 1;
  const collective::Step& planned = schedule_.ranks[member][step];
  for (std::uint32_t i = 0; i < planned.sends.size(); ++i) {
    const collective::Transfer& transfer = planned.sends[i];
    HostNode& to = *members_[transfer.to].host;
    Sge sge{HostNode::kRegionBase + transfer.offset, static_cast<std::uint32_t>(transfer.bytes), m.host->region().lkey};
    SendWr write;
    write.wr_id = work_id(member, step, i);
    write.opcode = WrOpcode::rdma_write;
    write.send_flags = kSendSignaled;
    write.sg_list = {&sge, 1};
    // All-to-all writes a receive buffer beside the send buffer.
    std::uint64_t receive_buffer = spec_.operation == collective::Operation::alltoall ? spec_.bytes : 0;
    write.rdma = {HostNode::kRegionBase + receive_buffer + transfer.remote_offset, to.region().rkey};
    if (m.host->engine().post_send(m.qpn_to.at(transfer.to), write) != std::errc{}) {
      throw std::runtime_error("collective member " + std::to_string(member) + ": post_send refused");
    }
  }
  m.host->wake(now);
  note_step_progress(member, step, now);  // a step that sends nothing is complete once its data is in
}

void CollectiveRunner::completed(const WorkCompletion& completion, SimTime now) {
  auto member = static_cast<std::uint32_t>(completion.wr_id & 0xffff);
  auto transfer = static_cast<std::uint32_t>((completion.wr_id >> 16) & 0xffff);
  auto step = static_cast<std::uint32_t>((completion.wr_id >> 32) & 0x7fffffff);
  if (member >= members_.size() || step >= schedule_.steps() || failed_) return;
  const collective::Step& planned = schedule_.ranks[member][step];
  if (transfer >= planned.sends.size()) return;
  if (completion.status != WcStatus::success) {
    failed_ = true;
    return;
  }
  std::uint32_t to = planned.sends[transfer].to;
  ++members_[member].sends_done[step];
  ++members_[to].receives_done[step];
  note_step_progress(member, step, now);
  note_step_progress(to, step, now);
}

// After a step of member's made progress: the next step may start, or the
// member may be finished, and with the last member the iteration.
void CollectiveRunner::note_step_progress(std::uint32_t member, std::uint32_t step, SimTime now) {
  Member& m = members_[member];
  if (step + 1 == schedule_.steps() && m.posted == schedule_.steps() && m.steps_done < schedule_.steps() &&
      step_complete(member, step)) {
    m.steps_done = static_cast<std::uint32_t>(schedule_.steps());
    if (++members_finished_ == members_.size()) {
      iteration_times_.push_back(now - iteration_start_);
      finished_at_ = now;
      if (iteration_times_.size() < spec_.iterations) {
        if (spec_.iteration_gap == 0) {
          start_iteration(now);
        } else {
          world_.events.schedule(now + spec_.iteration_gap, this, kStartTag);
        }
      }
      return;
    }
  }
  try_start(member, now);
}

}  // namespace uroce::sim
