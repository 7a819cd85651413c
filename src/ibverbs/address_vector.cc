// Address conversions, and the LID extension: a device's LID is the low 16
// bits of its address, and a LID names the address that differs from the
// device's own only there.
#include "ibverbs/address_vector.h"

#include <cerrno>
#include <cstring>
#include <optional>

#include "ibverbs/device_identity.h"
#include "wire/ip_datagram.h"
#include "port/link_local.h"

namespace uroce::ibverbs {
namespace {

// The IPv4 address a uroce UDP-port device's link-local GID stands for: such
// a device has no IPv6 link of its own, and its MAC is made of its address
// (02:00:a:b:c:d, device_identity.cc), so fe80::aff:feb:cd names a.b.c.d.
std::optional<Gid> address_behind_link_local(const Gid& gid) {
  std::optional<wire::MacAddress> mac = port::mac_of_link_local(gid);
  if (!mac || (*mac)[0] != 0x02 || (*mac)[1] != 0x00) return std::nullopt;
  return gid_from_ipv4({(*mac)[2], (*mac)[3], (*mac)[4], (*mac)[5]});
}

constexpr std::uint8_t kDefaultHopLimit = 64;

// The index in the device's GID table of the entry of the same kind as gid
// (IPv4-mapped or not): the source GID a reply to it uses.
std::uint8_t sgid_index_for(const UroceDevice& device, const Gid& gid) {
  std::vector<Gid> table = gid_table(device);
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (gid_is_ipv4(table[i]) == gid_is_ipv4(gid)) return static_cast<std::uint8_t>(i);
  }
  return 0;
}

}  // namespace

std::uint16_t port_lid(const Gid& gid) { return static_cast<std::uint16_t>(gid[14] << 8 | gid[15]); }

Gid gid_for_lid(const Gid& own, std::uint16_t lid) {
  Gid gid = own;
  gid[14] = static_cast<std::uint8_t>(lid >> 8);
  gid[15] = static_cast<std::uint8_t>(lid);
  return gid;
}

int to_address_vector(const UroceDevice& device, const ibv_ah_attr& attr, AddressVector& av) {
  if (attr.port_num != 1) return EINVAL;
  av = AddressVector{};
  if (attr.is_global) {
    if (attr.grh.sgid_index >= gid_table(device).size()) return EINVAL;
    std::memcpy(av.dgid.data(), attr.grh.dgid.raw, av.dgid.size());
    // GID 0 of a uroce device on the UDP port is a link-local GID made of
    // its IPv4 address: what goes on the wire is that address. Any other
    // link-local GID made of a MAC (kernel Soft-RoCE's, a raw-port device's)
    // is reached over IPv6 from our own link-local GID, on the raw port,
    // which sends to that MAC (the UDP port has no IPv6 link to do it on).
    if (auto address = address_behind_link_local(av.dgid)) {
      av.dgid = *address;
    } else if (port::mac_of_link_local(av.dgid) && !device.spec.interface.empty() && gid_is_ipv4(device.gid)) {
      av.sgid = gid_table(device).front();
    }
    av.traffic_class = attr.grh.traffic_class;
    av.hop_limit = attr.grh.hop_limit == 0 ? kDefaultHopLimit : attr.grh.hop_limit;
    av.flow_label = attr.grh.flow_label;
    return 0;
  }
  if (attr.dlid == 0) return EINVAL;  // RoCE without a GRH has nothing else to go by
  av.dgid = gid_for_lid(device.gid, attr.dlid);
  return 0;
}

void to_ah_attr(const UroceDevice& device, const AddressVector& av, ibv_ah_attr& attr) {
  std::memset(&attr, 0, sizeof attr);
  attr.is_global = 1;
  std::memcpy(attr.grh.dgid.raw, av.dgid.data(), av.dgid.size());
  attr.grh.sgid_index = sgid_index_for(device, av.dgid);
  attr.grh.traffic_class = av.traffic_class;
  attr.grh.hop_limit = av.hop_limit;
  attr.grh.flow_label = av.flow_label;
  attr.dlid = port_lid(av.dgid);
  attr.port_num = 1;
}

int reply_address(const UroceDevice& device, std::uint8_t port_num, const ibv_wc& wc, const ibv_grh* grh,
                  ibv_ah_attr& attr) {
  if (port_num != 1 || grh == nullptr || !(wc.wc_flags & IBV_WC_GRH)) return EINVAL;
  auto sender = wire::parse_grh_area(ByteSpan(reinterpret_cast<const std::uint8_t*>(grh), sizeof *grh));
  if (!sender) return EINVAL;
  AddressVector av;
  av.dgid = sender->source;
  av.hop_limit = kDefaultHopLimit;
  av.traffic_class = sender->traffic_class & 0xFC;  // the DSCP; the engine sets the ECN bits itself
  to_ah_attr(device, av, attr);
  return 0;
}

}  // namespace uroce::ibverbs
