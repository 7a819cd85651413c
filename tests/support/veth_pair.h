// Test helper: two network namespaces joined by a veth pair, created for one
// test and removed with it (the only non-loopback addresses tests may use),
// and a way to run code inside one of them.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace uroce::testing {

class VethPair {
 public:
  struct Side {
    std::string ns;
    std::string interface;
    std::string address;  // configured on the interface (subnet.1 or subnet.2, /24)
  };

  // Why namespaces cannot be made here (not root, no iproute2), if they cannot.
  static std::optional<std::string> unavailable();

  // subnet: the first three octets, e.g. "10.79.0"; names are unique per process.
  explicit VethPair(const std::string& subnet);
  ~VethPair();
  VethPair(const VethPair&) = delete;
  VethPair& operator=(const VethPair&) = delete;

  // Empty when both namespaces, the pair and the addresses are up.
  const std::string& error() const { return error_; }
  const Side& server() const { return server_; }
  const Side& client() const { return client_; }
  void set_mtu(int mtu) const;
  // Drops `percent`% of the UDP 4791 datagrams arriving in side's namespace,
  // at random (nftables numgen, input hook), as a lossy link would. Returns
  // why not ("" when done); "nftables is not installed" when nft is missing.
  std::string drop_arriving(const Side& side, int percent) const;

 private:
  Side server_, client_;
  std::string error_;
  static inline int next_id_ = 0;
};

// Moves the calling thread into network namespace ns.
bool enter_namespace(const std::string& ns);

// Runs f() on a thread that has joined network namespace ns and returns its
// result. Sockets opened there stay in ns for their whole life.
template <class F>
auto in_namespace(const std::string& ns, F&& f) -> decltype(f()) {
  std::optional<decltype(f())> result;
  std::thread([&] {
    if (enter_namespace(ns)) result.emplace(f());
  }).join();
  if (!result) throw std::runtime_error("cannot enter network namespace " + ns);
  return std::move(*result);
}

}  // namespace uroce::testing
