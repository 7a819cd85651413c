// fork() support and the sysfs helpers libibverbs exports. uroce's memory
// regions are ordinary memory of the process that registered them (no DMA,
// no pinned pages), so fork needs no protection: a child gets a copy-on-write
// copy, and only the parent's device serves the registered originals.
#include "ibverbs/rdma_core_private.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" {

int ibv_fork_init(void) { return 0; }
ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
int ibv_dontfork_range(void*, size_t) { return 0; }
int ibv_dofork_range(void*, size_t) { return 0; }

// The sysfs mount point: $SYSFS_PATH without trailing slashes when the
// process is not set-user-ID (as rdma-core reads it), else /sys. Read once.
const char* ibv_get_sysfs_path(void) {
  static const std::string path = [] {
    const char* from_environment = getuid() == geteuid() ? std::getenv("SYSFS_PATH") : nullptr;
    std::string chosen = from_environment != nullptr ? from_environment : "";
    while (!chosen.empty() && chosen.back() == '/') chosen.pop_back();
    return chosen.empty() ? std::string("/sys") : chosen;
  }();
  return path.c_str();
}

// Reads dir/file into buffer without its trailing newline; the length, or -1.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buffer, size_t size) {
  std::string path = std::string(dir) + "/" + file;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || size == 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  ssize_t length = ::read(fd, buffer, size);
  ::close(fd);
  if (length <= 0) return -1;
  if (buffer[length - 1] == '\n') {
    buffer[--length] = '\0';
  } else if (static_cast<size_t>(length) < size) {
    buffer[length] = '\0';
  } else {
    return -1;  // no room for the terminator
  }
  return static_cast<int>(length);
}

}  // extern "C"
