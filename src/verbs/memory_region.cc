// Memory region registration, key generation and access checks.
#include "verbs/memory_region.h"

#include "common/splitmix64.h"
#include "verbs/page_access.h"

#include "uroce/verbs_types.h"

namespace uroce::verbs {
bool is_implicit_region(const void* addr, std::uint64_t length, std::uint32_t access) {
  return addr == nullptr && length == UINT64_MAX && (access & kAccessOnDemand) != 0;
}

MemoryRegionTable::MemoryRegionTable(std::uint64_t seed) : rng_state_(seed) {}

std::uint32_t MemoryRegionTable::fresh_key() {
  while (true) {
    auto key = static_cast<std::uint32_t>(splitmix64(rng_state_));  // reproducible from the seed
    if (key != 0 && !by_lkey_.contains(key) && !by_rkey_.contains(key) && !windows_.contains(key >> 8)) return key;
  }
}

Expected<const MemoryRegion*, std::errc> MemoryRegionTable::register_region(std::uint32_t pd, void* addr,
                                                                            std::uint64_t length,
                                                                            std::uint32_t access,
                                                                            const std::optional<RegionBacking>& backing) {
  if (std::errc refused = check_registration(addr, length, access); refused != std::errc{}) return unexpected(refused);
  auto region = std::make_unique<MemoryRegion>();
  region->lkey = fresh_key();
  by_lkey_[region->lkey] = nullptr;  // reserve the lkey while drawing the rkey
  region->rkey = fresh_key();
  region->pd = pd;
  region->addr = static_cast<std::uint8_t*>(addr);
  region->length = length;
  region->access = access;
  region->backing = backing;
  region->implicit = is_implicit_region(addr, length, access);
  MemoryRegion* raw = region.get();
  by_rkey_[raw->rkey] = raw;
  by_lkey_[raw->lkey] = std::move(region);
  return raw;
}

const MemoryRegion* MemoryRegionTable::find_remote(std::uint32_t rkey) const {
  auto found = by_rkey_.find(rkey);
  return found == by_rkey_.end() ? nullptr : found->second;
}

std::errc MemoryRegionTable::check_registration(void* addr, std::uint64_t length, std::uint32_t access) {
  constexpr std::uint32_t kKnown = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic |
                                   kAccessOnDemand | kAccessMwBind;
  if ((access & ~kKnown) != 0) return std::errc::invalid_argument;
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 && (access & kAccessLocalWrite) == 0) {
    return std::errc::invalid_argument;
  }
  auto start = reinterpret_cast<std::uintptr_t>(addr);
  if (length > UINTPTR_MAX - start) return std::errc::invalid_argument;
  if (addr == nullptr && length != 0 && !is_implicit_region(addr, length, access)) return std::errc::bad_address;
  return std::errc{};
}

std::errc MemoryRegionTable::reregister(std::uint32_t lkey, std::uint32_t pd, void* addr, std::uint64_t length,
                                        std::uint32_t access, const std::optional<RegionBacking>& backing) {
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return std::errc::invalid_argument;
  if (std::errc refused = check_registration(addr, length, access); refused != std::errc{}) return refused;
  MemoryRegion& region = *it->second;
  if (region.windows > 0) return std::errc::device_or_resource_busy;  // windows open part of it
  ++changes_;
  if (region.addr != static_cast<std::uint8_t*>(addr) || region.length != length) region.backing = backing;
  region.pd = pd;
  region.addr = static_cast<std::uint8_t*>(addr);
  region.length = length;
  region.access = access;
  region.implicit = is_implicit_region(addr, length, access);
  return std::errc{};
}

std::errc MemoryRegionTable::deregister(std::uint32_t lkey) {
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return std::errc::invalid_argument;
  if (it->second->windows > 0) return std::errc::device_or_resource_busy;  // windows still open it
  if (last_remote_ == it->second.get()) last_remote_ = nullptr;
  ++changes_;
  by_rkey_.erase(it->second->rkey);
  by_lkey_.erase(it);
  return std::errc{};
}

bool MemoryRegionTable::invalidate_rkey(std::uint32_t rkey, std::uint32_t pd, std::uint32_t qpn) {
  auto it = by_rkey_.find(rkey);
  if (it == by_rkey_.end()) {
    auto window = windows_.find(rkey >> 8);
    if (window == windows_.end()) return false;
    MemoryWindow& found = window->second;
    if (found.type != 2 || !found.bound || found.rkey != rkey || found.pd != pd || found.qpn != qpn) return false;
    unbind(found);
    return true;
  }
  if (it->second->pd != pd) return false;
  if (last_remote_ == it->second) last_remote_ = nullptr;
  by_rkey_.erase(it);
  return true;
}

bool MemoryRegionTable::pd_in_use(std::uint32_t pd) const {
  for (const auto& [name, window] : windows_) {
    if (window.pd == pd) return true;
  }
  for (const auto& [key, region] : by_lkey_) {
    if (region->pd == pd) return true;
  }
  return false;
}

Expected<std::uint8_t*, AccessError> MemoryRegionTable::check_range(const MemoryRegion& region, std::uint64_t start,
                                                                    std::uint64_t length, bool write) {
  if (region.implicit) {
    if (!pages_accessible(start, length, write)) return unexpected(AccessError::unmapped);
    return reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(start));
  }
  auto base = reinterpret_cast<std::uintptr_t>(region.addr);
  // Overflow-safe: start >= base, length <= region length, offset + length <= region length.
  if (start < base || length > region.length || start - base > region.length - length) {
    return unexpected(AccessError::out_of_bounds);
  }
  return region.addr + (start - base);
}

Expected<std::uint8_t*, AccessError> MemoryRegionTable::resolve_remote(std::uint32_t rkey, std::uint32_t pd,
                                                                       std::uint64_t va, std::uint64_t length,
                                                                       std::uint32_t needed_access,
                                                                       std::uint32_t qpn) const {
  if (length == 0) return static_cast<std::uint8_t*>(nullptr);
  if (last_remote_ == nullptr || last_remote_->rkey != rkey) {
    auto it = by_rkey_.find(rkey);
    if (it == by_rkey_.end()) return resolve_window(rkey, pd, va, length, needed_access, qpn);
    last_remote_ = it->second;
  }
  const MemoryRegion& region = *last_remote_;
  if (region.pd != pd) return unexpected(AccessError::wrong_pd);
  if ((region.access & needed_access) != needed_access) return unexpected(AccessError::no_permission);
  return check_range(region, va, length, (needed_access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0);
}

Expected<std::uint8_t*, AccessError> MemoryRegionTable::resolve_local(std::uint32_t lkey, std::uint32_t pd,
                                                                      std::uint64_t addr, std::uint64_t length,
                                                                      bool needs_write,
                                                                      const MemoryRegion** found) const {
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end() || it->second == nullptr) return unexpected(AccessError::bad_key);
  const MemoryRegion& region = *it->second;
  if (region.pd != pd) return unexpected(AccessError::wrong_pd);
  if (needs_write && (region.access & kAccessLocalWrite) == 0) return unexpected(AccessError::no_permission);
  auto bytes = length == 0 ? Expected<std::uint8_t*, AccessError>(region.addr)
                           : check_range(region, addr, length, needs_write);
  if (bytes && found != nullptr) *found = &region;
  return bytes;
}

}  // namespace uroce::verbs
