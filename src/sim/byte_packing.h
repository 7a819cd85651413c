// Plain values and strings packed end to end into bytes, and read back
// with a check of every length: the records ranks send one another
// (a replay's results, captures handed to rank 0).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "sim/rank_group.h"

namespace uroce::sim {

class Packer {
 public:
  template <typename Value>
  void put(const Value& value) {
    static_assert(std::is_trivially_copyable_v<Value>);
    std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof value);
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }
  void put(const std::string& text) {
    if (text.size() > UINT32_MAX) throw std::runtime_error("a record over 4 GiB");
    put(static_cast<std::uint32_t>(text.size()));
    std::size_t at = bytes_.size();
    bytes_.resize(at + text.size());
    if (!text.empty()) std::memcpy(bytes_.data() + at, text.data(), text.size());
  }
  Bytes& bytes() { return bytes_; }

 private:
  Bytes bytes_;
};

class Unpacker {
 public:
  // what: named in the error a truncated record throws.
  Unpacker(const Bytes& bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}
  bool done() const { return at_ == bytes_.size(); }
  template <typename Value>
  Value get() {
    Value value;
    take(&value, sizeof value);
    return value;
  }
  std::string get_string() {
    std::string text(get<std::uint32_t>(), '\0');
    take(text.data(), text.size());
    return text;
  }

 private:
  void take(void* into, std::size_t length) {
    if (bytes_.size() - at_ < length) throw std::runtime_error(what_ + ": a truncated record from another rank");
    if (length > 0) std::memcpy(into, bytes_.data() + at_, length);
    at_ += length;
  }
  const Bytes& bytes_;
  std::string what_;
  std::size_t at_ = 0;
};

}  // namespace uroce::sim
