// Symbols that libibverbs exports in two versions (an IBVERBS_1.0 one for
// 2006-era binaries, and the default IBVERBS_1.1 one everything since links
// to). The default implementation is defined as uroce_v11_<name> and bound to
// <name>@@IBVERBS_1.1; the old one lives in compat_symbols.cc. No plain
// <name> may be defined, or the linker would give it a third version.
//
// Binding also checks, at compile time, that the implementation has exactly
// the prototype rdma-core's <infiniband/verbs.h> declares for <name>: an
// export whose C signature differs is an ABI break that only a crash in a
// caller would reveal. (Exports defined under their plain names are checked
// by the compiler itself wherever the header declares them: a second extern
// "C" declaration with another type does not compile.)
#pragma once

#include <type_traits>

#define UROCE_V11(name) uroce_v11_##name
#define UROCE_BIND_V11(name)                                                                   \
  __asm__(".symver uroce_v11_" #name ", " #name "@@IBVERBS_1.1");                              \
  static_assert(std::is_same_v<decltype(&uroce_v11_##name), decltype(&::name)>,                \
                #name ": uroce's prototype differs from rdma-core's <infiniband/verbs.h>")
