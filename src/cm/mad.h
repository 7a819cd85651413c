// The Management Datagram: the 256-byte message that InfiniBand management
// (here, the Communication Manager) carries in a UD SEND to QP 1, the
// General Services Interface. Over RoCEv2 it is the payload of an ordinary
// UD SEND_ONLY with Q_Key 0x80010000. This file is its 24-byte common header
// and the constants of QP 1; cm_messages.h is what follows the header.
#pragma once

#include <cstdint>

#include "common/bytes.h"
#include "uroce/vocabulary.h"

namespace uroce::cm {

inline constexpr std::size_t kMadLength = 256;
inline constexpr std::size_t kMadHeaderLength = 24;
inline constexpr std::size_t kMadDataLength = kMadLength - kMadHeaderLength;  // 232

using uroce::kGsiQpn;  // QP 1 (uroce/vocabulary.h)
inline constexpr std::uint32_t kGsiQkey = 0x80010000;  // the well-known Q_Key of QP 1

inline constexpr std::uint8_t kMadBaseVersion = 1;
inline constexpr std::uint8_t kCmClass = 0x07;  // Communication Management
inline constexpr std::uint8_t kCmClassVersion = 2;
inline constexpr std::uint8_t kMethodSend = 0x03;  // every CM message is a Send

struct MadHeader {
  static constexpr std::size_t kTransactionIdOffset = 8, kAttributeIdOffset = 16;
  std::uint8_t base_version = kMadBaseVersion;
  std::uint8_t management_class = kCmClass;
  std::uint8_t class_version = kCmClassVersion;
  std::uint8_t method = kMethodSend;
  std::uint16_t status = 0;
  std::uint16_t class_specific = 0;
  std::uint64_t transaction_id = 0;
  std::uint16_t attribute_id = 0;
  std::uint32_t attribute_modifier = 0;

  // bytes: at least kMadHeaderLength (the caller checks).
  static MadHeader parse(ByteSpan bytes);
  void emit(MutableByteSpan out) const;
  bool operator==(const MadHeader&) const = default;
};

}  // namespace uroce::cm
