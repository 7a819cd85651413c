// Memory regions: application memory registered with a protection domain and
// access flags, found by lkey (local work requests) or rkey (remote peers).
// Every access is checked for key, PD, permission and bounds before a pointer
// is handed out; nothing outside [addr, addr + length) is ever reachable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "uroce/expected.h"
#include "uroce/region_sharing.h"
#include "uroce/verbs_types.h"

namespace uroce::verbs {

struct MemoryRegion {
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
  std::uint32_t pd = 0;
  std::uint8_t* addr = nullptr;  // the registered bytes
  std::uint64_t length = 0;
  std::uint32_t access = 0;  // AccessFlags
  std::optional<RegionBacking> backing;  // where local peers can read its bytes
  bool implicit = false;  // implicit on-demand paging: any mapped address, checked page by page
  std::uint32_t windows = 0;  // memory windows bound to it: it cannot be deregistered meanwhile
};

// A memory window: remote access to part of a region under a key of its own,
// opened and closed by work requests (IBTA 10.6.7). Its rkey's upper 24 bits
// name it for good; a bind gives it a new low byte. Type 1 is bound by
// ibv_bind_mw and answers any QP of its PD; type 2 by a BIND_MW work request,
// and answers only the QP that bound it until invalidated.
struct MemoryWindow {
  std::uint32_t pd = 0;
  std::uint8_t type = 1;
  std::uint32_t rkey = 0;
  bool bound = false;
  std::uint32_t qpn = 0;   // type 2: the QP it was bound through
  std::uint32_t lkey = 0;  // the region it opens
  std::uint64_t addr = 0;
  std::uint64_t length = 0;
  std::uint32_t access = 0;  // remote access flags
};

// ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND ...): the whole address space.
bool is_implicit_region(const void* addr, std::uint64_t length, std::uint32_t access);

enum class AccessError {
  bad_key,        // no such key (or a deregistered one)
  wrong_pd,       // the region belongs to another protection domain
  no_permission,  // the access flags do not allow this operation
  out_of_bounds,  // the range leaves the region (or wraps around)
  unmapped,       // an implicit region's page the program has not mapped (or not writable)
};

class MemoryRegionTable {
 public:
  // seed drives key generation: keys are random 32-bit values, not indices a
  // peer could guess. The engine seeds it per device.
  explicit MemoryRegionTable(std::uint64_t seed);

  // ibv_reg_mr rules: REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE; the
  // range must not wrap. Address 0 with length 0 is allowed, and so is
  // address 0 with length UINT64_MAX and kAccessOnDemand: an implicit region.
  Expected<const MemoryRegion*, std::errc> register_region(std::uint32_t pd, void* addr, std::uint64_t length,
                                                           std::uint32_t access,
                                                           const std::optional<RegionBacking>& backing = std::nullopt);
  // ibv_rereg_mr: the region behind lkey takes another PD, range or access
  // (all given; pass the old values to keep them) and keeps its keys. A
  // region given a new range takes backing with it; one that keeps its range
  // keeps its backing. The rules of register_region; on an error nothing
  // changes.
  std::errc reregister(std::uint32_t lkey, std::uint32_t pd, void* addr, std::uint64_t length, std::uint32_t access,
                       const std::optional<RegionBacking>& backing);
  // Invalidates both keys; the bytes are untouched.
  std::errc deregister(std::uint32_t lkey);
  // SEND_WITH_INV and LOCAL_INV: invalidates a remote key (the region stays
  // registered locally), or unbinds a type 2 window bound through qpn.
  bool invalidate_rkey(std::uint32_t rkey, std::uint32_t pd, std::uint32_t qpn = 0);

  // Memory windows (memory_windows.cc). allocate_window gives the window's
  // first rkey; any later key of it names it to deallocate_window.
  Expected<std::uint32_t, std::errc> allocate_window(std::uint32_t pd, std::uint8_t type);
  std::errc deallocate_window(std::uint32_t rkey);
  // A bind (or, type 1 with length 0, an unbind) through a QP of qp_pd:
  // mw_bind_err for any rule it breaks (wrong PD or QP, a region without
  // MW_BIND, a range outside the region, remote write without local write,
  // a type 2 window still bound, a key that is not the window's).
  WcStatus bind_window(std::uint32_t qpn, std::uint32_t qp_pd, const MwBind& bind);

  // A peer's access through an rkey to [va, va + length). A zero-length
  // access touches nothing and is allowed with any key, as IBTA specifies.
  // The key may be a bound window's: qpn is the QP the access came on.
  Expected<std::uint8_t*, AccessError> resolve_remote(std::uint32_t rkey, std::uint32_t pd, std::uint64_t va,
                                                      std::uint64_t length, std::uint32_t needed_access,
                                                      std::uint32_t qpn = 0) const;
  // A local scatter/gather element; needs_write for receive buffers and READ
  // or atomic results. found, if given, is set to the region on success.
  Expected<std::uint8_t*, AccessError> resolve_local(std::uint32_t lkey, std::uint32_t pd, std::uint64_t addr,
                                                     std::uint64_t length, bool needs_write,
                                                     const MemoryRegion** found = nullptr) const;

  // The region an rkey names, unchecked (nullptr when none): for what a
  // resolved remote access needs to know beyond its bytes.
  const MemoryRegion* find_remote(std::uint32_t rkey) const;

  std::size_t size() const { return by_lkey_.size(); }
  // How many times a registration has changed or gone (reregister,
  // deregister): what a resolved receive compares to know its keys still hold.
  std::uint64_t changes() const { return changes_; }
  // True if any region of pd is still registered (ibv_dealloc_pd must fail).
  bool pd_in_use(std::uint32_t pd) const;

 private:
  std::uint32_t fresh_key();
  static std::errc check_registration(void* addr, std::uint64_t length, std::uint32_t access);
  static Expected<std::uint8_t*, AccessError> check_range(const MemoryRegion& region, std::uint64_t start,
                                                          std::uint64_t length, bool write);
  Expected<std::uint8_t*, AccessError> resolve_window(std::uint32_t rkey, std::uint32_t pd, std::uint64_t va,
                                                      std::uint64_t length, std::uint32_t needed_access,
                                                      std::uint32_t qpn) const;
  void unbind(MemoryWindow& window);

  std::uint64_t rng_state_;
  std::uint64_t changes_ = 0;
  std::unordered_map<std::uint32_t, std::unique_ptr<MemoryRegion>> by_lkey_;
  std::unordered_map<std::uint32_t, MemoryRegion*> by_rkey_;
  // The region the last remote access found through by_rkey_ (a QP's peer
  // uses one or two rkeys for long stretches; at thousands of simulated
  // engines the map's buckets and nodes are cache misses). Forgotten when
  // its rkey stops being valid; an access still passes every check.
  mutable const MemoryRegion* last_remote_ = nullptr;
  // Windows by the upper 24 bits of their keys, which no region's rkey shares.
  std::unordered_map<std::uint32_t, MemoryWindow> windows_;
};

}  // namespace uroce::verbs
