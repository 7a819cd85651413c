// libFuzzer target: the out-of-band connection line a peer sends. Whatever
// parses must print back to a line that parses to the same values.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/oob_exchange.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using uroce::runtime::QpConnectionInfo;
  auto info = QpConnectionInfo::from_line(std::string(reinterpret_cast<const char*>(data), size));
  if (!info) return 0;
  auto again = QpConnectionInfo::from_line(info->to_line());
  if (!again || again->to_line() != info->to_line() || again->gid != info->gid) std::abort();
  return 0;
}
