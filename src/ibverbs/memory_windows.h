// Memory windows in uroce's libibverbs (memory_windows.cc): the context ops
// and the bind request's conversion that posting and ibv_wr_bind_mw share.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "uroce/verbs_types.h"

namespace uroce::ibverbs {

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
int dealloc_mw(ibv_mw* mw);
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* request);

// 0, or EINVAL for a request the library refuses (no window, access beyond
// the remote flags, a length without a region).
int to_mw_bind(const ibv_mw* mw, std::uint32_t rkey, const ibv_mw_bind_info& info, MwBind& bind);

}  // namespace uroce::ibverbs
