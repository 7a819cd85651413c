#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main
# job (for now: decode the public RoCEv2 sample capture, as text and as JSON).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
./scripts/build.sh release --quiet

capture=tests/vectors/roce-public.pcap
echo "== uroce decode $capture"
build/release/tools/uroce decode "$capture"
echo
echo "== uroce decode --json $capture (first 3 frames)"
build/release/tools/uroce decode --json "$capture" | head -n 3
