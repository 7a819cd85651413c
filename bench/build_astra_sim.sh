#!/usr/bin/env bash
# Builds ASTRA-sim's analytical backend (congestion-aware) beside uroce, for
# bench/chakra_vs_astra_sim.sh, from an astra-sim checkout whose extern/
# submodules are filled in (chakra, network_backend/analytical,
# remote_memory_backend/analytical). It builds a copy, in which only the
# build glue changes: Debian's fmt, spdlog and yaml-cpp
# (libfmt-dev, libspdlog-dev, libyaml-cpp-dev) instead of the submodules and
# FetchContent (no network here), and, when the chakra checkout is newer or
# older than astra-sim expects, a forced include that names
# Chakra::FeederV3::ETFeeder as Chakra::ETFeeder. Prints the binary's path.
# Usage: bench/build_astra_sim.sh ASTRA_SIM_CHECKOUT [BUILD_DIR]
set -euo pipefail
source_dir=$(realpath "${1:?usage: $0 ASTRA_SIM_CHECKOUT [BUILD_DIR]}")
build_dir=$(realpath -m "${2:-/tmp/astra-sim-build}")
apt-get install -y -qq libfmt-dev libspdlog-dev libyaml-cpp-dev libprotobuf-dev protobuf-compiler >/dev/null
rm -rf "$build_dir" && mkdir -p "$build_dir"
cp -r "$source_dir" "$build_dir/src"
cd "$build_dir/src"
python3 - <<'PY'
import re
top = open("CMakeLists.txt").read()
top = top.replace('add_subdirectory("${CMAKE_CURRENT_SOURCE_DIR}/extern/helper/fmt")', "find_package(fmt REQUIRED)")
top = top.replace('add_subdirectory("${CMAKE_CURRENT_SOURCE_DIR}/extern/helper/spdlog")', "find_package(spdlog REQUIRED)")
top = re.sub(r"FetchContent_Declare\(\s*yaml-cpp.*?\)\s*FetchContent_MakeAvailable\(yaml-cpp\)",
             "find_package(yaml-cpp REQUIRED)", top, flags=re.S)
open("CMakeLists.txt", "w").write(top)
path = "extern/network_backend/analytical/CMakeLists.txt"
backend = open(path).read()
backend = backend.replace("add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/extern/yaml-cpp yaml-cpp)",
                          "find_package(yaml-cpp REQUIRED)")
open(path, "w").write(backend)
PY
schema=extern/graph_frontend/chakra/schema/protobuf
protoc et_def.proto --proto_path="$schema" --cpp_out="$schema"
cat > "$build_dir/feeder_name.h" <<'H'
#pragma once
#include "extern/graph_frontend/chakra/src/feeder_v3/et_feeder.h"
namespace Chakra { using FeederV3::ETFeeder; }
H
mkdir -p build/astra_analytical/build
cd build/astra_analytical/build
cmake .. -G Ninja -DBUILDTARGET=congestion_aware -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-include $build_dir/feeder_name.h -I$build_dir/src -I$build_dir/src/$schema" >/dev/null
ninja >/dev/null
echo "$build_dir/src/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Aware"
