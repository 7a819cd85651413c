// The checks an arriving packet passes before any transport processing, as
// the IBTA and Linux Soft-RoCE make them: the P_Key against the port's table,
// the UD Q_Key, the source address of RC/UC packets against the QP's peer,
// and the source of a CNP. A packet that fails one is dropped and counted.
#pragma once

#include <cstdint>

#include "transport/queue_pair.h"
#include "uroce/engine.h"
#include "wire/frame.h"

namespace uroce::transport {

enum class Rejection : std::uint8_t { none, pkey, qkey, source_address, cnp_source };

// The sender's address as a GID (an IPv4 source is the IPv4-mapped GID).
Gid source_gid(const wire::RoceDatagram& datagram);
// The address it was sent to, the same way (a multicast group's GID, say).
Gid destination_gid(const wire::RoceDatagram& datagram);

// IBTA 10.9.3: the low 15 bits match and at least one of the two keys is a
// full member (top bit set); a key with low bits zero matches nothing.
bool pkey_matches(std::uint16_t packet_pkey, std::uint16_t table_pkey);

// The port's P_Key table has one entry, the default full-member key.
Rejection check_pkey(const wire::RocePacket& packet);

// For any packet addressed to qp but a CNP (requests and responses alike).
// UD: the DETH Q_Key must be the QP's. RC/UC: the source address must be the
// QP's destination GID.
Rejection check_sender(const QueuePair& qp, const wire::RoceDatagram& datagram);

// A CNP for qp: RC/UC only from the QP's peer; UD only from an address the
// consumer named in an address handle of the QP's protection domain.
template <typename KnownUdSource>
Rejection check_cnp_source(const QueuePair& qp, const wire::RoceDatagram& datagram, KnownUdSource known) {
  Gid from = source_gid(datagram);
  if (qp.type == QpType::ud) return known(qp.pd, from) ? Rejection::none : Rejection::cnp_source;
  return from == qp.attr.ah_attr.dgid ? Rejection::none : Rejection::cnp_source;
}

// Counts a rejection under its own counter; true when the packet is to be dropped.
bool drop_if_rejected(EngineCounters& counters, Rejection rejection);

}  // namespace uroce::transport
