// Enhanced Connection Establishment in uroce's librdmacm.
#include <rdma/rdma_cma.h>

#include <cerrno>

namespace {

int fail(int error) {
  errno = error;
  return -1;
}

}  // namespace

extern "C" {

// Enhanced Connection Establishment: uroce's QPs have no vendor options
// (ibv_query_ece and ibv_set_ece give EOPNOTSUPP), so its REQs and REPs
// carry none and a peer's ECE always reads as zero, that of a peer without
// ECE, as on Linux for a device that has none. Rejecting a peer's ECE
// (rdma_reject_ece) is in rdmacm/connections.cc.
int rdma_set_local_ece(rdma_cm_id* id, ibv_ece* ece) {
  if (id == nullptr || id->qp != nullptr || ece == nullptr) return fail(EINVAL);
  return 0;
}

int rdma_get_remote_ece(rdma_cm_id* id, ibv_ece* ece) {
  if (id == nullptr || id->qp != nullptr || ece == nullptr) return fail(EINVAL);
  *ece = ibv_ece{};
  return 0;
}

}  // extern "C"
