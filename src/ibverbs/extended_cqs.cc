// Extended CQs (ibv_create_cq_ex): the same engine CQ as ibv_create_cq, read
// one completion at a time through start_poll / next_poll / end_poll and the
// read_* operations. Every work-completion field Soft-RoCE's provider offers
// can be asked for, and completion timestamps too: the time (ns) at which the
// library took the completion from the engine, on CLOCK_MONOTONIC (read_
// completion_ts; hca_core_clock says 1 GHz) and CLOCK_REALTIME
// (read_completion_wallclock_ns). ibv_query_rt_values_ex reads the same
// monotonic clock.
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <ctime>
#include <span>

#include "ibverbs/objects.h"
#include "ibverbs/runtime.h"
#include "ibverbs/verbs_ops.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

constexpr std::uint64_t kServedWcFlags = std::uint64_t{IBV_WC_STANDARD_FLAGS} |
                                         IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                                         IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
// A hint every CQ here meets (each is safe from any thread, so from one);
// IGNORE_OVERRUN is refused: a CQ never overruns silently.
constexpr std::uint32_t kServedCreateFlags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;

std::uint64_t clock_ns(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(now.tv_nsec);
}

UroceCq& extended(ibv_cq_ex* cq) { return cq_of(ibv_cq_ex_to_cq(cq)); }

// Takes the next completion from the engine into cq.current: 0, ENOENT when
// none waits, or the errno of a CQ that overran.
int take_one(ibv_cq_ex* ibv) {
  UroceCq& cq = extended(ibv);
  WorkCompletion taken;
  int error = 0;
  int got = cq.runtime->device().poll([&](Engine& engine) {
    auto polled = engine.poll_cq(cq.handle, std::span(&taken, 1));
    if (!polled) error = errno_of(polled.error());
    return polled ? static_cast<int>(*polled) : 0;
  });
  if (error != 0) return error;
  if (got == 0) return ENOENT;
  cq.current = taken;
  cq.current_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
  cq.current_wallclock_ns = clock_ns(CLOCK_REALTIME);
  ibv->status = static_cast<ibv_wc_status>(taken.status);
  ibv->wr_id = taken.wr_id;
  return 0;
}

int start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) return EINVAL;
  return take_one(cq);
}
int next_poll(ibv_cq_ex* cq) { return take_one(cq); }
void end_poll(ibv_cq_ex*) {}

ibv_wc_opcode read_opcode(ibv_cq_ex* cq) { return static_cast<ibv_wc_opcode>(extended(cq).current.opcode); }
std::uint32_t read_vendor_err(ibv_cq_ex* cq) { return extended(cq).current.vendor_err; }
std::uint32_t read_byte_len(ibv_cq_ex* cq) { return extended(cq).current.byte_len; }
// Network order, as it was on the wire; the invalidated rkey is a value (the same union as ibv_wc's).
__be32 read_imm_data(ibv_cq_ex* cq) {
  const WorkCompletion& wc = extended(cq).current;
  return (wc.wc_flags & kWcWithImm) != 0 ? htonl(wc.imm_data) : wc.imm_data;
}
std::uint32_t read_qp_num(ibv_cq_ex* cq) { return extended(cq).current.qp_num; }
std::uint32_t read_src_qp(ibv_cq_ex* cq) { return extended(cq).current.src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* cq) { return extended(cq).current.wc_flags; }
std::uint32_t read_slid(ibv_cq_ex*) { return 0; }
std::uint8_t read_sl(ibv_cq_ex* cq) { return extended(cq).current.network_header_type; }  // as ibv_poll_cq's sl
std::uint8_t read_dlid_path_bits(ibv_cq_ex*) { return 0; }
std::uint64_t read_completion_ts(ibv_cq_ex* cq) { return extended(cq).current_monotonic_ns; }
std::uint64_t read_completion_wallclock_ns(ibv_cq_ex* cq) { return extended(cq).current_wallclock_ns; }

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  if ((attr->wc_flags & ~static_cast<std::uint64_t>(IBV_CREATE_CQ_SUP_WC_FLAGS)) != 0) {
    return fail_with<ibv_cq_ex>(EINVAL);
  }
  if ((attr->wc_flags & ~kServedWcFlags) != 0) return fail_with<ibv_cq_ex>(EOPNOTSUPP);  // VLAN, flow tag, TM
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) != 0 && (attr->flags & ~kServedCreateFlags) != 0) {
    return fail_with<ibv_cq_ex>(EOPNOTSUPP);
  }
  // A CQ may name the parent domain whose allocators would hold its buffer (parent_domains.cc).
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) != 0 &&
      (attr->parent_domain == nullptr || pd_of(attr->parent_domain).protection_domain == nullptr ||
       attr->parent_domain->context != context)) {
    return fail_with<ibv_cq_ex>(EINVAL);
  }
  if (attr->cqe == 0 || attr->cqe > static_cast<std::uint32_t>(INT32_MAX)) return fail_with<ibv_cq_ex>(EINVAL);
  ibv_cq* created = create_cq(context, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                              static_cast<int>(attr->comp_vector > INT32_MAX ? INT32_MAX : attr->comp_vector));
  if (created == nullptr) return nullptr;
  ibv_cq_ex& cq = cq_of(created).cq_ex;
  cq.comp_mask = 0;
  cq.start_poll = start_poll;
  cq.next_poll = next_poll;
  cq.end_poll = end_poll;
  cq.read_opcode = read_opcode;
  cq.read_vendor_err = read_vendor_err;
  cq.read_byte_len = read_byte_len;
  cq.read_imm_data = read_imm_data;
  cq.read_qp_num = read_qp_num;
  cq.read_src_qp = read_src_qp;
  cq.read_wc_flags = read_wc_flags;
  cq.read_slid = read_slid;
  cq.read_sl = read_sl;
  cq.read_dlid_path_bits = read_dlid_path_bits;
  cq.read_completion_ts = read_completion_ts;
  cq.read_completion_wallclock_ns = read_completion_wallclock_ns;
  return &cq;
}

int query_rt_values(ibv_context*, ibv_values_ex* values) {
  if ((values->comp_mask & ~static_cast<std::uint32_t>(IBV_VALUES_MASK_RAW_CLOCK)) != 0) return EINVAL;
  if ((values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) != 0) {
    std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    values->raw_clock.tv_sec = static_cast<time_t>(now / 1'000'000'000ULL);
    values->raw_clock.tv_nsec = static_cast<long>(now % 1'000'000'000ULL);
  }
  return 0;
}

}  // namespace

void install_extended_cq_ops(verbs_context& context) {
  context.create_cq_ex = create_cq_ex;
  context.query_rt_values = query_rt_values;
}

}  // namespace uroce::ibverbs
