// Device's UD multicast: the engine knows which QPs are attached to which
// group, the port receives each group's datagrams; this keeps them in step.
#include "uroce/device.h"

#include "port/port.h"
#include "runtime/device_parts.h"

namespace uroce {

std::errc Device::attach_multicast(std::uint32_t qpn, const Gid& group) {
  std::lock_guard lock(mutex_);
  auto first = engine_.attach_multicast(qpn, group);
  if (!first) return first.error();
  if (!*first) return std::errc{};
  std::errc joined = parts_->port->join_group(group);
  if (joined != std::errc{}) engine_.detach_multicast(qpn, group);
  return joined;
}

std::errc Device::detach_multicast(std::uint32_t qpn, const Gid& group) {
  std::lock_guard lock(mutex_);
  auto last = engine_.detach_multicast(qpn, group);
  if (!last) return last.error();
  if (*last) parts_->port->leave_group(group);
  return std::errc{};
}

void Device::detach_all_multicast(std::uint32_t qpn) {
  std::lock_guard lock(mutex_);
  for (const Gid& group : engine_.multicast_groups_of(qpn)) {
    auto last = engine_.detach_multicast(qpn, group);
    if (last && *last) parts_->port->leave_group(group);
  }
}

}  // namespace uroce
