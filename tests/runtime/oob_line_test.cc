// The out-of-band connection line a peer sends: it round-trips, and anything
// else (overflowing fields, a missing or extra field, a stray byte, an MTU the
// IBTA does not define) is refused rather than half-read.
#include <gtest/gtest.h>

#include "runtime/oob_exchange.h"

namespace uroce::runtime {
namespace {

QpConnectionInfo sample() {
  QpConnectionInfo info;
  info.qpn = 0xABCDEF;
  info.psn = 0x000123;
  info.gid = gid_from_ipv4({127, 0, 0, 31});
  info.rkey = 0xDEADBEEF;
  info.address = 0x00007F0012345678;
  info.mtu = 4096;
  return info;
}

TEST(OobLine, RoundTrips) {
  QpConnectionInfo info = sample();
  auto back = QpConnectionInfo::from_line(info.to_line());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->to_line(), info.to_line());
  EXPECT_EQ(back->gid, info.gid);
  EXPECT_TRUE(QpConnectionInfo::from_line(info.to_line() + "\n"));
}

TEST(OobLine, RefusesWhatIsNotExactlyALine) {
  const std::string good = sample().to_line();
  EXPECT_TRUE(QpConnectionInfo::from_line(good));
  for (const std::string& bad : {
           std::string(""),
           "1000000" + good.substr(6),                          // QPN over 24 bits
           good.substr(0, good.rfind(':')),                      // no MTU
           good + ":1",                                          // a seventh field
           good + " ",                                           // a stray byte
           good.substr(0, good.rfind(':')) + ":1500",            // not an IBTA MTU
           good.substr(0, good.rfind(':')) + ":-4096",           // signed
           good.substr(0, 14) + "zz" + good.substr(16),          // not hex in the GID
           good.substr(0, 14) + good.substr(16),                 // a short GID
           "-00001" + good.substr(6),                            // a sign where hex is due
       }) {
    EXPECT_FALSE(QpConnectionInfo::from_line(bad)) << bad;
  }
}

}  // namespace
}  // namespace uroce::runtime
