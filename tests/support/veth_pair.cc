// VethPair: namespaces and veth made and removed with iproute2; setns for
// code that must open its sockets inside a namespace.
#include "tests/support/veth_pair.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "tests/support/run_command.h"

namespace uroce::testing {

std::optional<std::string> VethPair::unavailable() {
  if (::geteuid() != 0) return "network namespaces need root";
  if (run_shell("command -v ip").exit_code != 0) return "iproute2 is not installed";
  return std::nullopt;
}

VethPair::VethPair(const std::string& subnet) {
  std::string suffix = std::to_string(::getpid()) + "_" + std::to_string(next_id_++);
  auto interface_name = [](std::string name) {
    name.resize(std::min<std::size_t>(name.size(), 15));  // IFNAMSIZ - 1
    return name;
  };
  server_ = Side{"uroce_s" + suffix, interface_name("us" + suffix), subnet + ".1"};
  client_ = Side{"uroce_c" + suffix, interface_name("uc" + suffix), subnet + ".2"};
  std::vector<std::string> commands = {
      "ip netns add " + server_.ns,
      "ip netns add " + client_.ns,
      "ip link add " + server_.interface + " netns " + server_.ns + " type veth peer name " + client_.interface +
          " netns " + client_.ns,
  };
  for (const Side& side : {server_, client_}) {
    commands.push_back("ip -n " + side.ns + " addr add " + side.address + "/24 dev " + side.interface);
    commands.push_back("ip -n " + side.ns + " link set " + side.interface + " up");
    commands.push_back("ip -n " + side.ns + " link set lo up");
  }
  for (const std::string& command : commands) {
    RunResult result = run_shell(command);
    if (result.exit_code != 0) {
      error_ = command + ": " + result.output;
      return;
    }
  }
}

VethPair::~VethPair() {
  run_shell("ip netns del " + server_.ns + " 2>/dev/null");  // takes the veth pair with it
  run_shell("ip netns del " + client_.ns + " 2>/dev/null");
}

void VethPair::set_mtu(int mtu) const {
  for (const Side& side : {server_, client_}) {
    run_shell("ip -n " + side.ns + " link set " + side.interface + " mtu " + std::to_string(mtu));
  }
}

std::string VethPair::drop_arriving(const Side& side, int percent) const {
  if (run_shell("command -v nft").exit_code != 0) return "nftables is not installed";
  std::string rules = "table inet uroce_loss {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
                      "  udp dport 4791 numgen random mod 100 < " +
                      std::to_string(percent) + " drop\n }\n}\n";
  RunResult result = run_shell("printf '" + rules + "' | ip netns exec " + side.ns + " nft -f -");
  return result.exit_code == 0 ? "" : result.output;
}

bool enter_namespace(const std::string& ns) {
  int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool entered = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return entered;
}

}  // namespace uroce::testing
