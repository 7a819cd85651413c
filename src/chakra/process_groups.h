// The process groups a PyTorch-recorded trace declares. PyTorch's execution
// trace observer records torch.distributed's pg_config_info, as JSON, as the
// input of a node named "## process_group:init ##"; Chakra's converter keeps
// that node as a METADATA node whose inputs' values are the Python text of
// the input list: ['[{"pg_name": "0", "ranks": [], ...}, ...]']. Each group
// has a pg_name (what collective nodes name in their pg_name attribute) and
// its global ranks; an empty list means every rank (PyTorch's default group).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "uroce/expected.h"

namespace uroce::chakra {

inline constexpr std::string_view kProcessGroupNodeName = "## process_group:init ##";

struct ProcessGroup {
  std::string name;
  std::vector<std::uint32_t> ranks;  // global ranks; empty: every rank
};

// Parses the node's inputs' values: the Python list of one JSON string, or
// the JSON list itself. An error says what is wrong, never throws.
Expected<std::vector<ProcessGroup>, std::string> parse_process_groups(std::string_view values);

// The inputs' values PyTorch and Chakra's converter would record for these
// groups (tests write traces with it).
std::string process_groups_input(const std::vector<ProcessGroup>& groups);

}  // namespace uroce::chakra
