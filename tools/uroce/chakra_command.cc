// The Chakra trace tools: show a trace, write the example steps.
#include "tools/uroce/chakra_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "chakra/example_traces.h"
#include "chakra/trace.h"

namespace uroce::tools {

namespace {

struct ChakraOptions {
  std::vector<std::string> files;
  std::string kind;
  std::uint32_t ranks = 8;
  std::string out;
};

std::string describe(const chakra::TraceNode& node) {
  std::string line = fmt::format("{} {} \"{}\"", node.id, chakra::node_type_name(node.type), node.name);
  if (node.type == chakra::kCompNode) line += fmt::format(" {} us", node.duration_us);
  if (node.is_cpu_op) line += " cpu";
  if (node.type == chakra::kCommCollNode && node.comm_type) {
    line += fmt::format(" {}", chakra::comm_type_name(*node.comm_type));
  }
  if (node.comm_type || node.type == chakra::kCommSendNode || node.type == chakra::kCommRecvNode) {
    line += fmt::format(" {} bytes", node.comm_size);
  }
  if (node.comm_src) line += fmt::format(" from {}", *node.comm_src);
  if (node.comm_dst) line += fmt::format(" to {}", *node.comm_dst);
  if (node.type == chakra::kCommSendNode || node.type == chakra::kCommRecvNode) {
    line += fmt::format(" tag {}", node.comm_tag);
  }
  if (!node.pg_name.empty()) line += fmt::format(" group \"{}\"", node.pg_name);
  if (!node.deps.empty()) line += fmt::format(" after {}", fmt::join(node.deps, ","));
  if (!node.ctrl_deps.empty()) line += fmt::format(" control {}", fmt::join(node.ctrl_deps, ","));
  return line;
}

int show(const ChakraOptions& options) {
  for (const std::string& file : options.files) {
    auto trace = chakra::read_trace(file);
    if (!trace) {
      std::fprintf(stderr, "uroce chakra: %s\n", trace.error().c_str());
      return 1;
    }
    std::printf("%s: Chakra %s, %zu nodes", file.c_str(), trace->version.empty() ? "(no version)" : trace->version.c_str(),
                trace->nodes.size());
    if (trace->missing_dependencies != 0) {
      std::printf(", %llu dependencies on nodes not in the trace (dropped)",
                  static_cast<unsigned long long>(trace->missing_dependencies));
    }
    std::printf("\n");
    for (const chakra::TraceNode& node : trace->nodes) std::printf("  %s\n", describe(node).c_str());
  }
  return 0;
}

int example(const ChakraOptions& options) {
  chakra::Trace trace = options.kind == "data_parallel" ? chakra::data_parallel_step({})
                                                        : chakra::mixture_of_experts_step({});
  std::string bytes = chakra::encode_trace(trace);
  for (std::uint32_t rank = 0; rank < options.ranks; ++rank) {
    std::string path = fmt::format("{}.{}.et", options.out, rank);
    std::ofstream file(path, std::ios::binary);
    file << bytes;
    if (!file) {
      std::fprintf(stderr, "uroce chakra: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::printf("wrote %s.0.et to %s.%u.et (%zu nodes each)\n", options.out.c_str(), options.out.c_str(),
              options.ranks - 1, trace.nodes.size());
  return 0;
}

}  // namespace

void add_chakra_command(CLI::App& app, int& exit_status) {
  CLI::App* chakra = app.add_subcommand("chakra", "Chakra execution traces: show one, write the examples");
  chakra->require_subcommand(1);
  auto options = std::make_shared<ChakraOptions>();
  CLI::App* show_command = chakra->add_subcommand("show", "Print traces node by node");
  show_command->add_option("files", options->files, "Trace files (.et, gzip or not)")->required();
  show_command->callback([options, &exit_status] { exit_status = show(*options); });
  CLI::App* example_command = chakra->add_subcommand("example", "Write an example training step's traces");
  example_command->add_option("kind", options->kind, "data_parallel or mixture_of_experts")
      ->required()
      ->check(CLI::IsMember({"data_parallel", "mixture_of_experts"}));
  example_command->add_option("--ranks", options->ranks, "Ranks (one file each)")->check(CLI::Range(1, 65536));
  example_command->add_option("--out", options->out, "Path prefix: writes PREFIX.<rank>.et")->required();
  example_command->callback([options, &exit_status] { exit_status = example(*options); });
}

}  // namespace uroce::tools
