// fork() support and the sysfs helpers libibverbs exports. uroce's memory
// regions are ordinary memory of the process that registered them (no DMA,
// no pinned pages), so fork needs no protection: a child gets a copy-on-write
// copy, and only the parent's device serves the registered originals.
#include <infiniband/verbs.h>

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

// The sysfs mount point.
int ibv_get_sysfs_path(char* buffer, size_t size);
int ibv_get_sysfs_path(char* buffer, size_t size) {
  const char* path = std::getenv("SYSFS_PATH");
  int written = std::snprintf(buffer, size, "%s", path != nullptr ? path : "/sys");
  return written < 0 || static_cast<size_t>(written) >= size ? -1 : 0;
}

// Reads dir/file into buffer without its trailing newline; the length, or -1.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buffer, size_t size);
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
