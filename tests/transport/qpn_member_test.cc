// QPNs of a device that may share its address (EngineConfig::qpn_member):
// each carries its member in bits 20 to 23, never one of the special QPNs;
// without a member QPNs take all 24 bits, as the simulator's always have.
#include <gtest/gtest.h>

#include <set>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

std::set<std::uint32_t> qpns_of(Engine& engine, int count) {
  std::set<std::uint32_t> qpns;
  for (int i = 0; i < count; ++i) qpns.insert(make_ud_qp(engine, 0x1234).qpn);
  return qpns;
}

TEST(QpnMember, EveryQpnCarriesItsMemberInBits20To23) {
  for (std::uint8_t member : {std::uint8_t{0}, std::uint8_t{5}, std::uint8_t{15}}) {
    EngineConfig config;
    config.qpn_member = member;
    Engine engine(config);
    std::set<std::uint32_t> qpns = qpns_of(engine, 300);
    EXPECT_EQ(qpns.size(), 300u);
    for (std::uint32_t qpn : qpns) {
      EXPECT_EQ(qpn_member_of(qpn), member) << std::hex << qpn;
      EXPECT_GT(qpn, 1u);
      EXPECT_NE(qpn, 0xFFFFFFu);  // the multicast QPN, in member 15's range
    }
  }
}

TEST(QpnMember, WithoutAMemberQpnsSpanAll24Bits) {
  Engine engine(EngineConfig{});
  std::set<std::uint8_t> members;
  for (std::uint32_t qpn : qpns_of(engine, 300)) members.insert(qpn_member_of(qpn));
  EXPECT_GT(members.size(), 8u);
}

}  // namespace
}  // namespace uroce::testing
