// Sharing a context's objects inside one process, as rdma-core does through
// the kernel: each context has a command fd (a memfd of its own, so its inode
// names the context), ibv_import_device opens another context on the device
// whose command fd the given fd is (a dup of it), and ibv_import_pd and
// ibv_import_mr hand out that device's PD and MR by handle (importing.cc).
// A fd from another process, or a kernel device's, is not known here:
// importing it fails with EOPNOTSUPP.
#pragma once

#include <infiniband/verbs.h>

#include "ibverbs/ibverbs_device.h"

namespace uroce::ibverbs {

// A fresh command fd for a context; -1 with errno set when none can be made.
int new_command_fd();
// The context that owns command_fd is on device / is closing.
void remember_command_fd(int command_fd, UroceDevice* device);
void forget_command_fd(int command_fd);

// A context on device with this command fd, which it then owns (device_list.cc).
ibv_context* make_context(ibv_device* device, int command_fd);

}  // namespace uroce::ibverbs
