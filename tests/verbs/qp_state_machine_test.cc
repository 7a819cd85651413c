// The modify-QP table as ibv_rc_pingpong, ibv_ud_pingpong and perftest drive
// it, and the requests a real RNIC refuses.
#include <gtest/gtest.h>

#include "verbs/qp_state_machine.h"

namespace uroce::verbs {
namespace {

constexpr std::uint32_t kToInitRc = kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags;
constexpr std::uint32_t kToRtrRc = kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                                   kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer;
constexpr std::uint32_t kToRtsRc = kQpAttrState | kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry |
                                   kQpAttrSqPsn | kQpAttrMaxQpRdAtomic;

TEST(QpStateMachine, RcBringUpAsPingpongDoesIt) {
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::reset, QpState::init, kToInitRc), std::errc{});
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::init, QpState::rtr, kToRtrRc), std::errc{});
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::rtr, QpState::rts, kToRtsRc), std::errc{});
}

TEST(QpStateMachine, UcAndUdBringUp) {
  EXPECT_EQ(check_qp_transition(QpType::uc, QpState::reset, QpState::init, kToInitRc), std::errc{});
  EXPECT_EQ(check_qp_transition(QpType::uc, QpState::init, QpState::rtr,
                                kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn),
            std::errc{});
  EXPECT_EQ(check_qp_transition(QpType::uc, QpState::rtr, QpState::rts, kQpAttrState | kQpAttrSqPsn), std::errc{});
  EXPECT_EQ(check_qp_transition(QpType::ud, QpState::reset, QpState::init,
                                kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrQkey),
            std::errc{});
  EXPECT_EQ(check_qp_transition(QpType::ud, QpState::init, QpState::rtr, kQpAttrState), std::errc{});
  EXPECT_EQ(check_qp_transition(QpType::ud, QpState::rtr, QpState::rts, kQpAttrState | kQpAttrSqPsn), std::errc{});
}

TEST(QpStateMachine, MissingRequiredAttributeIsRefused) {
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::reset, QpState::init, kToInitRc & ~kQpAttrAccessFlags),
            std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::init, QpState::rtr, kToRtrRc & ~kQpAttrDestQpn),
            std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::rtr, QpState::rts, kToRtsRc & ~kQpAttrRetryCnt),
            std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::ud, QpState::reset, QpState::init,
                                kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort),
            std::errc::invalid_argument);
}

TEST(QpStateMachine, AttributeNotAllowedInTransitionIsRefused) {
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::reset, QpState::init, kToInitRc | kQpAttrSqPsn),
            std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::ud, QpState::reset, QpState::init,
                                kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrQkey | kQpAttrAccessFlags),
            std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::uc, QpState::rtr, QpState::rts, kQpAttrState | kQpAttrSqPsn | kQpAttrTimeout),
            std::errc::invalid_argument);
}

TEST(QpStateMachine, SkippingStatesIsRefused) {
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::reset, QpState::rtr, kToRtrRc), std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::init, QpState::rts, kToRtsRc), std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::err, QpState::rts, kToRtsRc), std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::sqe, QpState::rts, kQpAttrState), std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::uc, QpState::sqe, QpState::rts, kQpAttrState), std::errc{});
}

TEST(QpStateMachine, ResetAndErrorAreReachableFromEverywhere) {
  for (int s = 0; s <= 6; ++s) {
    auto state = static_cast<QpState>(s);
    EXPECT_EQ(check_qp_transition(QpType::rc, state, QpState::reset, kQpAttrState), std::errc{});
    EXPECT_EQ(check_qp_transition(QpType::rc, state, QpState::err, kQpAttrState), std::errc{});
  }
}

TEST(QpStateMachine, AttributeChangeWithoutStateChange) {
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::rts, QpState::reset, kQpAttrMinRnrTimer), std::errc{});
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::rts, QpState::reset, kQpAttrSqPsn), std::errc::invalid_argument);
  EXPECT_EQ(check_qp_transition(QpType::rc, QpState::rtr, QpState::reset, kQpAttrTimeout),
            std::errc::invalid_argument);
}

}  // namespace
}  // namespace uroce::verbs
