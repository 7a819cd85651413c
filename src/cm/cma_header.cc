// Service IDs and the rdma_cm private-data header.
#include "cm/cma_header.h"

#include <algorithm>

namespace uroce::cm {
namespace {
constexpr std::uint64_t kIpServicePrefix = 0x0000000001000000;
}

std::uint64_t service_id(PortSpace space, std::uint16_t port) {
  return kIpServicePrefix | (std::uint64_t{static_cast<std::uint16_t>(space)} << 16) | port;
}

std::optional<ServiceAddress> parse_service_id(std::uint64_t id) {
  if ((id & ~std::uint64_t{0xFFFFFFFF}) != 0 || (id & 0xFF000000) != kIpServicePrefix) return std::nullopt;
  auto space = static_cast<PortSpace>((id >> 16) & 0xFFFF);
  switch (space) {
    case PortSpace::ipoib:
    case PortSpace::tcp:
    case PortSpace::udp:
    case PortSpace::ib: return ServiceAddress{space, static_cast<std::uint16_t>(id & 0xFFFF)};
  }
  return std::nullopt;
}

std::optional<CmaHeader> CmaHeader::parse(ByteSpan private_data) {
  if (private_data.size() < kLength || private_data[0] != 0) return std::nullopt;  // header version 0
  CmaHeader header;
  header.ip_version = private_data[1] >> 4;
  if (header.ip_version != 4 && header.ip_version != 6) return std::nullopt;
  header.source_port = load_be16(private_data.data() + 2);
  std::copy_n(private_data.begin() + 4, 16, header.source.begin());
  std::copy_n(private_data.begin() + 20, 16, header.destination.begin());
  return header;
}

void CmaHeader::emit(MutableByteSpan out) const {
  out[0] = 0;
  out[1] = static_cast<std::uint8_t>(ip_version << 4);
  store_be16(out.data() + 2, source_port);
  std::copy(source.begin(), source.end(), out.begin() + 4);
  std::copy(destination.begin(), destination.end(), out.begin() + 20);
}

}  // namespace uroce::cm
