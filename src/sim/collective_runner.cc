// A collective's steps as RDMA WRITEs with immediate, released by
// completions and compute, member by member.
#include "sim/collective_runner.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/qp_setup.h"

namespace uroce::sim {

namespace {

constexpr std::uint64_t kLargestTransfer = 1ull << 30;  // a WRITE's length is 32 bits; flows keep to 1 GiB too
constexpr int kSliceShift = 32, kStepShift = 38;
constexpr std::uint64_t kSliceMask = 0x3f, kStepMask = (1ull << 25) - 1;
constexpr int kImmSliceShift = 25;  // a WRITE's immediate: the slice above the step

// wr_id: the flag, the step, the slice and the transfer's index in its
// step (a step has at most one transfer per other rank); the member is the
// host's whose completion it is.
std::uint64_t work_id(const CollectiveProgress::TransferId& id) {
  return kCollectiveWork | (std::uint64_t{id.step} << kStepShift) | (std::uint64_t{id.slice} << kSliceShift) |
         id.index;
}

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
                                   RankGroup& ranks, SimWorld& global, SimTime barrier)
    : spec_(spec), global_(global), barrier_(barrier), ranks_(&ranks) {
  auto n = static_cast<std::uint32_t>(spec.hosts.size());
  for (std::uint32_t i = 0; i < n; ++i) {
    auto member = std::make_unique<Member>();
    member->runner = this;
    member->index = i;
    NodeRef host{true, spec.hosts[i]};
    member->here = fabric.holds(host);
    member->host = member->here ? &fabric.host(host.index) : nullptr;
    member->world = &fabric.world_of(host);
    member->rkey = fabric.rkey_of(host.index);
    member->set_event_group(spec.hosts[i]);
    bool straggler = spec.straggler && *spec.straggler == spec.hosts[i];
    member->delay = spec.step_compute + (straggler ? spec.straggler_delay : 0);
    member_of_host_[spec.hosts[i]] = i;
    members_.push_back(std::move(member));
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
  QpConnections connections(fabric, transport);
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> pair_of;
  for (std::uint32_t channel = 0; channel < channels; ++channel) {
    const collective::Schedule& schedule = schedules_[channel % schedules_.size()];
    for (std::uint32_t i = 0; i < n; ++i) {
      for (const collective::Step& step : schedule.ranks[i]) {
        for (const collective::Transfer& transfer : step.sends) {
          if (pair_of.count({i, transfer.to, channel}) != 0 || pair_of.count({transfer.to, i, channel}) != 0) continue;
          pair_of[{i, transfer.to, channel}] =
              connections.add(spec.hosts[i], spec.hosts[transfer.to], depth, depth, kCollectiveWork);
        }
      }
    }
  }
  connections.connect(ranks);
  // Only the QPs this rank posts on.
  for (const auto& [key, pair] : pair_of) {
    auto [i, to, channel] = key;
    auto [my_qpn, their_qpn] = connections.qpns(pair);
    if (members_[i]->here) qpn_[{i, to, channel}] = my_qpn;
    if (members_[to]->here) qpn_[{to, i, channel}] = their_qpn;
  }
  // Over MPI ranks, each keeps only the steps of the members it runs (at
  // 4,096 NICs every member's halving-doubling steps took 11 MB a rank).
  std::vector<bool> here(n);
  for (std::uint32_t i = 0; i < n; ++i) here[i] = members_[i]->here;
  if (std::find(here.begin(), here.end(), false) != here.end()) {
    for (collective::Schedule& schedule : schedules_) schedule.forget_ranks_except(here);
  }
  global_.events.schedule(spec.start, this, 0);
}

bool CollectiveRunner::failed() const {
  if (ranks_->size() > 1) return failed_anywhere_;  // every rank must give one answer
  return std::any_of(members_.begin(), members_.end(), [](const auto& member) { return member->failed; });
}

// On the global world, between windows: every member joins at `now`, and
// each asks for its first step's compute on its own partition's events.
void CollectiveRunner::on_event(SimTime now, std::uint32_t) { start_iteration(now); }

void CollectiveRunner::start_iteration(SimTime now) {
  iteration_start_ = now;
  for (auto& member : members_) member->now = now;
  std::vector<const collective::Schedule*> schedules;
  for (const collective::Schedule& schedule : schedules_) schedules.push_back(&schedule);
  progress_ = std::make_unique<CollectiveProgress>(
      std::move(schedules), static_cast<std::uint32_t>(members_.size()), slices_over(spec_.slices, spec_.channels),
      [this](const CollectiveProgress::TransferId& id, std::uint64_t offset, std::uint64_t bytes) {
        post(id, offset, bytes);
      },
      [this](std::uint32_t m) {
        Member& member = *members_[m];
        ++member.iterations_done;
        member.done_at = member.now;
      },
      [this](std::uint32_t slice, std::uint32_t m, std::uint32_t) {
        Member& member = *members_[m];
        member.world->events.schedule(member.now + member.delay, &member, slice);
      });
  // Without a schedule every member ends when the last joins: each rank
  // joins them all (nothing is posted), and counts its own at the end.
  for (std::uint32_t i = 0; i < members_.size(); ++i) {
    if (members_[i]->here || schedules_.empty()) progress_->join(i);
  }
}

void CollectiveRunner::Member::on_event(SimTime at, std::uint32_t slice) {
  now = at;
  runner->progress_->release(slice, index);
  runner->wake(*this);
}

void CollectiveRunner::post(const CollectiveProgress::TransferId& id, std::uint64_t offset, std::uint64_t bytes) {
  const collective::Transfer& transfer = progress_->schedule_of(id.slice).ranks[id.member][id.step].sends[id.index];
  Member& from = *members_[id.member];
  Sge sge{HostNode::kRegionBase + transfer.offset + offset, static_cast<std::uint32_t>(bytes), from.host->region().lkey};
  SendWr write;
  write.wr_id = work_id(id);
  write.opcode = WrOpcode::rdma_write_with_imm;
  write.send_flags = kSendSignaled;
  write.sg_list = {&sge, 1};
  write.imm_data = id.slice << kImmSliceShift | id.step;
  // All-to-all writes a receive buffer beside the send buffer.
  std::uint64_t receive_buffer = spec_.operation == collective::Operation::alltoall ? spec_.bytes : 0;
  write.rdma = {HostNode::kRegionBase + receive_buffer + transfer.remote_offset + offset, members_[transfer.to]->rkey};
  std::uint32_t channel = channel_of(id.slice, spec_.channels);
  if (from.host->engine().post_send(qpn_.at({id.member, transfer.to, channel}), write) != std::errc{}) {
    throw std::runtime_error("collective member " + std::to_string(id.member) + ": post_send refused");
  }
  from.posted = true;
}

// After the progress posted what it could for a member: its host sends.
void CollectiveRunner::wake(Member& member) {
  if (!member.posted) return;
  member.posted = false;
  member.host->wake(member.now);
}

void CollectiveRunner::completed(std::uint32_t host, const WorkCompletion& completion, SimTime now) {
  auto found = member_of_host_.find(host);
  if (found == member_of_host_.end() || !progress_) return;
  Member& member = *members_[found->second];
  if (member.failed) return;
  if (completion.status != WcStatus::success) {
    member.failed = true;
    return;
  }
  member.now = now;
  if (completion.opcode == WcOpcode::recv_rdma_with_imm) {
    arrived(member, completion);
  } else {
    sent(member, completion);
  }
  wake(member);
}

void CollectiveRunner::sent(Member& member, const WorkCompletion& completion) {
  CollectiveProgress::TransferId id;
  id.member = member.index;
  id.index = static_cast<std::uint32_t>(completion.wr_id);
  id.slice = static_cast<std::uint32_t>((completion.wr_id >> kSliceShift) & kSliceMask);
  id.step = static_cast<std::uint32_t>((completion.wr_id >> kStepShift) & kStepMask);
  if (id.slice >= progress_->slices()) return;
  const collective::Schedule& schedule = progress_->schedule_of(id.slice);
  if (id.step >= schedule.steps() || id.index >= schedule.ranks[id.member][id.step].sends.size()) return;
  progress_->sent(id);
}

// A WRITE landed: the receive it consumed is posted again for the next.
void CollectiveRunner::arrived(Member& member, const WorkCompletion& completion) {
  post_arrival_receive(*member.host, completion.qp_num, kCollectiveWork);
  std::uint32_t slice = completion.imm_data >> kImmSliceShift;
  std::uint32_t step = completion.imm_data & kStepMask;
  if (slice >= progress_->slices() || step >= progress_->schedule_of(slice).steps()) return;
  progress_->arrived(slice, member.index, step);
}

// The last member's end is the iteration's; the members learn of it a
// barrier later, and the next one starts then, or after the gap.
void CollectiveRunner::between_windows() {
  if (!running() || !progress_) return;
  auto finished = static_cast<std::uint32_t>(iteration_times_.size() + 1);
  SimTime last = 0;
  if (ranks_->size() == 1) {
    for (const auto& member : members_) {
      if (member->iterations_done < finished) return;
      last = std::max(last, member->done_at);
    }
  } else {  // every rank takes this branch at the same windows: running() agrees
    std::uint64_t counts[2] = {0, 0};  // members done, members failed
    std::uint64_t latest = 0;
    for (const auto& member : members_) {
      if (!member->here) continue;
      counts[1] += member->failed ? 1 : 0;
      if (member->iterations_done < finished) continue;
      ++counts[0];
      latest = std::max(latest, static_cast<std::uint64_t>(member->done_at));
    }
    ranks_->sum(counts);
    ranks_->max(std::span(&latest, 1));
    failed_anywhere_ = counts[1] > 0;
    if (counts[0] < members_.size()) return;
    last = static_cast<SimTime>(latest);
  }
  iteration_times_.push_back(last - iteration_start_);
  finished_at_ = last;
  progress_.reset();
  if (iteration_times_.size() < spec_.iterations) global_.events.schedule(last + barrier_ + spec_.iteration_gap, this, 0);
}

}  // namespace uroce::sim
