// Parent domains (ibv_alloc_parent_domain) and thread domains (ibv_alloc_td).
// A parent domain stands for its protection domain everywhere a PD goes (it
// carries the PD's engine handle) and holds the program's allocators. uroce
// keeps its queues inside the engine, not in buffers a program could place,
// so those allocators are never asked for memory; a NIC provider would ask
// them for its queue buffers. A thread domain is a promise that one thread
// uses the objects: every uroce object is safe from any thread, so it is
// accepted and changes nothing.
#include <infiniband/verbs.h>

#include <cerrno>
#include <new>

#include "ibverbs/objects.h"
#include "ibverbs/verbs_ops.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

constexpr std::uint32_t kServedParentMask =
    IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;

ibv_pd* alloc_parent_domain(ibv_context* context, ibv_parent_domain_init_attr* attr) {
  if (attr == nullptr || attr->pd == nullptr || attr->pd->context != context) return fail_with<ibv_pd>(EINVAL);
  if ((attr->comp_mask & ~kServedParentMask) != 0) return fail_with<ibv_pd>(EINVAL);
  UrocePd& parent = pd_of(attr->pd);
  if (parent.protection_domain != nullptr) return fail_with<ibv_pd>(EINVAL);  // a parent domain's parent
  auto* domain = new (std::nothrow) UrocePd{};
  if (domain == nullptr) return fail_with<ibv_pd>(ENOMEM);
  domain->pd.context = context;
  domain->pd.handle = parent.pd.handle;
  domain->handle = parent.handle;
  domain->runtime = parent.runtime;
  domain->protection_domain = attr->pd;
  return &domain->pd;
}

struct UroceTd {
  ibv_td td;
};

ibv_td* alloc_td(ibv_context* context, ibv_td_init_attr* attr) {
  if (attr == nullptr || attr->comp_mask != 0) return fail_with<ibv_td>(EINVAL);
  auto* domain = new (std::nothrow) UroceTd{};
  if (domain == nullptr) return fail_with<ibv_td>(ENOMEM);
  domain->td.context = context;
  return &domain->td;
}

int dealloc_td(ibv_td* td) {
  delete reinterpret_cast<UroceTd*>(td);
  return 0;
}

}  // namespace

void install_domain_ops(verbs_context& context) {
  context.alloc_parent_domain = alloc_parent_domain;
  context.alloc_td = alloc_td;
  context.dealloc_td = dealloc_td;
}

}  // namespace uroce::ibverbs
