// Memory windows: allocation, binding and the remote accesses through a
// window's key (MemoryRegionTable's half for windows; memory_region.h).
#include "verbs/memory_region.h"

#include "uroce/verbs_types.h"

namespace uroce::verbs {
namespace {

constexpr std::uint32_t kRemoteAccess = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

}  // namespace

Expected<std::uint32_t, std::errc> MemoryRegionTable::allocate_window(std::uint32_t pd, std::uint8_t type) {
  if (type != 1 && type != 2) return unexpected(std::errc::invalid_argument);
  while (true) {
    std::uint32_t key = fresh_key();
    std::uint32_t name = key >> 8;
    // No region's rkey may carry the window's upper bits: any low byte a bind gives is the window's.
    bool shared = false;
    for (std::uint32_t low = 0; low < 256 && !shared; ++low) shared = by_rkey_.contains(name << 8 | low);
    if (shared || name == 0) continue;
    windows_.emplace(name, MemoryWindow{.pd = pd, .type = type, .rkey = key});
    return key;
  }
}

std::errc MemoryRegionTable::deallocate_window(std::uint32_t rkey) {
  auto it = windows_.find(rkey >> 8);
  if (it == windows_.end()) return std::errc::invalid_argument;
  if (it->second.bound) unbind(it->second);
  windows_.erase(it);
  return std::errc{};
}

void MemoryRegionTable::unbind(MemoryWindow& window) {
  auto region = by_lkey_.find(window.lkey);
  if (region != by_lkey_.end() && region->second != nullptr && region->second->windows > 0) --region->second->windows;
  window.bound = false;
  window.qpn = 0;
}

WcStatus MemoryRegionTable::bind_window(std::uint32_t qpn, std::uint32_t qp_pd, const MwBind& bind) {
  auto it = windows_.find(bind.rkey >> 8);
  if (it == windows_.end()) return WcStatus::mw_bind_err;
  MemoryWindow& window = it->second;
  if (window.type != bind.type || window.pd != qp_pd) return WcStatus::mw_bind_err;
  if (window.type == 2 && window.bound) return WcStatus::mw_bind_err;  // invalidate it first
  if ((bind.access & ~kRemoteAccess) != 0) return WcStatus::mw_bind_err;
  if (window.type == 1 && bind.length == 0) {  // closes it
    if (window.bound) unbind(window);
    window.rkey = bind.rkey;
    return WcStatus::success;
  }
  auto found = by_lkey_.find(bind.lkey);
  if (found == by_lkey_.end() || found->second == nullptr) return WcStatus::mw_bind_err;
  MemoryRegion& region = *found->second;
  if (region.pd != window.pd || (region.access & kAccessMwBind) == 0 || region.implicit) return WcStatus::mw_bind_err;
  if ((bind.access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 && (region.access & kAccessLocalWrite) == 0) {
    return WcStatus::mw_bind_err;
  }
  if (bind.length > 0 && !check_range(region, bind.addr, bind.length, false)) return WcStatus::mw_bind_err;
  if (window.bound) unbind(window);
  window.rkey = bind.rkey;
  window.bound = true;
  window.qpn = window.type == 2 ? qpn : 0;
  window.lkey = bind.lkey;
  window.addr = bind.addr;
  window.length = bind.length;
  window.access = bind.access;
  ++region.windows;
  return WcStatus::success;
}

Expected<std::uint8_t*, AccessError> MemoryRegionTable::resolve_window(std::uint32_t rkey, std::uint32_t pd,
                                                                       std::uint64_t va, std::uint64_t length,
                                                                       std::uint32_t needed_access,
                                                                       std::uint32_t qpn) const {
  auto it = windows_.find(rkey >> 8);
  if (it == windows_.end()) return unexpected(AccessError::bad_key);
  const MemoryWindow& window = it->second;
  if (!window.bound || window.rkey != rkey) return unexpected(AccessError::bad_key);
  if (window.pd != pd || (window.type == 2 && window.qpn != qpn)) return unexpected(AccessError::wrong_pd);
  if ((window.access & needed_access) != needed_access) return unexpected(AccessError::no_permission);
  // Overflow-safe: va >= addr, length <= window length, offset + length <= window length.
  if (va < window.addr || length > window.length || va - window.addr > window.length - length) {
    return unexpected(AccessError::out_of_bounds);
  }
  auto region = by_lkey_.find(window.lkey);
  if (region == by_lkey_.end() || region->second == nullptr) return unexpected(AccessError::bad_key);
  return check_range(*region->second, va, length, (needed_access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0);
}

}  // namespace uroce::verbs
