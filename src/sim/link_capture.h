// A pcap file of one simulated link direction. Frames are rebuilt whole, as
// uroce decode and Wireshark expect them: an Ethernet header with made-up
// addresses (02:00:01:xx:xx:xx for host xx, 02:00:02:... for a switch), the
// packet's own IP/UDP/BTH headers, zero payload bytes (the simulator carries
// none) and an ICRC computed over that frame. PFC frames appear as 802.1Qbb
// MAC control frames. Timestamps are simulated time, from zero.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capture/pcap_file.h"
#include "uroce/expected.h"
#include "sim/topology.h"
#include "sim/transmitter.h"

namespace uroce::sim {

class LinkCapture final : public PacketTap {
 public:
  // Stops recording after max_frames frames.
  static Expected<std::unique_ptr<LinkCapture>, std::string> create(const std::string& path, NodeRef from,
                                                                    NodeRef to, std::uint64_t max_frames);

  void on_transmit(const Packet& packet, SimTime now) override;
  std::uint64_t frames() const { return frames_; }
  void flush() { writer_.flush(); }

 private:
  LinkCapture(capture::PcapWriter writer, NodeRef from, NodeRef to, std::uint64_t max_frames);
  void write_ethernet_header(std::uint16_t ether_type, bool pfc);

  capture::PcapWriter writer_;
  std::uint8_t source_mac_[6];
  std::uint8_t destination_mac_[6];
  std::uint64_t max_frames_;
  std::uint64_t frames_ = 0;
  std::vector<std::uint8_t> frame_;
};

}  // namespace uroce::sim
