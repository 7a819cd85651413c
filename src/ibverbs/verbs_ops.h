// The operations a context carries: the classic ibv_context_ops that the
// header's inline verbs call (ibv_post_send, ibv_poll_cq ...) and the
// extended ones of verbs_context (query_port, query_device_ex, create_qp_ex),
// and the ibv_wr_* table of each extended QP.
#pragma once

#include <infiniband/verbs.h>

namespace uroce::ibverbs {

void install_context_ops(verbs_context& context);

// The parts install_context_ops puts together, each from its own file.
void install_query_ops(verbs_context& context);       // query.cc
void install_posting_ops(ibv_context_ops& ops);       // posting.cc
void install_qp_create_ops(verbs_context& context);   // queue_pairs.cc
int poll_cq(ibv_cq* cq, int entries, ibv_wc* wc);     // completion_queues.cc
// ibv_create_cq's work, which ibv_create_cq_ex shares (completion_queues.cc).
ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector);
// ibv_create_cq_ex and ibv_query_rt_values_ex (extended_cqs.cc).
void install_extended_cq_ops(verbs_context& context);
// ibv_alloc_parent_domain, ibv_alloc_td and ibv_dealloc_td (parent_domains.cc).
void install_domain_ops(verbs_context& context);
// ibv_create_srq's work; xrcd and cq non-zero for an XRC SRQ (shared_receive_queues.cc).
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* init, uint32_t xrcd, uint32_t cq);
// XRC domains, ibv_create_srq_ex and ibv_get_srq_num (xrc.cc).
void install_xrc_ops(verbs_context& context);
uint32_t xrcd_handle(ibv_xrcd* xrcd);
// ibv_advise_mr (pd_mr.cc).
int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list, uint32_t num_sge);
int req_notify_cq(ibv_cq* cq, int solicited_only);    // completion_queues.cc

// An extended QP's ibv_wr_* operations (qp_ex_ops.cc).
void install_qp_ex_ops(ibv_qp_ex& qpx);

}  // namespace uroce::ibverbs
