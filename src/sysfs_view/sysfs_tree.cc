// tree_entries() and materialize(): the sysfs view's files, written once.
#include "sysfs_view/sysfs_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/fnv1a.h"
#include "ibverbs/device_identity.h"

namespace uroce::sysfs_view {
namespace {

namespace fs = std::filesystem;

// As the kernel prints a GUID: four groups of four hex digits.
std::string guid_text(std::uint64_t network_order) {
  std::uint8_t bytes[8];
  std::memcpy(bytes, &network_order, 8);
  char text[24];
  std::snprintf(text, sizeof text, "%02x%02x:%02x%02x:%02x%02x:%02x%02x", bytes[0], bytes[1], bytes[2], bytes[3],
                bytes[4], bytes[5], bytes[6], bytes[7]);
  return text;
}

// As the kernel prints a GID: eight groups of four hex digits.
std::string gid_text(const Gid& gid) {
  std::string text;
  for (std::size_t i = 0; i < gid.size(); i += 2) {
    char group[8];
    std::snprintf(group, sizeof group, "%s%02x%02x", i == 0 ? "" : ":", gid[i], gid[i + 1]);
    text += group;
  }
  return text;
}

// FNV-1a over every path and content: the tree's directory name.
std::string tree_hash(const std::vector<TreeEntry>& entries) {
  std::uint64_t hash = kFnv1aStart;
  auto mix = [&hash](const std::string& text) {
    hash = fnv1a(text, hash);
    hash = fnv1a("\xff", hash);  // a separator no text contains
  };
  for (const TreeEntry& entry : entries) {
    mix(entry.path);
    mix(entry.symlink ? "->" + entry.content : entry.content);
  }
  char name[24];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(hash));
  return name;
}

bool write_entries(const std::vector<TreeEntry>& entries, const fs::path& root, std::string& error) {
  std::error_code code;
  for (const TreeEntry& entry : entries) {
    fs::path path = root / entry.path;
    fs::create_directories(path.parent_path(), code);
    if (code) {
      error = "cannot make " + path.parent_path().string() + ": " + code.message();
      return false;
    }
    if (entry.symlink) {
      fs::create_symlink(entry.content, path, code);
    } else {
      std::ofstream file(path);
      file << entry.content;
      if (!file) code = std::make_error_code(std::errc::io_error);
    }
    if (code) {
      error = "cannot write " + path.string() + ": " + code.message();
      return false;
    }
  }
  return true;
}

// base exists (made 0700 here), is a directory, not a link, and ours.
bool usable_base(const std::string& base, std::string& error) {
  if (::mkdir(base.c_str(), 0700) != 0 && errno != EEXIST) {
    error = "cannot make " + base + ": " + std::strerror(errno);
    return false;
  }
  struct stat info {};
  if (::lstat(base.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) {
    error = base + " is not a directory of this user";
    return false;
  }
  return true;
}

}  // namespace

std::vector<TreeEntry> tree_entries(const std::vector<ibverbs::DeviceSpec>& specs) {
  std::vector<TreeEntry> entries;
  entries.push_back({"sys/class/infiniband_verbs/abi_version", "6\n"});
  int index = 0;
  for (const ibverbs::DeviceSpec& spec : specs) {
    std::optional<ibverbs::DeviceIdentity> identity = ibverbs::identify(spec);
    if (!identity) continue;
    std::string device = "sys/class/infiniband/" + spec.name + "/";
    std::string port = device + "ports/1/";
    entries.push_back({device + "node_type", "1: CA\n"});
    entries.push_back({device + "node_guid", guid_text(identity->guid) + "\n"});
    entries.push_back({device + "sys_image_guid", guid_text(identity->guid) + "\n"});
    entries.push_back({device + "node_desc", spec.name + "\n"});
    entries.push_back({port + "state", "4: ACTIVE\n"});
    entries.push_back({port + "phys_state", "5: LinkUp\n"});
    entries.push_back({port + "link_layer", "Ethernet\n"});
    std::vector<Gid> gids = ibverbs::gid_table(identity->gid, identity->guid);
    for (std::size_t i = 0; i < gids.size(); ++i) {
      std::string number = std::to_string(i);
      entries.push_back({port + "gids/" + number, gid_text(gids[i]) + "\n"});
      entries.push_back({port + "gid_attrs/types/" + number, "RoCE v2\n"});
      if (!identity->netdev.empty()) entries.push_back({port + "gid_attrs/ndevs/" + number, identity->netdev + "\n"});
    }
    // The network device the address is on, as the kernel links an RNIC's
    // netdev under its PCI device (rdma-core's rdma_cm tests look here).
    if (!identity->netdev.empty()) {
      entries.push_back({device + "device/net/" + identity->netdev + "/uevent", "INTERFACE=" + identity->netdev + "\n"});
    }
    std::string uverbs = "uverbs" + std::to_string(index);
    entries.push_back({"sys/class/infiniband_verbs/" + uverbs + "/ibdev", spec.name + "\n"});
    entries.push_back({"dev/infiniband/" + uverbs, "/dev/null", true});  // a character device anyone may open
    ++index;
  }
  return entries;
}

std::string materialize(const std::vector<TreeEntry>& entries, const std::string& base, std::string& error) {
  if (!usable_base(base, error)) return {};
  fs::path root = fs::path(base) / tree_hash(entries);
  std::error_code code;
  if (fs::is_directory(root, code)) return root.string();
  std::string scratch = base + "/.new-XXXXXX";
  if (::mkdtemp(scratch.data()) == nullptr) {
    error = "cannot make a directory in " + base + ": " + std::strerror(errno);
    return {};
  }
  bool written = write_entries(entries, scratch, error);
  // Another process of the same configuration may have won the race: its tree is the same.
  if (!written || ::rename(scratch.c_str(), root.c_str()) != 0) fs::remove_all(scratch, code);
  if (!fs::is_directory(root, code)) {
    if (error.empty()) error = "cannot make " + root.string();
    return {};
  }
  return root.string();
}

}  // namespace uroce::sysfs_view
