// ibv_attach_mcast and ibv_detach_mcast: a UD QP joins or leaves a multicast
// group, named by its GID (for an IPv4 group on RoCEv2, ::ffff:a.b.c.d, as
// rdma_cm maps it). The LID means nothing on Ethernet and is ignored, as
// Soft-RoCE ignores it. Errors are returned, not set in errno, as rdma-core
// documents: EINVAL for a QP that is not UD, a GID that is not a group's,
// or a detach from a group the QP is not in.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

#include "ibverbs/objects.h"
#include "ibverbs/runtime.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

using Change = std::errc (Device::*)(std::uint32_t, const Gid&);

int change_membership(ibv_qp* ibv, const ibv_gid* gid, Change change) {
  if (ibv == nullptr || gid == nullptr) return EINVAL;
  if (ibv->qp_type != IBV_QPT_UD) return EINVAL;
  Gid group;
  std::memcpy(group.data(), gid->raw, group.size());
  if (!gid_is_multicast(group)) return EINVAL;
  std::errc result = (qp_of(ibv).runtime->device().*change)(ibv->qp_num, group);
  return result == std::errc{} ? 0 : errno_of(result);
}

}  // namespace
}  // namespace uroce::ibverbs

using namespace uroce::ibverbs;

extern "C" {

int UROCE_V11(ibv_attach_mcast)(ibv_qp* qp, const ibv_gid* gid, uint16_t /*lid*/) {
  return change_membership(qp, gid, &uroce::Device::attach_multicast);
}
UROCE_BIND_V11(ibv_attach_mcast);

int UROCE_V11(ibv_detach_mcast)(ibv_qp* qp, const ibv_gid* gid, uint16_t /*lid*/) {
  return change_membership(qp, gid, &uroce::Device::detach_multicast);
}
UROCE_BIND_V11(ibv_detach_mcast);

}  // extern "C"
