#!/usr/bin/env bash
# `cmake --install BUILD --prefix SCRATCH`, then the checks of an installed
# uroce (installed_uroce_works.sh) from that prefix alone; the scratch
# prefix is removed after.
#   tests/packaging/install_and_check.sh BUILD
set -euo pipefail
build=${1:?usage: $0 BUILD}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
"$(dirname "$0")/installed_uroce_works.sh" "$prefix"
