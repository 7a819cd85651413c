// XRC in uroce's libibverbs: domains (ibv_open_xrcd, shared by every context
// of the process that names the same file, as the kernel shares them by
// inode), XRC SRQs (ibv_create_srq_ex) and their numbers (ibv_get_srq_num).
// The QPs are in queue_pairs.cc; the protocol in the engine (transport/xrc.h).
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <new>

#include "ibverbs/objects.h"
#include "ibverbs/runtime.h"
#include "ibverbs/verbs_ops.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

struct UroceXrcd {
  ibv_xrcd xrcd;
  std::uint32_t handle = 0;  // the engine's domain
  DeviceRuntime* runtime = nullptr;
  bool named = false;  // opened through a file: shared by inode
  ino_t inode = 0;
};

// Domains opened through a file, by the file's inode: how many opens hold each.
struct NamedDomains {
  std::mutex mutex;
  std::map<std::pair<DeviceRuntime*, ino_t>, std::pair<std::uint32_t, int>> domains;  // -> handle, opens
};

NamedDomains& named_domains() {
  static NamedDomains domains;
  return domains;
}

ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr) {
  constexpr std::uint32_t kServedMask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  if (attr == nullptr || (attr->comp_mask & ~kServedMask) != 0) return fail_with<ibv_xrcd>(EINVAL);
  DeviceRuntime* runtime = runtime_for(context);
  if (runtime == nullptr) return nullptr;
  int fd = (attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) != 0 ? attr->fd : -1;
  int oflags = (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) != 0 ? attr->oflags : 0;
  if ((oflags & ~(O_CREAT | O_EXCL)) != 0) return fail_with<ibv_xrcd>(EINVAL);
  auto* xrcd = new (std::nothrow) UroceXrcd{};
  if (xrcd == nullptr) return fail_with<ibv_xrcd>(ENOMEM);
  xrcd->runtime = runtime;
  xrcd->xrcd.context = context;
  if (fd < 0) {  // a domain of this context alone
    if ((oflags & O_CREAT) == 0) {
      delete xrcd;
      return fail_with<ibv_xrcd>(EINVAL);
    }
    auto handle = runtime->device().call_and_wake([](Engine& engine) { return engine.open_xrcd(); });
    xrcd->handle = *handle;
    return &xrcd->xrcd;
  }
  struct stat file {};
  if (::fstat(fd, &file) != 0) {
    int error = errno;
    delete xrcd;
    return fail_with<ibv_xrcd>(error);
  }
  std::lock_guard lock(named_domains().mutex);
  auto key = std::pair{runtime, file.st_ino};
  auto found = named_domains().domains.find(key);
  int error = 0;
  if (found == named_domains().domains.end()) {
    if ((oflags & O_CREAT) == 0) error = ENOENT;
  } else if ((oflags & O_CREAT) != 0 && (oflags & O_EXCL) != 0) {
    error = EEXIST;
  }
  if (error != 0) {
    delete xrcd;
    return fail_with<ibv_xrcd>(error);
  }
  if (found == named_domains().domains.end()) {
    auto handle = runtime->device().call_and_wake([](Engine& engine) { return engine.open_xrcd(); });
    found = named_domains().domains.emplace(key, std::pair{*handle, 0}).first;
  }
  ++found->second.second;
  xrcd->handle = found->second.first;
  xrcd->named = true;
  xrcd->inode = file.st_ino;
  return &xrcd->xrcd;
}

int close_xrcd(ibv_xrcd* ibv) {
  auto* xrcd = reinterpret_cast<UroceXrcd*>(ibv);
  DeviceRuntime* runtime = xrcd->runtime;
  std::uint32_t handle = xrcd->handle;
  if (xrcd->named) {
    std::lock_guard lock(named_domains().mutex);
    auto found = named_domains().domains.find(std::pair{runtime, xrcd->inode});
    if (found != named_domains().domains.end() && --found->second.second > 0) {
      delete xrcd;  // another open holds the domain
      return 0;
    }
    std::errc closed = runtime->device().call_and_wake([&](Engine& engine) { return engine.close_xrcd(handle); });
    if (closed != std::errc{}) {
      if (found != named_domains().domains.end()) ++found->second.second;
      return errno_of(closed);
    }
    if (found != named_domains().domains.end()) named_domains().domains.erase(found);
    delete xrcd;
    return 0;
  }
  std::errc closed = runtime->device().call_and_wake([&](Engine& engine) { return engine.close_xrcd(handle); });
  if (closed != std::errc{}) return errno_of(closed);
  delete xrcd;
  return 0;
}

ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr) {
  constexpr std::uint32_t kServedMask =
      IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  if (attr == nullptr || (attr->comp_mask & ~kServedMask) != 0) return fail_with<ibv_srq>(EOPNOTSUPP);
  bool typed = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) != 0;
  ibv_srq_type type = typed ? attr->srq_type : IBV_SRQT_BASIC;
  if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC) return fail_with<ibv_srq>(EOPNOTSUPP);  // tag matching
  if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) == 0 || attr->pd == nullptr || attr->pd->context != context) {
    return fail_with<ibv_srq>(EINVAL);
  }
  ibv_srq_init_attr classic{attr->srq_context, attr->attr};
  if (type == IBV_SRQT_BASIC) return create_srq(attr->pd, &classic, 0, 0);
  constexpr std::uint32_t kXrcNeeds = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  if ((attr->comp_mask & kXrcNeeds) != kXrcNeeds || attr->xrcd == nullptr || attr->cq == nullptr) {
    return fail_with<ibv_srq>(EINVAL);
  }
  std::uint32_t xrcd = xrcd_handle(attr->xrcd);
  return create_srq(attr->pd, &classic, xrcd, cq_of(attr->cq).handle);
}

// An SRQ's number is its engine handle: what a remote xrc_send QP names.
int get_srq_num(ibv_srq* srq, std::uint32_t* srq_num) {
  *srq_num = srq_of(srq).handle;
  return 0;
}

}  // namespace

std::uint32_t xrcd_handle(ibv_xrcd* xrcd) { return reinterpret_cast<UroceXrcd*>(xrcd)->handle; }

void install_xrc_ops(verbs_context& context) {
  context.open_xrcd = open_xrcd;
  context.close_xrcd = close_xrcd;
  context.create_srq_ex = create_srq_ex;
  context.get_srq_num = get_srq_num;
}

}  // namespace uroce::ibverbs
