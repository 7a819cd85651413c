// What a Chakra replay reports: summary.json's "chakra" object, a line of
// the human summary, and timeline.json, a Chrome/Perfetto trace (one track
// per rank's compute and one per rank's communication, and the fabric's
// counters sampled over time) to open in ui.perfetto.dev or chrome://tracing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/chakra_plan.h"
#include "sim/chakra_replay.h"
#include "sim/simulation.h"

namespace uroce::sim {

nlohmann::ordered_json chakra_json(const ChakraSpec& spec, const ChakraResult& result);
std::string chakra_summary(const ChakraSpec& spec, const ChakraResult& result);
std::string chakra_timeline(const ChakraSpec& spec, const SimResult& result);

}  // namespace uroce::sim
