// The raw Ethernet port: RoCEv2 as whole frames on one interface through an
// AF_PACKET socket (CAP_NET_RAW). It sees every byte the ICRC covers, so it
// verifies every arrival's ICRC, whatever the sender puts in the IPv4
// Identification (Linux Soft-RoCE, hardware RNICs), and the frames it sends
// are exactly what the engine built: any RoCEv2 peer on the link can talk to it.
//
// Peers are found with ARP (IPv4; the peer must be on the link, there is no
// routing through a gateway). Where the kernel also holds the address, the
// port binds UDP 4791 on it with a filter that drops everything, so the
// kernel neither answers RoCE packets with ICMP port-unreachable nor lets
// another program take the port; the kernel then answers ARP for the
// address. Where the kernel does not hold it, the port answers ARP itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "uroce/expected.h"
#include "port/neighbor_table.h"
#include "port/port.h"
#include "wire/arp.h"
#include "wire/ethernet.h"

namespace uroce::port {

struct RawPortOptions {
  std::uint16_t udp_port = 4791;  // tests may move it; RoCEv2 peers use 4791
  int receive_buffer_bytes = 8 << 20;
  NeighborTable::Options neighbors;
};

class RawPort : public Port {
 public:
  // Opens the port on interface with this IPv4 address (empty: the
  // interface's first IPv4 address).
  static Expected<std::unique_ptr<RawPort>, std::string> open(const std::string& interface, const std::string& address,
                                                              const RawPortOptions& options = {});
  ~RawPort() override;
  RawPort(const RawPort&) = delete;
  RawPort& operator=(const RawPort&) = delete;

  const Gid& gid() const override { return gid_; }
  int receive_fd() const override { return fd_; }
  // Prefixes each datagram with an Ethernet header and sends them with
  // sendmmsg; a datagram for a peer whose MAC address is not known yet waits
  // in the neighbour table while an ARP request goes out.
  std::size_t send(std::span<const DescribedDatagram> datagrams) override;
  // Frames for this port's address and UDP port, Ethernet header removed;
  // ARP is handled here and never reaches the caller.
  std::span<const ReceivedDatagram> receive(TimeNs now) override;
  PortCounters counters() const override { return counters_; }
  std::size_t max_datagram_length() const override { return static_cast<std::size_t>(mtu_); }
  ReceiveBuffer receive_buffer() const override { return receive_buffer_; }
  // IPv4 groups: the interface is told to take the group's MAC
  // (PACKET_ADD_MEMBERSHIP); frames to it pass the filter. No IGMP is sent:
  // on a link without a snooping switch none is needed.
  std::errc join_group(const Gid& group) override;
  void leave_group(const Gid& group) override;

 private:
  struct Io;  // system-call scratch space and receive buffers

  RawPort();
  void on_arp(ByteSpan packet);
  void send_arp(wire::ArpOperation operation, const wire::MacAddress& to, Ipv4Address target_ip,
                const wire::MacAddress& target_mac);
  void send_released(std::vector<std::vector<std::uint8_t>> datagrams);
  std::size_t write_ethernet_header(std::uint8_t* out, const wire::MacAddress& to, std::uint16_t ethertype) const;

  Gid gid_{};
  Ipv4Address ip_{};
  // fe80::EUI-64 of mac_: the link-local GID (GID 0) peers reach us at over
  // IPv6, with no neighbour discovery: a link-local GID made of a MAC names
  // that MAC, as Soft-RoCE's GID 0 does.
  Gid link_local_{};
  int fd_ = -1;
  int reserve_fd_ = -1;  // the UDP port on our address, where the kernel holds it
  int reserve_link_local_fd_ = -1;  // and on our link-local address (where IPv6 is on)
  int mtu_ = 1500;
  int interface_index_ = 0;
  ReceiveBuffer receive_buffer_;
  std::vector<Ipv4Address> groups_;  // joined
  wire::MacAddress mac_{};
  bool answer_arp_ = false;
  NeighborTable neighbors_;
  PortCounters counters_;
  std::unique_ptr<Io> io_;
};

}  // namespace uroce::port
