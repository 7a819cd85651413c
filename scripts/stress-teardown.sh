#!/usr/bin/env bash
# Runs libfabric's fi_pingpong RDM pair (verbs;ofi_rxm over uroce's wire
# path) again and again beside busy loops that take every core, and counts
# the runs that fail. Teardown races (a peer's disconnect against the last
# completions) show up only when the programs' threads wait for a core.
#
#   scripts/stress-teardown.sh [RUNS] [BUSY_LOOPS]     (default 100, 3)
#   BUILD=asan scripts/stress-teardown.sh 40
#
# Traffic stays on 127.0.9.240 and 127.0.9.241. Each failing run's output
# is kept under $TMPDIR/uroce-stress-teardown/.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-100}
busy_loops=${2:-3}
uroce=build/${BUILD:-release}/tools/uroce
command -v fi_pingpong >/dev/null || { echo "fi_pingpong is not installed (libfabric-bin)" >&2; exit 2; }
[[ -x $uroce ]] || { echo "$uroce is not built (scripts/build.sh ${BUILD:-release})" >&2; exit 2; }
sanitizer=()  # the programs are not built with ASan: its runtime goes first, for them only
[[ ${BUILD:-release} == asan ]] && sanitizer=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0)
kept=${TMPDIR:-/tmp}/uroce-stress-teardown
mkdir -p "$kept"

busy=()
stop() {
  ((${#busy[@]})) && kill "${busy[@]}" 2>/dev/null
  pkill -f "fi_pingpong -p verbs;ofi_rxm -e rdm -I 100 -c -[BP] 477" 2>/dev/null
}
trap stop EXIT
for ((i = 0; i < busy_loops; ++i)); do
  (while :; do :; done) &
  busy+=($!)
done

pair() {  # one run on port $1; its two exit codes, "server client"
  local port=$1 server
  "${sanitizer[@]}" "$uroce" run --address 127.0.9.240 --wire -- timeout 120 \
    fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 100 -c -B "$port" >"$kept/server.log" 2>&1 &
  server=$!
  sleep 0.3
  until "${sanitizer[@]}" "$uroce" run --address 127.0.9.241 --wire -- timeout 120 \
      fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 100 -c -P "$port" 127.0.9.240 >"$kept/client.log" 2>&1; do
    local client=$?
    grep -q "Connection refused" "$kept/client.log" || { wait "$server"; echo "$? $client"; return; }
    sleep 0.2
  done
  wait "$server"
  echo "$? 0"
}

failures=0
for ((run = 1; run <= runs; ++run)); do
  read -r server client < <(pair $((47700 + run % 50)))
  if [[ $server != 0 || $client != 0 ]]; then
    failures=$((failures + 1))
    echo "run $run: server exit $server, client exit $client"
    cp "$kept/server.log" "$kept/server.$run.log"
    cp "$kept/client.log" "$kept/client.$run.log"
  fi
done
echo "$runs runs beside $busy_loops busy loops: $failures failed"
((failures == 0))
