// Registered memory that local peers can read (UROCE_SHARED_MR=1). Sharing a
// region moves its pages onto a memfd of their own, sealed against
// shrinking, at the same address and with the same bytes; a local device
// then opens that file through /proc/<pid>/fd and reads a SEND's or
// WRITE's bytes straight from it (uroce/engine.h, RegionBacking), one copy
// in all. Only whole pages of private, anonymous, writable memory are moved
// (a heap or malloc'd buffer that page-aligned allocation gave, as perftest's
// are): a file mapping keeps its file, and a partly covered page may hold
// another object that some thread writes while it moves. Regions that do not
// qualify stay where they are and travel by packets.
//
// While shared, the pages are not inherited by a child (MADV_DONTFORK, as
// rdma-core's ibv_fork_init does for registered memory). When the last
// region using them is deregistered they move back to private memory, with
// their bytes, unless the program has unmapped or remapped them meanwhile.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "uroce/engine.h"

namespace uroce::runtime {

class SharedRegions {
 public:
  // The process's table: every device of the process shares through it.
  static SharedRegions& process();

  // Moves [addr, addr + length) onto a memfd (or takes another reference on
  // the file that already holds it) and says where a peer finds it; nullopt,
  // with the memory untouched, when it does not qualify or the move fails.
  std::optional<RegionBacking> share(void* addr, std::uint64_t length);
  // Drops the reference share() took for this range.
  void unshare(void* addr, std::uint64_t length);

 private:
  struct Shared {
    std::uintptr_t start = 0;
    std::uint64_t length = 0;
    int fd = -1;
    std::uint64_t id = 0;
    std::uint32_t references = 0;
  };
  Shared* containing(std::uintptr_t start, std::uint64_t length);
  void move_back(const Shared& shared);

  std::mutex mutex_;
  std::vector<Shared> shared_;
  std::uint32_t next_serial_ = 1;
};

}  // namespace uroce::runtime
