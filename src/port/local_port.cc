// LocalPort: choosing the path per destination, and merging what the inbox
// and the UDP socket hold into one receive.
#include "port/local_port.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "uroce/monotonic_clock.h"
#include "wire/bth.h"
#include "wire/frame.h"

namespace uroce::port {
namespace {

// A datagram's destination address (as a GID) and UDP port, from its
// description, and the member of the address its BTH's destination QPN
// names; false for one that describes no RoCE datagram.
bool destination_of(const DescribedDatagram& datagram, std::array<std::uint8_t, 19>& key, std::uint32_t& qpn) {
  const Transmit& transmit = datagram.transmit;
  if (transmit.udp_payload_offset == 0 || datagram.bytes.size() < transmit.udp_payload_offset) return false;
  auto bth = wire::BthView::new_checked(datagram.bytes.subspan(transmit.udp_payload_offset));
  if (!bth) return false;
  std::memcpy(key.data(), transmit.destination.data(), transmit.destination.size());
  key[16] = static_cast<std::uint8_t>(transmit.destination_port >> 8);
  key[17] = static_cast<std::uint8_t>(transmit.destination_port & 0xFF);
  qpn = bth->dest_qp();
  key[18] = qpn_member_of(qpn);
  return true;
}

std::uint64_t sender_token() {
  std::random_device random;
  std::uint32_t salt = random() | 1;  // never 0: a token of 0 means a free lane
  return (std::uint64_t{static_cast<std::uint32_t>(::getpid())} << 32) | salt;
}

}  // namespace

Expected<std::unique_ptr<LocalPort>, std::string> LocalPort::wrap(std::unique_ptr<Port>& udp, std::uint16_t udp_port,
                                                               bool sharing) {
  auto inbox = sharing ? LocalInbox::create_sharing(udp->gid(), udp_port) : LocalInbox::create(udp->gid(), udp_port);
  if (!inbox) return unexpected(inbox.error());
  std::unique_ptr<LocalPort> port(new LocalPort(std::move(udp), std::move(*inbox)));
  port->udp_port_ = udp_port;
  port->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  bool watched = port->epoll_fd_ >= 0;
  for (int fd : {port->wire_->receive_fd(), port->inbox_.wake_fd()}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    watched = watched && ::epoll_ctl(port->epoll_fd_, EPOLL_CTL_ADD, fd, &event) == 0;
  }
  if (!watched) {
    udp = std::move(port->wire_);  // the caller keeps its UDP port
    return unexpected(std::string("cannot watch the UDP socket and the inbox together"));
  }
  return port;
}

LocalPort::LocalPort(std::unique_ptr<Port> wire, LocalInbox inbox)
    : wire_(std::move(wire)), inbox_(std::move(inbox)), token_(sender_token()) {}

LocalPort::~LocalPort() {
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

LocalPort::Peer* LocalPort::local_peer(const PeerKey& key, LazyNow& clock) {
  // A batch mostly goes to one peer: look it up once.
  if (last_peer_ == nullptr || key != last_key_) {
    last_peer_ = &peers_[key];
    last_key_ = key;
  }
  Peer& peer = *last_peer_;
  if (peer.outbox) return &peer;
  TimeNs now = clock();
  if (now < peer.look_again_at) return nullptr;
  Gid gid;
  std::memcpy(gid.data(), key.data(), gid.size());
  auto udp_port = static_cast<std::uint16_t>(key[16] << 8 | key[17]);
  std::string path = local_member_path(local_segment_path(gid, udp_port, inbox_.network_namespace()), key[kMemberByte]);
  std::optional<LocalOutbox> attached = LocalOutbox::attach(path, token_);
  if (attached) peer.outbox.emplace(std::move(*attached));
  if (!peer.outbox) {
    peer.look_again_at = now + kRetryLookupNs;
    return nullptr;
  }
  peer.released = peer.outbox->released();
  peer.released_since = now;
  return &peer;
}

// A full lane whose receiver released nothing for kStuckNs: the process is
// stopped, or died without closing. Its datagrams are dropped from now on,
// and the segment looked for again later (a new device may have replaced it).
bool LocalPort::stuck(Peer& peer, LazyNow& clock) {
  TimeNs now = clock();
  std::uint64_t released = peer.outbox->released();
  if (released != peer.released) {
    peer.released = released;
    peer.released_since = now;
    return false;
  }
  if (now - peer.released_since < kStuckNs) return false;
  peer.outbox.reset();
  peer.unrung = false;
  peer.look_again_at = now + kRetryLookupNs;
  return true;
}

// After a put: a taken datagram makes its peer one to ring; a closed inbox is
// looked up again later (its address may now be a remote one).
void LocalPort::note_put(Peer& peer, LocalOutbox::Put put, LazyNow& clock) {
  if (put == LocalOutbox::Put::taken) {
    ++local_sends_;
    if (!peer.unrung) to_ring_.push_back(&peer);
    peer.unrung = true;
  } else if (put == LocalOutbox::Put::closed && peer.outbox) {
    peer.outbox.reset();
    peer.unrung = false;
    peer.look_again_at = clock() + kRetryLookupNs;
  }
}

void LocalPort::ring_all() {
  for (Peer* peer : to_ring_) {
    if (peer->outbox) peer->outbox->ring();
    peer->unrung = false;
  }
  to_ring_.clear();
}

// In order: runs of datagrams for the wire go to the UDP port, local ones to
// their peer's lane. The first that cannot go yet (back-pressure from either
// path) ends the call, as the Port contract says.
std::size_t LocalPort::send(std::span<const DescribedDatagram> datagrams) {
  LazyNow now;
  std::size_t wire_run_from = datagrams.size();  // none pending
  auto send_wire_run = [&](std::size_t until) {
    if (wire_run_from >= until) return true;
    std::span<const DescribedDatagram> run = datagrams.subspan(wire_run_from, until - wire_run_from);
    for (const DescribedDatagram& datagram : run) wire::seal_roce_datagram(datagram.bytes);  // again, if offered again
    std::size_t taken = wire_->send(run);
    bool all = taken == until - wire_run_from;
    wire_run_from = all ? datagrams.size() : wire_run_from + taken;
    return all;
  };
  for (std::size_t i = 0; i < datagrams.size(); ++i) {
    PeerKey key;
    std::uint32_t qpn = 0;
    bool keyed = datagrams[i].bytes.size() <= kMaxDatagramLength && destination_of(datagrams[i], key, qpn);
    if (keyed && qpn == kGsiQpn && !gid_is_multicast(datagrams[i].transmit.destination)) {
      // The CM's MADs: every device on the address takes them, and each
      // answers only those of its own connections and listeners.
      if (!send_wire_run(i)) {
        ring_all();
        return wire_run_from;
      }
      MemberPut put = put_to_every_member(datagrams[i].bytes, key, now);
      if (put == MemberPut::full) {
        ring_all();
        return i;
      }
      if (put == MemberPut::none && wire_run_from == datagrams.size()) wire_run_from = i;
      continue;
    }
    Peer* peer = keyed ? local_peer(key, now) : nullptr;
    if (peer == nullptr) {
      if (wire_run_from == datagrams.size()) wire_run_from = i;
      continue;
    }
    if (!send_wire_run(i)) {
      ring_all();
      return wire_run_from;
    }
    LocalOutbox::Put put = peer->outbox->put(datagrams[i].bytes);
    if (put != LocalOutbox::Put::full) {
      note_put(*peer, put, now);
      if (put == LocalOutbox::Put::closed) wire_run_from = i;  // the device closed: its address may now be a remote one
    } else if (stuck(*peer, now)) {
      ++local_drops_;
    } else {
      ring_all();
      return i;
    }
  }
  ring_all();
  if (!send_wire_run(datagrams.size())) return wire_run_from;
  return datagrams.size();
}

std::span<const ReceivedDatagram> LocalPort::receive(TimeNs now) {
  inbox_.release();
  received_.clear();
  std::size_t local = inbox_.take(taken_);
  received_.assign(taken_.begin(), taken_.begin() + static_cast<std::ptrdiff_t>(local));
  local_receives_ += local;
  local_seen_ |= local > 0;
  if (!local_seen_ || now - wire_looked_at_ >= wire_interval_) {
    wire_looked_at_ = now;
    std::span<const ReceivedDatagram> wire = wire_->receive(now);
    LazyNow clock{now};
    for (const ReceivedDatagram& datagram : wire) {
      if (!forward_to_member(datagram, clock)) received_.push_back(datagram);
    }
    ring_all();
    if (!wire.empty()) {
      wire_interval_ = 0;
    } else if (local_seen_) {
      wire_interval_ = std::clamp(2 * wire_interval_, kFirstWireIntervalNs, kLongestWireIntervalNs);
    }
  }
  return received_;
}

PortCounters LocalPort::counters() const {
  PortCounters counters = wire_->counters();
  counters.local_sends = local_sends_;
  counters.local_receives = local_receives_;
  counters.local_drops = local_drops_;
  return counters;
}

void LocalPort::announce_sleep(bool sleeping) {
  if (sleeping) {
    inbox_.announce_sleep();
    wire_interval_ = 0;  // the last look before the sleep must see the socket
  } else {
    inbox_.announce_awake();
  }
}

}  // namespace uroce::port
