// liburoce_sysfs.so, which `uroce run` preloads: the program's view of the
// system in which uroce's devices exist. Opening, stat-ing or listing a path
// under /sys/class/infiniband, /sys/class/infiniband_verbs or
// /dev/infiniband reaches the sysfs view's tree instead (sysfs_tree.h),
// built on first use for the devices of UROCE_ADDRESS and UROCE_INTERFACE.
// Every other path goes to the C library untouched. Only the calls through
// which programs read such files are wrapped (open, fopen, stat and its
// variants, access, opendir, readlink); it needs no privileges, unlike a
// mount namespace, and so works in any container.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ibverbs/configuration.h"
#include "sysfs_view/sysfs_tree.h"

namespace {

bool under(const char* path, const char* prefix) {
  std::size_t length = std::strlen(prefix);
  return std::strncmp(path, prefix, length) == 0 && (path[length] == '\0' || path[length] == '/');
}

// The tree's root, made on first use; empty if it cannot be made (then
// nothing is redirected, and the program sees the host as it is).
const std::string& view_root() {
  static const std::string root = [] {
    const char* temporary = std::getenv("TMPDIR");
    std::string base = std::string(temporary != nullptr && *temporary == '/' ? temporary : "/tmp") + "/uroce-sysfs-" +
                       std::to_string(::geteuid());
    std::string error;
    std::string made = uroce::sysfs_view::materialize(
        uroce::sysfs_view::tree_entries(uroce::ibverbs::configured_devices()), base, error);
    if (made.empty()) std::fprintf(stderr, "uroce: no sysfs view of the devices: %s\n", error.c_str());
    return made;
  }();
  return root;
}

// The path to use: the view's copy of an absolute path under one of the
// prefixes (spelled out in rewritten), else the path itself.
const char* redirect(const char* path, std::string& rewritten) {
  if (path == nullptr || path[0] != '/') return path;
  if (!under(path, "/sys/class/infiniband") && !under(path, "/sys/class/infiniband_verbs") &&
      !under(path, "/dev/infiniband")) {
    return path;
  }
  const std::string& root = view_root();
  if (root.empty()) return path;
  rewritten = root + path;
  return rewritten.c_str();
}

template <typename Function>
Function next(const char* name) {
  return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

// The mode argument of open: present only with O_CREAT or O_TMPFILE.
mode_t mode_argument(int flags, va_list arguments) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(arguments, mode_t) : 0;
}

}  // namespace

// Each wrapper: rewrite the path, then call the C library's own function.
#define UROCE_FORWARD(name, signature, call_arguments, ...)        \
  extern "C" __VA_ARGS__ name signature {                          \
    static auto real = next<__VA_ARGS__(*) signature>(#name);      \
    std::string rewritten;                                         \
    path = redirect(path, rewritten);                              \
    return real call_arguments;                                    \
  }

#define UROCE_FORWARD_OPEN(name)                                   \
  extern "C" int name(const char* path, int flags, ...) {          \
    static auto real = next<int (*)(const char*, int, ...)>(#name); \
    va_list arguments;                                             \
    va_start(arguments, flags);                                    \
    mode_t mode = mode_argument(flags, arguments);                 \
    va_end(arguments);                                             \
    std::string rewritten;                                         \
    return real(redirect(path, rewritten), flags, mode);           \
  }

#define UROCE_FORWARD_OPENAT(name)                                           \
  extern "C" int name(int directory, const char* path, int flags, ...) {     \
    static auto real = next<int (*)(int, const char*, int, ...)>(#name);     \
    va_list arguments;                                                       \
    va_start(arguments, flags);                                              \
    mode_t mode = mode_argument(flags, arguments);                           \
    va_end(arguments);                                                       \
    std::string rewritten;                                                   \
    return real(directory, redirect(path, rewritten), flags, mode);          \
  }

UROCE_FORWARD_OPEN(open)
UROCE_FORWARD_OPEN(open64)
UROCE_FORWARD_OPENAT(openat)
UROCE_FORWARD_OPENAT(openat64)
// The _FORTIFY_SOURCE entry points.
UROCE_FORWARD(__open_2, (const char* path, int flags), (path, flags), int)
UROCE_FORWARD(__open64_2, (const char* path, int flags), (path, flags), int)
UROCE_FORWARD(__openat_2, (int directory, const char* path, int flags), (directory, path, flags), int)
UROCE_FORWARD(__openat64_2, (int directory, const char* path, int flags), (directory, path, flags), int)

UROCE_FORWARD(fopen, (const char* path, const char* mode), (path, mode), FILE*)
UROCE_FORWARD(fopen64, (const char* path, const char* mode), (path, mode), FILE*)
UROCE_FORWARD(opendir, (const char* path), (path), DIR*)
UROCE_FORWARD(readlink, (const char* path, char* buffer, std::size_t size), (path, buffer, size), ssize_t)
UROCE_FORWARD(access, (const char* path, int mode), (path, mode), int)
UROCE_FORWARD(faccessat, (int directory, const char* path, int mode, int flags), (directory, path, mode, flags), int)

UROCE_FORWARD(stat, (const char* path, struct stat* info), (path, info), int)
UROCE_FORWARD(stat64, (const char* path, struct stat64* info), (path, info), int)
UROCE_FORWARD(lstat, (const char* path, struct stat* info), (path, info), int)
UROCE_FORWARD(lstat64, (const char* path, struct stat64* info), (path, info), int)
UROCE_FORWARD(fstatat, (int directory, const char* path, struct stat* info, int flags), (directory, path, info, flags),
              int)
UROCE_FORWARD(fstatat64, (int directory, const char* path, struct stat64* info, int flags),
              (directory, path, info, flags), int)
UROCE_FORWARD(statx, (int directory, const char* path, int flags, unsigned int mask, struct statx* info),
              (directory, path, flags, mask, info), int)
// Programs built against a C library older than 2.33 call these instead.
UROCE_FORWARD(__xstat, (int version, const char* path, struct stat* info), (version, path, info), int)
UROCE_FORWARD(__xstat64, (int version, const char* path, struct stat64* info), (version, path, info), int)
UROCE_FORWARD(__lxstat, (int version, const char* path, struct stat* info), (version, path, info), int)
UROCE_FORWARD(__lxstat64, (int version, const char* path, struct stat64* info), (version, path, info), int)
