// Copies into and out of a program's registered memory that survive the
// program unmapping that memory before it deregisters it. UCX's UD
// transport does so at teardown: it frees its receive buffers, then destroys
// the QP that still has them posted, and a peer's datagram arrives between
// the two. A NIC writes such a datagram into the region's pinned pages, which
// the program no longer sees; here a write to a page that faults is dropped
// and a read from one gives zeros, so the process lives on as it would on a
// NIC. Where the fault handler is not installed (the simulator, which owns
// every byte it places), a copy is a plain memcpy.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce::transport {

// Copies length bytes; pages of either side that fault are left out (their
// destination bytes zeroed where the destination itself is mapped).
void copy_registered(void* to, const void* from, std::size_t length);

// Stores a 64-bit value with release order in one store; dropped if *at faults.
void store_registered(std::uint64_t* at, std::uint64_t value);

// Installs the SIGSEGV and SIGBUS handler, once per process; other faults go
// on to the handler that was there before (a sanitizer's, UCX's, the default).
void guard_registered_copies();

// How many copies met an unmapped page, in this process.
std::uint64_t registered_copy_faults();

}  // namespace uroce::transport
