// Device discovery and opening: ibv_get_device_list and friends, and
// ibv_open_device / ibv_close_device, which make an extended context.
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "ibverbs/configuration.h"
#include "ibverbs/ibverbs_device.h"
#include "ibverbs/runtime.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_ops.h"
#include "port/interface_info.h"

#undef ibv_get_device_list

namespace uroce::ibverbs {
namespace {

// A MAC address for the device: the interface's for the raw port; for a UDP
// device, a locally administered one made of the address's last four bytes.
wire::MacAddress device_mac(const DeviceSpec& spec, const Gid& gid) {
  if (!spec.interface.empty()) {
    if (auto interface = port::find_interface(spec.interface)) return interface->mac;
  }
  return {0x02, 0x00, gid[12], gid[13], gid[14], gid[15]};
}

// The EUI-64 of a MAC address (universal/local bit flipped, ff:fe in the middle).
std::array<std::uint8_t, 8> eui64(const wire::MacAddress& mac) {
  return {static_cast<std::uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]};
}

bool parse_gid(const std::string& address, Gid& gid) {
  std::array<std::uint8_t, 4> ipv4;
  if (::inet_pton(AF_INET, address.c_str(), ipv4.data()) == 1) {
    gid = gid_from_ipv4(ipv4);
    return true;
  }
  return ::inet_pton(AF_INET6, address.c_str(), gid.data()) == 1;
}

std::unique_ptr<UroceDevice> make_device(const DeviceSpec& spec, int index) {
  auto device = std::make_unique<UroceDevice>();
  device->spec = spec;
  device->index = index;
  if (!parse_gid(spec.address, device->gid)) {
    std::fprintf(stderr, "uroce: UROCE_ADDRESS entry '%s' is not an IPv4 or IPv6 address; no device for it\n",
                 spec.address.c_str());
    return nullptr;
  }
  std::array<std::uint8_t, 8> guid = eui64(device_mac(spec, device->gid));
  std::memcpy(&device->guid, guid.data(), 8);  // kept in network byte order
  device->link_mtu = port::link_mtu_for_address(device->gid);
  if (!spec.interface.empty()) {
    if (auto interface = port::find_interface(spec.interface)) device->link_mtu = interface->mtu;
  }
  ibv_device& ibv = device->device;
  ibv.node_type = IBV_NODE_CA;
  ibv.transport_type = IBV_TRANSPORT_IB;
  std::snprintf(ibv.name, sizeof ibv.name, "%s", spec.name.c_str());
  std::snprintf(ibv.dev_name, sizeof ibv.dev_name, "uverbs%d", index);
  std::snprintf(ibv.dev_path, sizeof ibv.dev_path, "/sys/class/infiniband_verbs/uverbs%d", index);
  std::snprintf(ibv.ibdev_path, sizeof ibv.ibdev_path, "/sys/class/infiniband/%s", spec.name.c_str());
  return device;
}

}  // namespace

std::vector<Gid> gid_table(const UroceDevice& device) {
  if (!gid_is_ipv4(device.gid)) return {device.gid};
  Gid link_local{0xFE, 0x80};
  std::memcpy(link_local.data() + 8, &device.guid, 8);
  return {link_local, device.gid};
}

const std::vector<UroceDevice*>& all_devices() {
  // Built once and kept until the library unloads: ibv_device pointers stay
  // valid after ibv_free_device_list, as programs expect.
  static const std::vector<std::unique_ptr<UroceDevice>> owned = [] {
    std::vector<std::unique_ptr<UroceDevice>> made;
    for (const DeviceSpec& spec : configured_devices()) {
      if (auto device = make_device(spec, static_cast<int>(made.size()))) made.push_back(std::move(device));
    }
    return made;
  }();
  static const std::vector<UroceDevice*> devices = [] {
    std::vector<UroceDevice*> pointers;
    for (const auto& device : owned) pointers.push_back(device.get());
    return pointers;
  }();
  return devices;
}

}  // namespace uroce::ibverbs

using uroce::ibverbs::UroceContext;
using uroce::ibverbs::UroceDevice;

namespace {

UroceDevice* uroce_device(ibv_device* device) { return reinterpret_cast<UroceDevice*>(device); }

}  // namespace

extern "C" {

ibv_device** UROCE_V11(ibv_get_device_list)(int* num_devices) {
  const auto& devices = uroce::ibverbs::all_devices();
  auto** list = static_cast<ibv_device**>(std::calloc(devices.size() + 1, sizeof(ibv_device*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  for (std::size_t i = 0; i < devices.size(); ++i) list[i] = &devices[i]->device;
  if (num_devices != nullptr) *num_devices = static_cast<int>(devices.size());
  return list;
}
UROCE_BIND_V11(ibv_get_device_list);

void UROCE_V11(ibv_free_device_list)(ibv_device** list) { std::free(list); }
UROCE_BIND_V11(ibv_free_device_list);

const char* UROCE_V11(ibv_get_device_name)(ibv_device* device) { return device->name; }
UROCE_BIND_V11(ibv_get_device_name);

int ibv_get_device_index(ibv_device* device) { return uroce_device(device)->index; }

__be64 UROCE_V11(ibv_get_device_guid)(ibv_device* device) { return uroce_device(device)->guid; }
UROCE_BIND_V11(ibv_get_device_guid);

ibv_context* UROCE_V11(ibv_open_device)(ibv_device* device) {
  auto* context = new (std::nothrow) UroceContext{};
  if (context == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  context->device = uroce_device(device);
  ibv_context& ibv = context->verbs.context;
  ibv.device = device;
  ibv.cmd_fd = -1;
  ibv.async_fd = ::eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);  // counts the queued async events
  if (ibv.async_fd < 0) {
    int error = errno;
    delete context;
    errno = error;
    return nullptr;
  }
  ibv.num_comp_vectors = 1;
  pthread_mutex_init(&ibv.mutex, nullptr);
  ibv.abi_compat = __VERBS_ABI_IS_EXTENDED;
  context->verbs.sz = sizeof(verbs_context);
  uroce::ibverbs::install_context_ops(context->verbs);
  return &ibv;
}
UROCE_BIND_V11(ibv_open_device);

int UROCE_V11(ibv_close_device)(ibv_context* context) {
  UroceContext* uroce = uroce::ibverbs::context_of(context);
  uroce::ibverbs::release_runtime(*uroce);
  ::close(context->async_fd);
  pthread_mutex_destroy(&context->mutex);
  delete uroce;
  return 0;
}
UROCE_BIND_V11(ibv_close_device);

}  // extern "C"
