// A collective's steps as RDMA WRITEs, released by completions and compute.
#include "sim/collective_runner.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/qp_setup.h"

namespace uroce::sim {

namespace {

constexpr std::uint32_t kStartTag = UINT32_MAX;
constexpr std::uint64_t kLargestTransfer = 1ull << 30;  // a WRITE's length is 32 bits; flows keep to 1 GiB too
constexpr int kSliceShift = 32, kStepShift = 38;
constexpr std::uint64_t kSliceMask = 0x3f, kStepMask = (1ull << 25) - 1;

// wr_id: the flag, the step, the slice, the transfer's index in its step
// and the member; schedules have at most 65536 ranks, and a step at most
// one transfer per other rank.
std::uint64_t work_id(const CollectiveProgress::TransferId& id) {
  return kCollectiveWork | (std::uint64_t{id.step} << kStepShift) | (std::uint64_t{id.slice} << kSliceShift) |
         (std::uint64_t{id.index} << 16) | id.member;
}

// An event's tag: which member's slice finished its compute.
std::uint32_t compute_tag(std::uint32_t slice, std::uint32_t member) { return slice << 16 | member; }

// A schedule's steps and transfers must fit a wr_id's fields and a WRITE.
void check_fits(const collective::Schedule& schedule) {
  if (schedule.steps() > kStepMask) throw std::invalid_argument("collective: more than 2^25 steps");
  if (std::uint64_t largest = schedule.largest_transfer(); largest > kLargestTransfer) {
    throw std::invalid_argument("collective: a transfer of " + std::to_string(largest) +
                                " bytes is more than one WRITE carries here (1 GiB)");
  }
}

}  // namespace

CollectiveRunner::CollectiveRunner(const CollectiveSpec& spec, const TransportSpec& transport, Fabric& fabric,
                                   SimWorld& world)
    : spec_(spec), world_(world) {
  auto n = static_cast<std::uint32_t>(spec.hosts.size());
  members_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    members_[i].host = &fabric.host(spec.hosts[i]);
    bool straggler = spec.straggler && *spec.straggler == spec.hosts[i];
    members_[i].delay = spec.step_compute + (straggler ? spec.straggler_delay : 0);
  }
  // On whole GPU servers, NCCL's rings and trees: one per channel.
  std::uint32_t channels = std::max<std::uint32_t>(spec.channels, 1);
  auto schedules = collective::make_channel_schedules(spec.operation, spec.algorithm, n, spec.bytes,
                                                      fabric.topology().servers.whole_servers(spec.hosts), channels);
  if (!schedules) throw std::invalid_argument("collective: " + schedules.error());
  for (const collective::Schedule& schedule : *schedules) check_fits(schedule);
  schedules_ = std::move(*schedules);
  // channels connections per pair that exchanges data on a channel, each used both ways.
  std::uint32_t depth = send_queue_depth(spec.slices, channels);
  for (std::uint32_t channel = 0; channel < channels; ++channel) {
    const collective::Schedule& schedule = schedules_[channel % schedules_.size()];
    for (std::uint32_t i = 0; i < n; ++i) {
      for (const collective::Step& step : schedule.ranks[i]) {
        for (const collective::Transfer& transfer : step.sends) {
          if (qpn_.count({i, transfer.to, channel}) != 0) continue;
          auto [mine, theirs] = connect_rc_pair(*members_[i].host, *members_[transfer.to].host, transport, depth);
          qpn_[{i, transfer.to, channel}] = mine;
          qpn_[{transfer.to, i, channel}] = theirs;
        }
      }
    }
  }
  world_.events.schedule(spec.start, this, kStartTag);
}

void CollectiveRunner::start_iteration(SimTime now) {
  iteration_start_ = now;
  members_finished_ = 0;
  std::vector<const collective::Schedule*> schedules;
  for (const collective::Schedule& schedule : schedules_) schedules.push_back(&schedule);
  progress_ = std::make_unique<CollectiveProgress>(
      std::move(schedules), static_cast<std::uint32_t>(members_.size()), slices_over(spec_.slices, spec_.channels),
      [this](const CollectiveProgress::TransferId& id, std::uint64_t offset, std::uint64_t bytes) {
        post(id, offset, bytes);
      },
      [this](std::uint32_t) { member_done(now_); },
      [this](std::uint32_t slice, std::uint32_t member, std::uint32_t) {
        world_.events.schedule(now_ + members_[member].delay, this, compute_tag(slice, member));
      });
  for (std::uint32_t i = 0; i < members_.size(); ++i) progress_->join(i);
}

void CollectiveRunner::on_event(SimTime now, std::uint32_t tag) {
  now_ = now;
  if (tag == kStartTag) {
    start_iteration(now);
    return;
  }
  progress_->release(tag >> 16, tag & 0xffff);
  wake_senders();
}

void CollectiveRunner::post(const CollectiveProgress::TransferId& id, std::uint64_t offset, std::uint64_t bytes) {
  const collective::Transfer& transfer = progress_->schedule_of(id.slice).ranks[id.member][id.step].sends[id.index];
  Member& from = members_[id.member];
  HostNode& to = *members_[transfer.to].host;
  Sge sge{HostNode::kRegionBase + transfer.offset + offset, static_cast<std::uint32_t>(bytes), from.host->region().lkey};
  SendWr write;
  write.wr_id = work_id(id);
  write.opcode = WrOpcode::rdma_write;
  write.send_flags = kSendSignaled;
  write.sg_list = {&sge, 1};
  // All-to-all writes a receive buffer beside the send buffer.
  std::uint64_t receive_buffer = spec_.operation == collective::Operation::alltoall ? spec_.bytes : 0;
  write.rdma = {HostNode::kRegionBase + receive_buffer + transfer.remote_offset + offset, to.region().rkey};
  std::uint32_t channel = channel_of(id.slice, spec_.channels);
  if (from.host->engine().post_send(qpn_.at({id.member, transfer.to, channel}), write) != std::errc{}) {
    throw std::runtime_error("collective member " + std::to_string(id.member) + ": post_send refused");
  }
  if (!from.waking) {
    from.waking = true;
    to_wake_.push_back(id.member);
  }
}

// After the progress posted what it could: the senders start sending.
void CollectiveRunner::wake_senders() {
  for (std::uint32_t member : to_wake_) {
    members_[member].host->wake(now_);
    members_[member].waking = false;
  }
  to_wake_.clear();
}

void CollectiveRunner::completed(const WorkCompletion& completion, SimTime now) {
  now_ = now;
  CollectiveProgress::TransferId id;
  id.member = static_cast<std::uint32_t>(completion.wr_id & 0xffff);
  id.index = static_cast<std::uint32_t>((completion.wr_id >> 16) & 0xffff);
  id.slice = static_cast<std::uint32_t>((completion.wr_id >> kSliceShift) & kSliceMask);
  id.step = static_cast<std::uint32_t>((completion.wr_id >> kStepShift) & kStepMask);
  if (id.member >= members_.size() || failed_ || !progress_ || id.slice >= progress_->slices()) return;
  const collective::Schedule& schedule = progress_->schedule_of(id.slice);
  if (id.step >= schedule.steps() || id.index >= schedule.ranks[id.member][id.step].sends.size()) return;
  if (completion.status != WcStatus::success) {
    failed_ = true;
    return;
  }
  progress_->completed(id);
  wake_senders();
}

// The last member's end is the iteration's: the next one starts at once,
// or after the gap.
void CollectiveRunner::member_done(SimTime now) {
  if (++members_finished_ < members_.size()) return;
  iteration_times_.push_back(now - iteration_start_);
  finished_at_ = now;
  if (iteration_times_.size() >= spec_.iterations) return;
  if (spec_.iteration_gap == 0) {
    start_iteration(now);
  } else {
    world_.events.schedule(now + spec_.iteration_gap, this, kStartTag);
  }
}

}  // namespace uroce::sim
