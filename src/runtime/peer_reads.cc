// Letting local peers read this process's memory (see the header).
#include "runtime/peer_reads.h"

#include <sys/prctl.h>

#include <fstream>

namespace uroce::runtime {
namespace {

bool decide() {
  if (::prctl(PR_GET_DUMPABLE) != 1) return false;  // set-user-ID, or not dumpable by choice
  std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (!(yama >> scope)) return true;  // no Yama: the same user may read
  if (scope == 0) return true;
  return scope == 1 && ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0;
}

}  // namespace

bool let_local_peers_read_memory() {
  static const bool allowed = decide();
  return allowed;
}

}  // namespace uroce::runtime
