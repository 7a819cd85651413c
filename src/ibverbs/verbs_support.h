// Small helpers the verbs share: failing the rdma-core way (NULL with errno,
// or the errno returned) and finding a context's runtime.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <system_error>

#include "ibverbs/ibverbs_device.h"
#include "ibverbs/runtime.h"

namespace uroce::ibverbs {

// The send flags uroce acts on (same values as the engine's SendFlags);
// others (IP checksum offload) are dropped.
inline constexpr unsigned kServedSendFlags = IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

template <class T>
T* fail_with(int error) {
  errno = error;
  return nullptr;
}

inline int errno_of(std::errc error) { return static_cast<int>(error); }

// nullptr (errno set) when the device cannot be opened.
inline DeviceRuntime* runtime_for(ibv_context* context) { return runtime_of(*context_of(context)); }

}  // namespace uroce::ibverbs
