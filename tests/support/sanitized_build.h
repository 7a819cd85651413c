// Test helper: whether this build runs under AddressSanitizer (GCC and clang
// say so differently). Tests that measure speed or memory relax there.
#pragma once

namespace uroce::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace uroce::testing
