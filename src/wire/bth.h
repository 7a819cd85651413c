// Base Transport Header (12 bytes), first in every RoCEv2 UDP payload.
#pragma once

#include <cstdint>

#include "common/bytes.h"
#include "wire/error.h"

namespace uroce::wire {

inline constexpr std::size_t kBthLength = 12;
inline constexpr std::uint16_t kDefaultPkey = 0xFFFF;

namespace bth_field {
inline constexpr std::size_t opcode = 0;
inline constexpr std::size_t flags = 1;  // SE(1) MigReq(1) PadCnt(2) TVer(4)
inline constexpr std::size_t pkey = 2;
inline constexpr std::size_t fecn_becn = 4;  // FECN(1) BECN(1) reserved(6); masked in the ICRC
inline constexpr std::size_t dest_qp = 5;
inline constexpr std::size_t ack_req = 8;  // AckReq(1) reserved(7); uroce uses the first two reserved bits
inline constexpr std::size_t psn = 9;
}  // namespace bth_field

class BthView {
 public:
  static WireResult<BthView> new_checked(ByteSpan bytes);

  std::uint8_t opcode() const { return bytes_[bth_field::opcode]; }
  bool solicited_event() const { return (bytes_[bth_field::flags] & 0x80) != 0; }
  bool mig_req() const { return (bytes_[bth_field::flags] & 0x40) != 0; }
  std::uint8_t pad_count() const { return (bytes_[bth_field::flags] >> 4) & 0x3; }
  std::uint8_t transport_version() const { return bytes_[bth_field::flags] & 0x0F; }
  std::uint16_t pkey() const { return load_be16(&bytes_[bth_field::pkey]); }
  bool fecn() const { return (bytes_[bth_field::fecn_becn] & 0x80) != 0; }
  bool becn() const { return (bytes_[bth_field::fecn_becn] & 0x40) != 0; }
  std::uint32_t dest_qp() const { return load_be24(&bytes_[bth_field::dest_qp]); }
  bool ack_req() const { return (bytes_[bth_field::ack_req] & 0x80) != 0; }
  bool place_early() const { return (bytes_[bth_field::ack_req] & 0x40) != 0; }
  bool extent_payload() const { return (bytes_[bth_field::ack_req] & 0x20) != 0; }
  std::uint32_t psn() const { return load_be24(&bytes_[bth_field::psn]); }

 private:
  explicit BthView(ByteSpan bytes) : bytes_(bytes) {}
  ByteSpan bytes_;
};

struct BthRepr {
  std::uint8_t opcode = 0;
  bool solicited_event = false;
  bool mig_req = false;
  std::uint8_t pad_count = 0;  // 0..3
  std::uint16_t pkey = kDefaultPkey;
  bool fecn = false;
  bool becn = false;
  std::uint32_t dest_qp = 0;  // 24 bits
  bool ack_req = false;
  std::uint32_t psn = 0;  // 24 bits
  // uroce's multipath RC (not IBA: a bit IBA reserves, covered by the ICRC):
  // the responder may place this WRITE packet's payload before the PSNs
  // ahead of it arrive. Peers that do not negotiate multipath never see it set.
  bool place_early = false;
  // uroce's intra-host path (not IBA: the next reserved bit): the payload is
  // a PayloadExtent naming the message's bytes in the sender's shared
  // region (uroce/region_sharing.h, RegionBacking). Never sent on a wire.
  bool extent_payload = false;

  // TVer must be 0 (RoCEv2 / IBA transport version 0).
  static WireResult<BthRepr> parse(const BthView& view);
  void emit(MutableByteSpan out) const;  // writes 12 bytes
  bool operator==(const BthRepr&) const = default;
};

}  // namespace uroce::wire
