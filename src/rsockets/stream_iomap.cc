// riomap, riounmap and riowrite on a stream rsocket: lending a buffer of
// ours to the peer (an Iomap entry RDMA-written into the peer's iomap
// table, op iomap_sgl) and writing into a buffer the peer lent us (plain
// RDMA WRITEs, nothing for the peer's receive queue).
#include <endian.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rsockets/stream_socket.h"

namespace uroce::rsockets {

off_t StreamSocket::map(void* buffer, std::size_t length, int protection, off_t offset) {
  if (state_ != State::connected) return fail_off(ENOTCONN);
  if (buffer == nullptr || length == 0 || length > 0xFFFF'FFFFu || !(protection & PROT_WRITE)) return fail_off(EINVAL);
  auto free_entry = std::find(remote_iomap_used_.begin(), remote_iomap_used_.end(), false);
  if (free_entry == remote_iomap_used_.end()) return fail_off(ENOMEM);  // the peer's table is full (or absent)
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;  // an int: see stream_socket.cc
  ibv_mr* region = ibv_reg_mr(id_->qp->pd, buffer, length, access);
  if (region == nullptr) return -1;
  if (offset == -1) offset = static_cast<off_t>(reinterpret_cast<std::uintptr_t>(buffer));
  int index = static_cast<int>(free_entry - remote_iomap_used_.begin());
  Iomap entry{static_cast<std::uint64_t>(offset),
              RemoteBuffer{reinterpret_cast<std::uintptr_t>(buffer), region->rkey, static_cast<std::uint32_t>(length)}};
  if (swap_) {
    entry.offset = __builtin_bswap64(entry.offset);
    entry.buffer = RemoteBuffer{__builtin_bswap64(entry.buffer.address), __builtin_bswap32(entry.buffer.key),
                                __builtin_bswap32(entry.buffer.length)};
  }
  // Like a data message, the entry takes a credit (the peer's receive).
  if (!can_send() && progress_until([&] { return can_send() || !writable_; }, false) != 0) {
    ibv_dereg_mr(region);
    return -1;
  }
  if (!writable_) {
    ibv_dereg_mr(region);
    return fail_off(ECONNRESET);
  }
  ++send_seq_;
  std::uint64_t address = remote_iomap_.address + static_cast<std::uint64_t>(index) * sizeof(Iomap);
  std::uint32_t immediate = message(Op::iomap_sgl, static_cast<std::uint32_t>(index));
  if (stage_and_write(reinterpret_cast<const std::uint8_t*>(&entry), sizeof entry, immediate, true, address,
                      remote_iomap_.key) != 0) {
    ibv_dereg_mr(region);
    return -1;
  }
  *free_entry = true;
  mappings_.push_back(Mapping{buffer, length, region, index});
  return offset;
}

int StreamSocket::unmap(void* buffer, std::size_t length) {
  auto found = std::find_if(mappings_.begin(), mappings_.end(),
                            [&](const Mapping& m) { return m.buffer == buffer && m.length == length; });
  if (found == mappings_.end()) return fail(EINVAL);
  ibv_dereg_mr(found->region);
  if (found->index >= 0 && static_cast<std::size_t>(found->index) < remote_iomap_used_.size()) {
    remote_iomap_used_[static_cast<std::size_t>(found->index)] = false;
  }
  mappings_.erase(found);
  return 0;
}

ssize_t StreamSocket::write_mapped(const std::uint8_t* data, std::size_t length, off_t offset, int flags) {
  if (state_ != State::connected || !writable_) return fail(error_ != 0 ? error_ : ENOTCONN);
  bool nonblocking = options_.nonblocking || (flags & MSG_DONTWAIT);
  std::size_t left = length;
  std::uint64_t at = static_cast<std::uint64_t>(offset);
  auto can_write = [&] { return send_slots_ > 0 && staging_free_ >= kSendLowWater; };
  while (left > 0) {
    // The entry the peer lent for this offset (its values in its byte order).
    const Iomap* lent = nullptr;
    Iomap entry{};
    for (std::uint16_t i = 0; i < options_.iomap_size; ++i) {
      std::memcpy(&entry, &target_iomap()[i], sizeof entry);
      if (swap_) {
        entry.offset = __builtin_bswap64(entry.offset);
        entry.buffer.address = __builtin_bswap64(entry.buffer.address);
        entry.buffer.key = __builtin_bswap32(entry.buffer.key);
        entry.buffer.length = __builtin_bswap32(entry.buffer.length);
      }
      if (entry.buffer.length != 0 && at >= entry.offset && at - entry.offset < entry.buffer.length) {
        lent = &entry;
        break;
      }
    }
    if (lent == nullptr) {
      if (left == length) return fail(EINVAL);  // nothing mapped there
      break;
    }
    if (!can_write() && progress_until([&] { return can_write() || !writable_; }, nonblocking) != 0) break;
    if (!writable_) {
      errno = ECONNRESET;
      break;
    }
    std::uint64_t room = lent->buffer.length - (at - lent->offset);
    auto size = static_cast<std::uint32_t>(std::min<std::uint64_t>({left, room, kMaxTransfer, staging_free_}));
    if (stage_and_write(data, size, 0, false, lent->buffer.address + (at - lent->offset), lent->buffer.key) != 0) break;
    data += size;
    at += size;
    left -= size;
  }
  return left == length ? -1 : static_cast<ssize_t>(length - left);
}

}  // namespace uroce::rsockets
