// Reading a scenario's [dcqcn] table: the notification point, the reaction
// point's variant and that variant's constants, under the names the variant
// uses (NVIDIA's for "connectx", the paper's symbols for "paper").
#pragma once

#include <toml++/toml.h>

#include "uroce/engine.h"

namespace uroce::sim {

// Throws ScenarioError for an unknown key, a key of the other variant, or a
// value out of range.
void congestion_from(const toml::table& table, CongestionConfig& congestion);

}  // namespace uroce::sim
