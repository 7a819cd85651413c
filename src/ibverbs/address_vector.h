// Between rdma-core's address attributes (ibv_ah_attr, with or without a
// GRH) and the engine's AddressVector, and from a received UD datagram's GRH
// area back to an address (ibv_init_ah_from_wc).
#pragma once

#include <infiniband/verbs.h>

#include "ibverbs/ibverbs_device.h"
#include "uroce/engine.h"

namespace uroce::ibverbs {

// 0, or the errno for an attribute the device cannot reach (a bad port or
// GID index, LID 0 without a GRH).
int to_address_vector(const UroceDevice& device, const ibv_ah_attr& attr, AddressVector& av);

void to_ah_attr(const UroceDevice& device, const AddressVector& av, ibv_ah_attr& attr);

// The address that answers a received datagram, read from the 40 bytes
// before its payload (an IPv6 header, or 20 zero bytes and an IPv4 header).
int reply_address(const UroceDevice& device, std::uint8_t port_num, const ibv_wc& wc, const ibv_grh* grh,
                  ibv_ah_attr& attr);

}  // namespace uroce::ibverbs
