// The rsockets of the process by their numbers (rsocket_calls.cc), for the
// calls and for rpoll/rselect (rpoll.cc).
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "rsockets/stream_socket.h"

namespace uroce::rsockets {

std::mutex& table_lock();
std::map<int, std::shared_ptr<StreamSocket>>& table();
// nullptr if fd is not an rsocket.
std::shared_ptr<StreamSocket> find_socket(int fd);

}  // namespace uroce::rsockets
