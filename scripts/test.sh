#!/usr/bin/env bash
# The README's second command: install what is missing, build, and run the
# whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
./scripts/build.sh release
ctest --test-dir build/release --output-on-failure --timeout 600 -j "$(nproc)"
