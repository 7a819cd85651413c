// Address handles for UD: from attributes, or from a received datagram's
// GRH area (the reply address).
#include <infiniband/verbs.h>

#include <new>

#include "ibverbs/address_vector.h"
#include "ibverbs/objects.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_support.h"

using namespace uroce::ibverbs;

extern "C" {

ibv_ah* UROCE_V11(ibv_create_ah)(ibv_pd* pd, ibv_ah_attr* attr) {
  if (pd == nullptr || attr == nullptr) return fail_with<ibv_ah>(EINVAL);
  UrocePd& owner = pd_of(pd);
  uroce::AddressVector av;
  int error = to_address_vector(owner.runtime->ibv_device(), *attr, av);
  if (error != 0) return fail_with<ibv_ah>(error);
  auto* ah = new (std::nothrow) UroceAh{};
  if (ah == nullptr) return fail_with<ibv_ah>(ENOMEM);
  auto handle = owner.runtime->device().call_and_wake([&](uroce::Engine& engine) { return engine.create_ah(owner.handle, av); });
  if (!handle) {
    delete ah;
    return fail_with<ibv_ah>(errno_of(handle.error()));
  }
  ah->handle = *handle;
  ah->runtime = owner.runtime;
  ah->ah = ibv_ah{pd->context, pd, *handle};
  return &ah->ah;
}
UROCE_BIND_V11(ibv_create_ah);

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh, ibv_ah_attr* ah_attr) {
  return reply_address(*context_of(context)->device, port_num, *wc, grh, *ah_attr);
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  ibv_ah_attr attr;
  int error = ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);
  if (error != 0) return fail_with<ibv_ah>(error);
  return ibv_create_ah(pd, &attr);
}

int UROCE_V11(ibv_destroy_ah)(ibv_ah* ibv) {
  UroceAh& ah = ah_of(ibv);
  std::errc result = ah.runtime->device().call_and_wake([&](uroce::Engine& engine) { return engine.destroy_ah(ah.handle); });
  if (result != std::errc{}) return errno_of(result);
  delete &ah;
  return 0;
}
UROCE_BIND_V11(ibv_destroy_ah);

}  // extern "C"
