// Verbs that uroce's libibverbs does not serve yet: each fails the way
// rdma-core reports an unsupported operation (NULL with errno EOPNOTSUPP, or
// EOPNOTSUPP returned), never aborts. The data path (PDs, MRs, CQs, QPs,
// AHs, completion channels, async events) moves here-out as it lands.
#include <infiniband/verbs.h>
#include "ibverbs/symbol_versions.h"

#include <cerrno>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace {

template <class T>
T* fail_null() {
  errno = EOPNOTSUPP;
  return nullptr;
}

int fail_minus_one() {
  errno = EOPNOTSUPP;
  return -1;
}

}  // namespace

extern "C" {

ibv_pd* UROCE_V11(ibv_alloc_pd)(ibv_context*) { return fail_null<ibv_pd>(); }
UROCE_BIND_V11(ibv_alloc_pd);
int UROCE_V11(ibv_dealloc_pd)(ibv_pd*) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_dealloc_pd);
ibv_mr* UROCE_V11(ibv_reg_mr)(ibv_pd*, void*, size_t, int) { return fail_null<ibv_mr>(); }
UROCE_BIND_V11(ibv_reg_mr);
ibv_mr* ibv_reg_mr_iova(ibv_pd*, void*, size_t, uint64_t, int) { return fail_null<ibv_mr>(); }
ibv_mr* ibv_reg_mr_iova2(ibv_pd*, void*, size_t, uint64_t, unsigned int) { return fail_null<ibv_mr>(); }
ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) { return fail_null<ibv_mr>(); }
int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int) { return EOPNOTSUPP; }
int UROCE_V11(ibv_dereg_mr)(ibv_mr*) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_dereg_mr);

ibv_comp_channel* ibv_create_comp_channel(ibv_context*) { return fail_null<ibv_comp_channel>(); }
int ibv_destroy_comp_channel(ibv_comp_channel*) { return EOPNOTSUPP; }
ibv_cq* UROCE_V11(ibv_create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int) { return fail_null<ibv_cq>(); }
UROCE_BIND_V11(ibv_create_cq);
int UROCE_V11(ibv_resize_cq)(ibv_cq*, int) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_resize_cq);
int UROCE_V11(ibv_destroy_cq)(ibv_cq*) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_destroy_cq);
int UROCE_V11(ibv_get_cq_event)(ibv_comp_channel*, ibv_cq**, void**) { return fail_minus_one(); }
UROCE_BIND_V11(ibv_get_cq_event);
void UROCE_V11(ibv_ack_cq_events)(ibv_cq*, unsigned int) {}
UROCE_BIND_V11(ibv_ack_cq_events);

ibv_srq* UROCE_V11(ibv_create_srq)(ibv_pd*, ibv_srq_init_attr*) { return fail_null<ibv_srq>(); }
UROCE_BIND_V11(ibv_create_srq);
int UROCE_V11(ibv_modify_srq)(ibv_srq*, ibv_srq_attr*, int) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_modify_srq);
int UROCE_V11(ibv_query_srq)(ibv_srq*, ibv_srq_attr*) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_query_srq);
int UROCE_V11(ibv_destroy_srq)(ibv_srq*) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_destroy_srq);

ibv_qp* UROCE_V11(ibv_create_qp)(ibv_pd*, ibv_qp_init_attr*) { return fail_null<ibv_qp>(); }
UROCE_BIND_V11(ibv_create_qp);
int UROCE_V11(ibv_modify_qp)(ibv_qp*, ibv_qp_attr*, int) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_modify_qp);
int UROCE_V11(ibv_query_qp)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_query_qp);
int UROCE_V11(ibv_destroy_qp)(ibv_qp*) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_destroy_qp);
ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) { return fail_null<ibv_qp_ex>(); }
int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) { return 0; }  // no in-order guarantee claimed

ibv_ah* UROCE_V11(ibv_create_ah)(ibv_pd*, ibv_ah_attr*) { return fail_null<ibv_ah>(); }
UROCE_BIND_V11(ibv_create_ah);
ibv_ah* ibv_create_ah_from_wc(ibv_pd*, ibv_wc*, ibv_grh*, uint8_t) { return fail_null<ibv_ah>(); }
int ibv_init_ah_from_wc(ibv_context*, uint8_t, ibv_wc*, ibv_grh*, ibv_ah_attr*) { return fail_minus_one(); }
int UROCE_V11(ibv_destroy_ah)(ibv_ah*) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_destroy_ah);
int UROCE_V11(ibv_attach_mcast)(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_attach_mcast);
int UROCE_V11(ibv_detach_mcast)(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
UROCE_BIND_V11(ibv_detach_mcast);
int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t[ETHERNET_LL_SIZE], uint16_t*) {
  return EOPNOTSUPP;
}

int UROCE_V11(ibv_get_async_event)(ibv_context*, ibv_async_event*) { return fail_minus_one(); }
UROCE_BIND_V11(ibv_get_async_event);
void UROCE_V11(ibv_ack_async_event)(ibv_async_event*) {}
UROCE_BIND_V11(ibv_ack_async_event);

// Sharing objects between processes through a kernel fd: no kernel device here.
ibv_context* ibv_import_device(int) { return fail_null<ibv_context>(); }
ibv_pd* ibv_import_pd(ibv_context*, uint32_t) { return fail_null<ibv_pd>(); }
void ibv_unimport_pd(ibv_pd*) {}
ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) { return fail_null<ibv_mr>(); }
void ibv_unimport_mr(ibv_mr*) {}
ibv_dm* ibv_import_dm(ibv_context*, uint32_t) { return fail_null<ibv_dm>(); }
void ibv_unimport_dm(ibv_dm*) {}
int ibv_query_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }
int ibv_set_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }

}  // extern "C"

// Converters between the kernel's uverbs structures and the verbs' ones,
// which librdmacm calls after kernel commands. With no kernel device those
// commands never succeed, so nothing reaches these: they leave dst untouched.
extern "C" {
void ibv_copy_qp_attr_from_kern(void*, const void*) {}
void ibv_copy_ah_attr_from_kern(void*, const void*) {}
void ibv_copy_path_rec_from_kern(void*, const void*) {}
void ibv_copy_path_rec_to_kern(void*, const void*) {}
}  // extern "C"
