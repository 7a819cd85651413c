#!/usr/bin/env bash
# The same unmodified UCX and libfabric benchmarks over their own TCP
# transports and over uroce, in one run on this machine: ucx_perftest
# (ucp_put_bw and tag_bw with 64 KiB messages, ucp_put_lat and tag_lat with
# 8 B) with UCX_TLS=tcp, then rc_verbs over uroce on the wire (UDP over
# loopback) and through the intra-host path; fi_pingpong (64 KiB and 8 B)
# with the tcp provider, then verbs;ofi_rxm over uroce. Then UCX's
# bandwidth tests by size (tag_bw, ucp_put_bw and ucp_get from 4 KiB to
# 16 MiB; the median of REPEATS alternating runs, default 3). Prints
# markdown tables. Needs ucx-utils and libfabric-bin
# (scripts/install-deps.sh). libfabric's fi_rma_bw is in fabtests, which
# Debian 12 does not package, so fi_pingpong is libfabric's only measure.
#
#   bench/stacks_compare.sh     # about five minutes on two cores
#   SIZES_ONLY=1 REPEATS=5 bench/stacks_compare.sh   # only the table by size
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
SERVER=127.0.3.12
CLIENT=127.0.3.13
OUT=$(mktemp -d)
trap 'pkill -x ucx_perftest 2>/dev/null || true; pkill -x fi_pingpong 2>/dev/null || true; rm -rf "$OUT"' EXIT
[[ -x $UROCE ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
port=13600

# ucx_on STACK: the command prefix that runs a ucx_perftest side on it.
#   tcp: UCX's TCP transport; wire / local: rc_verbs on uroce (UROCE_WIRE=1 or not).
ucx_side() {
  local stack=$1 address=$2
  case $stack in
    tcp) echo "env UCX_TLS=tcp UCX_NET_DEVICES=lo" ;;
    wire) echo "env UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=uroce0:1 $UROCE run --wire --address $address --" ;;
    local) echo "env UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=uroce0:1 $UROCE run --address $address --" ;;
  esac
}

# ucx STACK TEST ARGS...: prints the client's "Final:" line.
ucx() {
  local stack=$1
  shift
  port=$((port + 1))
  $(ucx_side "$stack" $SERVER) ucx_perftest -p $port >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  $(ucx_side "$stack" $CLIENT) ucx_perftest -p $port $SERVER "$@" >"$OUT/ucx" 2>&1 || true
  wait $server || true
  grep '^Final:' "$OUT/ucx" || echo "Final: - - - - - - - -"
}

# fabric STACK SIZE ITERATIONS: prints fi_pingpong's result line.
fabric() {
  local stack=$1 size=$2 iterations=$3 provider=tcp endpoint=msg server_run="" client_run=""
  if [[ $stack != tcp ]]; then
    provider="verbs;ofi_rxm"
    endpoint=rdm
    server_run="$UROCE run $([[ $stack == wire ]] && echo --wire) --address $SERVER --"
    client_run="$UROCE run $([[ $stack == wire ]] && echo --wire) --address $CLIENT --"
  fi
  port=$((port + 1))
  $server_run fi_pingpong -p "$provider" -e $endpoint -S "$size" -I "$iterations" -B $port >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  $client_run fi_pingpong -p "$provider" -e $endpoint -S "$size" -I "$iterations" -P $port $SERVER >"$OUT/fi" 2>&1 || true
  wait $server || true
  tail -1 "$OUT/fi"
}

name_of() {
  case $1 in
    tcp) echo "its TCP transport" ;;
    wire) echo "uroce, wire (UDP)" ;;
    local) echo "uroce, intra-host" ;;
  esac
}

REPEATS=${REPEATS:-3}

# median FILE COLUMN, from the perftest helpers; values() lists its arguments as a file's lines.
source bench/perftest_run.sh
values() { printf '%s\n' "$@"; }

# iterations_for BYTES: about 1 GiB moved, at least 100 iterations.
iterations_for() {
  local n=$(((1 << 30) / $1))
  echo $((n < 100 ? 100 : n > 20000 ? 20000 : n))
}

sizes_table() {
  echo "### UCX bandwidth by size (ucx_perftest, MB/s, median of $REPEATS runs; in parentheses uroce over TCP)"
  echo
  echo "| test | size | UCX over TCP | uroce, wire | uroce, intra-host |"
  echo "|---|---:|---:|---:|---:|"
  for test in tag_bw ucp_put_bw ucp_get; do
    for size in 4096 65536 1048576 16777216; do
      declare -A runs=([tcp]="" [wire]="" [local]="")
      for _ in $(seq "$REPEATS"); do
        for stack in tcp wire local; do
          runs[$stack]+=" $(ucx "$stack" -t "$test" -s "$size" -n "$(iterations_for "$size")" | awk '{ print $6 }')"
        done
      done
      tcp=$(median <(values ${runs[tcp]}) 1)
      wire=$(median <(values ${runs[wire]}) 1)
      local_path=$(median <(values ${runs[local]}) 1)
      awk -v t="$test" -v s="$size" -v a="$tcp" -v b="$wire" -v c="$local_path" \
        'BEGIN { printf "| %s | %s | %.1f | %.1f (%.2fx) | %.1f (%.2fx) |\n", t, s, a, b, b / a, c, c / a }'
    done
  done
}

if [[ -n ${SIZES_ONLY:-} ]]; then
  sizes_table
  exit 0
fi

echo "### UCX (ucx_perftest): 64 KiB bandwidth (MB/s), 8 B half round trip (us, median / average)"
echo
echo "| over | ucp_put_bw | tag_bw | ucp_put_lat | tag_lat |"
echo "|---|---:|---:|---:|---:|"
for stack in tcp wire local; do
  put_bw=$(ucx "$stack" -t ucp_put_bw -s 65536 -n 20000 | awk '{ print $6 }')
  tag_bw=$(ucx "$stack" -t tag_bw -s 65536 -n 20000 | awk '{ print $6 }')
  put_lat=$(ucx "$stack" -t ucp_put_lat -s 8 -n 100000 | awk '{ print $3 " / " $4 }')
  tag_lat=$(ucx "$stack" -t tag_lat -s 8 -n 100000 | awk '{ print $3 " / " $4 }')
  echo "| $(name_of "$stack") | $put_bw | $tag_bw | $put_lat | $tag_lat |"
done
echo
echo "### libfabric (fi_pingpong, one message at a time): MB/s at 64 KiB, us per transfer at 8 B"
echo
echo "| over | 64 KiB MB/s | 8 B usec/xfer |"
echo "|---|---:|---:|"
for stack in tcp wire local; do
  big=$(fabric "$stack" 65536 10000 | awk '{ print $6 }')
  small=$(fabric "$stack" 8 100000 | awk '{ print $7 }')
  label=$(name_of "$stack")
  [[ $stack == tcp ]] && label="the tcp provider (MSG endpoints)"
  [[ $stack != tcp ]] && label="$label, verbs;ofi_rxm"
  echo "| $label | $big | $small |"
done
echo
sizes_table
