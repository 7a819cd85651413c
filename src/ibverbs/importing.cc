// Importing a context, a PD and an MR inside one process (importing.h): the
// command fds' inodes, and the runtime's PDs and MRs by handle.
#include "ibverbs/importing.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <utility>
#include <mutex>
#include <new>

#include "ibverbs/objects.h"
#include "ibverbs/runtime.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

// Open contexts' command fds: inode -> device, and how many contexts hold
// it (a context imported from another holds a dup of its fd).
struct CommandFds {
  std::mutex mutex;
  std::map<ino_t, std::pair<UroceDevice*, int>> devices;
};

CommandFds& command_fds() {
  static CommandFds fds;
  return fds;
}

bool inode_of(int fd, ino_t& inode) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return false;
  inode = info.st_ino;
  return true;
}

}  // namespace

int new_command_fd() { return ::memfd_create("uroce-context", MFD_CLOEXEC); }

void remember_command_fd(int command_fd, UroceDevice* device) {
  ino_t inode;
  if (!inode_of(command_fd, inode)) return;
  std::lock_guard lock(command_fds().mutex);
  auto& [known, contexts] = command_fds().devices[inode];
  known = device;
  ++contexts;
}

void forget_command_fd(int command_fd) {
  ino_t inode;
  if (!inode_of(command_fd, inode)) return;
  std::lock_guard lock(command_fds().mutex);
  auto found = command_fds().devices.find(inode);
  if (found != command_fds().devices.end() && --found->second.second == 0) command_fds().devices.erase(found);
}

}  // namespace uroce::ibverbs

using namespace uroce::ibverbs;

extern "C" {

ibv_context* ibv_import_device(int cmd_fd) {
  ino_t inode;
  if (!inode_of(cmd_fd, inode)) return fail_with<ibv_context>(EBADF);
  UroceDevice* device = nullptr;
  {
    std::lock_guard lock(command_fds().mutex);
    auto found = command_fds().devices.find(inode);
    if (found != command_fds().devices.end()) device = found->second.first;
  }
  if (device == nullptr) return fail_with<ibv_context>(EOPNOTSUPP);  // another process's, or a kernel device's
  // Two contexts would own one inode: the new one keeps the fd it was given.
  return make_context(reinterpret_cast<ibv_device*>(device), cmd_fd);
}

ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  DeviceRuntime* runtime = runtime_for(context);
  if (runtime == nullptr) return nullptr;
  auto* pd = new (std::nothrow) UrocePd{};
  if (pd == nullptr) return fail_with<ibv_pd>(ENOMEM);
  bool known = runtime->device().inspect([&](uroce::Engine&) { return runtime->pds.contains(pd_handle); });
  if (!known) {
    delete pd;
    return fail_with<ibv_pd>(EINVAL);
  }
  pd->pd.context = context;
  pd->pd.handle = pd_handle;
  pd->handle = pd_handle;
  pd->runtime = runtime;
  return &pd->pd;
}

void ibv_unimport_pd(ibv_pd* pd) { delete &pd_of(pd); }

ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  UrocePd& owner = pd_of(pd);
  auto* mr = new (std::nothrow) UroceMr{};
  if (mr == nullptr) return fail_with<ibv_mr>(ENOMEM);
  bool known = owner.runtime->device().inspect([&](uroce::Engine&) {
    auto found = owner.runtime->mrs.find(mr_handle);
    if (found == owner.runtime->mrs.end() || found->second->mr.pd->handle != owner.handle) return false;
    mr->mr = found->second->mr;
    mr->access = found->second->access;
    return true;
  });
  if (!known) {
    delete mr;
    return fail_with<ibv_mr>(EINVAL);
  }
  mr->runtime = owner.runtime;
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  return &mr->mr;
}

void ibv_unimport_mr(ibv_mr* mr) { delete &mr_of(mr); }

}  // extern "C"
