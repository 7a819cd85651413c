// What a Chakra replay reports: summary.json's "chakra" object, a line of
// the human summary, and timeline.json, a Chrome/Perfetto trace (one track
// per rank's compute and one per rank's communication, the fabric's
// counters sampled over time, and each link direction's load) to open in ui.perfetto.dev or chrome://tracing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/chakra_plan.h"
#include "sim/chakra_replay.h"
#include "sim/simulation.h"

namespace uroce::sim {

// A job's object; summary.json's "chakra" is the one job of a [chakra]
// table, or the list of [[chakra]] jobs (each with its "job" name).
nlohmann::ordered_json chakra_json(const ChakraSpec& spec, const ChakraResult& result);
nlohmann::ordered_json chakra_summary_json(const Scenario& scenario, const SimResult& result);
// A line per job.
std::string chakra_summary(const Scenario& scenario, const SimResult& result);
// Every job's ranks (a process each, named by job and rank) and the fabric.
std::string chakra_timeline(const Scenario& scenario, const SimResult& result);

}  // namespace uroce::sim
