#!/usr/bin/env bash
# The candidate for the GPU gate's self-test: the same source with a planted slowdown in one CUDA
# kernel (CMake PAIRBENCH_PLANTED_SLOWDOWN: axpb_kernel<float>, about PERCENT % at 16M elements on
# an H100/H200), built here without a GPU, packed for ci/gpu-reference.sh's `planted` step:
# OUT_DIR/pairbench-gpu-planted.tar.xz holds bench_precision and its layout variants, the only
# binaries the plant changes (ci/gpu-reference.sh lays them over a copy of the bundle's build/bin).
#
#   ci/gpu-planted-build.sh [BUILD_DIR=build-planted] [OUT_DIR=results/gpu-bundle] [PERCENT=10]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-planted}
out=${2:-$root/results/gpu-bundle}
percent=${3:-10}
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "ci/gpu-planted-build.sh: no nvcc: the plant is CUDA code" >&2; exit 2; }
# The bundle's layout variants come from the main build: the same count here, so that every variant
# the candidate draws is planted (LAYOUT_VARIANTS, default the CMake default of 8).
configured=$(cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPAIRBENCH_BUILD_TESTS=OFF \
  -DPAIRBENCH_LAYOUT_VARIANTS="${LAYOUT_VARIANTS:-8}" -DPAIRBENCH_PLANTED_SLOWDOWN="$percent") ||
  { echo "ci/gpu-planted-build.sh: cmake failed" >&2; exit 3; }
grep -q "pairbench: CUDA kernels ON" <<<"$configured" ||
  { echo "ci/gpu-planted-build.sh: CUDA is off in $build: the plant would compile out" >&2; exit 2; }
targets=(bench_precision)
variants=$(sed -n 's/^PAIRBENCH_LAYOUT_VARIANTS:STRING=//p' "$build/CMakeCache.txt")
for ((k = 1; k < ${variants:-1}; ++k)); do targets+=("bench_precision.layout$k"); done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null
mkdir -p "$out"
(cd "$build/bin" && tar cf - "${targets[@]}") | xz -T0 -6 --lzma2=dict=64MiB >"$out/pairbench-gpu-planted.tar.xz.partial"
mv "$out/pairbench-gpu-planted.tar.xz.partial" "$out/pairbench-gpu-planted.tar.xz"
echo "ci/gpu-planted-build.sh: wrote $out/pairbench-gpu-planted.tar.xz ($(du -h "$out/pairbench-gpu-planted.tar.xz" | cut -f1); ${#targets[@]} binaries, axpb_kernel<float> planted +$percent %)"
