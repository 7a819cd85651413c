// Rebuilding simulated packets as full Ethernet frames for pcap.
#include "sim/link_capture.h"

#include <algorithm>
#include <cstring>

#include "common/bytes.h"
#include "wire/frame.h"

namespace uroce::sim {

namespace {

constexpr std::size_t kEthernetHeader = 14;
constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeMacControl = 0x8808;
constexpr std::uint16_t kPfcOpcode = 0x0101;
constexpr std::size_t kMinimumFrame = 60;  // without the FCS
constexpr std::uint8_t kPfcDestination[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};

void node_mac(NodeRef node, std::uint8_t* mac) {
  mac[0] = 0x02;
  mac[1] = 0x00;
  mac[2] = node.is_host ? 0x01 : 0x02;
  mac[3] = static_cast<std::uint8_t>(node.index >> 16);
  mac[4] = static_cast<std::uint8_t>(node.index >> 8);
  mac[5] = static_cast<std::uint8_t>(node.index);
}

}  // namespace

Expected<std::unique_ptr<LinkCapture>, std::string> LinkCapture::create(const std::string& path, NodeRef from,
                                                                        NodeRef to, std::uint64_t max_frames) {
  auto writer = capture::PcapWriter::create(path);
  if (!writer) return unexpected(writer.error());
  return std::unique_ptr<LinkCapture>(new LinkCapture(std::move(*writer), from, to, max_frames));
}

LinkCapture::LinkCapture(capture::PcapWriter writer, NodeRef from, NodeRef to, std::uint64_t max_frames)
    : writer_(std::move(writer)), max_frames_(max_frames) {
  node_mac(from, source_mac_);
  node_mac(to, destination_mac_);
}

void LinkCapture::write_ethernet_header(std::uint16_t ether_type, bool pfc) {
  std::memcpy(frame_.data(), pfc ? kPfcDestination : destination_mac_, 6);
  std::memcpy(frame_.data() + 6, source_mac_, 6);
  store_be16(frame_.data() + 12, ether_type);
}

void LinkCapture::on_transmit(const Packet& packet, SimTime now) {
  if (frames_ >= max_frames_) return;
  ++frames_;
  std::int64_t timestamp_ns = now / kPicosecondsPerNs;
  if (packet.kind == PacketKind::pause) {
    frame_.assign(kMinimumFrame, 0);
    write_ethernet_header(kEtherTypeMacControl, true);
    std::uint8_t* control = frame_.data() + kEthernetHeader;
    store_be16(control, kPfcOpcode);
    store_be16(control + 2, static_cast<std::uint16_t>(1u << packet.priority));  // class-enable vector
    store_be16(control + 4 + 2 * packet.priority, packet.pause_on ? 0xFFFF : 0);  // that class's quanta
    writer_.write(frame_, timestamp_ns);
    return;
  }
  std::size_t length = packet.datagram_length;
  frame_.assign(kEthernetHeader + std::max<std::size_t>(length, kMinimumFrame - kEthernetHeader), 0);
  write_ethernet_header(kEtherTypeIpv4, false);
  MutableByteSpan datagram(frame_.data() + kEthernetHeader, length);
  std::memcpy(datagram.data(), packet.header, std::min(length, kHeaderBytes));
  // The header buffer may hold stale bytes where the payload would be: zero
  // everything after the transport headers, then seal with a real ICRC.
  auto parsed = wire::parse_roce_datagram(datagram, wire::IcrcCheck::skip);
  if (parsed) {
    auto payload_at = static_cast<std::size_t>(parsed->packet.payload.data() - datagram.data());
    std::fill(datagram.begin() + static_cast<std::ptrdiff_t>(payload_at), datagram.end(), std::uint8_t{0});
  }
  wire::seal_roce_datagram(datagram);
  writer_.write(frame_, timestamp_ns);
}

}  // namespace uroce::sim
