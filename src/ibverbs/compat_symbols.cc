// Symbols at versions older than the default: the IBVERBS_1.0 entry points
// (the 2006 ABI, whose structures differ from today's) and
// ibv_register_driver@IBVERBS_1.1 (for providers of that era). Binaries that
// old are not served: each fails cleanly. Bound with .symver; the default
// versions come from libibverbs.map.
#include <cerrno>
#include <cstdint>

namespace {

void* unsupported_pointer() {
  errno = EOPNOTSUPP;
  return nullptr;
}

}  // namespace

// UROCE_COMPAT(result kind, name, version): defines uroce_compat_<name> and
// binds it as <name>@<version>.
#define UROCE_COMPAT_POINTER(name, version)                                        \
  extern "C" void* uroce_compat_##name() { return unsupported_pointer(); }        \
  __asm__(".symver uroce_compat_" #name ", " #name "@" version);
#define UROCE_COMPAT_INT(name, version)                                            \
  extern "C" int uroce_compat_##name() { return EOPNOTSUPP; }                     \
  __asm__(".symver uroce_compat_" #name ", " #name "@" version);
#define UROCE_COMPAT_VOID(name, version)                                           \
  extern "C" void uroce_compat_##name() {}                                         \
  __asm__(".symver uroce_compat_" #name ", " #name "@" version);

UROCE_COMPAT_VOID(ibv_ack_async_event, "IBVERBS_1.0")
UROCE_COMPAT_VOID(ibv_ack_cq_events, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_alloc_pd, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_attach_mcast, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_close_device, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_create_ah, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_create_cq, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_create_qp, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_create_srq, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_dealloc_pd, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_dereg_mr, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_destroy_ah, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_destroy_cq, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_destroy_qp, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_destroy_srq, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_detach_mcast, "IBVERBS_1.0")
UROCE_COMPAT_VOID(ibv_free_device_list, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_get_async_event, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_get_cq_event, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_get_device_guid, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_get_device_list, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_get_device_name, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_modify_qp, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_modify_srq, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_open_device, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_query_device, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_query_gid, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_query_pkey, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_query_port, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_query_qp, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_query_srq, "IBVERBS_1.0")
UROCE_COMPAT_POINTER(ibv_reg_mr, "IBVERBS_1.0")
UROCE_COMPAT_INT(ibv_resize_cq, "IBVERBS_1.0")
UROCE_COMPAT_VOID(ibv_register_driver, "IBVERBS_1.1")
