// Queries: device and port attributes, the GID table (laid out as Linux
// Soft-RoCE lays it out) and the P_Key table (the default P_Key only).
#include <cerrno>
#include <cstring>

#include "ibverbs/ibverbs_device.h"
#include "ibverbs/rdma_core_private.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_ops.h"
#include "port/interface_info.h"

#undef ibv_query_port

namespace uroce::ibverbs {
namespace {

constexpr std::uint16_t kDefaultPkey = 0xFFFF;
constexpr std::uint32_t kVendorId = 0xFFFFFF;  // no IEEE OUI: a software device, as Soft-RoCE reports it

UroceDevice& device_of(ibv_context* context) { return *context_of(context)->device; }

void fill_device_attr(const UroceDevice& device, ibv_device_attr& attr) {
  std::memset(&attr, 0, sizeof attr);
  DeviceAttributes limits;  // the engine's
  std::snprintf(attr.fw_ver, sizeof attr.fw_ver, "uroce");
  attr.node_guid = device.guid;
  attr.sys_image_guid = device.guid;
  attr.max_mr_size = limits.max_mr_size;
  attr.page_size_cap = 0xFFFFF000;  // any multiple of 4 KiB
  attr.vendor_id = kVendorId;
  attr.vendor_part_id = 0;
  attr.hw_ver = 0;
  attr.max_qp = static_cast<int>(limits.max_qp);
  attr.max_qp_wr = static_cast<int>(limits.max_qp_wr);
  attr.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_N_NOTIFY_CQ |
                          IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC;
  attr.max_sge = static_cast<int>(limits.max_sge);
  attr.max_sge_rd = static_cast<int>(limits.max_sge);
  attr.max_cq = static_cast<int>(limits.max_cq);
  attr.max_cqe = static_cast<int>(limits.max_cqe);
  attr.max_mr = static_cast<int>(limits.max_mr);
  attr.max_mw = static_cast<int>(limits.max_mr);  // windows share the keys' space with regions
  attr.max_pd = static_cast<int>(limits.max_pd);
  attr.max_qp_rd_atom = static_cast<int>(limits.max_qp_rd_atom);
  attr.max_res_rd_atom = static_cast<int>(limits.max_qp_rd_atom * limits.max_qp);
  attr.max_qp_init_rd_atom = static_cast<int>(limits.max_qp_init_rd_atom);
  attr.atomic_cap = IBV_ATOMIC_HCA;
  attr.max_ah = static_cast<int>(limits.max_qp);
  attr.max_srq = static_cast<int>(limits.max_srq);
  attr.max_srq_wr = static_cast<int>(limits.max_srq_wr);
  attr.max_srq_sge = static_cast<int>(limits.max_sge);
  attr.max_mcast_grp = static_cast<int>(limits.max_mcast_grp);
  attr.max_mcast_qp_attach = static_cast<int>(limits.max_mcast_qp_attach);
  attr.max_total_mcast_qp_attach = static_cast<int>(limits.max_mcast_grp * limits.max_mcast_qp_attach);
  attr.max_pkeys = 1;
  attr.local_ca_ack_delay = 15;
  attr.phys_port_cnt = 1;
}

void fill_port_attr(const UroceDevice& device, ibv_port_attr& attr) {
  std::memset(&attr, 0, sizeof attr);
  attr.state = IBV_PORT_ACTIVE;
  attr.max_mtu = IBV_MTU_4096;
  attr.active_mtu = static_cast<ibv_mtu>(
      port::largest_path_mtu(static_cast<std::size_t>(device.link_mtu), gid_is_ipv4(device.gid)));
  attr.gid_tbl_len = static_cast<int>(gid_table(device).size());
  attr.port_cap_flags = IBV_PORT_CM_SUP;
  attr.max_msg_sz = DeviceAttributes{}.max_msg_size;
  attr.pkey_tbl_len = 1;
  attr.max_vl_num = 1;
  attr.active_width = 1;  // 1X
  attr.active_speed = 1;  // SDR: a software device has no signalling rate
  attr.phys_state = 5;    // LinkUp
  attr.link_layer = IBV_LINK_LAYER_ETHERNET;
  attr.lid = port_lid(device.gid);  // uroce's LID extension (ibverbs_device.h)
}

int query_port_extended(ibv_context* context, std::uint8_t port_num, ibv_port_attr* attr, std::size_t length) {
  if (port_num != 1) return EINVAL;
  ibv_port_attr full;
  fill_port_attr(device_of(context), full);
  std::memcpy(attr, &full, std::min(length, sizeof full));
  return 0;
}

int query_device_extended(ibv_context* context, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                          std::size_t length) {
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  ibv_device_attr_ex full;
  std::memset(&full, 0, sizeof full);
  fill_device_attr(device_of(context), full.orig_attr);
  full.phys_port_cnt_ex = 1;
  // Extended CQs stamp completions in nanoseconds (extended_cqs.cc): a 1 GHz clock, in kHz.
  full.completion_timestamp_mask = UINT64_MAX;
  full.hca_core_clock = 1'000'000;
  // On-demand paging: nothing is ever pinned, so every region is one; implicit
  // regions check each access (src/verbs/page_access.h).
  full.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
  constexpr std::uint32_t kConnected = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                                       IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
  full.odp_caps.per_transport_caps.rc_odp_caps = kConnected;
  full.xrc_odp_caps = kConnected;
  full.odp_caps.per_transport_caps.uc_odp_caps =
      IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
  full.odp_caps.per_transport_caps.ud_odp_caps =
      IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
  std::memcpy(attr, &full, std::min(length, sizeof full));
  return 0;
}

}  // namespace
}  // namespace uroce::ibverbs

extern "C" int UROCE_V11(ibv_query_device)(ibv_context* context, ibv_device_attr* attr);

namespace uroce::ibverbs {

void install_query_ops(verbs_context& context) {
  context.query_port = query_port_extended;
  context.query_device_ex = query_device_extended;
  context.context.ops._compat_query_device = UROCE_V11(ibv_query_device);
}

}  // namespace uroce::ibverbs

using uroce::ibverbs::context_of;
using uroce::ibverbs::gid_table;

extern "C" {

int UROCE_V11(ibv_query_device)(ibv_context* context, ibv_device_attr* attr) {
  uroce::ibverbs::fill_device_attr(*context_of(context)->device, *attr);
  return 0;
}
UROCE_BIND_V11(ibv_query_device);

// The pre-extension entry point: its struct ends before link_layer.
int UROCE_V11(ibv_query_port)(ibv_context* context, std::uint8_t port_num, _compat_ibv_port_attr* attr) {
  if (port_num != 1) return EINVAL;
  ibv_port_attr full;
  uroce::ibverbs::fill_port_attr(*context_of(context)->device, full);
  std::memcpy(attr, &full, offsetof(ibv_port_attr, link_layer));
  return 0;
}
UROCE_BIND_V11(ibv_query_port);

int UROCE_V11(ibv_query_gid)(ibv_context* context, std::uint8_t port_num, int index, ibv_gid* gid) {
  std::vector<uroce::Gid> table = gid_table(*context_of(context)->device);
  if (port_num != 1 || index < 0) return -1;
  // Like a kernel GID table, slots past the last entry read as zero.
  std::memset(gid->raw, 0, sizeof gid->raw);
  if (static_cast<std::size_t>(index) < table.size()) std::memcpy(gid->raw, table[index].data(), 16);
  return 0;
}
UROCE_BIND_V11(ibv_query_gid);

int ibv_query_gid_type(ibv_context* context, std::uint8_t port_num, unsigned int index, ibv_gid_type_sysfs* type) {
  std::vector<uroce::Gid> table = gid_table(*context_of(context)->device);
  if (port_num != 1 || index >= table.size()) {
    errno = EINVAL;
    return -1;
  }
  *type = IBV_GID_TYPE_SYSFS_ROCE_V2;
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index, ibv_gid_entry* entry,
                      std::uint32_t flags, std::size_t entry_size) {
  std::vector<uroce::Gid> table = gid_table(*context_of(context)->device);
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  if (port_num != 1 || gid_index >= table.size()) return ENODATA;
  std::memset(entry, 0, sizeof(ibv_gid_entry));
  std::memcpy(entry->gid.raw, table[gid_index].data(), 16);
  entry->gid_index = gid_index;
  entry->port_num = port_num;
  entry->gid_type = IBV_GID_TYPE_ROCE_V2;
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, std::size_t max_entries,
                             std::uint32_t flags, std::size_t entry_size) {
  std::vector<uroce::Gid> table = gid_table(*context_of(context)->device);
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < table.size()) return -EINVAL;
  for (std::uint32_t i = 0; i < table.size(); ++i) {
    auto* entry = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<std::uint8_t*>(entries) + i * entry_size);
    _ibv_query_gid_ex(context, 1, i, entry, 0, entry_size);
  }
  return static_cast<ssize_t>(table.size());
}

int UROCE_V11(ibv_query_pkey)(ibv_context*, std::uint8_t port_num, int index, __be16* pkey) {
  if (port_num != 1 || index != 0) return -1;
  *pkey = htobe16(uroce::ibverbs::kDefaultPkey);
  return 0;
}
UROCE_BIND_V11(ibv_query_pkey);

int ibv_get_pkey_index(ibv_context*, std::uint8_t port_num, __be16 pkey) {
  if (port_num != 1 || be16toh(pkey) != uroce::ibverbs::kDefaultPkey) return -1;
  return 0;
}

}  // extern "C"
