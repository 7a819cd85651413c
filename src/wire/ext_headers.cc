// Extension transport header parsing and emission.
#include "wire/ext_headers.h"

namespace uroce::wire {

RethRepr RethRepr::parse(ByteSpan b) {
  return RethRepr{load_be64(&b[kVaOffset]), load_be32(&b[kRkeyOffset]), load_be32(&b[kDmaLengthOffset])};
}

void RethRepr::emit(MutableByteSpan out) const {
  store_be64(&out[kVaOffset], va);
  store_be32(&out[kRkeyOffset], rkey);
  store_be32(&out[kDmaLengthOffset], dma_length);
}

AethRepr AethRepr::parse(ByteSpan b) { return AethRepr{b[kSyndromeOffset], load_be24(&b[kMsnOffset])}; }

void AethRepr::emit(MutableByteSpan out) const {
  out[kSyndromeOffset] = syndrome;
  store_be24(&out[kMsnOffset], msn);
}

AtomicEthRepr AtomicEthRepr::parse(ByteSpan b) {
  return AtomicEthRepr{load_be64(&b[kVaOffset]), load_be32(&b[kRkeyOffset]), load_be64(&b[kSwapAddOffset]),
                       load_be64(&b[kCompareOffset])};
}

void AtomicEthRepr::emit(MutableByteSpan out) const {
  store_be64(&out[kVaOffset], va);
  store_be32(&out[kRkeyOffset], rkey);
  store_be64(&out[kSwapAddOffset], swap_add);
  store_be64(&out[kCompareOffset], compare);
}

AtomicAckEthRepr AtomicAckEthRepr::parse(ByteSpan b) { return AtomicAckEthRepr{load_be64(b.data())}; }

void AtomicAckEthRepr::emit(MutableByteSpan out) const { store_be64(out.data(), original); }

ImmDtRepr ImmDtRepr::parse(ByteSpan b) { return ImmDtRepr{load_be32(b.data())}; }

void ImmDtRepr::emit(MutableByteSpan out) const { store_be32(out.data(), imm); }

IethRepr IethRepr::parse(ByteSpan b) { return IethRepr{load_be32(b.data())}; }

void IethRepr::emit(MutableByteSpan out) const { store_be32(out.data(), rkey); }

DethRepr DethRepr::parse(ByteSpan b) { return DethRepr{load_be32(&b[kQkeyOffset]), load_be24(&b[kSrcQpOffset])}; }

void DethRepr::emit(MutableByteSpan out) const {
  store_be32(&out[kQkeyOffset], qkey);
  out[kQkeyOffset + 4] = 0;
  store_be24(&out[kSrcQpOffset], src_qp);
}

XrcethRepr XrcethRepr::parse(ByteSpan b) { return XrcethRepr{load_be24(&b[1])}; }

void XrcethRepr::emit(MutableByteSpan out) const {
  out[0] = 0;
  store_be24(&out[1], srqn);
}

}  // namespace uroce::wire
