#!/usr/bin/env bash
# Checks an installed uroce, as a user meets it, from nothing but PREFIX
# (given, e.g. /usr after `apt-get install ./uroce_*.deb`, or a scratch
# prefix from `cmake --install`): unmodified perftest, rping and
# ibv_devinfo run on its libraries through `uroce run`; a shipped scenario
# simulates; the engine example builds against the installed engine
# through pkg-config and through the CMake package, and its WRITE arrives.
#   tests/packaging/installed_uroce_works.sh PREFIX
# Addresses: 127.0.14.0/24 (tests/ADDRESSES.md; under ctest it runs in a namespace of its own).
set -euo pipefail
prefix=$(realpath "${1:?usage: $0 PREFIX}")
uroce=$prefix/bin/uroce
examples=$prefix/share/uroce/examples
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "uroce run finds the installed libraries: ibv_devinfo"
"$uroce" run --address 127.0.14.1 -- ibv_devinfo > "$work/devinfo" 2>&1 || { cat "$work/devinfo"; fail "ibv_devinfo"; }
grep -q "hca_id:	uroce0" "$work/devinfo" || { cat "$work/devinfo"; fail "no uroce0 in ibv_devinfo"; }

step "a two-process RDMA WRITE: perftest's ib_write_bw"
timeout 60 "$uroce" run --address 127.0.14.2 -- ib_write_bw -n 100 -s 65536 -p 19790 > "$work/server" 2>&1 &
pids+=($!)
sleep 1
timeout 60 "$uroce" run --address 127.0.14.3 -- ib_write_bw -n 100 -s 65536 -p 19790 127.0.14.2 > "$work/client" 2>&1 ||
  { cat "$work/client" "$work/server"; fail "ib_write_bw client"; }
wait "${pids[-1]}" || { cat "$work/server"; fail "ib_write_bw server"; }
grep -qE "^ 65536 +100 " "$work/client" || { cat "$work/client"; fail "no 64 KiB line from ib_write_bw"; }

step "rdma_cm on the installed librdmacm.so.1: rping"
timeout 60 "$uroce" run --address 127.0.14.4 -- rping -s -a 127.0.14.4 -C 3 > "$work/rping_server" 2>&1 &
pids+=($!)
sleep 1
timeout 60 "$uroce" run --address 127.0.14.5 -- rping -c -a 127.0.14.4 -C 3 -v > "$work/rping_client" 2>&1 ||
  { cat "$work/rping_client" "$work/rping_server"; fail "rping client"; }
wait "${pids[-1]}" || { cat "$work/rping_server"; fail "rping server"; }
[ "$(grep -c "ping data: rdma-ping-" "$work/rping_client")" = 3 ] || { cat "$work/rping_client"; fail "rping: not 3 pings"; }

step "a simulation from the shipped examples"
"$uroce" sim run "$examples/incast.toml" --out "$work/sim" > "$work/sim.log" 2>&1 || { cat "$work/sim.log"; fail "sim run"; }
grep -q '"flows_finished": 16,' "$work/sim/summary.json" || { cat "$work/sim/summary.json"; fail "incast: not 16 flows finished"; }

step "the engine example builds with pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
# shellcheck disable=SC2046  # pkg-config's words are separate arguments
c++ -O1 -o "$work/by_pkg_config" "$examples/engine/write_between_two_engines.cc" $(pkg-config --cflags --libs uroce)
"$work/by_pkg_config" | grep -q "every byte arrived" || fail "the pkg-config build's WRITE did not arrive"

step "the engine example builds with the CMake package"
here=$(dirname "$(realpath "$0")")
cmake -S "$here/embed" -B "$work/embed" -DCMAKE_PREFIX_PATH="$prefix" \
  -DEXAMPLE_SOURCE="$examples/engine/write_between_two_engines.cc" > "$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; fail "configuring against the CMake package"; }
cmake --build "$work/embed" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building against the CMake package"; }
"$work/embed/write_between_two_engines" | grep -q "every byte arrived" || fail "the CMake build's WRITE did not arrive"

echo "installed uroce at $prefix: every check passed"
