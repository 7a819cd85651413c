// Symbols that libibverbs exports in two versions (an IBVERBS_1.0 one for
// 2006-era binaries, and the default IBVERBS_1.1 one everything since links
// to). The default implementation is defined as uroce_v11_<name> and bound to
// <name>@@IBVERBS_1.1; the old one lives in compat_symbols.cc. No plain
// <name> may be defined, or the linker would give it a third version.
#pragma once

#define UROCE_V11(name) uroce_v11_##name
#define UROCE_BIND_V11(name) __asm__(".symver uroce_v11_" #name ", " #name "@@IBVERBS_1.1")
