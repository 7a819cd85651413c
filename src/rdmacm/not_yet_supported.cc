// What uroce's librdmacm does not serve yet, failing cleanly with an errno
// (ENOSYS) instead of crashing: rsockets (the r* socket calls), multicast,
// and Enhanced Connection Establishment. rdma_set_option accepts the
// options that only tune a connection (and ignores them) and refuses the rest.
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include <cerrno>

namespace {

int not_yet() {
  errno = ENOSYS;
  return -1;
}

}  // namespace

extern "C" {

int rsocket(int, int, int) { return not_yet(); }
int rbind(int, const sockaddr*, socklen_t) { return not_yet(); }
int rlisten(int, int) { return not_yet(); }
int raccept(int, sockaddr*, socklen_t*) { return not_yet(); }
int rconnect(int, const sockaddr*, socklen_t) { return not_yet(); }
int rshutdown(int, int) { return not_yet(); }
int rclose(int) { return not_yet(); }
ssize_t rrecv(int, void*, size_t, int) { return not_yet(); }
ssize_t rrecvfrom(int, void*, size_t, int, sockaddr*, socklen_t*) { return not_yet(); }
ssize_t rrecvmsg(int, msghdr*, int) { return not_yet(); }
ssize_t rsend(int, const void*, size_t, int) { return not_yet(); }
ssize_t rsendto(int, const void*, size_t, int, const sockaddr*, socklen_t) { return not_yet(); }
ssize_t rsendmsg(int, const msghdr*, int) { return not_yet(); }
ssize_t rread(int, void*, size_t) { return not_yet(); }
ssize_t rreadv(int, const iovec*, int) { return not_yet(); }
ssize_t rwrite(int, const void*, size_t) { return not_yet(); }
ssize_t rwritev(int, const iovec*, int) { return not_yet(); }
int rpoll(pollfd*, nfds_t, int) { return not_yet(); }
int rselect(int, fd_set*, fd_set*, fd_set*, timeval*) { return not_yet(); }
int rgetpeername(int, sockaddr*, socklen_t*) { return not_yet(); }
int rgetsockname(int, sockaddr*, socklen_t*) { return not_yet(); }
int rsetsockopt(int, int, int, const void*, socklen_t) { return not_yet(); }
int rgetsockopt(int, int, int, void*, socklen_t*) { return not_yet(); }
int rfcntl(int, int, ...) { return not_yet(); }
off_t riomap(int, void*, size_t, int, int, off_t) { return not_yet(); }
int riounmap(int, void*, size_t) { return not_yet(); }
size_t riowrite(int, const void*, size_t, off_t, int) {
  errno = ENOSYS;
  return 0;
}

int rdma_join_multicast(rdma_cm_id*, sockaddr*, void*) { return not_yet(); }
int rdma_join_multicast_ex(rdma_cm_id*, rdma_cm_join_mc_attr_ex*, void*) { return not_yet(); }
int rdma_leave_multicast(rdma_cm_id*, sockaddr*) { return not_yet(); }

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
