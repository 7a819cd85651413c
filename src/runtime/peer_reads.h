// Whether local peers may read this process's registered memory themselves
// (process_vm_readv: uroce/region_sharing.h, a region backed by its process's
// memory). The kernel lets a process of the same user read a dumpable one,
// unless Yama restricts ptrace. Under Yama's scope 1 (only ancestors may
// read), this process then names any process of its user as allowed
// (PR_SET_PTRACER_ANY), as MPI's single-copy transports do; under scopes 2
// and 3 no peer may read it, and its messages travel as packets.
#pragma once

namespace uroce::runtime {

// Decided once per process; true when peers may read.
bool let_local_peers_read_memory();

}  // namespace uroce::runtime
