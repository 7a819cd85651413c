// The operations a context carries: the classic ibv_context_ops that the
// header's inline verbs call (ibv_post_send, ibv_poll_cq ...) and the
// extended ones of verbs_context (query_port, query_device_ex ...).
#pragma once

#include <infiniband/verbs.h>

namespace uroce::ibverbs {

void install_context_ops(verbs_context& context);

// The query operations (query.cc), which install_context_ops includes.
void install_query_ops(verbs_context& context);

}  // namespace uroce::ibverbs
