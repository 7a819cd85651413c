// ExtentMappings: other processes' shared region files, mapped read-only (see the header).
#include "port/extent_mappings.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>

namespace uroce::port {
namespace {

std::string link_target(const std::string& path) {
  char target[256];
  ssize_t length = ::readlink(path.c_str(), target, sizeof target);
  return length > 0 ? std::string(target, static_cast<std::size_t>(length)) : std::string();
}

}  // namespace

ExtentMappings::~ExtentMappings() {
  for (const Mapped& mapped : mapped_) ::munmap(const_cast<std::uint8_t*>(mapped.base), mapped.length);
}

std::optional<std::span<const std::uint8_t>> ExtentMappings::resolve(const PayloadExtent& extent,
                                                                     std::uint64_t length) {
  Mapped* mapped = find_or_map(extent);
  if (mapped == nullptr) return std::nullopt;
  if (extent.offset > mapped->length || length > mapped->length - extent.offset) return std::nullopt;
  return std::span<const std::uint8_t>(mapped->base + extent.offset, length);
}

ExtentMappings::Mapped* ExtentMappings::find_or_map(const PayloadExtent& extent) {
  ++uses_;
  for (Mapped& mapped : mapped_) {
    if (mapped.id == extent.id && mapped.pid == extent.pid && mapped.fd == extent.fd) {
      mapped.last_use = uses_;
      return &mapped;
    }
  }
  std::optional<Mapped> fresh = map_file(extent);
  if (!fresh) return nullptr;
  if (mapped_.size() >= kMostMapped) {
    auto oldest = std::min_element(mapped_.begin(), mapped_.end(),
                                   [](const Mapped& a, const Mapped& b) { return a.last_use < b.last_use; });
    ::munmap(const_cast<std::uint8_t*>(oldest->base), oldest->length);
    mapped_.erase(oldest);
  }
  fresh->last_use = uses_;
  mapped_.push_back(*fresh);
  return &mapped_.back();
}

bool ExtentMappings::may_read_process(std::uint32_t pid, std::uint64_t address) {
  for (const Tried& tried : tried_) {
    if (tried.pid == pid) return tried.readable;
  }
  std::uint8_t byte = 0;
  bool readable = copy_from_process(pid, address, &byte, 1) == 1;
  // Only the kernel's answer about the process is kept, not a bad address in it.
  if (!readable && errno != EPERM && errno != ESRCH) return false;
  if (tried_.size() >= kMostMapped) tried_.erase(tried_.begin());
  tried_.push_back(Tried{pid, readable});
  return readable;
}

std::uint64_t ExtentMappings::copy_from_process(std::uint32_t pid, std::uint64_t address, void* to,
                                                std::uint64_t length) {
  auto* into = static_cast<std::uint8_t*>(to);
  std::uint64_t done = 0;
  while (done < length) {
    iovec local{into + done, length - done};
    iovec remote{reinterpret_cast<void*>(address + done), length - done};
    ssize_t got = ::process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // not allowed, no such process, or an unmapped page on either side
    done += static_cast<std::uint64_t>(got);
  }
  return done;
}

std::optional<ExtentMappings::Mapped> ExtentMappings::map_file(const PayloadExtent& extent) {
  if (extent.fd < 0) return std::nullopt;
  std::string expected = shared_region_link_name(extent.id);
  std::string path = "/proc/" + std::to_string(extent.pid) + "/fd/" + std::to_string(extent.fd);
  if (link_target(path) != expected) return std::nullopt;
  int file = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file < 0) return std::nullopt;
  // The descriptor may have been reused between the look and the open: ask the file itself.
  std::optional<Mapped> result;
  struct stat status {};
  int seals = ::fcntl(file, F_GET_SEALS);
  if (link_target("/proc/self/fd/" + std::to_string(file)) == expected && seals >= 0 && (seals & F_SEAL_SHRINK) != 0 &&
      ::fstat(file, &status) == 0 && status.st_size > 0) {
    auto length = static_cast<std::uint64_t>(status.st_size);
    void* base = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, file, 0);
    if (base != MAP_FAILED) {
      result = Mapped{extent.pid, extent.fd, extent.id, static_cast<const std::uint8_t*>(base), length, 0};
    }
  }
  ::close(file);
  return result;
}

}  // namespace uroce::port
