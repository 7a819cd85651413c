// The intra-host inboxes this process has open (port/local_ring.h), closed
// and removed when it exits. A program that exits without closing its
// device (libfabric's fi_pingpong does) would otherwise leave its inbox in
// /dev/shm until another device opened there and found its process gone.
// Only the process that made an inbox removes it: a forked child inherits
// the list, not the inboxes.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace uroce::port {

// closed: the segment's flag that tells senders the receiver is gone.
void remember_open_inbox(const std::string& path, std::atomic<std::uint32_t>* closed);
// The inbox was closed and removed the usual way.
void forget_open_inbox(const std::string& path);

}  // namespace uroce::port
