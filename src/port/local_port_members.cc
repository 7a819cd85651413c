// LocalPort's part in an address shared by several devices on one host
// (local_port.h): the CM's MADs to every member, whether the address is
// shared now, and the holder's forwarding of wire arrivals to its members.
#include <cstring>
#include <optional>

#include "port/local_port.h"
#include "wire/bth.h"
#include "wire/frame.h"
#include "wire/ip_datagram.h"

namespace uroce::port {
namespace {

// The BTH's destination QPN of an IP datagram as the UDP port rebuilt it.
std::optional<std::uint32_t> arriving_qpn(ByteSpan bytes) {
  auto datagram = wire::IpDatagramView::new_checked(bytes);
  if (!datagram) return std::nullopt;
  auto bth = wire::BthView::new_checked(datagram->udp_payload());
  if (!bth) return std::nullopt;
  return bth->dest_qp();
}

}  // namespace

LocalPort::MemberPut LocalPort::put_to_every_member(ByteSpan datagram, PeerKey key, LazyNow& clock,
                                                    bool from_wire) {
  std::array<Peer*, kQpnMembers> members{};
  std::size_t count = 0;
  for (std::uint8_t member = 0; member < kQpnMembers; ++member) {
    key[kMemberByte] = member;
    Peer* peer = local_peer(key, clock);
    if (peer == nullptr) continue;
    if (!peer->outbox->has_room()) {
      if (!stuck(*peer, clock)) return MemberPut::full;
      ++local_drops_;  // gone: it misses the MAD, as a lost one
      continue;
    }
    members[count++] = peer;
  }
  if (count == 0) return MemberPut::none;
  for (std::size_t i = 0; i < count; ++i) note_put(*members[i], members[i]->outbox->put(datagram, from_wire), clock);
  return MemberPut::taken;
}

bool LocalPort::address_shared() const {
  if (inbox_.member() != 0) return true;
  std::string first = local_segment_path(gid(), udp_port_, inbox_.network_namespace());
  for (std::uint8_t member = 1; member < kQpnMembers; ++member) {
    if (local_segment_is_live(local_member_path(first, member))) return true;
  }
  return false;
}

LocalPort::PeerKey LocalPort::own_key() const {
  PeerKey key{};
  std::memcpy(key.data(), gid().data(), gid().size());
  key[16] = static_cast<std::uint8_t>(udp_port_ >> 8);
  key[17] = static_cast<std::uint8_t>(udp_port_ & 0xFF);
  return key;
}

bool LocalPort::forward_to_member(const ReceivedDatagram& datagram, LazyNow& clock) {
  // Only the holder's socket is on the address's port; the others' get
  // their groups' datagrams, which the kernel gives every member itself.
  if (inbox_.member() != 0) return false;
  std::optional<std::uint32_t> qpn = arriving_qpn(datagram.bytes);
  if (!qpn || *qpn == kMulticastQpn) return false;
  std::uint8_t member = qpn_member_of(*qpn);
  bool for_every_member = *qpn == kGsiQpn;
  if (member == 0 && !for_every_member) return false;  // ours: the common case costs a few loads
  PeerKey key = own_key();
  // The members take what their inbox brings unchecked: the holder checks
  // the ICRC first, and keeps a broken datagram for its engine to count and drop.
  if (datagram.icrc_checkable) {
    auto parsed = wire::parse_roce_datagram(datagram.bytes);
    if (!parsed || !parsed->icrc_ok) return false;
  }
  if (for_every_member) {
    // As a local sender's MAD: into every member's inbox, this device's own
    // among them. An arrival cannot be held back: where a lane is full, the
    // MAD reaches this device's engine alone, and the others' CMs see it
    // again when its sender retries.
    MemberPut put = put_to_every_member(datagram.bytes, key, clock, /*from_wire=*/true);
    if (put == MemberPut::full) ++local_drops_;
    return put == MemberPut::taken;
  }
  key[kMemberByte] = member;
  Peer* peer = local_peer(key, clock);
  if (peer == nullptr) return false;  // no such member: the engine drops it as for any unknown QP
  LocalOutbox::Put put = peer->outbox->put(datagram.bytes, /*from_wire=*/true);
  if (put == LocalOutbox::Put::full) ++local_drops_;  // as a NIC's full receive queue drops
  note_put(*peer, put, clock);
  return true;
}

}  // namespace uroce::port
