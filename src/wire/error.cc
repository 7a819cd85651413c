// Names of wire parse errors.
#include "wire/error.h"

namespace uroce::wire {

std::string_view to_string(WireError error) {
  switch (error) {
    case WireError::truncated: return "truncated";
    case WireError::bad_version: return "bad_version";
    case WireError::not_roce: return "not_roce";
    case WireError::unknown_opcode: return "unknown_opcode";
    case WireError::bad_length: return "bad_length";
    case WireError::bad_header: return "bad_header";
    case WireError::fragmented: return "fragmented";
    case WireError::buffer_too_small: return "buffer_too_small";
  }
  return "unknown_error";
}

}  // namespace uroce::wire
