// What a device needs from a port: send the IP datagrams the engine built,
// hand over the ones that arrived, and an fd to sleep on. The UDP port does
// it through the kernel's UDP sockets; the raw port puts whole Ethernet
// frames on an interface. The engine never knows which one it has.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <system_error>

#include "common/bytes.h"
#include "uroce/transmit.h"
#include "uroce/vocabulary.h"

namespace uroce::port {

// One received IP datagram (IPv4 or IPv6 header first): what
// Engine::on_datagram takes. Valid until the next receive().
struct ReceivedDatagram {
  ByteSpan bytes;
  bool icrc_checkable = true;  // false when the port's policy skips this one's ICRC
  bool local = false;          // from a local device's shared memory (its extent packets may be read)
};

struct PortCounters {
  std::uint64_t send_errors = 0;       // datagrams dropped for a failed send (not back-pressure)
  std::uint64_t gso_sends = 0;         // UDP: runs sent as one GSO message
  std::uint64_t gro_receives = 0;      // UDP: runs the kernel merged into one receive
  std::uint64_t loopback_waits = 0;    // UDP: sends held while a loopback receiver's queue was half full
  std::uint64_t arp_requests = 0;      // raw: requests sent to resolve a peer's MAC address
  std::uint64_t unresolved_drops = 0;  // raw: datagrams dropped while no MAC address answered
  std::uint64_t foreign_frames = 0;    // raw: frames on the interface that were not for this port
  std::uint64_t local_sends = 0;       // intra-host: datagrams put into local devices' inboxes
  std::uint64_t local_receives = 0;    // intra-host: datagrams taken from this device's inbox
  std::uint64_t local_drops = 0;       // intra-host: datagrams for a local device that stopped taking them
};

class Port {
 public:
  virtual ~Port() = default;

  virtual const Gid& gid() const = 0;
  // Readable when receive() has something.
  virtual int receive_fd() const = 0;
  // Sends datagrams in order with as few system calls as it can. Returns how
  // many it took; fewer than given means back-pressure (EAGAIN/ENOBUFS):
  // offer the rest again soon. Datagrams that fail otherwise are counted and
  // dropped, as a lossy link would. Each comes described (its destination,
  // flow and traffic class), so a port never reads its headers. The bytes
  // are the caller's and stay writable: a port that seals_icrc() writes the
  // ICRC of those it puts on a wire.
  virtual std::size_t send(std::span<const DescribedDatagram> datagrams) = 0;
  // What has arrived, without blocking. now: the device's clock this round
  // (for a port that paces its looks; saves it reading the clock again).
  virtual std::span<const ReceivedDatagram> receive(TimeNs now) = 0;
  virtual PortCounters counters() const = 0;
  // The largest IP datagram the port can put on its link.
  virtual std::size_t max_datagram_length() const = 0;
  // Under the device's lock, before each of its progress thread's rounds:
  // whether it will sleep on receive_fd() if the round finds nothing (true),
  // or keeps looking (false). A port whose senders must be asked to make the
  // fd readable (the intra-host path) asks them only while it sleeps.
  virtual void announce_sleep(bool /*sleeping*/) {}
  // Whether send() computes the ICRC of what it puts on a wire, because it
  // hands other datagrams to receivers that do not check one (local
  // devices). The device's engine then leaves ICRCs unset.
  virtual bool seals_icrc() const { return false; }
  // The receive buffer the kernel granted the port's socket, and the one the
  // port asked for (0 and 0: no socket of its own). Less than asked: the
  // caller could not lift net.core.rmem_max (no CAP_NET_ADMIN), and a burst
  // beyond the granted size is dropped before uroce sees it.
  struct ReceiveBuffer {
    std::size_t granted = 0;
    std::size_t wanted = 0;
  };
  virtual ReceiveBuffer receive_buffer() const { return {}; }
  // UD multicast: from now on, receive() also hands over the datagrams sent
  // to group (a multicast GID, see gid_is_multicast), and leave stops it.
  // Each group is joined once per port (the device counts its QPs).
  // operation_not_supported where the port cannot reach the group's family.
  virtual std::errc join_group(const Gid& /*group*/) { return std::errc::operation_not_supported; }
  virtual void leave_group(const Gid& /*group*/) {}
  // Where devices on one host may share this port's address (LocalPort):
  // the member whose sixteenth of the QPN space this device draws from
  // (EngineConfig::qpn_member). None: QPNs take all 24 bits.
  virtual std::optional<std::uint8_t> qpn_member() const { return std::nullopt; }
  // Another live device shares the address now (the CM then leaves a MAD
  // for nobody here to the member it is for, instead of refusing it).
  virtual bool address_shared() const { return false; }
};

}  // namespace uroce::port
