// install_context_ops: the context's classic and extended operation tables.
// Data-path operations that are not served yet fail with EOPNOTSUPP (a
// program can only reach them with objects it could not create).
#include "ibverbs/verbs_ops.h"

#include <cerrno>

namespace uroce::ibverbs {

namespace {

int post_send_unsupported(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  *bad_wr = wr;
  return EOPNOTSUPP;
}

int post_recv_unsupported(ibv_qp*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  *bad_wr = wr;
  return EOPNOTSUPP;
}

int post_srq_recv_unsupported(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  *bad_wr = wr;
  return EOPNOTSUPP;
}

int poll_cq_unsupported(ibv_cq*, int, ibv_wc*) { return -1; }
int req_notify_cq_unsupported(ibv_cq*, int) { return EOPNOTSUPP; }
ibv_mw* alloc_mw_unsupported(ibv_pd*, ibv_mw_type) {
  errno = EOPNOTSUPP;
  return nullptr;
}
int bind_mw_unsupported(ibv_qp*, ibv_mw*, ibv_mw_bind*) { return EOPNOTSUPP; }
int dealloc_mw_unsupported(ibv_mw*) { return EOPNOTSUPP; }

}  // namespace

void install_context_ops(verbs_context& context) {
  ibv_context_ops& ops = context.context.ops;
  ops.post_send = post_send_unsupported;
  ops.post_recv = post_recv_unsupported;
  ops.post_srq_recv = post_srq_recv_unsupported;
  ops.poll_cq = poll_cq_unsupported;
  ops.req_notify_cq = req_notify_cq_unsupported;
  ops.alloc_mw = alloc_mw_unsupported;
  ops.bind_mw = bind_mw_unsupported;
  ops.dealloc_mw = dealloc_mw_unsupported;
  install_query_ops(context);
}

}  // namespace uroce::ibverbs
