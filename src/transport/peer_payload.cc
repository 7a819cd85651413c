// Payloads placed straight from a local peer's memory (see the header).
#include "transport/peer_payload.h"

#include <sys/mman.h>

#include "transport/registered_copy.h"

namespace uroce::transport {
namespace {

constexpr std::uint64_t kLongestStandIn = DeviceAttributes{}.max_msg_size;  // no message is longer

const std::uint8_t* zero_pages() {
  // Reserved, never touched: reading it maps the kernel's zero page.
  static void* pages = ::mmap(nullptr, kLongestStandIn, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return pages == MAP_FAILED ? nullptr : static_cast<const std::uint8_t*>(pages);
}

}  // namespace

std::optional<ByteSpan> stand_in_payload(std::uint64_t length) {
  const std::uint8_t* zeros = zero_pages();
  if (zeros == nullptr || length > kLongestStandIn) return std::nullopt;
  return ByteSpan(zeros, length);
}

void place_payload(std::optional<PeerPayload>& peer, std::uint8_t* to, const std::uint8_t* from, std::uint64_t n) {
  if (!peer || from < peer->stand_in.data() || from >= peer->stand_in.data() + peer->stand_in.size()) {
    copy_registered(to, from, n);
    return;
  }
  std::uint64_t into = static_cast<std::uint64_t>(from - peer->stand_in.data());
  std::uint64_t copied = peer->source->copy_from_process(peer->pid, peer->address + into, to, n);
  if (copied < n) {
    // The peer unmapped its bytes, or a page of the target is gone: the rest reads as zeros.
    peer->unread += n - copied;
    copy_registered(to + copied, from + copied, n - copied);
  }
}

void scatter_payload(std::optional<PeerPayload>& peer, const std::vector<Segment>& segments, std::uint64_t offset,
                     ByteSpan payload) {
  const std::uint8_t* in = payload.data();
  for_each_piece(segments, offset, payload.size(), [&](std::uint8_t* piece, std::uint64_t n) {
    place_payload(peer, piece, in, n);
    in += n;
  });
}

}  // namespace uroce::transport
