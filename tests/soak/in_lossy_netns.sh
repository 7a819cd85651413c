#!/usr/bin/env bash
# Runs a command in a network namespace of its own whose loopback drops
# PERCENT% (default 1) of UDP datagrams to port 4791 at random (nftables
# numgen), then prints how many the rule dropped. The namespace goes away
# with the command. Exits 77 (skipped) without root, unshare or nft.
#   in_lossy_netns.sh [--percent N] command...
set -euo pipefail
percent=1
if [ "${1:-}" = "--percent" ]; then percent=$2; shift 2; fi
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v nft >/dev/null; then
  echo "in_lossy_netns: needs root, unshare and nft; skipped" >&2
  exit 77
fi
exec unshare --net bash -c '
  set -euo pipefail
  percent=$1; shift
  ip link set lo up
  nft -f - <<RULES
table inet uroce_loss {
  counter roce_dropped {}
  chain output {
    type filter hook output priority 0; policy accept;
    udp dport 4791 numgen random mod 100 < $percent counter name roce_dropped drop
  }
}
RULES
  status=0
  "$@" || status=$?
  nft list counter inet uroce_loss roce_dropped | grep -o "packets [0-9]*" | sed "s/^/in_lossy_netns: the rule dropped /"
  exit $status
' in_lossy_netns "$percent" "$@"
