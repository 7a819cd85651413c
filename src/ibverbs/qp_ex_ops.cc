// The ibv_wr_* interface of extended QPs (perftest's default way to post):
// each builder call starts a request in the QP's WrBuilder, the setters fill
// in its data and destination, and ibv_wr_complete posts the batch under one
// device lock. An error found while building (a setter before any builder,
// an opcode uroce does not serve) fails the whole batch at ibv_wr_complete.
#include <infiniband/verbs.h>

#include <arpa/inet.h>

#include <cstring>

#include "ibverbs/memory_windows.h"
#include "ibverbs/objects.h"
#include "ibverbs/runtime.h"
#include "ibverbs/verbs_ops.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

BuiltWr& begin(ibv_qp_ex* qpx, WrOpcode opcode) {
  BuiltWr& entry = qp_of(qpx).builder.add();
  entry.wr.wr_id = qpx->wr_id;
  entry.wr.opcode = opcode;
  entry.wr.send_flags = qpx->wr_flags & kServedSendFlags;
  return entry;
}

BuiltWr* current(ibv_qp_ex* qpx) {
  BuiltWr* entry = qp_of(qpx).builder.last();
  if (entry == nullptr) qp_of(qpx).builder.fail(EINVAL);
  return entry;
}

void wr_start(ibv_qp_ex* qpx) { qp_of(qpx).builder.start(); }

int wr_complete(ibv_qp_ex* qpx) {
  UroceQp& qp = qp_of(qpx);
  int build_error = qp.builder.error();
  std::span<BuiltWr> batch = qp.builder.finish();
  if (build_error != 0) return build_error;
  std::uint32_t qpn = qpx->qp_base.qp_num;
  return qp.runtime->device().post([&](Engine& engine) {
    for (BuiltWr& entry : batch) {
      std::errc result = engine.post_send(qpn, entry.wr);
      if (result != std::errc{}) return errno_of(result);
    }
    return 0;
  });
}

void wr_abort(ibv_qp_ex* qpx) { qp_of(qpx).builder.start(); }

void wr_send(ibv_qp_ex* qpx) { begin(qpx, WrOpcode::send); }

void wr_send_imm(ibv_qp_ex* qpx, __be32 imm_data) { begin(qpx, WrOpcode::send_with_imm).wr.imm_data = ntohl(imm_data); }

void wr_send_inv(ibv_qp_ex* qpx, std::uint32_t invalidate_rkey) {
  begin(qpx, WrOpcode::send_with_inv).wr.invalidate_rkey = invalidate_rkey;
}

void wr_rdma(ibv_qp_ex* qpx, WrOpcode opcode, std::uint32_t rkey, std::uint64_t remote_addr, __be32 imm_data) {
  BuiltWr& entry = begin(qpx, opcode);
  entry.wr.rdma.rkey = rkey;
  entry.wr.rdma.remote_addr = remote_addr;
  entry.wr.imm_data = ntohl(imm_data);
}

void wr_rdma_write(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr) {
  wr_rdma(qpx, WrOpcode::rdma_write, rkey, remote_addr, 0);
}

void wr_rdma_write_imm(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr, __be32 imm_data) {
  wr_rdma(qpx, WrOpcode::rdma_write_with_imm, rkey, remote_addr, imm_data);
}

void wr_rdma_read(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr) {
  wr_rdma(qpx, WrOpcode::rdma_read, rkey, remote_addr, 0);
}

void wr_atomic(ibv_qp_ex* qpx, WrOpcode opcode, std::uint32_t rkey, std::uint64_t remote_addr,
               std::uint64_t compare_add, std::uint64_t swap) {
  BuiltWr& entry = begin(qpx, opcode);
  entry.wr.atomic = {remote_addr, compare_add, swap, rkey};
}

void wr_atomic_cmp_swp(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr, std::uint64_t compare,
                       std::uint64_t swap) {
  wr_atomic(qpx, WrOpcode::atomic_cmp_and_swp, rkey, remote_addr, compare, swap);
}

void wr_atomic_fetch_add(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr, std::uint64_t add) {
  wr_atomic(qpx, WrOpcode::atomic_fetch_and_add, rkey, remote_addr, add, 0);
}

// The 8 bytes are copied now, as ibv_wr_atomic_write promises: the caller may reuse its buffer.
void wr_atomic_write(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr, const void* atomic_wr) {
  BuiltWr& entry = begin(qpx, WrOpcode::atomic_write);
  entry.wr.rdma.rkey = rkey;
  entry.wr.rdma.remote_addr = remote_addr;
  if (atomic_wr == nullptr) {
    qp_of(qpx).builder.fail(EINVAL);
    return;
  }
  const auto* bytes = static_cast<const std::uint8_t*>(atomic_wr);
  entry.inline_bytes.assign(bytes, bytes + 8);
  entry.inline_data = true;
}

void wr_set_sge(ibv_qp_ex* qpx, std::uint32_t lkey, std::uint64_t addr, std::uint32_t length) {
  if (BuiltWr* entry = current(qpx)) entry->sges.assign(1, Sge{addr, length, lkey});
}

void wr_set_sge_list(ibv_qp_ex* qpx, std::size_t num_sge, const ibv_sge* sg_list) {
  BuiltWr* entry = current(qpx);
  if (entry == nullptr) return;
  entry->sges.clear();
  for (std::size_t i = 0; i < num_sge; ++i) {
    entry->sges.push_back(Sge{sg_list[i].addr, sg_list[i].length, sg_list[i].lkey});
  }
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, std::size_t length) {
  BuiltWr* entry = current(qpx);
  if (entry == nullptr) return;
  const auto* bytes = static_cast<const std::uint8_t*>(addr);
  entry->inline_bytes.assign(bytes, bytes + length);
  entry->inline_data = true;
}

void wr_set_inline_data_list(ibv_qp_ex* qpx, std::size_t num_buf, const ibv_data_buf* buf_list) {
  BuiltWr* entry = current(qpx);
  if (entry == nullptr) return;
  entry->inline_bytes.clear();
  for (std::size_t i = 0; i < num_buf; ++i) {
    const auto* bytes = static_cast<const std::uint8_t*>(buf_list[i].addr);
    entry->inline_bytes.insert(entry->inline_bytes.end(), bytes, bytes + buf_list[i].length);
  }
  entry->inline_data = true;
}

void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah* ah, std::uint32_t remote_qpn, std::uint32_t remote_qkey) {
  BuiltWr* entry = current(qpx);
  if (entry == nullptr) return;
  if (ah == nullptr) {
    qp_of(qpx).builder.fail(EINVAL);
    return;
  }
  entry->wr.ud = {ah_of(ah).handle, remote_qpn, remote_qkey};
}

void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw* mw, std::uint32_t rkey, const ibv_mw_bind_info* info) {
  BuiltWr& entry = begin(qpx, WrOpcode::bind_mw);
  if (info == nullptr || to_mw_bind(mw, rkey, *info, entry.wr.bind) != 0) qp_of(qpx).builder.fail(EINVAL);
}

void wr_local_inv(ibv_qp_ex* qpx, std::uint32_t invalidate_rkey) {
  begin(qpx, WrOpcode::local_inv).wr.invalidate_rkey = invalidate_rkey;
}

void wr_set_xrc_srqn(ibv_qp_ex* qpx, std::uint32_t remote_srqn) {
  if (BuiltWr* entry = current(qpx)) entry->wr.xrc_remote_srqn = remote_srqn;
}

// Operations uroce does not serve: the batch fails with EOPNOTSUPP.
void refuse(ibv_qp_ex* qpx) {
  qp_of(qpx).builder.add();
  qp_of(qpx).builder.fail(EOPNOTSUPP);
}
void wr_send_tso(ibv_qp_ex* qpx, void*, std::uint16_t, std::uint16_t) { refuse(qpx); }

}  // namespace

void install_qp_ex_ops(ibv_qp_ex& qpx) {
  qpx.wr_start = wr_start;
  qpx.wr_complete = wr_complete;
  qpx.wr_abort = wr_abort;
  qpx.wr_send = wr_send;
  qpx.wr_send_imm = wr_send_imm;
  qpx.wr_send_inv = wr_send_inv;
  qpx.wr_rdma_write = wr_rdma_write;
  qpx.wr_rdma_write_imm = wr_rdma_write_imm;
  qpx.wr_rdma_read = wr_rdma_read;
  qpx.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  qpx.wr_atomic_fetch_add = wr_atomic_fetch_add;
  qpx.wr_set_sge = wr_set_sge;
  qpx.wr_set_sge_list = wr_set_sge_list;
  qpx.wr_set_inline_data = wr_set_inline_data;
  qpx.wr_set_inline_data_list = wr_set_inline_data_list;
  qpx.wr_set_ud_addr = wr_set_ud_addr;
  qpx.wr_bind_mw = wr_bind_mw;
  qpx.wr_local_inv = wr_local_inv;
  qpx.wr_send_tso = wr_send_tso;
  qpx.wr_set_xrc_srqn = wr_set_xrc_srqn;
  qpx.wr_atomic_write = wr_atomic_write;
}

}  // namespace uroce::ibverbs
