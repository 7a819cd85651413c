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
#include <span>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/expected.h"
#include "uroce/device.h"
#include "uroce/engine.h"

namespace uroce::port {

struct UdpPortOptions {
  UdpIcrcPolicy icrc = UdpIcrcPolicy::verify_assuming_id0;
  std::uint16_t port = 4791;  // tests may move it; RoCEv2 peers use 4791
  int receive_buffer_bytes = 8 << 20;
};

// One received datagram, headers rebuilt: bytes() is what Engine::on_datagram takes.
struct ReceivedDatagram {
  std::vector<std::uint8_t> buffer;  // kHeadroom bytes, then the UDP payload
  std::size_t start = 0;             // where the rebuilt IP header begins
  std::size_t length = 0;            // from start
  bool icrc_checkable = true;        // false when the policy skips this one's ICRC
  ByteSpan bytes() const { return ByteSpan(buffer).subspan(start, length); }
};

class UdpPort {
 public:
  // Binds address:4791 (address: an IPv4 dotted quad or an IPv6 address).
  static Expected<UdpPort, std::string> open(const std::string& address, const UdpPortOptions& options = {});
  UdpPort(UdpPort&& other) noexcept;
  UdpPort& operator=(UdpPort&& other) noexcept;
  UdpPort(const UdpPort&) = delete;
  UdpPort& operator=(const UdpPort&) = delete;
  ~UdpPort();

  const Gid& gid() const { return gid_; }
  int receive_fd() const { return receive_fd_; }

  // Sends one IP datagram built by the engine. False on back-pressure
  // (EAGAIN/ENOBUFS: try again soon); other failures are counted and dropped.
  bool send(ByteSpan datagram);
  // Receives up to out.size() datagrams without blocking; returns how many.
  std::size_t receive(std::span<ReceivedDatagram> out);

  std::uint64_t send_errors() const { return send_errors_; }

 private:
  UdpPort() = default;
  int socket_for_source_port(std::uint16_t port);
  void close_all();

  Gid gid_{};
  bool ipv4_ = true;
  UdpPortOptions options_;
  int receive_fd_ = -1;
  std::map<std::uint16_t, int> send_fds_;  // by UDP source port, opened on first use
  std::uint64_t send_errors_ = 0;
};

}  // namespace uroce::port
