// What uroce's librdmacm does not serve yet, failing cleanly with an errno
// (ENOSYS) instead of crashing: Enhanced Connection Establishment. (Datagram
// rsockets: see rsockets/rsocket_calls.cc.) rdma_set_option accepts the
// options that only tune a connection (and ignores them) and refuses the rest.
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

int rdma_set_option(rdma_cm_id* id, int level, int name, void* value, size_t length) {
  if (id == nullptr || (value == nullptr && length != 0)) {
    errno = EINVAL;
    return -1;
  }
  bool tuning = (level == RDMA_OPTION_ID && (name == RDMA_OPTION_ID_TOS || name == RDMA_OPTION_ID_REUSEADDR ||
                                              name == RDMA_OPTION_ID_AFONLY || name == RDMA_OPTION_ID_ACK_TIMEOUT)) ||
                (level == RDMA_OPTION_IB && name == RDMA_OPTION_IB_PATH);
  return tuning ? 0 : not_yet();
}

}  // extern "C"
