// One RoCEv2 frame as a JSON object, in the key layout of `uroce decode --json`.
#pragma once

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "wire/frame.h"

namespace uroce::decode {

// Keys the opcode does not carry are omitted. A frame that does not parse
// gives {"error": "<reason>"} (reasons from wire::to_string(WireError)).
nlohmann::ordered_json frame_to_json(ByteSpan frame);
nlohmann::ordered_json frame_to_json(const wire::RoceFrame& frame);

}  // namespace uroce::decode
