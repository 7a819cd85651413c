// Memory windows: ibv_alloc_mw, ibv_dealloc_mw and ibv_bind_mw (type 1),
// and the conversion of a bind request (ibv_post_send's IBV_WR_BIND_MW,
// ibv_wr_bind_mw) into the engine's MwBind. A bind is a work request on the
// QP's send queue: it completes, in order, with IBV_WC_BIND_MW.
#include <infiniband/verbs.h>

#include <cerrno>
#include <new>

#include "ibverbs/memory_windows.h"
#include "ibverbs/objects.h"
#include "ibverbs/runtime.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

constexpr unsigned kWindowAccess = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct UroceMw {
  ibv_mw mw;
  DeviceRuntime* runtime = nullptr;
};

UroceMw& mw_of(ibv_mw* mw) { return *uroce_of<UroceMw>(mw); }

}  // namespace

int to_mw_bind(const ibv_mw* mw, std::uint32_t rkey, const ibv_mw_bind_info& info, MwBind& bind) {
  if (mw == nullptr) return EINVAL;
  // Zero-based windows are not served; LOCAL_WRITE means nothing for a
  // window (programs pass it, as the region has it) and is let through.
  if ((info.mw_access_flags & ~(kWindowAccess | IBV_ACCESS_LOCAL_WRITE)) != 0) return EINVAL;
  if (info.length > 0 && info.mr == nullptr) return EINVAL;
  bind.rkey = rkey;
  bind.lkey = info.mr != nullptr ? info.mr->lkey : 0;
  bind.addr = info.addr;
  bind.length = info.length;
  bind.access = info.mw_access_flags & kWindowAccess;  // the remote flags are the engine's AccessFlags bits
  bind.type = mw->type == IBV_MW_TYPE_1 ? 1 : 2;
  return 0;
}

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) return fail_with<ibv_mw>(EINVAL);
  UrocePd& owner = pd_of(pd);
  auto* window = new (std::nothrow) UroceMw{};
  if (window == nullptr) return fail_with<ibv_mw>(ENOMEM);
  auto rkey = owner.runtime->device().call_and_wake(
      [&](Engine& engine) { return engine.alloc_mw(owner.handle, type == IBV_MW_TYPE_1 ? 1 : 2); });
  if (!rkey) {
    delete window;
    return fail_with<ibv_mw>(errno_of(rkey.error()));
  }
  window->runtime = owner.runtime;
  window->mw = ibv_mw{pd->context, pd, *rkey, *rkey >> 8, type};
  return &window->mw;
}

int dealloc_mw(ibv_mw* mw) {
  UroceMw& window = mw_of(mw);
  std::errc result = window.runtime->device().call_and_wake([&](Engine& engine) { return engine.dealloc_mw(mw->rkey); });
  if (result != std::errc{}) return errno_of(result);
  delete &window;
  return 0;
}

// Type 1: posts the bind on qp with the window's next key, which the window
// takes at once (as rdma-core's providers do).
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* request) {
  if (qp == nullptr || mw == nullptr || request == nullptr || mw->type != IBV_MW_TYPE_1) return EINVAL;
  if (request->bind_info.mr != nullptr && request->bind_info.mr->pd != mw->pd) return EINVAL;
  SendWr wr;
  wr.wr_id = request->wr_id;
  wr.opcode = WrOpcode::bind_mw;
  wr.send_flags = request->send_flags & kServedSendFlags;
  std::uint32_t rkey = ibv_inc_rkey(mw->rkey);
  if (int error = to_mw_bind(mw, rkey, request->bind_info, wr.bind); error != 0) return error;
  UroceQp& owner = qp_of(qp);
  int error = owner.runtime->device().post([&](Engine& engine) { return errno_of(engine.post_send(qp->qp_num, wr)); });
  if (error == 0) mw->rkey = rkey;
  return error;
}

}  // namespace uroce::ibverbs
