// The extension transport headers that follow the BTH: RETH, AETH, AtomicETH,
// AtomicAckETH, ImmDt, IETH, DETH and XRCETH. Each is fixed-size; parse() takes at
// least kLength bytes (the caller checks), emit() writes exactly kLength.
#pragma once

#include <cstdint>

#include "common/bytes.h"

namespace uroce::wire {

// RDMA Extended Transport Header: the remote buffer of a WRITE or READ.
struct RethRepr {
  static constexpr std::size_t kLength = 16;
  static constexpr std::size_t kVaOffset = 0, kRkeyOffset = 8, kDmaLengthOffset = 12;
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint32_t dma_length = 0;  // the whole message

  static RethRepr parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const RethRepr&) const = default;
};

// ACK Extended Transport Header: syndrome (ACK / RNR NAK / NAK) and MSN.
struct AethRepr {
  static constexpr std::size_t kLength = 4;
  static constexpr std::size_t kSyndromeOffset = 0, kMsnOffset = 1;
  std::uint8_t syndrome = 0;
  std::uint32_t msn = 0;  // 24 bits

  static AethRepr parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const AethRepr&) const = default;
};

// Atomic Extended Transport Header: target and operands of CMP_SWAP/FETCH_ADD.
struct AtomicEthRepr {
  static constexpr std::size_t kLength = 28;
  static constexpr std::size_t kVaOffset = 0, kRkeyOffset = 8, kSwapAddOffset = 12, kCompareOffset = 20;
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint64_t swap_add = 0;
  std::uint64_t compare = 0;

  static AtomicEthRepr parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const AtomicEthRepr&) const = default;
};

// Atomic ACK Extended Transport Header: the value found before the atomic.
struct AtomicAckEthRepr {
  static constexpr std::size_t kLength = 8;
  std::uint64_t original = 0;

  static AtomicAckEthRepr parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const AtomicAckEthRepr&) const = default;
};

// Immediate data, carried opaque: the 4 bytes as a big-endian integer.
struct ImmDtRepr {
  static constexpr std::size_t kLength = 4;
  std::uint32_t imm = 0;

  static ImmDtRepr parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const ImmDtRepr&) const = default;
};

// Invalidate Extended Transport Header: the R_Key to invalidate.
struct IethRepr {
  static constexpr std::size_t kLength = 4;
  std::uint32_t rkey = 0;

  static IethRepr parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const IethRepr&) const = default;
};

// Datagram Extended Transport Header: Q_Key and source QP of a UD send.
struct DethRepr {
  static constexpr std::size_t kLength = 8;
  static constexpr std::size_t kQkeyOffset = 0, kSrcQpOffset = 5;
  std::uint32_t qkey = 0;
  std::uint32_t src_qp = 0;  // 24 bits

  static DethRepr parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const DethRepr&) const = default;
};

// XRC Extended Transport Header: the XRC SRQ a request's message goes to.
struct XrcethRepr {
  static constexpr std::size_t kLength = 4;
  std::uint32_t srqn = 0;  // 24 bits, after a reserved byte

  static XrcethRepr parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const XrcethRepr&) const = default;
};

// A CNP carries 16 reserved bytes after its BTH.
inline constexpr std::size_t kCnpReservedLength = 16;

// AETH syndrome fields: the top two bits say ACK, RNR NAK or NAK; the rest
// carry the credit count, the RNR timer code or the NAK code.
enum class AckType : std::uint8_t { ack = 0, rnr_nak = 1, reserved = 2, nak = 3 };
enum class NakCode : std::uint8_t {
  psn_sequence_error = 0,
  invalid_request = 1,
  remote_access_error = 2,
  remote_operational_error = 3,
  invalid_rd_request = 4,
  // uroce's extension, a code the IBTA reserves: the packet at this NAK's
  // PSN reached the responder trimmed (its payload cut off by a switch);
  // resend it alone. Only a selective-repeat responder sends it.
  trimmed = 31,
};
inline constexpr std::uint8_t kCreditNoLimit = 31;

inline AckType aeth_ack_type(std::uint8_t syndrome) { return static_cast<AckType>((syndrome >> 5) & 0x3); }
inline std::uint8_t aeth_value(std::uint8_t syndrome) { return syndrome & 0x1F; }
inline std::uint8_t make_syndrome(AckType type, std::uint8_t value) {
  return static_cast<std::uint8_t>((static_cast<std::uint8_t>(type) << 5) | (value & 0x1F));
}

}  // namespace uroce::wire
