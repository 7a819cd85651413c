#!/usr/bin/env bash
# Installs every Debian package uroce needs to build, test and benchmark.
# Idempotent: installs only what is missing. Run as root on Debian 12.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
  libpcap-dev zlib1g-dev libisal-dev libprotobuf-dev protobuf-compiler iproute2 nftables
  libibverbs-dev librdmacm-dev ibverbs-utils perftest rdmacm-utils qperf ucx-utils openmpi-bin libopenmpi-dev libfabric-bin sockperf python3-pyverbs
  qemu-system-x86 busybox-static cpio time gdb tcpdump
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
