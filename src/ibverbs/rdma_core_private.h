// Prototypes of libibverbs exports that rdma-core 44 declares in headers
// Debian does not install (libibverbs/driver.h and marshall.h), which
// programs and librdmacm call all the same. Written from those headers'
// declarations; the files that define the exports include this, so a
// definition with another signature does not compile (an extern "C"
// function cannot be declared twice with two types). The provider-only part
// of driver.h (ibv_cmd_*, verbs_* for hardware providers, which uroce never
// serves) is left out: see provider_interface.cc.
#pragma once

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include <cstddef>
#include <cstdint>

extern "C" {

// driver.h: sysfs helpers.
const char* ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);

// driver.h: fork support beside ibv_fork_init (verbs.h).
int ibv_dontfork_range(void* base, size_t size);
int ibv_dofork_range(void* base, size_t size);

// driver.h: the GID type as sysfs spells it.
enum ibv_gid_type_sysfs {
  IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
  IBV_GID_TYPE_SYSFS_ROCE_V2,
};
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       enum ibv_gid_type_sysfs* type);

// marshall.h: the kernel's uverbs structures to and from the verbs' ones.
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr* dst, struct ib_uverbs_qp_attr* src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr* dst, struct ib_uverbs_ah_attr* src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst, struct ib_user_path_rec* src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec* dst, struct ibv_sa_path_rec* src);

}  // extern "C"
