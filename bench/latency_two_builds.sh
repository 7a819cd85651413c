#!/usr/bin/env bash
# Two builds' wire latency, alternating, in one run: `uroce perf write_lat`
# and unmodified perftest (ib_write_lat, ib_send_lat) through each build's
# libibverbs over loopback UDP, 2 bytes, 20000 iterations. BASE is another
# checkout with a release build (a worktree of an earlier commit); this
# checkout is the other. Prints one line per run and build: typical and 99%
# percentile, us.
#
#   git worktree add /tmp/base <commit> && (cd /tmp/base && ./scripts/build.sh release)
#   BASE=/tmp/base bench/latency_two_builds.sh [ROUNDS]    # default 5 rounds, about 3 minutes
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BASE:?set BASE to another checkout with a release build}"
ROUNDS=${1:-5}
ITERATIONS=${ITERATIONS:-20000}
for root in "$BASE" "$PWD"; do
  [[ -x $root/build/release/tools/uroce ]] || { echo "no release build in $root" >&2; exit 1; }
done
command -v ib_write_lat >/dev/null || { echo "perftest is not installed (scripts/install-deps.sh)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
port=20100

source bench/perftest_run.sh

# typical_and_99 FILE: the 2-byte row's typical and 99% figures (perftest's
# table and uroce perf's have the same columns).
typical_and_99() { lat_of "$1" | awk '{ print $1 " / " $2 }'; }

native() {  # ROOT
  local uroce=$1/build/release/tools/uroce
  pair "$OUT/client" "$uroce perf write_lat --bind 127.0.3.22 -p \$port -n $ITERATIONS" \
    "$uroce perf write_lat --bind 127.0.3.23 -p \$port -n $ITERATIONS 127.0.3.22"
  typical_and_99 "$OUT/client"
}

library() {  # ROOT TEST
  local uroce=$1/build/release/tools/uroce
  pair "$OUT/client" "$uroce run --wire --address 127.0.3.22 -- ib_$2 -p \$port -n $ITERATIONS" \
    "$uroce run --wire --address 127.0.3.23 -- ib_$2 -p \$port -n $ITERATIONS 127.0.0.1"
  typical_and_99 "$OUT/client"
}

echo "| round | build | uroce perf write_lat | ib_write_lat | ib_send_lat |"
echo "|---:|---|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
  for root in "$BASE" "$PWD"; do
    label=$(git -C "$root" rev-parse --short HEAD)
    [[ $root == "$BASE" ]] && label="base $label" || label="this $label"
    echo "| $round | $label | $(native "$root") | $(library "$root" write_lat) | $(library "$root" send_lat) |"
  done
done
