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

# typical_and_99 FILE: perftest's and uroce perf's row for 2 bytes.
typical_and_99() { awk '$1 == "2" { print $5 " / " $8 }' "$1"; }

# pair SERVER CLIENT: runs both (the client's output in $OUT/client).
pair() {
  port=$((port + 1))
  eval "$1" >"$OUT/server" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do ss -ltn | grep -q ":$port " && break; sleep 0.1; done
  eval "$2" >"$OUT/client" 2>&1 || true
  wait "$pid" || true
}

native() {  # ROOT
  local uroce=$1/build/release/tools/uroce
  pair "$uroce perf write_lat --bind 127.0.3.22 -p \$port -n $ITERATIONS" \
    "$uroce perf write_lat --bind 127.0.3.23 -p \$port -n $ITERATIONS 127.0.3.22"
  typical_and_99 "$OUT/client"
}

library() {  # ROOT TEST
  local uroce=$1/build/release/tools/uroce
  pair "$uroce run --wire --address 127.0.3.22 -- ib_$2 -p \$port -n $ITERATIONS" \
    "$uroce run --wire --address 127.0.3.23 -- ib_$2 -p \$port -n $ITERATIONS 127.0.0.1"
  typical_and_99 "$OUT/client"
}

echo "| round | build | uroce perf write_lat | ib_write_lat | ib_send_lat |"
echo "|---:|---|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
  for root in "$BASE" "$PWD"; do
    label=$(git -C "$root" rev-parse --short HEAD)
    echo "| $round | $label | $(native "$root") | $(library "$root" write_lat) | $(library "$root" send_lat) |"
  done
done
