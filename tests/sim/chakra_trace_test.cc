// Reading Chakra traces: ASTRA-sim's own files (tests/sim/astra_sim_traces)
// read as that tool wrote them, uroce's writer round-trips plain and gzip,
// and hostile files (truncated at every byte, cycles, duplicate IDs,
// out-of-range attributes) give an error that names
// the file and the node; dependencies on nodes a converter left out are
// dropped and counted; the process groups a PyTorch trace declares are read
// as PyTorch records them and Chakra's converter writes them.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "chakra/example_traces.h"
#include "chakra/trace.h"

namespace uroce::chakra {
namespace {

const std::string kGolden = UROCE_ASTRA_SIM_TRACES;

std::string gzip(const std::string& plain) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, plain.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  stream.avail_in = static_cast<uInt>(plain.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

std::string varint(std::uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

// A length-delimited protobuf field.
std::string field(std::uint32_t number, const std::string& bytes) {
  return varint(number << 3 | 2) + varint(bytes.size()) + bytes;
}

// A trace of the metadata and one node with a signed integer attribute,
// written field by field (uroce's writer writes no negative numbers).
std::string trace_with_attribute(const std::string& name, std::int64_t value) {
  std::string attribute = field(1, name) + varint(9 << 3) + varint(static_cast<std::uint64_t>(value));
  std::string node = varint(1 << 3) + varint(7) + varint(3 << 3) + varint(kCommCollNode) + field(10, attribute);
  std::string metadata = field(1, "0.0.4");
  return varint(metadata.size()) + metadata + varint(node.size()) + node;
}

Trace two_nodes() {
  Trace trace;
  trace.version = "0.0.4";
  TraceNode compute;
  compute.id = 10;
  compute.name = "gemm";
  compute.type = kCompNode;
  compute.duration_us = 42;
  TraceNode send;
  send.id = 11;
  send.name = "send";
  send.type = kCommSendNode;
  send.comm_size = 4096;
  send.comm_dst = 1;
  send.comm_tag = 7;
  send.deps = {10};
  trace.nodes = {compute, send};
  return trace;
}

// PyTorch's execution trace observer records torch.distributed's
// pg_config_info as the JSON input of "## process_group:init ##" (ranks []
// for a group of every rank), and Chakra's converter writes a node's inputs'
// values as Python's str() of the input list: this is that text, for a
// default group of four ranks and two tensor-parallel pairs.
const std::string kRecordedGroups =
    R"(['[{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "ranks": [], )"
    R"("group_size": 4, "group_count": 3}, {"pg_name": "1", "pg_desc": "undefined", "backend_config": )"
    R"("cuda:nccl", "ranks": [0, 1], "group_size": 2, "group_count": 3}, {"pg_name": "2", "pg_desc": )"
    R"("undefined", "backend_config": "cuda:nccl", "ranks": [2, 3], "group_size": 2, "group_count": 3}]'])";

Trace with_groups(const std::string& inputs) {
  Trace trace = two_nodes();
  TraceNode groups;
  groups.id = 1;
  groups.name = std::string(kProcessGroupNodeName);
  groups.type = kMetadataNode;
  groups.inputs = inputs;
  trace.nodes.insert(trace.nodes.begin(), groups);
  return trace;
}

TEST(ChakraTrace, ReadsThePyTorchProcessGroupsAsChakrasConverterWritesThem) {
  auto read = parse_trace(encode_trace(with_groups(kRecordedGroups)), "rank0.et");
  ASSERT_TRUE(read) << read.error();
  ASSERT_EQ(read->process_groups.size(), 3u);
  EXPECT_EQ(read->process_groups[0].name, "0");
  EXPECT_TRUE(read->process_groups[0].ranks.empty());  // every rank
  EXPECT_EQ(read->process_groups[1].name, "1");
  EXPECT_EQ(read->process_groups[1].ranks, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(read->process_groups[2].ranks, (std::vector<std::uint32_t>{2, 3}));
  EXPECT_EQ(read->nodes.size(), 3u);  // the node stays, as a METADATA node

  // The JSON list on its own, and the text uroce writes, read the same.
  auto plain = parse_process_groups(R"([{"pg_name": 7, "ranks": [3, 1]}])");
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ((*plain)[0].name, "7");
  EXPECT_EQ((*plain)[0].ranks, (std::vector<std::uint32_t>{3, 1}));
  std::vector<ProcessGroup> groups{{"tp", {0, 1}}, {"it's", {}}};
  auto again = parse_process_groups(process_groups_input(groups));
  ASSERT_TRUE(again) << again.error();
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ((*again)[1].name, "it's");
  EXPECT_EQ((*again)[0].ranks, groups[0].ranks);
}

TEST(ChakraTrace, ProcessGroupsThatCannotBeReadAreAnErrorNamingTheNode) {
  const std::pair<const char*, const char*> cases[] = {
      {"['not json']", "not JSON"},
      {R"(['{"pg_name": "1"}'])", "not a JSON list"},
      {R"(['[{"ranks": [0]}]'])", "no pg_name"},
      {R"(['[{"pg_name": "1"}]'])", "no list of ranks"},
      {R"(['[{"pg_name": "1", "ranks": [0, -1]}]'])", "-1 is not a rank"},
      {R"(['[{"pg_name": "1", "ranks": [0, 0]}]'])", "rank 0 is listed twice"},
      {R"(['[{"pg_name": "1", "ranks": []}, {"pg_name": "1", "ranks": []}]'])", "declared twice"},
      {R"(['[]', 'more'])", "more than one string"},
      {R"(['[\q]'])", "not an escape"},
      {R"(['[)", "never ends"},
      {"", "empty"},
  };
  for (const auto& [inputs, reason] : cases) {
    auto read = parse_trace(encode_trace(with_groups(inputs)), "rank0.et");
    ASSERT_FALSE(read) << inputs;
    EXPECT_NE(read.error().find("rank0.et: node 0 (id 1): "), std::string::npos) << read.error();
    EXPECT_NE(read.error().find(reason), std::string::npos) << inputs << ": " << read.error();
  }
}

TEST(ChakraTrace, ReadsAstraSimsMicrobenchmarksAsItWroteThem) {
  for (const char* op : {"all_reduce", "all_gather", "all_to_all", "reduce_scatter"}) {
    for (int npus : {4, 8}) {
      std::string path = kGolden + "/" + op + "/" + std::to_string(npus) + "npus_1MB/" + op + ".0.et";
      auto trace = read_trace(path);
      ASSERT_TRUE(trace) << trace.error();
      EXPECT_EQ(trace->version, "0.0.4");
      ASSERT_EQ(trace->nodes.size(), 1u) << path;
      const TraceNode& node = trace->nodes[0];
      EXPECT_EQ(node.type, kCommCollNode);
      EXPECT_FALSE(node.is_cpu_op);
      EXPECT_EQ(node.comm_size, 1u << 20);
      ASSERT_TRUE(node.comm_type);
      EXPECT_STREQ(comm_type_name(*node.comm_type), op);
    }
  }
}

TEST(ChakraTrace, ReadsAstraSimsCustomRingAsSendsReceivesAndReductions) {
  auto trace = read_trace(kGolden + "/custom_ring_allreduce_8npus_1MB/custom_allreduce.3.et");
  ASSERT_TRUE(trace) << trace.error();
  std::size_t sends = 0, receives = 0, computes = 0;
  for (const TraceNode& node : trace->nodes) {
    if (node.type == kCommSendNode) {
      ++sends;
      EXPECT_EQ(node.comm_dst, 4u);  // the ring's next rank
      EXPECT_EQ(node.comm_size, 131072u);  // 1 MB over 8 ranks
    } else if (node.type == kCommRecvNode) {
      ++receives;
      EXPECT_EQ(node.comm_src, 2u);
    } else if (node.type == kCompNode) {
      ++computes;
    }
  }
  EXPECT_EQ(sends, 14u);  // 7 steps of reduce-scatter, 7 of all-gather
  EXPECT_EQ(receives, 14u);
  EXPECT_EQ(computes, 7u);  // a reduction after each reduce-scatter receive
}

TEST(ChakraTrace, WhatUroceWritesReadsBackPlainOrGzipped) {
  Trace written = two_nodes();
  std::string bytes = encode_trace(written);
  for (const std::string& file : {bytes, gzip(bytes)}) {
    auto read = parse_trace(file, "t.et");
    ASSERT_TRUE(read) << read.error();
    ASSERT_EQ(read->nodes.size(), 2u);
    EXPECT_EQ(read->nodes[0].duration_us, 42u);
    EXPECT_EQ(read->nodes[1].comm_dst, 1u);
    EXPECT_EQ(read->nodes[1].comm_tag, 7u);
    EXPECT_EQ(read->nodes[1].deps, std::vector<std::uint64_t>{10});
  }
}

TEST(ChakraTrace, TheExampleStepsAreValidTraces) {
  for (const Trace& trace : {data_parallel_step({}), mixture_of_experts_step({})}) {
    auto read = parse_trace(encode_trace(trace), "example.et");
    ASSERT_TRUE(read) << read.error();
    EXPECT_EQ(read->nodes.size(), trace.nodes.size());
  }
}

TEST(ChakraTrace, EveryTruncationIsAnErrorOrAShorterTraceNeverACrash) {
  std::string bytes = encode_trace(two_nodes());
  std::string zipped = gzip(bytes);
  for (const std::string& whole : {bytes, zipped}) {
    for (std::size_t length = 0; length < whole.size(); ++length) {
      auto read = parse_trace(whole.substr(0, length), "cut.et");
      if (!read) {
        EXPECT_NE(read.error().find("cut.et"), std::string::npos) << read.error();
      } else {
        EXPECT_LT(read->nodes.size(), 2u);  // cut between two messages
      }
    }
  }
  auto read = parse_trace(bytes.substr(0, bytes.size() - 3), "cut.et");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("node 1"), std::string::npos) << read.error();
}

TEST(ChakraTrace, RefusesWhatAReplayCannotRun) {
  Trace trace = two_nodes();
  trace.nodes[1].id = 10;
  auto read = parse_trace(encode_trace(trace), "dup.et");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("a second node with this id"), std::string::npos) << read.error();

  // A dependency on an ID no node has is dropped and counted: PyTorch's
  // converter names call-tree parents it did not keep.
  trace = two_nodes();
  trace.nodes[1].deps = {10, 99};
  read = parse_trace(encode_trace(trace), "dangling.et");
  ASSERT_TRUE(read) << read.error();
  EXPECT_EQ(read->nodes[1].deps, std::vector<std::uint64_t>{10});
  EXPECT_EQ(read->missing_dependencies, 1u);

  trace = two_nodes();
  trace.nodes[0].deps = {11};
  read = parse_trace(encode_trace(trace), "cycle.et");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("cycle"), std::string::npos) << read.error();

  trace = two_nodes();
  trace.nodes[0].duration_us = 2'000'000'000;
  read = parse_trace(encode_trace(trace), "long.et");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("more than 1000 s"), std::string::npos) << read.error();

  read = parse_trace(trace_with_attribute("comm_size", -1), "negative.et");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("negative.et: node 0 (id 7): comm_size is not a non-negative integer"),
            std::string::npos)
      << read.error();
  read = parse_trace(trace_with_attribute("comm_type", 12), "type.et");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("comm_type 12 is not a collective type"), std::string::npos) << read.error();
  ASSERT_TRUE(parse_trace(trace_with_attribute("comm_type", 9), "barrier.et"));

  EXPECT_FALSE(parse_trace("", "empty.et"));
  EXPECT_FALSE(parse_trace("\x1f\x8b not really gzip", "bad.gz"));
  EXPECT_FALSE(parse_trace(std::string("\xff\xff\xff\xff\x0f", 5), "huge.et"));
  EXPECT_FALSE(read_trace("/nonexistent/trace.0.et"));
}

}  // namespace
}  // namespace uroce::chakra
