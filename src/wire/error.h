// Why bytes failed to parse as a RoCEv2 frame.
#pragma once

#include <string_view>

#include "uroce/expected.h"

namespace uroce::wire {

enum class WireError {
  truncated,         // shorter than its headers or stated lengths
  bad_version,       // IP version or BTH TVer not what the header claims
  not_roce,          // not Ethernet/IP/UDP with destination port 4791
  unknown_opcode,    // BTH opcode outside the table
  bad_length,        // lengths that contradict each other (IP, UDP, pad)
  bad_header,        // a field with an impossible value (IPv4 IHL < 5)
  fragmented,        // an IPv4 fragment: RoCEv2 never fragments
  buffer_too_small,  // emit: the output buffer cannot hold the frame
};

// Stable snake_case reason, as printed by `uroce decode`.
std::string_view to_string(WireError error);

template <typename T>
using WireResult = Expected<T, WireError>;

inline Unexpected<WireError> fail(WireError error) { return unexpected(error); }

}  // namespace uroce::wire
