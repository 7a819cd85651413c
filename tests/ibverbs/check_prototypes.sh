#!/usr/bin/env bash
# Checks that every function uroce's libibverbs.so.1 exports at a public
# version (the IBVERBS_1.x nodes of libibverbs.map) is compared by the
# compiler with rdma-core's declaration: either it is bound with
# UROCE_BIND_V11, whose static_assert compares the types, or the object
# file that defines it under its own name was compiled with a header that
# declares it (rdma-core's installed headers, or rdma_core_private.h for
# what rdma-core declares in headers Debian does not install), so that a
# second extern "C" declaration with another type would not have compiled.
# (Names bound only at an old version, in compat_symbols.cc, serve binaries
# of another ABI on purpose and are left out.)
#   check_prototypes.sh BUILD_DIR MAP_FILE   (a Ninja build directory)
set -euo pipefail
build=$1 map=$2
objects_rel=src/CMakeFiles/uroce_ibverbs.dir/ibverbs
objects=$build/$objects_rel

public=$(awk '/^IBVERBS_1\.[0-9]+ \{/ {on = 1; next} /^\}/ {on = 0} on && /;/ && !/local:/ {gsub(/[ ;]/, ""); print}' \
  "$map" | sort -u)
declared_in() {  # name header...: whether a header declares name as a function
  local name=$1
  shift
  grep -qE "(^|[^A-Za-z0-9_])\(?${name}\)?[[:space:]]*\(" "$@" 2>/dev/null
}

# "object symbol" for every global symbol each object file defines.
definitions=$(for o in "$objects"/*.o; do nm -g --defined-only "$o" | awk -v o="$o" 'NF == 3 {print o, $3}'; done)

status=0
checked=0
for name in $public; do
  if grep -q "UROCE_BIND_V11(${name})" "$(dirname "$map")"/*.cc; then
    checked=$((checked + 1))
    continue
  fi
  object=$(awk -v name="$name" '$2 == name {print $1; exit}' <<<"$definitions")
  if [ -z "$object" ] && awk -v n="uroce_compat_${name}" '$2 == n {found = 1} END {exit !found}' <<<"$definitions"; then
    continue
  fi
  if [ -z "$object" ]; then
    echo "check_prototypes: $name is in the map but no object defines it" >&2
    status=1
    continue
  fi
  headers=$(ninja -C "$build" -t deps "$objects_rel/$(basename "$object")" |
    grep -E '/usr/include/(infiniband|rdma)/|rdma_core_private\.h$' | sed 's/^ *//' || true)
  if [ -z "$headers" ] || ! declared_in "$name" $headers; then
    echo "check_prototypes: $name is defined in $(basename "$object" .o) with no rdma-core declaration in sight" >&2
    status=1
    continue
  fi
  checked=$((checked + 1))
done
echo "check_prototypes: $checked public exports compared with rdma-core's prototypes"
exit $status
