#!/usr/bin/env bash
# rdma-core's own test suite (tests/ of rdma-core, run through pyverbs) on
# uroce: every test not specific to a vendor's device (mlx5, efa, vfio, CUDA)
# runs as a process of its own under `uroce run`, bounded in time, and a
# table of test, result and reason is printed. The suite is the one Debian's
# python3-pyverbs installs, which matches its pyverbs; it is copied to the
# build folder and run from there, never kept in this repository.
#
#   scripts/rdma-core-tests.sh [--build DIR] [--jobs N] [--timeout S] [--allowed FILE]
#                              [--huge-pages N] [TEST ...]
#
# RDMA_CORE_TESTS=DIR: the suite's folder (default /usr/share/doc/rdma-core/tests);
#   the script says so and exits 0 when it is absent.
# --allowed FILE: tests that may still end in an error, a failure or a hang,
#   one per line with the reason (tests/conformance/rdma-core-allowed.txt).
#   Any other error, failure or hang makes the script exit 1.
# --huge-pages N: as root, have N 2 MiB huge pages for the run (the suite's
#   huge-page tests skip without them) and put the old count back after.
# TEST: run only these (full names, as the table prints them).
#
# Each test runs in a network namespace and a /dev/shm of its own
# (tests/support/isolated.sh) on 127.0.0.1, the first address of `lo`: the
# suite's rdma_cm tests take the address of the netdev that the device's
# sysfs entry names, and fork two processes that share it. Where no
# namespace can be made, each test gets its own address in 127.0.13.0/24
# (tests/ADDRESSES.md) instead, and the rdma_cm tests cannot pass.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
build="$here/build/release"
jobs="$(nproc)"
limit=60
allowed=""
huge_pages=0
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(realpath -m "$2")"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --timeout) limit="$2"; shift ;;
    --allowed) allowed="$(realpath -m "$2")"; shift ;;
    --huge-pages) huge_pages="$2"; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "usage: $0 [--build DIR] [--jobs N] [--timeout S] [--allowed FILE] [--huge-pages N] [TEST ...]" >&2; exit 2 ;;
    *) only+=("$1") ;;
  esac
  shift
done

suite_source="${RDMA_CORE_TESTS:-/usr/share/doc/rdma-core/tests}"
# A system that leaves /usr/share/doc out of installed packages (slim images)
# has pyverbs but not its tests: take them from the package itself.
if [ ! -f "$suite_source/run_tests.py" ] && [ -z "${RDMA_CORE_TESTS:-}" ] && command -v apt-get > /dev/null; then
  unpacked="$build/rdma-core-package"
  if [ ! -f "$unpacked/usr/share/doc/rdma-core/tests/run_tests.py" ]; then
    mkdir -p "$unpacked"
    (cd "$unpacked" && apt-get download python3-pyverbs > /dev/null 2>&1 && dpkg -x python3-pyverbs_*.deb .) || true
  fi
  suite_source="$unpacked/usr/share/doc/rdma-core/tests"
fi
if [ ! -f "$suite_source/run_tests.py" ]; then
  echo "rdma-core-tests: no suite at $suite_source (install python3-pyverbs, or set RDMA_CORE_TESTS); skipped"
  exit 0
fi
python=/usr/bin/python3  # Debian's, which has pyverbs
"$python" -c 'import pyverbs' 2> /dev/null || { echo "rdma-core-tests: Debian's python3 has no pyverbs (scripts/install-deps.sh)" >&2; exit 2; }
uroce="$build/tools/uroce"
[ -x "$uroce" ] || { echo "rdma-core-tests: build uroce first (scripts/build.sh release)" >&2; exit 2; }
[ -z "$allowed" ] || [ -f "$allowed" ] || { echo "rdma-core-tests: no file $allowed" >&2; exit 2; }

work="$build/rdma-core-tests"
rm -rf "$work"
mkdir -p "$work/logs" "$work/results"
cp -r "$suite_source" "$work/tests"
find "$work/tests" -name '*.py.gz' -exec gunzip -f {} +

# Every test the suite loads, less those of vendors' devices.
if [ ${#only[@]} -gt 0 ]; then
  printf '%s\n' "${only[@]}" > "$work/list"
else
  "$python" "$work/tests/run_tests.py" --list-tests 2> /dev/null | grep '^tests\.' | grep -vE 'mlx5|efa|vfio|cuda' > "$work/list"
fi
total=$(wc -l < "$work/list")
[ "$total" -gt 0 ] || { echo "rdma-core-tests: the suite lists no tests" >&2; exit 2; }
echo "rdma-core-tests: $total tests from $suite_source, $jobs at a time, ${limit} s each"

# One test: its result (ok, skip, error, fail, hang) and a one-line reason.
run_one() {
  local number="$1" test="$2"
  local log="$work/logs/$test.log" status=0
  local address="127.0.13.$((number % 250 + 1))" isolation=()
  if [ "$isolated" = 1 ]; then address=127.0.0.1; isolation=(env -u UROCE_TEST_ISOLATED "$here/tests/support/isolated.sh"); fi
  "${isolation[@]}" timeout -k 5 "$limit" "$uroce" run --address "$address" -- \
    "$python" "$work/tests/run_tests.py" --dev uroce0 -v "$test" > "$log" 2>&1 < /dev/null || status=$?
  # unittest's last line says it: OK, OK (skipped=1) or FAILED (failures=1 / errors=1).
  local result reason="" summary
  summary="$(grep -E '^(OK|FAILED)( \(.*\))?$' "$log" | tail -1)"
  if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    result=hang; reason="still running after ${limit} s"
  elif [[ "$summary" == "OK (skipped="* ]]; then
    result=skip; reason="$(grep -oE "skipped .*" "$log" | head -1 | sed -E "s/^skipped //; s/^'//; s/'$//")"
  elif [ "$summary" = OK ] && [ "$status" = 0 ]; then
    result=ok
  elif [[ "$summary" == *failures=* ]]; then
    result=fail
  else
    result=error
  fi
  if [ "$result" = fail ] || [ "$result" = error ]; then
    reason="$(grep -E '^[A-Za-z_.]*(Error|Exception|Failure)\b' "$log" | tail -1 | cut -c1-160)"
    [ -n "$reason" ] || reason="exit $status: $(tail -1 "$log" | cut -c1-120)"
  fi
  printf '%s\t%s\t%s\n' "$test" "$result" "$reason" > "$work/results/$test"
}
huge_path=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ "$huge_pages" -gt 0 ] && [ -w "$huge_path" ] && [ "$(cat "$huge_path")" -lt "$huge_pages" ]; then
  old_huge_pages="$(cat "$huge_path")"
  trap 'echo "$old_huge_pages" > "$huge_path"' EXIT
  echo "$huge_pages" > "$huge_path"
fi

isolated=0
if { [ "$(id -u)" = 0 ] && unshare --net --mount true 2> /dev/null; } ||
   unshare --user --map-root-user --net --mount true 2> /dev/null; then
  isolated=1
else
  echo "rdma-core-tests: no network namespace can be made here: each test on an address of its own, and the rdma_cm tests cannot share one"
fi

export -f run_one
export work uroce python limit here isolated

nl -ba -w1 -s' ' "$work/list" | xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1"'

# The table, in the suite's order, and what it adds up to.
unexpected=0
printf '%-62s %-6s %s\n' TEST RESULT REASON
while read -r test; do
  IFS=$'\t' read -r name result reason < "$work/results/$test"
  note=""
  if [ "$result" = error ] || [ "$result" = fail ] || [ "$result" = hang ]; then
    if [ -n "$allowed" ] && grep -qE "^${test//./\\.}( |$)" "$allowed"; then
      note=" (allowed for now)"
    else
      unexpected=$((unexpected + 1))
    fi
  elif [ -n "$allowed" ] && grep -qE "^${test//./\\.}( |$)" "$allowed"; then
    note=" (listed as allowed to fail: take it off the list)"
  fi
  printf '%-62s %-6s %s%s\n' "${name#tests.}" "$result" "$reason" "$note"
done < "$work/list"
echo
for result in ok skip error fail hang; do
  printf '%s %s  ' "$result" "$(cut -f2 "$work"/results/* | grep -cx "$result" || true)"
done
echo "(of $total; logs in $work/logs)"
if [ "$unexpected" -gt 0 ]; then
  echo "rdma-core-tests: $unexpected test(s) ended in an error, a failure or a hang"
  exit 1
fi
