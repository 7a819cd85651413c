// The connection manager's MADs in decoded frames: one line of text (for
// `uroce decode`) or a JSON object (for --json) naming the message and the
// fields a reader follows a connection by.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "wire/frame.h"

namespace uroce::decode {

// Whether the packet is a UD SEND to QP 1 (the General Services Interface).
bool is_gsi_mad(const wire::RocePacket& packet);
// "CM REQ TID=0x… comm=0x… service=TCP:7174 QPN=0x000011 …", or the reason
// the payload is not a CM MAD ("MAD (not_cm)").
std::string describe_gsi_mad(ByteSpan payload);
nlohmann::ordered_json gsi_mad_to_json(ByteSpan payload);  // {"message", "transaction_id", "fields"} or {"error"}

}  // namespace uroce::decode
