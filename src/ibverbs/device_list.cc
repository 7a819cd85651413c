// Device discovery and opening: ibv_get_device_list and friends, and
// ibv_open_device / ibv_close_device, which make an extended context with a
// command fd of its own (importing.h).
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "ibverbs/configuration.h"
#include "ibverbs/device_identity.h"
#include "ibverbs/ibverbs_device.h"
#include "ibverbs/importing.h"
#include "ibverbs/runtime.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_ops.h"

#undef ibv_get_device_list

namespace uroce::ibverbs {
namespace {

std::unique_ptr<UroceDevice> make_device(const DeviceSpec& spec, int index) {
  auto device = std::make_unique<UroceDevice>();
  device->spec = spec;
  device->index = index;
  std::optional<DeviceIdentity> identity = identify(spec);
  if (!identity) {
    std::fprintf(stderr, "uroce: UROCE_ADDRESS entry '%s' is not an IPv4 or IPv6 address; no device for it\n",
                 spec.address.c_str());
    return nullptr;
  }
  device->gid = identity->gid;
  device->guid = identity->guid;
  device->link_mtu = identity->link_mtu;
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

std::vector<Gid> gid_table(const UroceDevice& device) { return gid_table(device.gid, device.guid); }

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

ibv_context* make_context(ibv_device* device, int command_fd) {
  auto* context = new (std::nothrow) UroceContext{};
  if (context == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  context->device = reinterpret_cast<UroceDevice*>(device);
  ibv_context& ibv = context->verbs.context;
  ibv.device = device;
  ibv.cmd_fd = command_fd;
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
  install_context_ops(context->verbs);
  remember_command_fd(command_fd, context->device);
  return &ibv;
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
  int command_fd = uroce::ibverbs::new_command_fd();
  if (command_fd < 0) return nullptr;
  ibv_context* context = uroce::ibverbs::make_context(device, command_fd);
  if (context == nullptr) ::close(command_fd);
  return context;
}
UROCE_BIND_V11(ibv_open_device);

int UROCE_V11(ibv_close_device)(ibv_context* context) {
  UroceContext* uroce = uroce::ibverbs::context_of(context);
  uroce::ibverbs::release_runtime(*uroce);
  uroce::ibverbs::forget_command_fd(context->cmd_fd);
  ::close(context->cmd_fd);
  ::close(context->async_fd);
  pthread_mutex_destroy(&context->mutex);
  delete uroce;
  return 0;
}
UROCE_BIND_V11(ibv_close_device);

}  // extern "C"
