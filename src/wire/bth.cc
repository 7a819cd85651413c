// BTH parsing and emission.
#include "wire/bth.h"

namespace uroce::wire {

WireResult<BthView> BthView::new_checked(ByteSpan bytes) {
  if (bytes.size() < kBthLength) return fail(WireError::truncated);
  return BthView(bytes);
}

WireResult<BthRepr> BthRepr::parse(const BthView& view) {
  if (view.transport_version() != 0) return fail(WireError::bad_version);
  BthRepr repr;
  repr.opcode = view.opcode();
  repr.solicited_event = view.solicited_event();
  repr.mig_req = view.mig_req();
  repr.pad_count = view.pad_count();
  repr.pkey = view.pkey();
  repr.fecn = view.fecn();
  repr.becn = view.becn();
  repr.dest_qp = view.dest_qp();
  repr.ack_req = view.ack_req();
  repr.place_early = view.place_early();
  repr.extent_payload = view.extent_payload();
  repr.psn = view.psn();
  return repr;
}

void BthRepr::emit(MutableByteSpan out) const {
  out[bth_field::opcode] = opcode;
  out[bth_field::flags] = static_cast<std::uint8_t>((solicited_event ? 0x80 : 0) | (mig_req ? 0x40 : 0) |
                                                    ((pad_count & 0x3) << 4));
  store_be16(&out[bth_field::pkey], pkey);
  out[bth_field::fecn_becn] = static_cast<std::uint8_t>((fecn ? 0x80 : 0) | (becn ? 0x40 : 0));
  store_be24(&out[bth_field::dest_qp], dest_qp);
  out[bth_field::ack_req] = static_cast<std::uint8_t>((ack_req ? 0x80 : 0) | (place_early ? 0x40 : 0) |
                                                     (extent_payload ? 0x20 : 0));
  store_be24(&out[bth_field::psn], psn);
}

}  // namespace uroce::wire
