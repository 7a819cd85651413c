// Names of verbs enumerations, as ibv_wc_status_str and friends print them.
#include "uroce/verbs_types.h"

namespace uroce {

std::string_view to_string(WcStatus status) {
  switch (status) {
    case WcStatus::success: return "success";
    case WcStatus::loc_len_err: return "local length error";
    case WcStatus::loc_qp_op_err: return "local QP operation error";
    case WcStatus::loc_eec_op_err: return "local EE context operation error";
    case WcStatus::loc_prot_err: return "local protection error";
    case WcStatus::wr_flush_err: return "Work Request Flushed Error";
    case WcStatus::mw_bind_err: return "memory management operation error";
    case WcStatus::bad_resp_err: return "bad response error";
    case WcStatus::loc_access_err: return "local access error";
    case WcStatus::rem_inv_req_err: return "remote invalid request error";
    case WcStatus::rem_access_err: return "remote access error";
    case WcStatus::rem_op_err: return "remote operation error";
    case WcStatus::retry_exc_err: return "transport retry counter exceeded";
    case WcStatus::rnr_retry_exc_err: return "RNR retry counter exceeded";
    case WcStatus::loc_rdd_viol_err: return "local RDD violation error";
    case WcStatus::rem_inv_rd_req_err: return "remote invalid RD request";
    case WcStatus::rem_abort_err: return "aborted error";
    case WcStatus::inv_eecn_err: return "invalid EE context number";
    case WcStatus::inv_eec_state_err: return "invalid EE context state";
    case WcStatus::fatal_err: return "fatal error";
    case WcStatus::resp_timeout_err: return "response timeout error";
    case WcStatus::general_err: return "general error";
  }
  return "unknown";
}

std::string_view to_string(QpState state) {
  switch (state) {
    case QpState::reset: return "RESET";
    case QpState::init: return "INIT";
    case QpState::rtr: return "RTR";
    case QpState::rts: return "RTS";
    case QpState::sqd: return "SQD";
    case QpState::sqe: return "SQE";
    case QpState::err: return "ERR";
  }
  return "?";
}

}  // namespace uroce
