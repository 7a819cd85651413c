// The modify-QP transition table.
#include "verbs/qp_state_machine.h"

#include <array>
#include <optional>

namespace uroce::verbs {
namespace {

// Required and optional attribute masks for one transition, per QP type.
struct Rule {
  std::uint32_t required_rc, required_uc, required_ud;
  std::uint32_t optional_rc, optional_uc, optional_ud;
};

constexpr std::uint32_t kPkey = kQpAttrPkeyIndex, kPort = kQpAttrPort, kAccess = kQpAttrAccessFlags,
                        kQkey = kQpAttrQkey, kCur = kQpAttrCurState, kAlt = kQpAttrAltPath,
                        kMig = kQpAttrPathMigState;

constexpr Rule kAlways{0, 0, 0, 0, 0, 0};
constexpr Rule kResetToInit{kPkey | kPort | kAccess, kPkey | kPort | kAccess, kPkey | kPort | kQkey, 0, 0, 0};
constexpr Rule kInitToInit{0, 0, 0, kPkey | kPort | kAccess, kPkey | kPort | kAccess, kPkey | kPort | kQkey};
constexpr Rule kInitToRtr{
    kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn | kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer,
    kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn,
    0,
    kAlt | kAccess | kPkey,
    kAlt | kAccess | kPkey,
    kPkey | kQkey};
constexpr Rule kRtrToRts{
    kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry | kQpAttrSqPsn | kQpAttrMaxQpRdAtomic,
    kQpAttrSqPsn,
    kQpAttrSqPsn,
    kCur | kAlt | kAccess | kQpAttrMinRnrTimer | kMig,
    kCur | kAlt | kAccess | kMig,
    kCur | kQkey};
constexpr Rule kRtsToRts{0, 0, 0, kCur | kAccess | kAlt | kMig | kQpAttrMinRnrTimer, kCur | kAccess | kAlt | kMig,
                         kCur | kQkey};
constexpr Rule kToSqd{0, 0, 0, kQpAttrEnSqdAsyncNotify, kQpAttrEnSqdAsyncNotify, kQpAttrEnSqdAsyncNotify};
constexpr Rule kSqdToSqd{0,
                         0,
                         0,
                         kPort | kQpAttrAv | kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry |
                             kQpAttrMaxQpRdAtomic | kQpAttrMaxDestRdAtomic | kAlt | kAccess | kPkey |
                             kQpAttrMinRnrTimer | kMig,
                         kQpAttrAv | kAlt | kAccess | kPkey | kMig,
                         kPkey | kQkey};
constexpr Rule kSqeToRts{0, 0, 0, 0, kCur | kAccess, kCur | kQkey};  // RC has no SQE -> RTS

constexpr std::size_t kStates = 7;
using Row = std::array<std::optional<Rule>, kStates>;

constexpr std::array<Row, kStates> build_table() {
  std::array<Row, kStates> table{};
  auto at = [&](QpState from, QpState to) -> std::optional<Rule>& {
    return table[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
  };
  for (std::size_t from = 0; from < kStates; ++from) {
    table[from][static_cast<std::size_t>(QpState::reset)] = kAlways;
    table[from][static_cast<std::size_t>(QpState::err)] = kAlways;
  }
  at(QpState::reset, QpState::init) = kResetToInit;
  at(QpState::init, QpState::init) = kInitToInit;
  at(QpState::init, QpState::rtr) = kInitToRtr;
  at(QpState::rtr, QpState::rts) = kRtrToRts;
  at(QpState::rts, QpState::rts) = kRtsToRts;
  at(QpState::rts, QpState::sqd) = kToSqd;
  at(QpState::sqd, QpState::rts) = kRtsToRts;
  at(QpState::sqd, QpState::sqd) = kSqdToSqd;
  at(QpState::sqe, QpState::rts) = kSqeToRts;
  return table;
}

constexpr auto kTable = build_table();

}  // namespace

std::errc check_qp_transition(QpType type, QpState current, QpState next, std::uint32_t mask) {
  if ((mask & kQpAttrState) == 0) next = current;
  const auto& rule = kTable[static_cast<std::size_t>(current)][static_cast<std::size_t>(next)];
  if (!rule) return std::errc::invalid_argument;
  bool connected = type == QpType::rc || type == QpType::xrc_send || type == QpType::xrc_recv;  // RC's rules
  if (connected && current == QpState::sqe && next == QpState::rts) return std::errc::invalid_argument;

  std::uint32_t required = 0, optional = 0;
  switch (type) {
    case QpType::rc:
    case QpType::xrc_send:
    case QpType::xrc_recv: required = rule->required_rc, optional = rule->optional_rc; break;
    case QpType::uc: required = rule->required_uc, optional = rule->optional_uc; break;
    case QpType::ud: required = rule->required_ud, optional = rule->optional_ud; break;
  }
  // XRC's halves take RC's rules, less what their missing half would use
  // (as Linux's table has them): an xrc_send QP answers no requests, an
  // xrc_recv QP sends none.
  constexpr std::uint32_t kResponderOnly = kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer;
  constexpr std::uint32_t kRequesterOnly = kQpAttrRetryCnt | kQpAttrRnrRetry | kQpAttrMaxQpRdAtomic;
  if (type == QpType::xrc_send && current == QpState::init && next == QpState::rtr) {
    required &= ~kResponderOnly, optional |= kResponderOnly;
  }
  if (type == QpType::xrc_recv && current == QpState::rtr && next == QpState::rts) {
    required &= ~kRequesterOnly, optional |= kRequesterOnly;
  }
  // CUR_STATE is accepted in any transition; the caller checks it names the QP's state.
  std::uint32_t attributes = mask & ~(kQpAttrState | kQpAttrCurState);
  if ((attributes & required) != required) return std::errc::invalid_argument;
  if ((attributes & ~(required | optional)) != 0) return std::errc::invalid_argument;
  return std::errc{};
}

}  // namespace uroce::verbs
