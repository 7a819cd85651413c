// libFuzzer target: arbitrary bytes as the payload of a UD SEND to QP 1,
// into the CM parser and rdma_cm's header and service-ID parsers. Nothing
// may crash or read out of bounds (ASan), and a MAD that parses must emit
// to bytes that parse to the same message.
#include <cstdint>
#include <cstdlib>

#include "cm/cm_messages.h"
#include "cm/cma_header.h"

using namespace uroce;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteSpan bytes(data, size);
  auto mad = cm::parse_cm_mad(bytes);
  if (mad) {
    auto again = cm::parse_cm_mad(cm::emit_cm_mad(*mad));
    if (!again || !(*again == *mad)) std::abort();
  }
  if (size >= cm::kMadHeaderLength) cm::CmaHeader::parse(bytes.subspan(cm::kMadHeaderLength));
  if (size >= 8) cm::parse_service_id(load_be64(data));
  return 0;
}
