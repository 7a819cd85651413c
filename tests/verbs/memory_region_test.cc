// Memory region registration and the access checks every remote and local
// access goes through: key, PD, permission, bounds (including wrap-around).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "uroce/verbs_types.h"
#include "verbs/memory_region.h"

namespace uroce::verbs {
namespace {

constexpr std::uint32_t kPd = 1;
constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

std::uint64_t va(const std::vector<std::uint8_t>& buffer) { return reinterpret_cast<std::uintptr_t>(buffer.data()); }

TEST(MemoryRegion, RegistersWithDistinctUnguessableKeys) {
  MemoryRegionTable table(42);
  std::vector<std::uint8_t> buffer(4096);
  std::set<std::uint32_t> keys;
  for (int i = 0; i < 1000; ++i) {
    auto region = table.register_region(kPd, buffer.data(), buffer.size(), kAll);
    ASSERT_TRUE(region);
    EXPECT_NE((*region)->lkey, (*region)->rkey);
    keys.insert((*region)->lkey);
    keys.insert((*region)->rkey);
  }
  EXPECT_EQ(keys.size(), 2000u);
  // Keys are not small indices: at most a handful below 2^24 among 2000 random values.
  std::size_t small = 0;
  for (std::uint32_t key : keys) small += key < (1u << 24);
  EXPECT_LT(small, 40u);
}

TEST(MemoryRegion, RemoteWriteAndAtomicNeedLocalWrite) {
  MemoryRegionTable table(1);
  std::vector<std::uint8_t> buffer(64);
  EXPECT_EQ(table.register_region(kPd, buffer.data(), 64, kAccessRemoteWrite).error(), std::errc::invalid_argument);
  EXPECT_EQ(table.register_region(kPd, buffer.data(), 64, kAccessRemoteAtomic).error(), std::errc::invalid_argument);
  EXPECT_EQ(table.register_region(kPd, buffer.data(), 64, 0x100).error(), std::errc::invalid_argument);
  EXPECT_TRUE(table.register_region(kPd, buffer.data(), 64, kAccessRemoteRead));
  EXPECT_TRUE(table.register_region(kPd, buffer.data(), 64, 0));
}

TEST(MemoryRegion, RemoteAccessChecksKeyPdPermissionAndBounds) {
  MemoryRegionTable table(7);
  std::vector<std::uint8_t> buffer(1024);
  const MemoryRegion* readable = *table.register_region(kPd, buffer.data(), 1024, kAccessRemoteRead);
  const std::uint64_t base = va(buffer);

  auto ok = table.resolve_remote(readable->rkey, kPd, base + 1000, 24, kAccessRemoteRead);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, buffer.data() + 1000);

  EXPECT_EQ(table.resolve_remote(readable->rkey ^ 1, kPd, base, 8, kAccessRemoteRead).error(), AccessError::bad_key);
  EXPECT_EQ(table.resolve_remote(readable->lkey, kPd, base, 8, kAccessRemoteRead).error(), AccessError::bad_key);
  EXPECT_EQ(table.resolve_remote(readable->rkey, kPd + 1, base, 8, kAccessRemoteRead).error(), AccessError::wrong_pd);
  EXPECT_EQ(table.resolve_remote(readable->rkey, kPd, base, 8, kAccessRemoteWrite).error(),
            AccessError::no_permission);
  EXPECT_EQ(table.resolve_remote(readable->rkey, kPd, base + 1000, 25, kAccessRemoteRead).error(),
            AccessError::out_of_bounds);
  EXPECT_EQ(table.resolve_remote(readable->rkey, kPd, base - 1, 8, kAccessRemoteRead).error(),
            AccessError::out_of_bounds);
  EXPECT_EQ(table.resolve_remote(readable->rkey, kPd, base + 1025, 0x10, kAccessRemoteRead).error(),
            AccessError::out_of_bounds);
  // A range that wraps the 64-bit address space must not pass the bounds check.
  EXPECT_EQ(table.resolve_remote(readable->rkey, kPd, base + 8, UINT64_MAX - 4, kAccessRemoteRead).error(),
            AccessError::out_of_bounds);
  EXPECT_EQ(table.resolve_remote(readable->rkey, kPd, UINT64_MAX, 2, kAccessRemoteRead).error(),
            AccessError::out_of_bounds);
}

TEST(MemoryRegion, ZeroLengthRemoteAccessTouchesNothing) {
  MemoryRegionTable table(7);
  auto result = table.resolve_remote(0xDEADBEEF, kPd, 0x1234, 0, kAccessRemoteWrite);
  ASSERT_TRUE(result);
  EXPECT_EQ(*result, nullptr);
}

TEST(MemoryRegion, LocalAccessNeedsLocalWriteToWrite) {
  MemoryRegionTable table(3);
  std::vector<std::uint8_t> buffer(256);
  const MemoryRegion* read_only = *table.register_region(kPd, buffer.data(), 256, 0);
  EXPECT_TRUE(table.resolve_local(read_only->lkey, kPd, va(buffer), 256, false));
  EXPECT_EQ(table.resolve_local(read_only->lkey, kPd, va(buffer), 256, true).error(), AccessError::no_permission);
  EXPECT_EQ(table.resolve_local(read_only->rkey, kPd, va(buffer), 1, false).error(), AccessError::bad_key);
  EXPECT_EQ(table.resolve_local(read_only->lkey, kPd, va(buffer) + 200, 57, false).error(),
            AccessError::out_of_bounds);
}

TEST(MemoryRegion, DeregisterAndInvalidateRevokeKeys) {
  MemoryRegionTable table(5);
  std::vector<std::uint8_t> buffer(64);
  const MemoryRegion* region = *table.register_region(kPd, buffer.data(), 64, kAll);
  std::uint32_t lkey = region->lkey, rkey = region->rkey;
  EXPECT_TRUE(table.pd_in_use(kPd));
  EXPECT_FALSE(table.invalidate_rkey(rkey, kPd + 1));
  EXPECT_TRUE(table.invalidate_rkey(rkey, kPd));
  EXPECT_EQ(table.resolve_remote(rkey, kPd, va(buffer), 8, kAccessRemoteRead).error(), AccessError::bad_key);
  EXPECT_TRUE(table.resolve_local(lkey, kPd, va(buffer), 8, true));
  EXPECT_EQ(table.deregister(lkey), std::errc{});
  EXPECT_EQ(table.deregister(lkey), std::errc::invalid_argument);
  EXPECT_EQ(table.resolve_local(lkey, kPd, va(buffer), 8, false).error(), AccessError::bad_key);
  EXPECT_FALSE(table.pd_in_use(kPd));
}

// The table remembers the region its last remote access found: a key that
// worked a moment ago must still be refused once revoked, and a region
// registered since must never be reached through a stale memory of it.
TEST(MemoryRegion, AKeyThatWorkedIsRefusedOnceRevoked) {
  MemoryRegionTable table(9);
  std::vector<std::uint8_t> first(64), second(64);
  const MemoryRegion* one = *table.register_region(kPd, first.data(), 64, kAll);
  const MemoryRegion* two = *table.register_region(kPd, second.data(), 64, kAccessLocalWrite | kAccessRemoteRead);
  std::uint32_t one_lkey = one->lkey, one_rkey = one->rkey, two_rkey = two->rkey;

  ASSERT_TRUE(table.resolve_remote(one_rkey, kPd, va(first), 8, kAccessRemoteWrite));
  EXPECT_TRUE(table.invalidate_rkey(one_rkey, kPd));
  EXPECT_EQ(table.resolve_remote(one_rkey, kPd, va(first), 8, kAccessRemoteWrite).error(), AccessError::bad_key);

  ASSERT_TRUE(table.resolve_remote(two_rkey, kPd, va(second), 8, kAccessRemoteRead));
  // Remembered, and still checked: permission, PD and bounds.
  EXPECT_EQ(table.resolve_remote(two_rkey, kPd, va(second), 8, kAccessRemoteWrite).error(), AccessError::no_permission);
  EXPECT_EQ(table.resolve_remote(two_rkey, kPd + 1, va(second), 8, kAccessRemoteRead).error(), AccessError::wrong_pd);
  EXPECT_EQ(table.resolve_remote(two_rkey, kPd, va(second) + 60, 8, kAccessRemoteRead).error(),
            AccessError::out_of_bounds);
  EXPECT_EQ(table.deregister(two->lkey), std::errc{});
  EXPECT_EQ(table.resolve_remote(two_rkey, kPd, va(second), 8, kAccessRemoteRead).error(), AccessError::bad_key);

  // Regions registered after the revocations get keys of their own; the
  // revoked ones stay refused whatever was found in between.
  for (int i = 0; i < 64; ++i) {
    std::vector<std::uint8_t> scratch(16);
    const MemoryRegion* fresh = *table.register_region(kPd, scratch.data(), 16, kAll);
    std::uint32_t fresh_lkey = fresh->lkey, fresh_rkey = fresh->rkey;
    ASSERT_TRUE(table.resolve_remote(fresh_rkey, kPd, va(scratch), 16, kAccessRemoteWrite));
    ASSERT_EQ(table.resolve_remote(one_rkey, kPd, va(first), 8, kAccessRemoteWrite).error(), AccessError::bad_key);
    ASSERT_EQ(table.resolve_remote(two_rkey, kPd, va(second), 8, kAccessRemoteRead).error(), AccessError::bad_key);
    ASSERT_TRUE(table.resolve_remote(fresh_rkey, kPd, va(scratch), 16, kAccessRemoteWrite));
    ASSERT_EQ(table.deregister(fresh_lkey), std::errc{});
    ASSERT_EQ(table.resolve_remote(fresh_rkey, kPd, va(scratch), 16, kAccessRemoteWrite).error(), AccessError::bad_key);
  }
  EXPECT_EQ(table.deregister(one_lkey), std::errc{});
}

// ibv_rereg_mr: the keys stay, and every access is checked against the new
// PD, range and access from then on; a refused change leaves the region as
// it was.
TEST(MemoryRegion, ReregisteringKeepsTheKeysAndChecksTheNewAttributes) {
  MemoryRegionTable table(7);
  std::vector<std::uint8_t> first(4096), second(4096);
  const MemoryRegion* region = *table.register_region(kPd, first.data(), first.size(), kAll);
  std::uint32_t lkey = region->lkey, rkey = region->rkey;
  std::uint64_t changes = table.changes();

  ASSERT_EQ(table.reregister(lkey, kPd, second.data(), second.size(), kAccessLocalWrite, std::nullopt), std::errc{});
  EXPECT_GT(table.changes(), changes);
  EXPECT_EQ(region->lkey, lkey);
  EXPECT_EQ(region->rkey, rkey);
  EXPECT_FALSE(table.resolve_local(lkey, kPd, va(first), 8, false));  // the old range is gone
  EXPECT_TRUE(table.resolve_local(lkey, kPd, va(second), 8, true));
  EXPECT_EQ(table.resolve_remote(rkey, kPd, va(second), 8, kAccessRemoteWrite).error(), AccessError::no_permission);

  ASSERT_EQ(table.reregister(lkey, kPd + 1, second.data(), second.size(), kAll, std::nullopt), std::errc{});
  EXPECT_EQ(table.resolve_local(lkey, kPd, va(second), 8, true).error(), AccessError::wrong_pd);
  EXPECT_TRUE(table.resolve_remote(rkey, kPd + 1, va(second), 8, kAccessRemoteWrite));

  // REMOTE_WRITE without LOCAL_WRITE is refused, and nothing changes.
  EXPECT_EQ(table.reregister(lkey, kPd, first.data(), first.size(), kAccessRemoteWrite, std::nullopt),
            std::errc::invalid_argument);
  EXPECT_TRUE(table.resolve_remote(rkey, kPd + 1, va(second), 8, kAccessRemoteWrite));
  EXPECT_EQ(table.reregister(lkey ^ 1, kPd, first.data(), first.size(), kAll, std::nullopt),
            std::errc::invalid_argument);
}

// An implicit on-demand region is the whole address space: any page the
// process mapped is reachable, and a page it unmapped, or mapped read-only
// for a write, is refused (unmapped) instead of crashing the process.
TEST(MemoryRegion, AnImplicitRegionChecksEachAccessAgainstTheProcessesPages) {
  MemoryRegionTable table(11);
  const MemoryRegion* region =
      *table.register_region(kPd, nullptr, UINT64_MAX, kAccessLocalWrite | kAccessRemoteWrite | kAccessOnDemand);
  EXPECT_TRUE(region->implicit);
  EXPECT_EQ(table.register_region(kPd, nullptr, UINT64_MAX, kAccessLocalWrite).error(), std::errc::bad_address);

  auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  void* mapped = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  auto base = reinterpret_cast<std::uint64_t>(mapped);
  ASSERT_EQ(munmap(reinterpret_cast<void*>(base + page), page), 0);
  ASSERT_EQ(mprotect(reinterpret_cast<void*>(base + 2 * page), page, PROT_READ), 0);

  auto written = table.resolve_remote(region->rkey, kPd, base + 8, 16, kAccessRemoteWrite);
  ASSERT_TRUE(written);
  EXPECT_EQ(*written, reinterpret_cast<std::uint8_t*>(base + 8));
  EXPECT_EQ(table.resolve_remote(region->rkey, kPd, base + page + 8, 16, kAccessRemoteWrite).error(),
            AccessError::unmapped);
  EXPECT_EQ(table.resolve_remote(region->rkey, kPd, base + page - 8, 16, kAccessRemoteWrite).error(),
            AccessError::unmapped);  // straddles into the hole
  EXPECT_EQ(table.resolve_local(region->lkey, kPd, base + 2 * page, 16, true).error(), AccessError::unmapped);
  EXPECT_TRUE(table.resolve_local(region->lkey, kPd, base + 2 * page, 16, false));  // read-only reads
  EXPECT_EQ(table.resolve_remote(region->rkey, kPd + 1, base, 8, kAccessRemoteWrite).error(), AccessError::wrong_pd);
  munmap(mapped, page);
  munmap(reinterpret_cast<void*>(base + 2 * page), page);
}

}  // namespace
}  // namespace uroce::verbs
