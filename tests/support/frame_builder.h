// Test helpers: build valid RoCEv2 frames for any opcode with plausible fields.
#pragma once

#include <cstdint>
#include <vector>

#include "wire/frame.h"

namespace uroce::testing {

// Headers for opcode with every extension header it carries filled in.
wire::TransportHeaders headers_for(std::uint8_t opcode, std::uint32_t seed = 1);

// A frame spec: Ethernet (optionally VLAN-tagged), IPv4 or IPv6, UDP 4791.
wire::RoceFrameSpec frame_spec(const wire::TransportHeaders& headers, std::span<const std::uint8_t> payload,
                               int ip_version = 4, bool vlan = false);

// Emits a spec into a fresh vector sized to the frame.
std::vector<std::uint8_t> emit(const wire::RoceFrameSpec& spec);

// Every opcode in the table.
std::vector<std::uint8_t> all_opcodes();

}  // namespace uroce::testing
