// The flows of a scenario file: explicit [[flows]], and [[workloads]] that
// expand into flows (incast, permutation, all-to-all, sizes from a CDF at a
// target load) or set up the ring
// all-reduce. Random choices come from the scenario's seed.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>

#include "sim/scenario.h"

namespace uroce::sim {

// Both throw ScenarioError. The topology must be read first.
void flows_from(const toml::array& flows, Scenario& scenario);
// base_dir: where a cdf_file is looked for (the scenario file's directory).
void workloads_from(const toml::array& workloads, Scenario& scenario, std::uint64_t& random,
                    const std::filesystem::path& base_dir);

}  // namespace uroce::sim
