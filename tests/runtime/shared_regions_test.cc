// Shared regions (runtime::SharedRegions) and their reading side
// (port::ExtentMappings), in one process: a region's pages move onto a
// sealed memfd with their bytes and back; only whole pages of private
// anonymous writable memory move; a reader maps the file by pid, fd and id
// and refuses anything else it is named; or copies a peer's bytes out of its
// memory, as far as they are mapped (a forked child stands for the peer).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "port/extent_mappings.h"
#include "runtime/shared_regions.h"

namespace uroce {
namespace {

using runtime::SharedRegions;

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// Anonymous private pages, unmapped at the end.
struct Pages {
  explicit Pages(std::size_t count, int protection = PROT_READ | PROT_WRITE) : length(count * kPage) {
    void* mapped = ::mmap(nullptr, length, protection, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = mapped == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(mapped);
  }
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  ~Pages() {
    if (base != nullptr) ::munmap(base, length);
  }
  std::size_t length;
  std::uint8_t* base;
};

// The /proc/self/maps line of the mapping that holds addr.
std::string mapping_of(const void* addr) {
  auto at = reinterpret_cast<std::uintptr_t>(addr);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream(line) >> std::hex >> start >> dash >> end;
    if (start <= at && at < end) return line;
  }
  return "";
}

// The VmFlags of the mapping that holds addr, from /proc/self/smaps.
std::string vm_flags_of(const void* addr) {
  auto at = reinterpret_cast<std::uintptr_t>(addr);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> start >> dash >> end && dash == '-') inside = start <= at && at < end;
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

void fill(std::uint8_t* bytes, std::size_t length, std::uint8_t seed) {
  for (std::size_t i = 0; i < length; ++i) bytes[i] = static_cast<std::uint8_t>(seed + i * 31 + (i >> 10));
}

TEST(SharedRegions, ARegionMovesOntoASealedFileWithItsBytesAndBack) {
  Pages pages(4);
  ASSERT_NE(pages.base, nullptr);
  fill(pages.base, pages.length, 3);
  std::vector<std::uint8_t> before(pages.base, pages.base + pages.length);

  auto backing = SharedRegions::process().share(pages.base, pages.length);
  ASSERT_TRUE(backing);
  EXPECT_EQ(backing->pid, static_cast<std::uint32_t>(::getpid()));
  EXPECT_EQ(backing->offset, 0u);
  EXPECT_EQ(std::memcmp(pages.base, before.data(), pages.length), 0);
  EXPECT_NE(mapping_of(pages.base).find(port::shared_region_link_name(backing->id)), std::string::npos)
      << mapping_of(pages.base);
  EXPECT_NE(vm_flags_of(pages.base).find(" dc"), std::string::npos) << vm_flags_of(pages.base);  // not inherited
  // What the program writes is what the file holds.
  pages.base[kPage + 5] = 0xEE;
  std::uint8_t in_file = 0;
  ASSERT_EQ(::pread(backing->fd, &in_file, 1, static_cast<off_t>(kPage + 5)), 1);
  EXPECT_EQ(in_file, 0xEE);
  EXPECT_NE(::fcntl(backing->fd, F_GET_SEALS) & F_SEAL_SHRINK, 0);
  before[kPage + 5] = 0xEE;

  SharedRegions::process().unshare(pages.base, pages.length);
  EXPECT_EQ(std::memcmp(pages.base, before.data(), pages.length), 0);
  EXPECT_EQ(mapping_of(pages.base).find("memfd"), std::string::npos) << mapping_of(pages.base);
  EXPECT_EQ(::fcntl(backing->fd, F_GETFD), -1);  // the file is closed
  pages.base[0] = 1;                              // and the pages still writable
}

TEST(SharedRegions, ARangeInsideASharedOneTakesAReferenceOnTheSameFile) {
  Pages pages(8);
  auto whole = SharedRegions::process().share(pages.base, pages.length);
  ASSERT_TRUE(whole);
  auto inner = SharedRegions::process().share(pages.base + 2 * kPage + 100, 1000);
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->fd, whole->fd);
  EXPECT_EQ(inner->id, whole->id);
  EXPECT_EQ(inner->offset, 2 * kPage + 100);
  SharedRegions::process().unshare(pages.base, pages.length);
  EXPECT_NE(mapping_of(pages.base).find("memfd"), std::string::npos);  // the inner one still holds it
  SharedRegions::process().unshare(pages.base + 2 * kPage + 100, 1000);
  EXPECT_EQ(mapping_of(pages.base).find("memfd"), std::string::npos);
}

TEST(SharedRegions, OnlyWholePagesOfPrivateAnonymousWritableMemoryMove) {
  Pages pages(4);
  EXPECT_FALSE(SharedRegions::process().share(pages.base + 64, kPage));  // starts inside a page
  EXPECT_FALSE(SharedRegions::process().share(pages.base, kPage + 1));   // ends inside one
  EXPECT_FALSE(SharedRegions::process().share(pages.base, 0));
  Pages read_only(2, PROT_READ);
  EXPECT_FALSE(SharedRegions::process().share(read_only.base, read_only.length));

  char path[] = "/tmp/uroce-shared-XXXXXX";
  int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  ::unlink(path);
  ASSERT_EQ(::ftruncate(file, static_cast<off_t>(2 * kPage)), 0);
  void* mapped = ::mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, file, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  EXPECT_FALSE(SharedRegions::process().share(mapped, 2 * kPage));  // a file mapping keeps its file
  ::munmap(mapped, 2 * kPage);
  ::close(file);

  // A range that only partly overlaps a shared one.
  auto first = SharedRegions::process().share(pages.base, 2 * kPage);
  ASSERT_TRUE(first);
  EXPECT_FALSE(SharedRegions::process().share(pages.base + kPage, 2 * kPage));
  SharedRegions::process().unshare(pages.base, 2 * kPage);
}

TEST(SharedRegions, PagesTheProgramUnmappedAreNotMappedAgain) {
  Pages pages(2);
  auto backing = SharedRegions::process().share(pages.base, pages.length);
  ASSERT_TRUE(backing);
  ASSERT_EQ(::munmap(pages.base, pages.length), 0);
  SharedRegions::process().unshare(pages.base, pages.length);
  EXPECT_EQ(mapping_of(pages.base), "");
  pages.base = nullptr;
}

class ExtentMappingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(pages_.base, nullptr);
    fill(pages_.base, pages_.length, 9);
    auto shared = SharedRegions::process().share(pages_.base, pages_.length);
    ASSERT_TRUE(shared);
    backing_ = *shared;
  }
  void TearDown() override { SharedRegions::process().unshare(pages_.base, pages_.length); }

  PayloadExtent extent(std::uint64_t offset) const { return {backing_.pid, backing_.fd, backing_.id, offset}; }

  Pages pages_{4};
  RegionBacking backing_;
  port::ExtentMappings mappings_;
};

TEST_F(ExtentMappingsTest, TheNamedBytesAreTheRegionsBytes) {
  auto bytes = mappings_.resolve(extent(100), 3 * kPage);
  ASSERT_TRUE(bytes);
  ASSERT_EQ(bytes->size(), 3 * kPage);
  EXPECT_EQ(std::memcmp(bytes->data(), pages_.base + 100, bytes->size()), 0);
  pages_.base[200] = 0x5A;  // one file: a later write shows
  EXPECT_EQ((*mappings_.resolve(extent(200), 1))[0], 0x5A);
  EXPECT_EQ(mappings_.mapped_files(), 1u);
}

TEST_F(ExtentMappingsTest, BytesOutsideTheFileOrAFileOfAnotherNameAreRefused) {
  EXPECT_FALSE(mappings_.resolve(extent(pages_.length - 10), 11));
  EXPECT_FALSE(mappings_.resolve(extent(pages_.length + 1), 0));
  EXPECT_FALSE(mappings_.resolve(extent(~std::uint64_t{0} - 5), 10));  // would wrap
  EXPECT_TRUE(mappings_.resolve(extent(pages_.length - 10), 10));
  PayloadExtent wrong_id = extent(0);
  wrong_id.id += 1;
  EXPECT_FALSE(mappings_.resolve(wrong_id, 1));
  PayloadExtent wrong_fd = extent(0);
  wrong_fd.fd = 0;  // standard input
  EXPECT_FALSE(mappings_.resolve(wrong_fd, 1));
  PayloadExtent no_fd = extent(0);
  no_fd.fd = -1;
  EXPECT_FALSE(mappings_.resolve(no_fd, 1));
  PayloadExtent no_process = extent(0);
  no_process.pid = 0x7FFFFFF0;
  EXPECT_FALSE(mappings_.resolve(no_process, 1));
}

TEST_F(ExtentMappingsTest, AFileThatCouldShrinkIsRefused) {
  std::uint64_t id = 0xABCDEF;
  int file = ::memfd_create(port::shared_region_file_name(id).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(file, 0);
  ASSERT_EQ(::ftruncate(file, static_cast<off_t>(kPage)), 0);
  PayloadExtent unsealed{backing_.pid, file, id, 0};
  EXPECT_FALSE(mappings_.resolve(unsealed, 16));
  ASSERT_EQ(::fcntl(file, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_TRUE(mappings_.resolve(unsealed, 16));
  ::close(file);
}

TEST_F(ExtentMappingsTest, AtMostKMostMappedFilesStayMapped) {
  std::vector<std::unique_ptr<Pages>> regions;
  std::vector<RegionBacking> backings;
  for (std::size_t i = 0; i < port::ExtentMappings::kMostMapped + 4; ++i) {
    regions.push_back(std::make_unique<Pages>(1));
    auto shared = SharedRegions::process().share(regions.back()->base, kPage);
    ASSERT_TRUE(shared);
    backings.push_back(*shared);
    EXPECT_TRUE(mappings_.resolve({shared->pid, shared->fd, shared->id, 0}, kPage));
  }
  EXPECT_EQ(mappings_.mapped_files(), port::ExtentMappings::kMostMapped);
  EXPECT_TRUE(mappings_.resolve({backings[0].pid, backings[0].fd, backings[0].id, 0}, 1));  // mapped again
  for (const auto& region : regions) SharedRegions::process().unshare(region->base, kPage);
}

TEST_F(ExtentMappingsTest, APeersMemoryIsCopiedAsFarAsItIsMapped) {
  // Two pages with a pattern, the second unmapped in the child only.
  auto* pages = static_cast<std::uint8_t*>(
      ::mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(pages, MAP_FAILED);
  for (std::size_t i = 0; i < 2 * kPage; ++i) pages[i] = static_cast<std::uint8_t>(i * 3 + 1);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    ::munmap(pages + kPage, kPage);
    char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  auto peer = static_cast<std::uint32_t>(child);
  auto address = reinterpret_cast<std::uintptr_t>(pages);
  // A try at an unmapped address says nothing about the process: not kept.
  EXPECT_FALSE(mappings_.may_read_process(peer, address + kPage));
  EXPECT_TRUE(mappings_.may_read_process(peer, address));
  std::vector<std::uint8_t> copy(2 * kPage, 0);
  EXPECT_EQ(mappings_.copy_from_process(peer, address + 100, copy.data(), kPage - 100), kPage - 100);
  EXPECT_EQ(std::memcmp(copy.data(), pages + 100, kPage - 100), 0);
  // Across into the page the child unmapped: the copy stops at its start.
  EXPECT_EQ(mappings_.copy_from_process(peer, address + 100, copy.data(), kPage), kPage - 100);
  EXPECT_EQ(mappings_.copy_from_process(peer, address + kPage, copy.data(), 10), 0u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // A process that is gone is read no more.
  EXPECT_EQ(mappings_.copy_from_process(peer, address, copy.data(), 10), 0u);
  ::close(ready[0]);
  ::close(ready[1]);
  ::munmap(pages, 2 * kPage);
}

TEST_F(ExtentMappingsTest, AProcessThatDoesNotExistMayNotBeRead) {
  std::uint8_t byte = 0;
  EXPECT_FALSE(mappings_.may_read_process(0x7ffffff0, reinterpret_cast<std::uintptr_t>(&byte)));
}

}  // namespace
}  // namespace uroce
