// The intra-host path's reading side of payloads by reference
// (uroce/region_sharing.h, RegionBacking): maps the shared region files of other
// local processes read-only, by opening /proc/<pid>/fd/<fd>, and hands the
// engine the bytes an extent packet names; or copies them straight out of the
// peer's memory (process_vm_readv), for regions backed by it.
//
// A file is used only if it is what the extent says: its name is
// shared_region_file_name(id), and it is sealed against shrinking, so that
// no later truncation can make a read of the mapping fault. Every offset and
// length is checked against the size the file had when mapped. At most
// kMostMapped files stay mapped; the least recently used goes first.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "uroce/region_sharing.h"

namespace uroce::port {

// The name a shared region's memfd is created with, and what /proc/<pid>/fd
// and /proc/<pid>/maps show for it.
inline std::string shared_region_file_name(std::uint64_t id) { return "uroce-mr-" + std::to_string(id); }
inline std::string shared_region_link_name(std::uint64_t id) {
  return "/memfd:" + shared_region_file_name(id) + " (deleted)";
}

class ExtentMappings : public ExtentSource {
 public:
  ExtentMappings() = default;
  ExtentMappings(const ExtentMappings&) = delete;
  ExtentMappings& operator=(const ExtentMappings&) = delete;
  ~ExtentMappings() override;

  std::optional<std::span<const std::uint8_t>> resolve(const PayloadExtent& extent, std::uint64_t length) override;
  // Tried once per process with a one-byte read (the kernel's ptrace rules
  // decide: the same user, a dumpable peer, Yama's scope); the answer is kept.
  bool may_read_process(std::uint32_t pid, std::uint64_t address) override;
  std::uint64_t copy_from_process(std::uint32_t pid, std::uint64_t address, void* to, std::uint64_t length) override;

  std::size_t mapped_files() const { return mapped_.size(); }
  static constexpr std::size_t kMostMapped = 64;

 private:
  struct Mapped {
    std::uint32_t pid = 0;
    std::int32_t fd = -1;
    std::uint64_t id = 0;
    const std::uint8_t* base = nullptr;
    std::uint64_t length = 0;
    std::uint64_t last_use = 0;
  };
  Mapped* find_or_map(const PayloadExtent& extent);
  static std::optional<Mapped> map_file(const PayloadExtent& extent);

  std::vector<Mapped> mapped_;
  std::uint64_t uses_ = 0;
  struct Tried {
    std::uint32_t pid = 0;
    bool readable = false;
  };
  std::vector<Tried> tried_;  // the latest kMostMapped processes whose memory was tried
};

}  // namespace uroce::port
