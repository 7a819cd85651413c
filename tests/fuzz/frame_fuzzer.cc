// libFuzzer target: arbitrary bytes into the frame and packet parsers and the
// decoders. Nothing may crash or read out of bounds (ASan), and whatever parses
// must emit back to bytes that parse to the same headers and payload. The
// carriers' view (wire/ip_datagram.h) reads the same bytes as a datagram;
// what it accepts, it describes, and a CE mark changes only the ECN bits and
// the IPv4 checksum.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "decode/frame_json.h"
#include "decode/frame_text.h"
#include "wire/frame.h"
#include "wire/ip_datagram.h"

using namespace uroce;

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

void check_reemit(const wire::RoceFrame& frame) {
  wire::RoceFrameSpec spec{frame.ethernet, frame.ip, frame.udp, frame.packet.headers, frame.packet.payload};
  std::vector<std::uint8_t> bytes(70000);
  auto length = wire::emit_roce_frame(spec, bytes);
  if (!length) {
    // Only an IP datagram over 64 KiB may fail to re-emit (options were dropped, so it cannot grow).
    check(length.error() == wire::WireError::bad_length);
    return;
  }
  auto again = wire::parse_roce_frame(ByteSpan(bytes).first(*length));
  check(again.has_value());
  check(again->icrc_ok);
  wire::TransportHeaders expected = frame.packet.headers;
  expected.bth.pad_count = static_cast<std::uint8_t>((4 - frame.packet.payload.size() % 4) % 4);
  check(again->packet.headers == expected);
  check(again->packet.payload.size() == frame.packet.payload.size());
  for (std::size_t i = 0; i < frame.packet.payload.size(); ++i) {
    check(again->packet.payload[i] == frame.packet.payload[i]);
  }
}

void check_carrier_view(ByteSpan bytes) {
  auto view = wire::IpDatagramView::new_checked(bytes);
  auto transmit = wire::describe_transmit(bytes);
  check(view.has_value() == transmit.has_value());
  if (!view) return;
  check(transmit->udp_payload_offset + view->udp_payload().size() == bytes.size());
  (void)view->destination_gid();
  (void)view->ip_total_length();
  (void)view->bth_opcode();
  std::vector<std::uint8_t> marked(bytes.begin(), bytes.end());
  if (wire::mark_congestion_experienced(marked)) {
    auto again = wire::IpDatagramView::new_checked(marked);
    check(again && again->ecn() == wire::Ecn::ce && again->dscp() == view->dscp());
    check(std::equal(marked.begin() + static_cast<std::ptrdiff_t>(view->ip_header_length()), marked.end(),
                     bytes.begin() + static_cast<std::ptrdiff_t>(view->ip_header_length())));
  }
  (void)wire::parse_grh_area(bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteSpan bytes(data, size);
  auto frame = wire::parse_roce_frame(bytes);
  if (frame) {
    check(frame->packet.op != nullptr);
    check_reemit(*frame);
  }
  (void)wire::parse_roce_packet(bytes);
  check_carrier_view(bytes);
  (void)decode::frame_to_json(bytes).dump();
  (void)decode::frame_to_text(1, 0.0, bytes);
  return 0;
}
