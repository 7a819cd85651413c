// WrBuilder: the send requests a program builds with the ibv_wr_* calls of an
// extended QP, kept from ibv_wr_start until ibv_wr_complete posts them all at
// once (or ibv_wr_abort drops them). Entries are reused from one batch to the
// next, so a steady stream of batches allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "uroce/verbs_types.h"

namespace uroce::ibverbs {

struct BuiltWr {
  SendWr wr;
  std::vector<Sge> sges;
  // Inline data is copied when it is set: the program may reuse its buffer
  // before ibv_wr_complete.
  std::vector<std::uint8_t> inline_bytes;
  bool inline_data = false;
};

class WrBuilder {
 public:
  void start() {
    count_ = 0;
    error_ = 0;
  }

  // The batch's first error (a setter before any builder, an unserved
  // opcode): ibv_wr_complete returns it and posts nothing.
  void fail(int error) {
    if (error_ == 0) error_ = error;
  }
  int error() const { return error_; }

  // A new request, to be filled by the setters that follow.
  BuiltWr& add() {
    if (count_ == entries_.size()) entries_.emplace_back();
    BuiltWr& entry = entries_[count_++];
    entry.wr = SendWr{};
    entry.sges.clear();
    entry.inline_bytes.clear();
    entry.inline_data = false;
    return entry;
  }

  // The request the setters apply to; nullptr before the first builder call.
  BuiltWr* last() { return count_ == 0 ? nullptr : &entries_[count_ - 1]; }

  // The batch, each request's scatter list pointing at its own storage.
  std::span<BuiltWr> finish() {
    for (std::size_t i = 0; i < count_; ++i) {
      BuiltWr& entry = entries_[i];
      if (entry.inline_data) {
        entry.sges.assign(1, Sge{reinterpret_cast<std::uintptr_t>(entry.inline_bytes.data()),
                                 static_cast<std::uint32_t>(entry.inline_bytes.size()), 0});
        entry.wr.send_flags |= kSendInline;
      }
      entry.wr.sg_list = entry.sges;
    }
    std::span<BuiltWr> batch(entries_.data(), count_);
    start();
    return batch;
  }

 private:
  std::vector<BuiltWr> entries_;
  std::size_t count_ = 0;
  int error_ = 0;
};

}  // namespace uroce::ibverbs
