#!/usr/bin/env bash
# Every example scenario run by mpirun on 2 and 3 ranks (and 2 ranks of 2
# threads) writes what one process writes, byte for byte, but for the wall
# time and the rank count in summary.json: flows, collectives and Chakra
# replays alike. Then the failures: ranks of two different builds refuse to
# start, a broken scenario is refused by every rank, and a rank killed
# mid-run ends the run on every rank, not a hang.
# Usage: ranks_match_one_process.sh UROCE EXAMPLES_DIR
set -euo pipefail

uroce="$1"
examples="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Root in CI and containers; more ranks than cores; no ptrace for single-copy.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
mpirun_bounded() { timeout 300 mpirun "$@"; }
# The processes whose command line starts with $1 (read from /proc: procps
# may not be installed).
pids_of() {
  local cmdline pid
  for cmdline in /proc/[0-9]*/cmdline; do
    pid=${cmdline#/proc/}; pid=${pid%/cmdline}
    [[ "$(tr '\0' ' ' < "$cmdline" 2> /dev/null)" == "$1"* ]] && echo "$pid"
  done
  return 0
}

# The files must match but for summary.json's "wall_s" and "ranks" lines.
same_outputs() {
  local one="$1" many="$2" file
  for file in "$one"/*; do
    local name
    name=$(basename "$file")
    if [[ "$name" == summary.json ]]; then
      diff <(grep -vE '^  "(wall_s|ranks)"' "$file") <(grep -vE '^  "(wall_s|ranks)"' "$many/$name") > /dev/null || {
        echo "FAIL: $many/$name differs from one process's:"; diff "$file" "$many/$name" | head -20; return 1; }
    else
      cmp -s "$file" "$many/$name" || { echo "FAIL: $many/$name differs from one process's"; return 1; }
    fi
  done
  [[ $(ls -A "$one" | wc -l) == $(ls -A "$many" | wc -l) ]] || { echo "FAIL: $many has other files than $one (hidden ones count)"; return 1; }
}

failures=0
compared=0
for scenario in "$examples"/*.toml; do
  name=$(basename "$scenario" .toml)
  sed "s|^traces = \"\([^/]\)|traces = \"$examples/\1|" "$scenario" > "$work/$name.toml"
  "$uroce" sim run "$work/$name.toml" --out "$work/$name.1" --quiet > /dev/null
  failed_before=$failures
  for setting in "2 1" "3 1" "2 2"; do
    read -r ranks threads <<< "$setting"
    out="$work/$name.$ranks-ranks.$threads-threads"
    if ! mpirun_bounded -np "$ranks" "$uroce" sim run "$work/$name.toml" --out "$out" --threads "$threads" --quiet \
        > "$out.log" 2>&1; then
      echo "FAIL: $name on $ranks ranks x $threads threads:"; tail -20 "$out.log"; failures=$((failures + 1)); continue
    fi
    grep -q "\"ranks\": $ranks," "$out/summary.json" || { echo "FAIL: $name: summary.json lacks \"ranks\": $ranks"; failures=$((failures + 1)); }
    if same_outputs "$work/$name.1" "$out"; then compared=$((compared + 1)); else failures=$((failures + 1)); fi
  done
  [[ $failures -eq $failed_before ]] && echo "ok   $name: 2 ranks, 3 ranks, 2 ranks x 2 threads write what one process writes"
done

# Two builds: a copy of the program with one byte more is another build.
cp "$uroce" "$work/other-uroce"
printf '\0' >> "$work/other-uroce"
victim="$work/permutation.toml"
sed 's|^traces = .*||' "$examples/permutation_spraying.toml" > "$victim"
if mpirun_bounded -np 1 "$uroce" sim run "$victim" --out "$work/mixed" --quiet : -np 1 "$work/other-uroce" sim run \
    "$victim" --out "$work/mixed" --quiet > "$work/mixed.log" 2>&1; then
  echo "FAIL: ranks of two builds ran"; failures=$((failures + 1))
elif [[ $(grep -c "run another build" "$work/mixed.log") -lt 2 ]]; then
  echo "FAIL: two builds: not every rank said why"; cat "$work/mixed.log"; failures=$((failures + 1))
else
  echo "ok   ranks of two builds refuse to run, each saying why"
fi

# A broken scenario: every rank says why, none waits for another.
printf 'name = "broken"\n[topology]\nkind = "nope"\n' > "$work/broken.toml"
if mpirun_bounded -np 2 "$uroce" sim run "$work/broken.toml" --out "$work/broken" > "$work/broken.log" 2>&1; then
  echo "FAIL: a broken scenario ran over ranks"; failures=$((failures + 1))
elif [[ $(grep -c "topology.kind: 'nope'" "$work/broken.log") -lt 2 ]]; then
  echo "FAIL: a broken scenario: not every rank said why"; cat "$work/broken.log"; failures=$((failures + 1))
else
  echo "ok   a broken scenario is refused by every rank, each saying why"
fi

# A rank killed mid-run: a run long enough to be killed in (the web-search
# load for 200 ms), one rank killed after two seconds; every rank must end soon.
sed -e 's|^duration_us = .*|duration_us = 200000|' -e 's|^time_limit_us = .*|time_limit_us = 1000000|' \
  "$examples/web_search_load.toml" > "$work/long.toml"
mpirun_bounded -np 2 "$uroce" sim run "$work/long.toml" --out "$work/killed" --quiet > "$work/killed.log" 2>&1 &
launcher=$!
sleep 2
victim_pid=$(pids_of "$uroce sim run $work/long.toml" | tail -1)  # a rank, not mpirun
if [[ -z "$victim_pid" ]]; then
  echo "FAIL: the long run ended before a rank could be killed"; failures=$((failures + 1))
else
  kill -9 "$victim_pid"
  started=$SECONDS
  if wait "$launcher"; then
    echo "FAIL: a run with a killed rank succeeded"; failures=$((failures + 1))
  elif (( SECONDS - started > 60 )); then
    echo "FAIL: a run with a killed rank took $((SECONDS - started)) s to end"; failures=$((failures + 1))
  else
    echo "ok   a rank killed mid-run ends the run on every rank ($((SECONDS - started)) s)"
  fi
fi
for pid in $(pids_of "$uroce sim run $work/long.toml"); do kill -9 "$pid" 2> /dev/null || true; done

echo "$compared runs over ranks compared with one process; $failures failures"
[[ $failures -eq 0 ]]
