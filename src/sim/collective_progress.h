// How one collective advances, member by member: the steps of a schedule
// (collective/schedule.h) run as `slices` pipelines, each carrying its
// share of every transfer, as NCCL cuts a step's data into slices so that
// a step's first slice moves on while its last is still on the wire. A
// member posts slice j of step s once its slice j of step s - 1 is
// complete (its sends done and the transfers to it arrived). A sender
// does not wait for its receiver to join (NCCL's connections have their
// buffers from the start): a transfer that arrives first counts once the
// receiver joins. A collective without a schedule (a barrier, a group of
// one) ends for every member when the last joins. Free of the fabric
// and of time: the owner posts the WRITEs it is asked for and reports,
// for each, when the sender's WRITE completed (sent) and when the data
// reached the receiver (arrived: a WRITE with immediate's receive
// completion, as NCCL's receiver sees its flag land), and, given a gate,
// is asked before each step and releases it when it may go (after the
// step's compute, say). With a schedule, each call (join included)
// changes that one member's state only, and a member's callbacks are
// about that member: members in different partitions of the fabric may
// call at once, from their threads. Each channel
// may follow a schedule of its own (NCCL's rings enter each server at
// another GPU per channel, collective/rank_layout.h): slice j follows
// schedule j mod schedules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "collective/schedule.h"

namespace uroce::sim {

// A collective cut into `slices` over `channels` QPs per pair of members:
// at least one slice per channel, and slice j goes on channel j mod channels.
inline std::uint32_t slices_over(std::uint32_t slices, std::uint32_t channels) {
  return std::max({slices, channels, 1u});
}
inline std::uint32_t channel_of(std::uint32_t slice, std::uint32_t channels) {
  return slice % std::max(channels, 1u);
}
// The send queue each of those QPs needs: a member has at most one step's
// WRITE per slice in flight, and a step sends to a peer once; four times that.
inline std::uint32_t send_queue_depth(std::uint32_t slices, std::uint32_t channels) {
  std::uint32_t per_channel = std::max(channels, 1u);
  return 4 * ((slices_over(slices, channels) + per_channel - 1) / per_channel);
}

class CollectiveProgress {
 public:
  // A slice of one transfer: the index-th send of member's step.
  struct TransferId {
    std::uint32_t slice = 0, member = 0, step = 0, index = 0;
  };
  // post(id, offset, bytes): send that slice, `offset` bytes into the
  // transfer; done(member): the member's part is over.
  using Post = std::function<void(const TransferId& id, std::uint64_t offset, std::uint64_t bytes)>;
  using Done = std::function<void(std::uint32_t member)>;
  // gate(slice, member, step): the step may start; call release(slice,
  // member) to post it.
  using Gate = std::function<void(std::uint32_t slice, std::uint32_t member, std::uint32_t step)>;

  // schedules: one per channel, all of the same members; none for a
  // barrier or a group of one. slices is cut down so that every slice of
  // every transfer carries at least a byte.
  CollectiveProgress(std::vector<const collective::Schedule*> schedules, std::uint32_t members, std::uint32_t slices,
                     Post post, Done done, Gate gate = {});
  // The schedule slice j follows.
  const collective::Schedule& schedule_of(std::uint32_t slice) const {
    return *schedules_[slice % schedules_.size()];
  }

  std::uint32_t slices() const { return slices_; }
  void join(std::uint32_t member);
  // The sender's WRITE of that slice completed.
  void sent(const TransferId& id);
  // A slice of a transfer of `step` (the sender's and the receiver's) reached member `to`.
  void arrived(std::uint32_t slice, std::uint32_t to, std::uint32_t step);
  // Who receives that slice.
  std::uint32_t receiver_of(const TransferId& id) const {
    return schedule_of(id.slice).ranks[id.member][id.step].sends[id.index].to;
  }
  void release(std::uint32_t slice, std::uint32_t member);

 private:
  struct Pipeline {  // one member's progress in one slice
    std::uint32_t posted = 0;  // steps posted
    std::uint32_t released = 0;  // steps the gate let go
    bool asked = false;          // the gate was asked for step `posted`
    std::vector<std::uint32_t> sends_done, receives_done;  // per step
    bool done = false;
  };
  struct Member {
    bool joined = false;
    std::vector<Pipeline> slices;
    std::uint32_t slices_done = 0;
  };

  bool step_complete(std::uint32_t slice, std::uint32_t member, std::uint32_t step) const;
  void advance(std::uint32_t slice, std::uint32_t member);
  void send(const TransferId& id);

  std::vector<const collective::Schedule*> schedules_;
  std::uint32_t slices_;
  Post post_;
  Done done_;
  Gate gate_;
  std::vector<Member> members_;
  std::uint32_t joined_ = 0;  // without a schedule
};

}  // namespace uroce::sim
