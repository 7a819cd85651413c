// One collective's members and slices, stepped by their transfers.
#include "sim/collective_progress.h"

#include <algorithm>

namespace uroce::sim {

namespace {

// The share of `bytes` that slice j of `slices` carries, and where it starts.
std::uint64_t slice_bytes(std::uint64_t bytes, std::uint32_t slices, std::uint32_t j) {
  return bytes / slices + (j < bytes % slices ? 1 : 0);
}
std::uint64_t slice_offset(std::uint64_t bytes, std::uint32_t slices, std::uint32_t j) {
  return bytes / slices * j + std::min<std::uint64_t>(j, bytes % slices);
}

}  // namespace

CollectiveProgress::CollectiveProgress(std::vector<const collective::Schedule*> schedules, std::uint32_t members,
                                       std::uint32_t slices, Post post, Done done, Gate gate)
    : schedules_(std::move(schedules)),
      slices_(std::max<std::uint32_t>(slices, 1)),
      post_(std::move(post)),
      done_(std::move(done)),
      gate_(std::move(gate)) {
  members_.resize(members);
  if (schedules_.empty()) return;
  for (const collective::Schedule* schedule : schedules_) {
    slices_ = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(slices_, std::max<std::uint64_t>(schedule->smallest_transfer(), 1)));
  }
  for (Member& member : members_) {
    member.slices.resize(slices_);
    for (std::uint32_t slice = 0; slice < slices_; ++slice) {
      Pipeline& pipeline = member.slices[slice];
      pipeline.sends_done.assign(schedule_of(slice).steps(), 0);
      pipeline.receives_done.assign(schedule_of(slice).steps(), 0);
    }
  }
}

void CollectiveProgress::join(std::uint32_t member) {
  Member& joining = members_[member];
  if (joining.joined) return;
  joining.joined = true;
  if (schedules_.empty()) {
    if (++joined_ < members_.size()) return;
    for (std::uint32_t m = 0; m < members_.size(); ++m) done_(m);
    return;
  }
  for (std::uint32_t slice = 0; slice < slices_; ++slice) advance(slice, member);
}

bool CollectiveProgress::step_complete(std::uint32_t slice, std::uint32_t member, std::uint32_t step) const {
  const collective::Step& planned = schedule_of(slice).ranks[member][step];
  const Pipeline& pipeline = members_[member].slices[slice];
  return pipeline.sends_done[step] == planned.sends.size() &&
         pipeline.receives_done[step] == planned.receives_from.size();
}

// Posts the member's next steps in this slice while the one before is
// complete; after the last, the slice is done, and with every slice the member.
void CollectiveProgress::advance(std::uint32_t slice, std::uint32_t member) {
  Member& m = members_[member];
  Pipeline& pipeline = m.slices[slice];
  if (!m.joined || pipeline.done) return;
  auto steps = static_cast<std::uint32_t>(schedule_of(slice).steps());
  for (;;) {
    std::uint32_t step = pipeline.posted;
    if (step > 0 && !step_complete(slice, member, step - 1)) return;
    if (step == steps) {
      pipeline.done = true;
      if (++m.slices_done == slices_) done_(member);
      return;
    }
    if (gate_ && pipeline.released == step) {
      if (!pipeline.asked) {
        pipeline.asked = true;
        gate_(slice, member, step);
      }
      return;
    }
    const collective::Step& planned = schedule_of(slice).ranks[member][step];
    for (std::uint32_t i = 0; i < planned.sends.size(); ++i) send({slice, member, step, i});
    ++pipeline.posted;
    pipeline.asked = false;
  }
}

void CollectiveProgress::release(std::uint32_t slice, std::uint32_t member) {
  Pipeline& pipeline = members_[member].slices[slice];
  if (!pipeline.asked || pipeline.released > pipeline.posted) return;
  pipeline.released = pipeline.posted + 1;
  advance(slice, member);
}

void CollectiveProgress::send(const TransferId& id) {
  std::uint64_t bytes = schedule_of(id.slice).ranks[id.member][id.step].sends[id.index].bytes;
  post_(id, slice_offset(bytes, slices_, id.slice), slice_bytes(bytes, slices_, id.slice));
}

void CollectiveProgress::sent(const TransferId& id) {
  ++members_[id.member].slices[id.slice].sends_done[id.step];
  advance(id.slice, id.member);
}

void CollectiveProgress::arrived(std::uint32_t slice, std::uint32_t to, std::uint32_t step) {
  ++members_[to].slices[slice].receives_done[step];
  advance(slice, to);
}

}  // namespace uroce::sim
