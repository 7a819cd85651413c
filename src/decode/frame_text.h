// One RoCEv2 frame as a tshark-like summary line for `uroce decode`.
#pragma once

#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "wire/frame.h"

namespace uroce::decode {

// "  3   0.000012 10.0.0.1 → 10.0.0.2 RC SEND_LAST QP=0x3fbb57 PSN=10637425 SE len=64 ICRC=0xee3c4a8d ok"
// number counts frames from 1; seconds is relative to the first frame.
std::string frame_to_text(std::size_t number, double seconds, ByteSpan frame);

// The part after the addresses: transport, opcode and header fields.
std::string describe_packet(const wire::RocePacket& packet);

}  // namespace uroce::decode
