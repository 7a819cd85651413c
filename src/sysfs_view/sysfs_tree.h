// The files a program would find about uroce's devices on a host where they
// were kernel RDMA devices: /sys/class/infiniband/<dev> (node GUID, port
// state, link layer, the GID table with each entry's type and netdev),
// /sys/class/infiniband_verbs/uverbsN and a character device at
// /dev/infiniband/uverbsN. UCX, for one, reads these beside the verbs calls:
// it will not use a device without the uverbs node, and picks the GID index
// by the sysfs GID types.
#pragma once

#include <string>
#include <vector>

#include "ibverbs/ibverbs_device.h"

namespace uroce::sysfs_view {

struct TreeEntry {
  std::string path;     // relative to the tree's root, e.g. "sys/class/infiniband/uroce0/node_type"
  std::string content;  // a file's text, or a symlink's target
  bool symlink = false;
};

// The entries for these devices, numbered as uroce's libibverbs numbers them
// (a spec whose address does not parse gets no device and no number).
std::vector<TreeEntry> tree_entries(const std::vector<ibverbs::DeviceSpec>& specs);

// Writes the entries under base/<hash of the entries>, once: a directory of
// the same name is the same tree, so programs of one configuration share it.
// base is made 0700 if missing and must belong to this user. Returns the
// tree's root, or an empty string (with the reason in error) if it cannot.
std::string materialize(const std::vector<TreeEntry>& entries, const std::string& base, std::string& error);

}  // namespace uroce::sysfs_view
