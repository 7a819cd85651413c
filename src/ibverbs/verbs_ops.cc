// install_context_ops: the context's classic and extended operation tables.
// Memory windows are not served: their operations fail with EOPNOTSUPP.
#include "ibverbs/verbs_ops.h"

#include <cerrno>

namespace uroce::ibverbs {

namespace {

ibv_mw* alloc_mw_unsupported(ibv_pd*, ibv_mw_type) {
  errno = EOPNOTSUPP;
  return nullptr;
}
int bind_mw_unsupported(ibv_qp*, ibv_mw*, ibv_mw_bind*) { return EOPNOTSUPP; }
int dealloc_mw_unsupported(ibv_mw*) { return EOPNOTSUPP; }

}  // namespace

void install_context_ops(verbs_context& context) {
  ibv_context_ops& ops = context.context.ops;
  install_posting_ops(ops);
  ops.poll_cq = poll_cq;
  ops.req_notify_cq = req_notify_cq;
  ops.alloc_mw = alloc_mw_unsupported;
  ops.bind_mw = bind_mw_unsupported;
  ops.dealloc_mw = dealloc_mw_unsupported;
  install_query_ops(context);
  install_qp_create_ops(context);
  install_extended_cq_ops(context);
  context.advise_mr = advise_mr;
}

}  // namespace uroce::ibverbs
