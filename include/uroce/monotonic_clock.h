// The monotonic clock in the engine's unit (nanoseconds), for the runtime
// and ports; the engine itself never reads a clock.
#pragma once

#include <ctime>

#include "uroce/vocabulary.h"

namespace uroce {

inline TimeNs monotonic_now() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return TimeNs{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace uroce
