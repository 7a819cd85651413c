// install_context_ops: the context's classic and extended operation tables.
#include "ibverbs/verbs_ops.h"

#include "ibverbs/memory_windows.h"

namespace uroce::ibverbs {

void install_context_ops(verbs_context& context) {
  ibv_context_ops& ops = context.context.ops;
  install_posting_ops(ops);
  ops.poll_cq = poll_cq;
  ops.req_notify_cq = req_notify_cq;
  ops.alloc_mw = alloc_mw;
  ops.bind_mw = bind_mw;
  ops.dealloc_mw = dealloc_mw;
  install_query_ops(context);
  install_qp_create_ops(context);
  install_extended_cq_ops(context);
  context.advise_mr = advise_mr;
  install_domain_ops(context);
  install_xrc_ops(context);
}

}  // namespace uroce::ibverbs
