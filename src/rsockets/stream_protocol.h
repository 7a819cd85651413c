// The wire protocol of rsockets' stream sockets as rdma-core's librdmacm
// speaks it (facts from its rsocket.c), so that a uroce rsocket talks to a
// Linux one. An RC QP per socket; the connection's private data carries
// ConnectionData. Each side has a receive buffer whose halves it lends the
// peer, one at a time, by RDMA-writing a RemoteBuffer into the peer's
// two-entry "target SGL" table. Data goes as RDMA WRITE with immediate into
// the lent half, the immediate saying (op data, length); credits are
// sequence numbers: a sender may have rq_size messages beyond what the
// receiver consumed, and the receiver reports "consumed + rq_size" with each
// SGL message (op sgl). op control carries disconnect and shutdown. riomap
// lends a buffer the same way into the peer's iomap table (op iomap_sgl),
// and riowrite writes there with plain RDMA WRITEs.
//
// Immediate data: bits 31..29 the op, bits 28..0 its value. The
// RemoteBuffer and Iomap entries travel in the sender's byte order (flag
// network_order says big-endian); ConnectionData's fields are big-endian.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce::rsockets {

enum class Op : std::uint32_t { data = 0, write = 2, sgl = 4, iomap_sgl = 6, control = 7 };
enum Control : std::uint32_t { kDisconnect = 0, kKeepalive = 1, kShutdown = 2 };

constexpr std::uint32_t message(Op op, std::uint32_t value) {
  return (static_cast<std::uint32_t>(op) << 29) | (value & 0x1FFFFFFF);
}
constexpr Op op_of(std::uint32_t message) { return static_cast<Op>(message >> 29); }
constexpr std::uint32_t value_of(std::uint32_t message) { return message & 0x1FFFFFFF; }

struct RemoteBuffer {  // rdma-core's rs_sge
  std::uint64_t address;
  std::uint32_t key;
  std::uint32_t length;
};
static_assert(sizeof(RemoteBuffer) == 16);

struct Iomap {  // rdma-core's rs_iomap
  std::uint64_t offset;
  RemoteBuffer buffer;
};
static_assert(sizeof(Iomap) == 24);

constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kFlagNetworkOrder = 1 << 0;
constexpr std::uint8_t kFlagIomap = 1 << 1;

struct ConnectionData {  // rdma-core's rs_conn_data, 40 bytes
  std::uint8_t version;
  std::uint8_t flags;
  std::uint16_t credits;  // big-endian: the sender's receive queue size
  std::uint8_t reserved[3];
  std::uint8_t target_iomap_size;  // scaled (iomap_size_scale)
  RemoteBuffer target_sgl;         // big-endian: the table the peer writes SGL entries into
  RemoteBuffer data_buffer;        // big-endian: the first half of the receive buffer
};
static_assert(sizeof(ConnectionData) == 40);

constexpr std::size_t kSglEntries = 2;
constexpr std::uint32_t kMaxTransfer = 65536;
constexpr std::uint32_t kFirstTransfer = 2048;  // transfers of a long send grow from here to kMaxTransfer
constexpr std::uint32_t kSendLowWater = 2048;   // staging bytes a send needs free
constexpr std::uint32_t kControlSlots = 4;      // control messages in flight
constexpr std::uint16_t kMinQueue = 16, kMaxQueue = 0xFFFE;
constexpr std::uint16_t kDefaultQueue = 384;
constexpr std::uint32_t kDefaultBuffer = 1 << 17;
constexpr std::uint16_t kDefaultInline = 64;

// An 8-bit size: up to 128 the value, else 128 | (value >> 8).
constexpr std::uint8_t iomap_size_scale(std::uint16_t value) {
  return value <= 128 ? static_cast<std::uint8_t>(value) : static_cast<std::uint8_t>(0x80 | (value >> 8));
}
constexpr std::uint16_t iomap_size_value(std::uint8_t scale) {
  return scale <= 128 ? scale : static_cast<std::uint16_t>((scale & 0x7F) << 8);
}

}  // namespace uroce::rsockets
