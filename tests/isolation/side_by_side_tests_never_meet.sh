#!/usr/bin/env bash
# Two tests run through tests/support/isolated.sh at the same time each bind
# UDP 127.0.0.5:4791 and create the same file in /dev/shm, exclusively:
# both succeed only if each has a network namespace and a /dev/shm of its
# own. Skips (77) where no namespace can be made.
#   tests/isolation/side_by_side_tests_never_meet.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
isolated=tests/support/isolated.sh
if ! unshare --net --mount true 2>/dev/null && ! unshare --user --map-root-user --net --mount true 2>/dev/null; then
  echo "no network namespace can be made here"
  exit 77
fi

claim='import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.5", 4791))
open("/dev/shm/uroce-isolation-check", "x").close()
time.sleep(1)
print("claimed")'
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
env -u UROCE_TEST_ISOLATED "$isolated" python3 -c "$claim" >"$out/a" 2>&1 &
first=$!
env -u UROCE_TEST_ISOLATED "$isolated" python3 -c "$claim" >"$out/b" 2>&1 &
second=$!
status=0
wait "$first" || status=1
wait "$second" || status=1
cat "$out/a" "$out/b"
[[ ! -e /dev/shm/uroce-isolation-check ]] || { echo "the file reached the host's /dev/shm"; status=1; }
[[ $status == 0 ]] && echo "both tests claimed the same address, port and /dev/shm name"
exit "$status"
