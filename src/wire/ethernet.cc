// Ethernet II / 802.1Q header parsing and emission.
#include "wire/ethernet.h"

#include <algorithm>

namespace uroce::wire {

WireResult<EthernetView> EthernetView::new_checked(ByteSpan frame) {
  if (frame.size() < kEthernetHeaderLength) return fail(WireError::truncated);
  EthernetView view(frame);
  if (load_be16(&frame[ethernet_field::ethertype]) == kEthertypeVlan &&
      frame.size() < kEthernetHeaderLength + kVlanTagLength) {
    return fail(WireError::truncated);
  }
  return view;
}

MacAddress EthernetView::dst() const {
  MacAddress mac;
  std::copy_n(&bytes_[ethernet_field::dst], mac.size(), mac.begin());
  return mac;
}

MacAddress EthernetView::src() const {
  MacAddress mac;
  std::copy_n(&bytes_[ethernet_field::src], mac.size(), mac.begin());
  return mac;
}

bool EthernetView::has_vlan() const {
  return load_be16(&bytes_[ethernet_field::ethertype]) == kEthertypeVlan;
}

VlanTag EthernetView::vlan() const {
  std::uint16_t tci = load_be16(&bytes_[ethernet_field::vlan_tci]);
  return VlanTag{static_cast<std::uint8_t>(tci >> 13), ((tci >> 12) & 1) != 0,
                 static_cast<std::uint16_t>(tci & 0x0FFF)};
}

std::uint16_t EthernetView::ethertype() const {
  return has_vlan() ? load_be16(&bytes_[ethernet_field::inner_ethertype])
                    : load_be16(&bytes_[ethernet_field::ethertype]);
}

EthernetRepr EthernetRepr::parse(const EthernetView& view) {
  EthernetRepr repr;
  repr.dst = view.dst();
  repr.src = view.src();
  if (view.has_vlan()) repr.vlan = view.vlan();
  repr.ethertype = view.ethertype();
  return repr;
}

void EthernetRepr::emit(MutableByteSpan out) const {
  std::copy(dst.begin(), dst.end(), &out[ethernet_field::dst]);
  std::copy(src.begin(), src.end(), &out[ethernet_field::src]);
  if (vlan) {
    store_be16(&out[ethernet_field::ethertype], kEthertypeVlan);
    auto tci = static_cast<std::uint16_t>((vlan->priority & 0x7) << 13 |
                                          (vlan->drop_eligible ? 1 : 0) << 12 |
                                          (vlan->vlan_id & 0x0FFF));
    store_be16(&out[ethernet_field::vlan_tci], tci);
    store_be16(&out[ethernet_field::inner_ethertype], ethertype);
  } else {
    store_be16(&out[ethernet_field::ethertype], ethertype);
  }
}

}  // namespace uroce::wire
