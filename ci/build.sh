#!/usr/bin/env bash
# Configures and builds pairbench (Release unless BUILD_TYPE says otherwise) into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
"./ci/setup-deps.sh"
build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
