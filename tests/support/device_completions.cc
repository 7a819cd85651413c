// wait_for: polling a device's CQ with a deadline.
#include "tests/support/device_completions.h"

#include <chrono>
#include <thread>

namespace uroce::testing {

std::vector<WorkCompletion> wait_for(Device& device, const Endpoint& end, std::size_t count) {
  std::vector<WorkCompletion> all;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (all.size() < count && std::chrono::steady_clock::now() < give_up) {
    auto more = device.call_and_wake([&](Engine&) { return drain(end); });
    all.insert(all.end(), more.begin(), more.end());
    if (more.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return all;
}

}  // namespace uroce::testing
