// libFuzzer target: a Chakra trace file, as a [chakra] scenario reads it.
// A bad file gets an error naming it, never a crash; a file that reads is
// replayed as rank 0 of a two-host fabric, and as rank 1 with ranks 0 and 1
// swapped in its sends and receives, for 100 simulated microseconds, where traces that cannot run together are refused with an
// error (std::invalid_argument) and the rest run without a crash or a hang.
// The same bytes are also read as the inputs of a process-group node
// (chakra/process_groups.h), which gives groups or an error, never a crash.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "chakra/trace.h"
#include "sim/simulation.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)uroce::chakra::parse_process_groups(std::string_view(reinterpret_cast<const char*>(data), size));
  auto trace = uroce::chakra::parse_trace(std::string(reinterpret_cast<const char*>(data), size), "fuzz.et");
  if (!trace) {
    if (trace.error().find("fuzz.et") == std::string::npos) __builtin_trap();  // an error names the file
    return 0;
  }
  using namespace uroce::sim;
  Scenario scenario;
  scenario.time_limit = 100 * kPicosecondsPerUs;
  scenario.topology = star(2, LinkSpec{100'000'000'000, kPicosecondsPerUs});
  ChakraSpec spec;
  spec.traces = "fuzz";
  uroce::chakra::Trace mirrored = *trace;
  for (uroce::chakra::TraceNode& node : mirrored.nodes) {
    for (auto* peer : {&node.comm_src, &node.comm_dst}) {
      if (*peer && **peer < 2) **peer = 1 - **peer;
    }
  }
  spec.ranks = {*trace, mirrored};
  spec.hosts = {0, 1};
  scenario.chakra.push_back(spec);
  try {
    run_simulation(scenario);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
