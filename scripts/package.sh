#!/usr/bin/env bash
# Builds uroce's .debs into build/packages: uroce (the command, its
# libraries, examples and documents) and uroce-dev (the engine for programs
# that embed it). Install them with
#   apt-get install ./build/packages/uroce_*.deb ./build/packages/uroce-dev_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/build.sh release --quiet
rm -rf build/packages
cpack -G DEB --config build/release/CPackConfig.cmake -B build/packages > /dev/null
rm -rf build/packages/_CPack_Packages
ls build/packages/*.deb
