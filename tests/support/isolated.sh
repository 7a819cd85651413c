#!/usr/bin/env bash
# Runs one test in a network namespace and a /dev/shm of its own, so tests
# that ctest runs side by side (-j) never meet: each has its own loopback
# addresses, TCP and UDP ports, multicast groups and intra-host inboxes
# (which live in /dev/shm, named after their device's address). A test may
# then use any address of 127.0.0.0/8 and any port. ctest runs every test of
# the device, library and program executables through it (tests/CMakeLists.txt).
#   tests/support/isolated.sh COMMAND [ARGUMENTS...]
# As root it needs nothing more; otherwise unprivileged user namespaces
# (Debian's default). Where neither is available it says so and runs the
# test as it is: tests side by side may then collide.
set -euo pipefail

if [[ ${UROCE_TEST_ISOLATED:-0} == 1 ]]; then exec "$@"; fi
export UROCE_TEST_ISOLATED=1

inside='ip link set lo up && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"'
if [[ $(id -u) == 0 ]] && unshare --net --mount true 2>/dev/null; then
  exec unshare --net --mount --propagation private bash -c "$inside" isolated "$@"
elif unshare --user --map-root-user --net --mount true 2>/dev/null; then
  exec unshare --user --map-root-user --net --mount --propagation private bash -c "$inside" isolated "$@"
fi
echo "isolated.sh: no network namespace can be made here; running without isolation" >&2
exec "$@"
