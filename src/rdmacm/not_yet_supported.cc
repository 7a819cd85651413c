// What uroce's librdmacm does not serve yet, failing cleanly with an errno
// (ENOSYS) instead of crashing: Enhanced Connection Establishment. (Datagram
// rsockets: see rsockets/rsocket_calls.cc.)
#include <rdma/rdma_cma.h>

#include <cerrno>

namespace {

int not_yet() {
  errno = ENOSYS;
  return -1;
}

}  // namespace

extern "C" {

int rdma_get_remote_ece(rdma_cm_id*, ibv_ece*) { return not_yet(); }
int rdma_set_local_ece(rdma_cm_id*, ibv_ece*) { return not_yet(); }
int rdma_reject_ece(rdma_cm_id*, const void*, uint8_t) { return not_yet(); }

}  // extern "C"
