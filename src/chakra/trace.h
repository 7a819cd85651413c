// Chakra execution traces (MLCommons' format, which ASTRA-sim replays and
// PyTorch can record): one file per rank, read into plain structs that the
// simulator replays (sim/chakra_replay.h). Hostile input gives an error that
// names the file and the node, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chakra/process_groups.h"
#include "uroce/expected.h"

namespace uroce::chakra {

// Node types, by the format's numbers.
inline constexpr std::int32_t kMetadataNode = 1;
inline constexpr std::int32_t kMemLoadNode = 2;
inline constexpr std::int32_t kMemStoreNode = 3;
inline constexpr std::int32_t kCompNode = 4;
inline constexpr std::int32_t kCommSendNode = 5;
inline constexpr std::int32_t kCommRecvNode = 6;
inline constexpr std::int32_t kCommCollNode = 7;

// Collective types (the comm_type attribute), by the format's numbers.
enum class CommType : std::uint8_t {
  all_reduce = 0,
  reduce = 1,
  all_gather = 2,
  gather = 3,
  scatter = 4,
  broadcast = 5,
  all_to_all = 6,
  reduce_scatter = 7,
  reduce_scatter_block = 8,
  barrier = 9,
};
inline constexpr std::uint8_t kCommTypes = 10;

const char* node_type_name(std::int32_t type);  // "comp", "comm_coll"...; "unknown" beyond the format's
const char* comm_type_name(CommType type);      // "all_reduce"...

struct TraceNode {
  std::uint64_t id = 0;
  std::string name;
  std::int32_t type = 0;
  std::vector<std::uint64_t> deps;       // data dependencies
  std::vector<std::uint64_t> ctrl_deps;  // control dependencies
  std::uint64_t duration_us = 0;
  bool is_cpu_op = false;
  // Communication attributes, when the node has them.
  std::optional<CommType> comm_type;
  std::uint64_t comm_size = 0;
  std::optional<std::uint32_t> comm_src;
  std::optional<std::uint32_t> comm_dst;
  std::uint32_t comm_tag = 0;
  std::string pg_name;  // the process group; empty: every rank
  std::string inputs;   // the process-group METADATA node's inputs' values (process_groups.h); empty for others
};

struct Trace {
  std::string version;    // GlobalMetadata's
  std::vector<TraceNode> nodes;  // in file order
  // The process groups the trace declares (a PyTorch trace's
  // "## process_group:init ##" node); none when it declares none.
  std::vector<ProcessGroup> process_groups;
  // Dependencies on IDs that no node of the trace has, dropped (taken as
  // done): PyTorch-converted traces name call-tree parents the converter
  // did not keep.
  std::uint64_t missing_dependencies = 0;
};

// Parses a trace from its bytes (gzip-compressed or not); `source` names it
// in errors. Checks what a replay relies on: node IDs unique, no cycle of
// data dependencies, integer attributes in range; a dependency on an ID
// not in the trace is dropped and counted.
Expected<Trace, std::string> parse_trace(std::string_view bytes, const std::string& source);
Expected<Trace, std::string> read_trace(const std::string& path);

// A node (its index) that waits on a cycle of data dependencies, or of
// data and control dependencies together; none when there is no cycle.
std::optional<std::size_t> node_on_a_cycle(const Trace& trace, bool control_too);

// The bytes of a trace file (not compressed): for tests and examples.
std::string encode_trace(const Trace& trace);

}  // namespace uroce::chakra
