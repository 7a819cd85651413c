// What uroce's libibverbs.so.1 exports for uroce's librdmacm.so.1 only, at
// version UROCE_PRIVATE_1 (rdma-core's programs bind none of it).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

extern "C" {
// The device's General Services QP (QP 1): a UD QP for the connection
// manager's MADs, one per device. EINVAL unless attr asks for UD; EBUSY when
// the device has one already.
ibv_qp* uroce_create_gsi_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
// Whether any completion of the device's QP qp_num waits in its CQs, not
// yet polled (0 when there is no such QP).
int uroce_qp_has_completions_waiting(ibv_context* context, std::uint32_t qp_num);
// Whether another process's device shares this device's address (1) or not (0).
int uroce_address_shared(ibv_context* context);
}
