// SharedRegions: moving registered pages onto a memfd and back (see the header).
#include "runtime/shared_regions.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "port/extent_mappings.h"

namespace uroce::runtime {
namespace {

struct Mapping {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  std::string permissions;
  std::string path;  // empty for anonymous memory
};

// Whether /proc/self/maps covers [start, start + length) without a gap with
// mappings that all pass `fits`.
bool covered_by(std::uintptr_t start, std::uint64_t length, const std::function<bool(const Mapping&)>& fits) {
  std::ifstream maps("/proc/self/maps");
  std::uintptr_t reached = start;
  const std::uintptr_t end = start + length;
  for (std::string line; reached < end && std::getline(maps, line);) {
    std::istringstream fields(line);
    Mapping mapping;
    std::string range, offset, device, inode;
    fields >> range >> mapping.permissions >> offset >> device >> inode;
    std::getline(fields >> std::ws, mapping.path);
    auto dash = range.find('-');
    if (dash == std::string::npos) return false;
    mapping.start = std::stoull(range.substr(0, dash), nullptr, 16);
    mapping.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (mapping.end <= reached) continue;
    if (mapping.start > reached || !fits(mapping)) return false;
    reached = mapping.end;
  }
  return reached >= end;
}

// Moves the mapping at `from` onto `to`, replacing what was there, in one
// step. False when it failed, or the kernel put it anywhere else: the
// mapping from `from` is then unmapped and `to` left as it was. The
// system call itself, not the C library's mremap: UCX's memory hooks
// replace that function with one that drops the fifth argument, and the
// mapping then landed at address 0 while the buffer stayed where it was
// (Open MPI over UCX read zeros from every shared region).
bool move_mapping(void* from, std::uint64_t length, void* to) {
  long moved = ::syscall(SYS_mremap, from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, to);
  if (moved == -1) {
    ::munmap(from, length);
    return false;
  }
  if (reinterpret_cast<void*>(moved) != to) {
    ::munmap(reinterpret_cast<void*>(moved), length);
    return false;
  }
  return true;
}

// Copies between memory and the file in the kernel (the pread and pwrite
// system calls): the bytes are the pages' whatever the program holds them
// to be. A region may be deregistered after the program freed its memory,
// as verbs allow, and a sanitizer flags any read of it from user space.
bool copy_with_file(int fd, void* memory, std::uint64_t length, bool into_file) {
  auto* bytes = static_cast<std::uint8_t*>(memory);
  for (std::uint64_t done = 0; done < length;) {
    long moved = ::syscall(into_file ? SYS_pwrite64 : SYS_pread64, fd, bytes + done, length - done,
                           static_cast<off_t>(done));
    if (moved < 0 && errno == EINTR) continue;
    if (moved <= 0) return false;
    done += static_cast<std::uint64_t>(moved);
  }
  return true;
}

bool private_anonymous_writable(const Mapping& mapping) {
  return mapping.permissions == "rw-p" && (mapping.path.empty() || mapping.path == "[heap]");
}

}  // namespace

SharedRegions& SharedRegions::process() {
  static SharedRegions* table = new SharedRegions;  // never destroyed: regions may outlive static destructors
  return *table;
}

SharedRegions::Shared* SharedRegions::containing(std::uintptr_t start, std::uint64_t length) {
  for (Shared& shared : shared_) {
    if (start >= shared.start && start - shared.start <= shared.length && length <= shared.length - (start - shared.start)) {
      return &shared;
    }
  }
  return nullptr;
}

std::optional<RegionBacking> SharedRegions::share(void* addr, std::uint64_t length) {
  const auto start = reinterpret_cast<std::uintptr_t>(addr);
  const auto pid = static_cast<std::uint32_t>(::getpid());
  std::lock_guard lock(mutex_);
  if (Shared* shared = containing(start, length); shared != nullptr && length > 0) {
    ++shared->references;
    return RegionBacking{pid, shared->fd, shared->id, start - shared->start};
  }
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (length == 0 || start % page != 0 || length % page != 0 || length > UINTPTR_MAX - start) return std::nullopt;
  for (const Shared& shared : shared_) {
    if (start < shared.start + shared.length && shared.start < start + length) return std::nullopt;  // overlaps one
  }
  // A peer opens the file through /proc/<pid>/fd: a process that is not
  // dumpable (set-user-ID, or by choice) does not let it.
  if (::prctl(PR_GET_DUMPABLE) != 1) return std::nullopt;
  if (!covered_by(start, length, private_anonymous_writable)) return std::nullopt;

  std::uint64_t id = (std::uint64_t{pid} << 32) | next_serial_++;
  std::string name = port::shared_region_file_name(id);
  int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return std::nullopt;
  void* view = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(length)) == 0 && copy_with_file(fd, addr, length, true)) {
    view = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (view == MAP_FAILED) {
    ::close(fd);
    return std::nullopt;
  }
  if (!move_mapping(view, length, addr)) {
    ::close(fd);
    return std::nullopt;
  }
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  ::madvise(addr, length, MADV_DONTFORK);
  shared_.push_back(Shared{start, length, fd, id, 1});
  return RegionBacking{pid, fd, id, 0};
}

void SharedRegions::unshare(void* addr, std::uint64_t length) {
  std::lock_guard lock(mutex_);
  Shared* shared = containing(reinterpret_cast<std::uintptr_t>(addr), length);
  if (shared == nullptr || --shared->references > 0) return;
  move_back(*shared);
  ::close(shared->fd);
  shared_.erase(shared_.begin() + (shared - shared_.data()));
}

void SharedRegions::move_back(const Shared& shared) {
  // Pages the program unmapped or mapped anew since are no longer the file's: leave them.
  std::string link = port::shared_region_link_name(shared.id);
  bool still_ours = covered_by(shared.start, shared.length, [&](const Mapping& mapping) {
    return mapping.permissions == "rw-s" && mapping.path == link;
  });
  if (!still_ours) return;
  void* fresh = ::mmap(nullptr, shared.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (fresh == MAP_FAILED) return;  // the bytes stay in the file, at their address
  auto* at = reinterpret_cast<void*>(shared.start);
  if (!copy_with_file(shared.fd, fresh, shared.length, false)) {
    ::munmap(fresh, shared.length);
    return;
  }
  move_mapping(fresh, shared.length, at);  // failed: the bytes stay in the file, at their address
}

}  // namespace uroce::runtime
