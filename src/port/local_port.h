// The intra-host path: a UDP port that hands datagrams for another uroce
// device on this host (same user, same network namespace) to that device's
// shared-memory inbox instead of the kernel, and takes what local devices put
// into its own. The datagrams are the very bytes the wire would carry but
// for the ICRC, which the sender's engine leaves unset (seals_icrc: this
// port seals only what it gives the UDP port) and the receiver does not
// check; the receiving engine checks them as it checks any arrival:
// rkeys, access, bounds, PSNs and completion order are the engine's, as on
// the wire. Peers that are not local devices get the UDP port as before.
//
// A device chooses the path per peer: the first datagram to an address looks
// for its segment (again every kRetryLookupNs while there is none). A peer
// whose lane stays full for kStuckNs without releasing a slot is taken to be
// gone: its datagrams are dropped, as the kernel drops datagrams to a socket
// nobody reads, and the engine's retries and timeouts take it from there.
#pragma once

#include <sys/types.h>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "uroce/expected.h"
#include "uroce/monotonic_clock.h"
#include "port/local_ring.h"
#include "port/port.h"

namespace uroce::port {

class LocalPort : public Port {
 public:
  // Wraps a UDP port bound to udp_port: publishes its inbox. Fails (and the
  // caller keeps the bare UDP port) where /dev/shm cannot hold one.
  // sharing: the address's socket is another live device's, and this one
  // takes a member's inbox beside it (local_ring.h, local_member_path).
  static Expected<std::unique_ptr<LocalPort>, std::string> wrap(std::unique_ptr<Port>& udp, std::uint16_t udp_port,
                                                                bool sharing = false);
  ~LocalPort() override;

  const Gid& gid() const override { return wire_->gid(); }
  // Readable when the UDP socket is, or a local sender rang.
  int receive_fd() const override { return epoll_fd_; }
  std::size_t send(std::span<const DescribedDatagram> datagrams) override;
  std::span<const ReceivedDatagram> receive(TimeNs now) override;
  PortCounters counters() const override;
  std::size_t max_datagram_length() const override { return wire_->max_datagram_length(); }
  void announce_sleep(bool sleeping) override;
  // A datagram for a local device goes through its inbox, where the
  // receiving engine does not check the ICRC: only those for the wire are
  // sealed, as they go to the UDP port.
  bool seals_icrc() const override { return true; }
  ReceiveBuffer receive_buffer() const override { return wire_->receive_buffer(); }
  // Groups are the wire's: multicast datagrams never take the intra-host path.
  std::errc join_group(const Gid& group) override { return wire_->join_group(group); }
  void leave_group(const Gid& group) override { wire_->leave_group(group); }
  // Devices on one host may share an address: each draws its QPNs from its
  // member's sixteenth, and a datagram goes to the inbox of the member its
  // destination QPN names. QP 1's (the CM's MADs) go to every member's.
  std::optional<std::uint8_t> qpn_member() const override { return inbox_.member(); }
  bool address_shared() const override;

  static constexpr TimeNs kRetryLookupNs = 100'000'000;
  static constexpr TimeNs kStuckNs = 100'000'000;
  // Once local datagrams have arrived, the UDP socket (a system call per
  // look) is looked at less often while it stays empty: the interval doubles
  // from kFirstWireIntervalNs to kLongestWireIntervalNs, and drops to 0
  // (every receive) when it has something. A local ping-pong then makes
  // almost no system call, and a device with no local peer looks every time.
  static constexpr TimeNs kFirstWireIntervalNs = 1'000;
  static constexpr TimeNs kLongestWireIntervalNs = 50'000;

 private:
  // A destination: address and UDP port, as the datagram's headers give
  // them, and the member of that address its destination QPN names.
  using PeerKey = std::array<std::uint8_t, 19>;
  static constexpr std::size_t kMemberByte = 18;
  struct Peer {
    std::optional<LocalOutbox> outbox;
    TimeNs look_again_at = 0;     // without an outbox: when to look for a segment again
    std::uint64_t released = 0;   // the receiver's progress when last seen full
    TimeNs released_since = 0;
    bool unrung = false;          // puts in this send() not rung yet
  };

  // The clock, read once and only if needed: sending to a known local peer reads none.
  struct LazyNow {
    TimeNs value = -1;
    TimeNs operator()() { return value >= 0 ? value : (value = monotonic_now()); }
  };

  LocalPort(std::unique_ptr<Port> wire, LocalInbox inbox);
  Peer* local_peer(const PeerKey& key, LazyNow& clock);
  // QP 1's datagram to every local member of its address, all or none: a
  // member whose lane is full (and not stuck) holds it back for all, so
  // that no member takes it twice. none: no member is local (the wire's).
  enum class MemberPut : std::uint8_t { none, taken, full };
  MemberPut put_to_every_member(ByteSpan datagram, PeerKey key, LazyNow& clock, bool from_wire = false);
  void note_put(Peer& peer, LocalOutbox::Put put, LazyNow& clock);
  // The holder of a shared address receives from the wire for its members:
  // a datagram for another member's QPN goes into its inbox, and QP 1's
  // into every member's, this device's own among them (true: taken).
  bool forward_to_member(const ReceivedDatagram& datagram, LazyNow& clock);
  PeerKey own_key() const;
  bool stuck(Peer& peer, LazyNow& clock);
  void ring_all();

  std::unique_ptr<Port> wire_;
  LocalInbox inbox_;
  std::uint16_t udp_port_ = 0;  // the address's, where its members' inboxes are named
  int epoll_fd_ = -1;
  std::uint64_t token_;
  std::map<PeerKey, Peer> peers_;  // never erased: last_peer_ and to_ring_ point into it
  PeerKey last_key_{};
  Peer* last_peer_ = nullptr;
  std::vector<Peer*> to_ring_;
  std::array<ReceivedDatagram, 32> taken_{};
  std::vector<ReceivedDatagram> received_;
  bool local_seen_ = false;  // a local datagram ever arrived
  TimeNs wire_looked_at_ = 0;
  TimeNs wire_interval_ = 0;
  std::uint64_t local_sends_ = 0;
  std::uint64_t local_receives_ = 0;
  std::uint64_t local_drops_ = 0;
};

}  // namespace uroce::port
