// libFuzzer target: a hostile sender on the intra-host path. Each input
// scribbles over a fresh inbox's shared segment, as another process that
// maps it could (lane indexes, publication marks, lengths, claimed-lane
// bits, anything), between the receiver's takes. Every datagram the
// receiver takes must lie inside the segment and be at most a datagram
// long; nothing may crash. Input: records of [op][offset:3][length][bytes].
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "port/local_ring.h"

using namespace uroce;

namespace {

// The inbox's path, unique to this process, written through a mapping of our own.
struct Scribbler {
  Gid gid = gid_from_ipv4({127, 98, static_cast<std::uint8_t>(::getpid() >> 8), static_cast<std::uint8_t>(::getpid())});
};

void check_taken(const port::LocalInbox& inbox, std::span<const port::ReceivedDatagram> taken) {
  ByteSpan segment = inbox.segment_bytes();
  for (const port::ReceivedDatagram& datagram : taken) {
    const std::uint8_t* first = datagram.bytes.data();
    if (datagram.bytes.size() > kMaxDatagramLength || first < segment.data() ||
        first + datagram.bytes.size() > segment.data() + segment.size()) {
      std::abort();
    }
    volatile std::uint8_t sum = 0;
    for (std::uint8_t byte : datagram.bytes) sum = static_cast<std::uint8_t>(sum + byte);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Scribbler scribbler;
  auto inbox = port::LocalInbox::create(scribbler.gid, 4791);
  if (!inbox) return 0;  // no /dev/shm here: nothing to fuzz
  // A legitimate sender first, so that some lanes are claimed and hold datagrams.
  std::optional<port::LocalOutbox> sender =
      port::LocalOutbox::attach(port::local_segment_path(scribbler.gid, 4791, port::this_thread_network_namespace()), (std::uint64_t{1} << 32) | 1);
  std::array<std::uint8_t, 80> datagram{};
  for (int i = 0; sender && i < 3; ++i) sender->put(datagram);
  // Our own writable view of the segment, as the hostile process has.
  ByteSpan segment = inbox->segment_bytes();
  auto* writable = const_cast<std::uint8_t*>(segment.data());
  std::array<port::ReceivedDatagram, 32> taken{};
  std::size_t at = 0;
  while (at + 5 <= size) {
    std::uint8_t op = data[at];
    std::size_t offset = (std::size_t{data[at + 1]} << 16 | std::size_t{data[at + 2]} << 8 | data[at + 3]) * 8;
    std::size_t length = data[at + 4];
    at += 5;
    length = std::min(length, size - at);
    switch (op % 4) {
      case 0:  // scribble (the header and lane indexes live in the first pages; offsets reach the slots too)
        if (offset < segment.size()) std::memcpy(writable + offset, data + at, std::min(length, segment.size() - offset));
        at += length;
        break;
      case 1: {
        std::size_t count = inbox->take(taken);
        check_taken(*inbox, std::span(taken).first(count));
        break;
      }
      case 2:
        inbox->release();
        break;
      case 3:
        if (sender) sender->put(std::span(data + at, length));
        at += length;
        break;
    }
  }
  std::size_t count = inbox->take(taken);
  check_taken(*inbox, std::span(taken).first(count));
  inbox->release();
  return 0;
}
