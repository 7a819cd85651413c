// Verbs that uroce's libibverbs does not serve: device memory, ECE, L2
// addresses. Each fails the way rdma-core reports an
// unsupported operation (NULL with errno EOPNOTSUPP, or EOPNOTSUPP
// returned), never aborts.
#include "ibverbs/rdma_core_private.h"
#include "ibverbs/symbol_versions.h"

#include <cerrno>

namespace {

template <class T>
T* fail_null() {
  errno = EOPNOTSUPP;
  return nullptr;
}

}  // namespace

extern "C" {

int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) { return 0; }  // no in-order guarantee claimed

// Ethernet addresses are the port's business (ARP on the raw port), not the program's.
int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t[ETHERNET_LL_SIZE], uint16_t*) {
  return EOPNOTSUPP;
}

// Device memory: no software RNIC has any (importing contexts, PDs and MRs: importing.cc).
ibv_dm* ibv_import_dm(ibv_context*, uint32_t) { return fail_null<ibv_dm>(); }
void ibv_unimport_dm(ibv_dm*) {}
int ibv_query_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }
int ibv_set_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }

}  // extern "C"

// Converters between the kernel's uverbs structures and the verbs' ones,
// which librdmacm calls after kernel commands. With no kernel device those
// commands never succeed, so nothing reaches these: they leave dst untouched.
extern "C" {
void ibv_copy_qp_attr_from_kern(ibv_qp_attr*, ib_uverbs_qp_attr*) {}
void ibv_copy_ah_attr_from_kern(ibv_ah_attr*, ib_uverbs_ah_attr*) {}
void ibv_copy_path_rec_from_kern(ibv_sa_path_rec*, ib_user_path_rec*) {}
void ibv_copy_path_rec_to_kern(ib_user_path_rec*, ibv_sa_path_rec*) {}
}  // extern "C"
