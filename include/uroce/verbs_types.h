// The verbs vocabulary of uroce: access flags, work requests, completions, QP
// types, states and attributes. Every enumerator has the value of its
// libibverbs counterpart (infiniband/verbs.h), so the libibverbs-compatible
// library maps them by cast.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace uroce {

enum AccessFlags : std::uint32_t {
  kAccessLocalWrite = 1,
  kAccessRemoteWrite = 2,
  kAccessRemoteRead = 4,
  kAccessRemoteAtomic = 8,
  // On-demand paging: nothing is pinned (nothing ever is here). With address
  // 0 and length UINT64_MAX, an implicit region: the whole address space,
  // every access checked by faulting its pages in (verbs/page_access.h).
  kAccessOnDemand = 16,
  kAccessMwBind = 32,  // memory windows may be bound to the region
};

enum class WrOpcode : std::uint8_t {
  rdma_write = 0,
  rdma_write_with_imm = 1,
  send = 2,
  send_with_imm = 3,
  rdma_read = 4,
  atomic_cmp_and_swp = 5,
  atomic_fetch_and_add = 6,
  local_inv = 7,  // invalidates a type 2 window's key (invalidate_rkey), no packet
  bind_mw = 8,    // binds a memory window (bind), no packet
  send_with_inv = 9,
  atomic_write = 15,  // IBTA 1.5's RDMA ATOMIC WRITE: 8 bytes (one SGE or inline), placed in one store
};

enum SendFlags : std::uint32_t {
  kSendFence = 1,
  kSendSignaled = 2,
  kSendSolicited = 4,
  kSendInline = 8,
};

enum class WcStatus : std::uint8_t {
  success = 0,
  loc_len_err = 1,
  loc_qp_op_err = 2,
  loc_eec_op_err = 3,
  loc_prot_err = 4,
  wr_flush_err = 5,
  mw_bind_err = 6,
  bad_resp_err = 7,
  loc_access_err = 8,
  rem_inv_req_err = 9,
  rem_access_err = 10,
  rem_op_err = 11,
  retry_exc_err = 12,
  rnr_retry_exc_err = 13,
  loc_rdd_viol_err = 14,
  rem_inv_rd_req_err = 15,
  rem_abort_err = 16,
  inv_eecn_err = 17,
  inv_eec_state_err = 18,
  fatal_err = 19,
  resp_timeout_err = 20,
  general_err = 21,
};

enum class WcOpcode : std::uint8_t {
  send = 0,
  rdma_write = 1,
  rdma_read = 2,
  comp_swap = 3,
  fetch_add = 4,
  bind_mw = 5,
  local_inv = 6,
  atomic_write = 9,
  recv = 128,
  recv_rdma_with_imm = 129,
};

enum WcFlags : std::uint32_t {
  kWcGrh = 1,
  kWcWithImm = 2,
  kWcWithInv = 8,
};

// xrc_send and xrc_recv: the two halves of an XRC connection (IBTA Annex A14,
// engine.h); their values are ibv_qp_type's.
enum class QpType : std::uint8_t { rc = 2, uc = 3, ud = 4, xrc_send = 9, xrc_recv = 10 };

enum class QpState : std::uint8_t { reset = 0, init = 1, rtr = 2, rts = 3, sqd = 4, sqe = 5, err = 6 };

enum QpAttrMask : std::uint32_t {
  kQpAttrState = 1 << 0,
  kQpAttrCurState = 1 << 1,
  kQpAttrEnSqdAsyncNotify = 1 << 2,
  kQpAttrAccessFlags = 1 << 3,
  kQpAttrPkeyIndex = 1 << 4,
  kQpAttrPort = 1 << 5,
  kQpAttrQkey = 1 << 6,
  kQpAttrAv = 1 << 7,
  kQpAttrPathMtu = 1 << 8,
  kQpAttrTimeout = 1 << 9,
  kQpAttrRetryCnt = 1 << 10,
  kQpAttrRnrRetry = 1 << 11,
  kQpAttrRqPsn = 1 << 12,
  kQpAttrMaxQpRdAtomic = 1 << 13,
  kQpAttrAltPath = 1 << 14,
  kQpAttrMinRnrTimer = 1 << 15,
  kQpAttrSqPsn = 1 << 16,
  kQpAttrMaxDestRdAtomic = 1 << 17,
  kQpAttrPathMigState = 1 << 18,
  kQpAttrCap = 1 << 19,
  kQpAttrDestQpn = 1 << 20,
};

// ibv_mtu numbering: 1 = 256 ... 5 = 4096.
enum class PathMtu : std::uint8_t { mtu256 = 1, mtu512 = 2, mtu1024 = 3, mtu2048 = 4, mtu4096 = 5 };

inline constexpr std::uint32_t mtu_bytes(PathMtu mtu) { return 128u << static_cast<unsigned>(mtu); }

struct Sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
};

// A memory window bind (WrOpcode::bind_mw): the window's new key (its upper
// 24 bits name the window), the region it opens and how.
struct MwBind {
  std::uint32_t rkey = 0;
  std::uint32_t lkey = 0;
  std::uint64_t addr = 0;
  std::uint64_t length = 0;  // 0 closes a type 1 window
  std::uint32_t access = 0;  // remote AccessFlags
  std::uint8_t type = 2;     // 1: ibv_bind_mw's; 2: a work request's
};

struct SendWr {
  std::uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::send;
  std::uint32_t send_flags = 0;  // SendFlags
  std::span<const Sge> sg_list;
  std::uint32_t imm_data = 0;        // network byte order is the caller's business, as in verbs
  std::uint32_t invalidate_rkey = 0;  // send_with_inv, local_inv
  MwBind bind;                        // bind_mw
  std::uint32_t xrc_remote_srqn = 0;  // xrc_send: the remote XRC SRQ the message goes to
  struct {
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0;
  } rdma;
  struct {
    std::uint64_t remote_addr = 0;
    std::uint64_t compare_add = 0;
    std::uint64_t swap = 0;
    std::uint32_t rkey = 0;
  } atomic;
  struct {  // UD only
    std::uint32_t ah = 0;  // address handle
    std::uint32_t remote_qpn = 0;
    std::uint32_t remote_qkey = 0;
  } ud;
};

struct RecvWr {
  std::uint64_t wr_id = 0;
  std::span<const Sge> sg_list;
};

enum NetworkHeaderType : std::uint8_t { kNetworkIpv6 = 1, kNetworkIpv4 = 2 };

struct WorkCompletion {
  std::uint64_t wr_id = 0;
  WcStatus status = WcStatus::success;
  WcOpcode opcode = WcOpcode::send;
  std::uint32_t vendor_err = 0;
  std::uint32_t byte_len = 0;
  std::uint32_t imm_data = 0;  // or the invalidated rkey with kWcWithInv
  std::uint32_t qp_num = 0;
  std::uint32_t src_qp = 0;
  std::uint32_t wc_flags = 0;  // WcFlags
  std::uint16_t pkey_index = 0;
  // A UD receive's network header (NetworkHeaderType), as a ConnectX CQE
  // reports it in the SL field on RoCE; UCX's UD transport reads it there.
  std::uint8_t network_header_type = 0;
};

std::string_view to_string(WcStatus status);
std::string_view to_string(QpState state);

}  // namespace uroce
