// The UDP port: RoCEv2 over ordinary UDP sockets on one local address, port
// 4791, with no privileges. The engine speaks whole IP datagrams; this port
// sends their UDP payload (BTH .. ICRC) from a socket bound to the datagram's
// own UDP source port (the ICRC covers it), with DF set so the kernel's IPv4
// Identification is 0 as the engine assumed, and the datagram's DSCP/ECN; on
// receive it rebuilds the IP and UDP headers in front of the payload from what
// the socket reports (addresses, ports, TOS/traffic class).
//
// What a UDP socket cannot report is the sender's IPv4 Identification, which
// the ICRC covers. UdpIcrcPolicy makes the consequence explicit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "uroce/expected.h"
#include "port/network_namespace.h"
#include "port/port.h"
#include "uroce/udp_port_policies.h"
#include "uroce/vocabulary.h"

namespace uroce::port {

struct UdpPortOptions {
  UdpIcrcPolicy icrc = UdpIcrcPolicy::verify_assuming_id0;
  UdpGsoPolicy gso = UdpGsoPolicy::where_bytes_unchanged;
  bool gro = true;            // let the kernel hand over runs of datagrams in one receive
  std::uint16_t port = 4791;  // tests may move it; RoCEv2 peers use 4791
  int receive_buffer_bytes = 8 << 20;
  // false: another device on this host holds address:port and this one
  // shares the address (runtime/port_opening.h): its receiving socket binds
  // a port nobody sends to, and what is for it comes through its inbox.
  bool receives_on_port = true;
};

class UdpPort : public Port {
 public:
  // Binds address:4791 (address: an IPv4 dotted quad or an IPv6 address).
  // A failed bind leaves its errno (EADDRINUSE: the address's port is taken).
  static Expected<UdpPort, std::string> open(const std::string& address, const UdpPortOptions& options = {});
  UdpPort(UdpPort&& other) noexcept;
  UdpPort& operator=(UdpPort&& other) noexcept;
  UdpPort(const UdpPort&) = delete;
  UdpPort& operator=(const UdpPort&) = delete;
  ~UdpPort() override;

  const Gid& gid() const override { return gid_; }
  // An epoll set of the receiving socket and the multicast groups' sockets.
  int receive_fd() const override { return epoll_fd_; }
  // sendmmsg; runs of equal-sized datagrams to one peer go as one UDP GSO
  // send where the policy allows. Arrivals get their IP and UDP headers
  // rebuilt from what the socket reports.
  std::size_t send(std::span<const DescribedDatagram> datagrams) override;
  std::span<const ReceivedDatagram> receive(TimeNs now) override;
  PortCounters counters() const override;
  std::size_t max_datagram_length() const override;
  ReceiveBuffer receive_buffer() const override { return receive_buffer_; }
  // A socket of its own per group, bound to group:4791 and joined on the
  // interface of this port's address (udp_port_groups.cc).
  std::errc join_group(const Gid& group) override;
  void leave_group(const Gid& group) override;

 private:
  struct Io;  // system-call scratch space and receive buffers, kept from call to call

  UdpPort();
  int socket_for_source_port(std::uint16_t port);
  bool may_segment(const std::uint8_t* destination) const;
  // destination: the address the datagram was sent to (ours, or a group's).
  void rebuild_headers(std::uint8_t* payload, std::size_t payload_length, const void* source, int tos,
                       const Gid& destination, ReceivedDatagram& out) const;
  void receive_from_groups();
  // The interface multicast leaves and joins on, for an IPv6 address (0: none found).
  int multicast_interface() const;
  void close_all();

  Gid gid_{};
  NetworkNamespace netns_;  // where the port was opened: its later sockets go there too
  bool ipv4_ = true;
  UdpPortOptions options_;
  int receive_fd_ = -1;
  int epoll_fd_ = -1;
  ReceiveBuffer receive_buffer_;
  std::map<Gid, int> group_fds_;
  std::map<std::uint16_t, int> send_fds_;  // by UDP source port, opened on first use
  std::uint64_t send_errors_ = 0;
  std::uint64_t gso_sends_ = 0;
  std::uint64_t gro_receives_ = 0;
  std::unique_ptr<Io> io_;
};

}  // namespace uroce::port
