// Protection domains and memory regions. A region is plain process memory:
// registering pins nothing, and fork needs no special care. Local peers read
// a long message's bytes straight from it (uroce/region_sharing.h), or, with
// UROCE_SHARED_MR=1, from the shared file a region of whole pages moves onto
// (runtime/shared_regions.h).
#include <infiniband/verbs.h>

#include <cerrno>
#include <new>
#include <optional>

#include "ibverbs/objects.h"
#include "runtime/shared_regions.h"
#include "verbs/page_access.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_support.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace uroce::ibverbs {
namespace {

// The access flags the engine enforces; IBV_ACCESS_OPTIONAL_RANGE flags are
// hints a device may ignore (rdma-core's rule), and so are the
// relaxed-ordering and huge-page ones: uroce has no PCIe ordering, and pins
// no pages. MW_BIND lets memory windows open the region. IBV_ACCESS_ON_DEMAND is served: nothing is
// ever pinned, and an implicit region checks each access (verbs/page_access.h).
constexpr unsigned kEnforcedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_MW_BIND;
constexpr unsigned kIgnoredAccess =
    unsigned{IBV_ACCESS_RELAXED_ORDERING} | unsigned{IBV_ACCESS_OPTIONAL_RANGE} | unsigned{IBV_ACCESS_HUGETLB};

// rdma-core's access flags as the engine's AccessFlags.
unsigned engine_access(unsigned access) {
  unsigned engine = access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC);  // the same bits
  if ((access & IBV_ACCESS_ON_DEMAND) != 0) engine |= kAccessOnDemand;
  if ((access & IBV_ACCESS_MW_BIND) != 0) engine |= kAccessMwBind;
  return engine;
}

bool implicit_odp(const void* addr, std::size_t length, unsigned access) {
  return addr == nullptr && length == SIZE_MAX && (access & IBV_ACCESS_ON_DEMAND) != 0;
}

// Where local peers read a region's bytes: the shared file it moves onto
// (UROCE_SHARED_MR=1, where it qualifies), else this process's memory where
// peers may read it, else nowhere. On-demand regions stay where the program
// mapped them, and are read by packets: the program may remap them.
std::optional<RegionBacking> backing_for(const DeviceRuntime& device, void* addr, std::size_t length,
                                         bool on_demand) {
  if (on_demand) return std::nullopt;
  if (device.shares_regions()) {
    if (auto shared = runtime::SharedRegions::process().share(addr, length)) return shared;
  }
  if (device.lends_memory()) return process_memory_backing(addr);
  return std::nullopt;
}

bool on_a_shared_file(const std::optional<RegionBacking>& backing) { return backing && backing->fd >= 0; }

ibv_mr* register_region(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t iova, unsigned access) {
  if (pd == nullptr || (addr == nullptr && length != 0 && !implicit_odp(addr, length, access))) {
    return fail_with<ibv_mr>(EINVAL);
  }
  if ((access & ~(kEnforcedAccess | kIgnoredAccess)) != 0) return fail_with<ibv_mr>(EOPNOTSUPP);  // ODP, zero-based ...
  // Remote addresses are the process's own: an I/O virtual address other
  // than the buffer's would need a translation uroce does not keep.
  if (iova != reinterpret_cast<std::uintptr_t>(addr)) return fail_with<ibv_mr>(EOPNOTSUPP);
  UrocePd& owner = pd_of(pd);
  auto* region = new (std::nothrow) UroceMr{};
  if (region == nullptr) return fail_with<ibv_mr>(ENOMEM);
  std::optional<RegionBacking> backing =
      backing_for(*owner.runtime, addr, length, (access & IBV_ACCESS_ON_DEMAND) != 0);
  auto keys = owner.runtime->device().call_and_wake([&](Engine& engine) {
    auto made = engine.reg_mr(owner.handle, addr, length, engine_access(access), backing);
    if (made) owner.runtime->mrs[made->lkey] = region;
    return made;
  });
  if (!keys) {
    if (on_a_shared_file(backing)) runtime::SharedRegions::process().unshare(addr, length);
    delete region;
    return fail_with<ibv_mr>(errno_of(keys.error()));
  }
  region->runtime = owner.runtime;
  region->access = engine_access(access);
  region->shared = on_a_shared_file(backing);
  region->mr = ibv_mr{pd->context, pd, addr, length, keys->lkey, keys->lkey, keys->rkey};
  return &region->mr;
}

}  // namespace

// ibv_advise_mr: every element must name registered memory of the PD;
// prefetching then faults the pages in, as an ODP NIC would, and
// PREFETCH_NO_FAULT leaves them. Synchronous (IBV_ADVISE_MR_FLAG_FLUSH) or
// not, it is done when the call returns.
int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, std::uint32_t flags, ibv_sge* sg_list, std::uint32_t num_sge) {
  if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH && advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
      advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) {
    return EOPNOTSUPP;
  }
  if ((flags & ~static_cast<std::uint32_t>(IBV_ADVISE_MR_FLAG_FLUSH)) != 0 || sg_list == nullptr || num_sge == 0) {
    return EINVAL;
  }
  bool write = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
  UrocePd& owner = pd_of(pd);
  for (std::uint32_t i = 0; i < num_sge; ++i) {
    Sge sge{sg_list[i].addr, sg_list[i].length, sg_list[i].lkey};
    std::errc checked =
        owner.runtime->device().call_and_wake([&](Engine& engine) { return engine.check_local(owner.handle, sge, write); });
    if (checked != std::errc{}) return errno_of(checked);
  }
  if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) return 0;
  for (std::uint32_t i = 0; i < num_sge; ++i) {
    if (!verbs::pages_accessible(sg_list[i].addr, sg_list[i].length, write)) return EFAULT;
  }
  return 0;
}

}  // namespace uroce::ibverbs

using namespace uroce::ibverbs;

extern "C" {

ibv_pd* UROCE_V11(ibv_alloc_pd)(ibv_context* context) {
  DeviceRuntime* runtime = runtime_for(context);
  if (runtime == nullptr) return nullptr;
  auto* pd = new (std::nothrow) UrocePd{};
  if (pd == nullptr) return fail_with<ibv_pd>(ENOMEM);
  auto handle = runtime->device().call_and_wake([&](uroce::Engine& engine) {
    auto made = engine.alloc_pd();
    if (made) runtime->pds.emplace(*made, pd);
    return made;
  });
  if (!handle) {
    delete pd;
    return fail_with<ibv_pd>(errno_of(handle.error()));
  }
  pd->pd.context = context;
  pd->pd.handle = *handle;
  pd->handle = *handle;
  pd->runtime = runtime;
  return &pd->pd;
}
UROCE_BIND_V11(ibv_alloc_pd);

int UROCE_V11(ibv_dealloc_pd)(ibv_pd* pd) {
  UrocePd& owned = pd_of(pd);
  if (owned.protection_domain != nullptr) {  // a parent domain: its PD stays
    delete &owned;
    return 0;
  }
  std::errc result = owned.runtime->device().call_and_wake([&](uroce::Engine& engine) {
    std::errc done = engine.dealloc_pd(owned.handle);
    if (done == std::errc{}) owned.runtime->pds.erase(owned.handle);
    return done;
  });
  if (result != std::errc{}) return errno_of(result);
  delete &owned;
  return 0;
}
UROCE_BIND_V11(ibv_dealloc_pd);

ibv_mr* UROCE_V11(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  return register_region(pd, addr, length, reinterpret_cast<std::uintptr_t>(addr), static_cast<unsigned>(access));
}
UROCE_BIND_V11(ibv_reg_mr);

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return register_region(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  return register_region(pd, addr, length, iova, access);
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) { return fail_with<ibv_mr>(EOPNOTSUPP); }

// A new PD, range or access for a region, with its keys kept (as Soft-RoCE
// keeps them). Errors as rdma-core reports them: IBV_REREG_MR_ERR_INPUT for
// bad arguments, IBV_REREG_MR_ERR_CMD when the device refuses, errno set.
int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  auto refuse = [](int error, int code) {
    errno = error;
    return code;
  };
  if (mr == nullptr || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) != 0) return refuse(EINVAL, IBV_REREG_MR_ERR_INPUT);
  bool new_pd = (flags & IBV_REREG_MR_CHANGE_PD) != 0;
  bool new_range = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0;
  bool new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) != 0;
  if ((new_range && (addr == nullptr || length == 0)) || (access != 0 && !new_access) || (new_pd && pd == nullptr)) {
    return refuse(EINVAL, IBV_REREG_MR_ERR_INPUT);
  }
  if (new_access && (static_cast<unsigned>(access) & ~(kEnforcedAccess | kIgnoredAccess)) != 0) {
    return refuse(EOPNOTSUPP, IBV_REREG_MR_ERR_INPUT);
  }
  UroceMr& region = mr_of(mr);
  ibv_pd* target_pd = new_pd ? pd : mr->pd;
  void* target_addr = new_range ? addr : mr->addr;
  std::size_t target_length = new_range ? length : mr->length;
  unsigned target_access = new_access ? engine_access(static_cast<unsigned>(access)) : region.access;
  // A region moved elsewhere leaves the shared file it was on and joins another.
  std::optional<uroce::RegionBacking> backing;
  auto& shared_regions = uroce::runtime::SharedRegions::process();
  if (new_range) {
    bool on_demand = (target_access & uroce::kAccessOnDemand) != 0;
    backing = uroce::ibverbs::backing_for(*region.runtime, target_addr, target_length, on_demand);
  }
  // Sends nothing: no need to wake the progress thread.
  std::errc result = region.runtime->device().inspect([&](uroce::Engine& engine) {
    return engine.rereg_mr(mr->lkey, pd_of(target_pd).handle, target_addr, target_length, target_access, backing);
  });
  if (result != std::errc{}) {
    if (uroce::ibverbs::on_a_shared_file(backing)) shared_regions.unshare(target_addr, target_length);
    return refuse(errno_of(result), IBV_REREG_MR_ERR_CMD);
  }
  if (new_range) {
    if (region.shared) shared_regions.unshare(mr->addr, mr->length);
    region.shared = uroce::ibverbs::on_a_shared_file(backing);
    mr->addr = addr;
    mr->length = length;
  }
  if (new_pd) mr->pd = pd;
  region.access = target_access;
  return 0;
}

int UROCE_V11(ibv_dereg_mr)(ibv_mr* mr) {
  UroceMr& region = mr_of(mr);
  std::errc result = region.runtime->device().call_and_wake([&](uroce::Engine& engine) {
    std::errc done = engine.dereg_mr(mr->lkey);
    if (done == std::errc{}) region.runtime->mrs.erase(mr->lkey);
    return done;
  });
  if (result != std::errc{}) return errno_of(result);
  if (region.shared) uroce::runtime::SharedRegions::process().unshare(mr->addr, mr->length);
  delete &region;
  return 0;
}
UROCE_BIND_V11(ibv_dereg_mr);

}  // extern "C"
