// The QP state table of ibv_modify_qp (IBTA Vol. 1, 10.3.1): which transitions
// exist for RC, UC and UD, which attributes each requires and which it allows.
#pragma once

#include <cstdint>
#include <system_error>

#include "uroce/verbs_types.h"

namespace uroce::verbs {

// Checks a modify request: the transition current -> next must exist for the
// QP type, mask must hold every required attribute and nothing beyond the
// required and optional ones. kQpAttrState in mask selects next; without it
// the QP stays in current. Returns std::errc{} or invalid_argument.
std::errc check_qp_transition(QpType type, QpState current, QpState next, std::uint32_t mask);

}  // namespace uroce::verbs
