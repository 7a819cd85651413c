// A collective's progress without a fabric: which slices of which transfers
// it asks to post, in what order, as members join and transfers complete.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/collective_progress.h"

namespace uroce::sim {
namespace {

struct Posted {
  CollectiveProgress::TransferId id;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

struct Recorder {
  std::vector<Posted> posted;
  std::vector<std::uint32_t> done;
  CollectiveProgress make(const collective::Schedule* schedule, std::uint32_t members, std::uint32_t slices) {
    std::vector<const collective::Schedule*> schedules;
    if (schedule != nullptr) schedules.push_back(schedule);
    return CollectiveProgress(
        std::move(schedules), members, slices,
        [this](const CollectiveProgress::TransferId& id, std::uint64_t offset, std::uint64_t bytes) {
          posted.push_back({id, offset, bytes});
        },
        [this](std::uint32_t member) { done.push_back(member); });
  }
};

collective::Schedule ring(std::uint32_t ranks, std::uint64_t bytes) {
  auto schedule = collective::make_schedule(collective::Operation::all_reduce, collective::Algorithm::ring, ranks, bytes);
  EXPECT_TRUE(schedule);
  return *schedule;
}

// A WRITE that was sent and arrived (the ring of two: member m sends to 1 - m).
void completed(CollectiveProgress& progress, const CollectiveProgress::TransferId& id) {
  progress.sent(id);
  progress.arrived(id.slice, progress.receiver_of(id), id.step);
}

TEST(CollectiveProgress, EachSliceCarriesItsShareOfEveryTransfer) {
  collective::Schedule schedule = ring(2, 1000);  // 2 steps, one 500-byte transfer each way per step
  Recorder recorder;
  CollectiveProgress progress = recorder.make(&schedule, 2, 3);
  progress.join(0);
  progress.join(1);
  // Step 0 of every slice, for both members: 167 + 167 + 166 bytes of each 500.
  ASSERT_EQ(recorder.posted.size(), 6u);
  std::uint64_t member0 = 0;
  for (const Posted& p : recorder.posted) {
    EXPECT_EQ(p.id.step, 0u);
    if (p.id.member == 0) {
      EXPECT_EQ(p.offset, member0);
      member0 += p.bytes;
    }
  }
  EXPECT_EQ(member0, 500u);
  EXPECT_EQ(recorder.posted[0].bytes, 167u);
  EXPECT_EQ(recorder.posted[2].bytes, 166u);
}

TEST(CollectiveProgress, ASliceMovesOnWithoutWaitingForTheOthers) {
  collective::Schedule schedule = ring(2, 1000);
  Recorder recorder;
  CollectiveProgress progress = recorder.make(&schedule, 2, 2);
  progress.join(0);
  progress.join(1);
  ASSERT_EQ(recorder.posted.size(), 4u);  // step 0, slices 0 and 1, both members
  // Slice 0 of step 0 completes both ways: slice 0's step 1 goes, slice 1 still waits.
  completed(progress, {0, 0, 0, 0});
  completed(progress, {0, 1, 0, 0});
  ASSERT_EQ(recorder.posted.size(), 6u);
  for (std::size_t i = 4; i < 6; ++i) {
    EXPECT_EQ(recorder.posted[i].id.slice, 0u);
    EXPECT_EQ(recorder.posted[i].id.step, 1u);
  }
  EXPECT_TRUE(recorder.done.empty());
  completed(progress, {0, 0, 1, 0});
  completed(progress, {0, 1, 1, 0});
  EXPECT_TRUE(recorder.done.empty());  // slice 1 is not done
  completed(progress, {1, 0, 0, 0});
  completed(progress, {1, 1, 0, 0});
  completed(progress, {1, 0, 1, 0});
  completed(progress, {1, 1, 1, 0});
  std::sort(recorder.done.begin(), recorder.done.end());
  EXPECT_EQ(recorder.done, (std::vector<std::uint32_t>{0, 1}));
}

TEST(CollectiveProgress, AStepEndsWhenItsSendsCompletedAndItsReceivesArrived) {
  collective::Schedule schedule = ring(2, 1000);
  Recorder recorder;
  CollectiveProgress progress = recorder.make(&schedule, 2, 1);
  progress.join(0);
  progress.join(1);
  ASSERT_EQ(recorder.posted.size(), 2u);
  progress.arrived(0, 1, 0);  // member 0's step 0 reached member 1, member 1's WRITE not yet complete
  EXPECT_EQ(recorder.posted.size(), 2u);
  progress.sent({0, 1, 0, 0});  // member 1's step 0 is complete: its step 1 goes
  ASSERT_EQ(recorder.posted.size(), 3u);
  EXPECT_EQ(recorder.posted[2].id.member, 1u);
  EXPECT_EQ(recorder.posted[2].id.step, 1u);
  progress.sent({0, 0, 0, 0});  // member 0 still waits for member 1's step 0 to arrive
  EXPECT_EQ(recorder.posted.size(), 3u);
  progress.arrived(0, 0, 0);
  EXPECT_EQ(recorder.posted.size(), 4u);
}

TEST(CollectiveProgress, ATransferGoesBeforeItsReceiverJoinsAndCountsWhenItDoes) {
  collective::Schedule schedule = ring(2, 1000);
  Recorder recorder;
  CollectiveProgress progress = recorder.make(&schedule, 2, 1);
  progress.join(0);
  ASSERT_EQ(recorder.posted.size(), 1u);  // member 0's step 0, to member 1, which has not joined
  progress.sent({0, 0, 0, 0});
  progress.arrived(0, 1, 0);  // it lands before member 1 joins
  EXPECT_EQ(recorder.posted.size(), 1u);
  progress.join(1);  // member 1's step 0 goes; its receive is already counted
  ASSERT_EQ(recorder.posted.size(), 2u);
  progress.sent({0, 1, 0, 0});
  ASSERT_EQ(recorder.posted.size(), 3u);  // so its step 1 follows as soon as its own send is done
  EXPECT_EQ(recorder.posted[2].id.member, 1u);
  EXPECT_EQ(recorder.posted[2].id.step, 1u);
}

TEST(CollectiveProgress, SlicesAreCutSoEachCarriesAByte) {
  collective::Schedule schedule = ring(4, 8);  // transfers of 2 bytes
  Recorder recorder;
  CollectiveProgress progress = recorder.make(&schedule, 4, 16);
  EXPECT_EQ(progress.slices(), 2u);
}

TEST(CollectiveProgress, ABarrierEndsForEveryoneWhenTheLastJoins) {
  Recorder recorder;
  CollectiveProgress progress = recorder.make(nullptr, 3, 4);
  progress.join(2);
  progress.join(0);
  EXPECT_TRUE(recorder.done.empty());
  progress.join(1);
  EXPECT_EQ(recorder.done, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_TRUE(recorder.posted.empty());
}

}  // namespace
}  // namespace uroce::sim
