// Test helper: re-emits a datagram an engine sent as if another host sent it
// (another IPv4 source), optionally with edited transport headers or payload,
// and with a valid ICRC, so that only the receive checks can refuse it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "wire/frame.h"

namespace uroce::testing {

struct Forgery {
  std::optional<std::array<std::uint8_t, 4>> source;                // keep the sender's when empty
  std::function<void(wire::TransportHeaders&)> edit_headers;        // optional
  std::optional<std::vector<std::uint8_t>> payload;                 // keep the original when empty
};

// An IPv4 RoCEv2 datagram, as Engine::on_datagram takes it.
std::vector<std::uint8_t> forge(std::span<const std::uint8_t> datagram, const Forgery& forgery);

// A CNP for dest_qp from source to destination.
std::vector<std::uint8_t> forge_cnp(std::array<std::uint8_t, 4> source, std::array<std::uint8_t, 4> destination,
                                    std::uint32_t dest_qp);

}  // namespace uroce::testing
