// Whether the process's own pages can be read or written, found out by
// faulting them in (madvise MADV_POPULATE_READ / _WRITE, Linux 5.14): what an
// on-demand-paging NIC does when it touches a page. An implicit region
// (ibv_reg_mr of the whole address space with IBV_ACCESS_ON_DEMAND) checks
// every access this way, so that an address the program never mapped, or
// mapped read-only, is an access error and not a crash.
#pragma once

#include <cstdint>

namespace uroce::verbs {

// False when any page of [start, start + length) is not mapped, or not
// writable when write is asked for (or the kernel cannot tell).
bool pages_accessible(std::uint64_t start, std::uint64_t length, bool write);

}  // namespace uroce::verbs
