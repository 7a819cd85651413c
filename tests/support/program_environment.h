// Test helpers for running installed programs (ibverbs-utils, perftest) on
// uroce's libibverbs: whether a program is installed, and the environment an
// uninstrumented program needs to load the library of a sanitizer build.
#pragma once

#include <string>

namespace uroce::testing {

bool installed(const std::string& program);

// "LD_PRELOAD=<ASan runtime> ASAN_OPTIONS=detect_leaks=0 " in an ASan build
// (the library needs its runtime loaded first; leaks are the program's
// business), "" otherwise. Ends with a space when not empty.
std::string sanitizer_environment();

// "<sanitizer environment>uroce run --address ADDRESS [--wire] -- ": the
// prefix that starts a program on its own uroce device.
std::string uroce_run(const std::string& address, bool wire);

}  // namespace uroce::testing
