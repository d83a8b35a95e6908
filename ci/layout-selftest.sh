#!/usr/bin/env bash
# The layout self-test (docs/gate.md, "Layout"; issue 23): does `pairbench ab` call a change that only
# moves code and data a change? Builds this source plain and with layout-only perturbations (the same
# behaviour, other addresses), runs `pairbench ab` of the plain build against each at ab's defaults,
# and lists every decided change. Layout must read as noise: any decided regression or improvement
# is a failure.
#
# Perturbations (PERTURBATIONS, comma-separated; default all five):
#   dead_code_1k, dead_code_3k  never-called code of 1000 / 3000 bytes in every kernels translation unit
#                               (PAIRBENCH_LAYOUT_PERTURBATION, kernels/common/layout_perturbation.h)
#   link_reversed               bench objects, kernels archive members and libraries in reverse link order
#   align_functions_32          -falign-functions=32 (GCC's default here: 16)
#   align_loops_64              loops aligned to 64 bytes (PAIRBENCH_ALIGN_LOOPS; the default: 32)
# (A longer build-directory path was tried and dropped: no path of the build tree reaches the bench
# binaries, so they came out byte-identical. Each perturbed binary is checked against the plain one;
# an identical one is reported and not run.)
#
# Environment:
#   TARGETS      bench binaries to build and compare (default "bench_precision bench_data": the issue's)
#   LAYOUT       ab --layout of each comparison: random (default), none, or "none random" for both
#   LAYOUT_DIR   where the build trees go (default build-layout)
#   PLAIN_BUILD  an existing build of this very source to use as the plain side (else LAYOUT_DIR/plain),
#                configured as the perturbed trees are (Release, PAIRBENCH_WITH_CUDA=OFF; checked)
#   PAIRBENCH    the harness that runs ab (default build/bin/pairbench; built if missing)
#   VARIANTS     PAIRBENCH_LAYOUT_VARIANTS of the builds (default: CMake's default)
#   JOBS         build parallelism (default 2)
# Arguments go to every `pairbench ab` (e.g. --seed 1 --budget 120).
# Exit: 0 no decided change; 1 some benchmark decided a regression or an improvement; 2 a build or an
# ab run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
src="$PWD"
all_perturbations="dead_code_1k,dead_code_3k,link_reversed,align_functions_32,align_loops_64"
IFS=',' read -r -a perturbations <<< "${PERTURBATIONS:-$all_perturbations}"
read -r -a targets <<< "${TARGETS:-bench_precision bench_data}"
read -r -a layouts <<< "${LAYOUT:-random}"
# ab compares only these binaries' areas: a PLAIN_BUILD with more bench binaries would otherwise run
# its other benchmarks on its side alone, inside ab's budget.
experiments=$(printf '%s\n' "${targets[@]}" | sed 's/^bench_//' | paste -sd, -)
dir="${LAYOUT_DIR:-build-layout}"
jobs="${JOBS:-2}"
pb="${PAIRBENCH:-build/bin/pairbench}"

cmake_args_of() {  # the configure arguments of one perturbation (none: the plain build)
  local args=(-DCMAKE_BUILD_TYPE=Release -DPAIRBENCH_WITH_CUDA=OFF -DPAIRBENCH_BUILD_TESTS=OFF)
  if [ -n "${VARIANTS:-}" ]; then args+=(-DPAIRBENCH_LAYOUT_VARIANTS="$VARIANTS"); fi
  case "$1" in
    plain) ;;
    dead_code_1k|dead_code_3k|link_reversed) args+=(-DPAIRBENCH_LAYOUT_PERTURBATION="$1") ;;
    align_functions_32) args+=(-DCMAKE_CXX_FLAGS=-falign-functions=32) ;;
    align_loops_64) args+=(-DPAIRBENCH_ALIGN_LOOPS=64) ;;
    *) echo "layout-selftest: unknown perturbation '$1' (expected one of $all_perturbations)" >&2; return 2 ;;
  esac
  printf '%s\n' "${args[@]}"
}

build() {  # build NAME: configures and builds TARGETS into $dir/NAME; prints its seconds
  local name="$1" start args
  start=$(date +%s)
  mapfile -t args < <(cmake_args_of "$name") || return 2
  [ "${#args[@]}" -gt 0 ] || return 2
  cmake -S "$src" -B "$dir/$name" "${args[@]}" > "$dir/$name.configure.log" 2>&1 &&
    cmake --build "$dir/$name" -j"$jobs" --target "${targets[@]}" > "$dir/$name.build.log" 2>&1 || {
    echo "layout-selftest: building $name failed; see $dir/$name.configure.log and $dir/$name.build.log" >&2
    return 2
  }
  echo $(( $(date +%s) - start ))
}

for p in "${perturbations[@]}"; do  # every name checked before anything is built
  cmake_args_of "$p" > /dev/null || exit 2
done
for l in "${layouts[@]}"; do
  case "$l" in random|none) ;; *) echo "layout-selftest: LAYOUT '$l': expected random, none or both" >&2; exit 2 ;; esac
done

# A PLAIN_BUILD configured otherwise than the perturbed trees (CUDA on, another build type or flags)
# differs from them in more than layout: its comparisons would fail the self-test for that. Refused
# before anything is built, a line per setting.
if [ -n "${PLAIN_BUILD:-}" ]; then
  cache="$PLAIN_BUILD/CMakeCache.txt"
  [ -f "$cache" ] || { echo "layout-selftest: PLAIN_BUILD $PLAIN_BUILD: no CMakeCache.txt (expected a CMake build tree)" >&2; exit 2; }
  mapfile -t plain_args < <(cmake_args_of plain)
  plain_args+=(-DPAIRBENCH_LAYOUT_PERTURBATION= -DCMAKE_CXX_FLAGS=)
  mismatch=0
  for a in "${plain_args[@]}"; do
    kv="${a#-D}" && key="${kv%%=*}" && want="${kv#*=}"
    [ "$key" = PAIRBENCH_BUILD_TESTS ] && continue  # tests are not in the bench binaries
    have=$(sed -n "s/^$key:[A-Z]*=//p" "$cache" | head -1)
    if [ "$have" != "$want" ]; then
      echo "layout-selftest: PLAIN_BUILD $PLAIN_BUILD: $key is '$have', the perturbed builds' is '$want' (configure it as they are, or leave PLAIN_BUILD unset)" >&2
      mismatch=1
    fi
  done
  [ "$mismatch" = 0 ] || exit 2
fi

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
t0=$(date +%s)

if [ ! -x "$pb" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j"$jobs" --target pairbench > /dev/null || exit 2
fi

build_s=0
if [ -n "${PLAIN_BUILD:-}" ]; then
  plain="$(cd "$PLAIN_BUILD" && pwd)"
  cmake --build "$plain" -j"$jobs" --target "${targets[@]}" > "$dir/plain.build.log" 2>&1 || {
    echo "layout-selftest: building $plain failed; see $dir/plain.build.log" >&2; exit 2; }
else
  s=$(build plain) || exit 2
  build_s=$((build_s + s))
  echo "layout-selftest: plain build: ${s} s"
  plain="$dir/plain"
fi

# Every build first, then every comparison: no compiler runs beside a measurement.
for p in "${perturbations[@]}"; do
  s=$(build "$p") || exit 2
  build_s=$((build_s + s))
  echo "layout-selftest: $p build: ${s} s"
done

status=0
summary=()
for p in "${perturbations[@]}"; do
  same=1
  for t in "${targets[@]}"; do
    cmp -s "$plain/bin/$t" "$dir/$p/bin/$t" || same=0
  done
  if [ "$same" = 1 ]; then
    echo "layout-selftest: $p: bench binaries identical to the plain ones: not a layout change, not run"
    summary+=("$p: identical binaries, not run")
    continue
  fi
  for layout in "${layouts[@]}"; do
    out="$dir/ab-$p-$layout"
    rm -rf "$out"
    start=$(date +%s)
    "$pb" ab --baseline-build "$plain" --candidate-build "$dir/$p" --experiments "$experiments" --layout "$layout" --out-dir "$out" \
      --json "$out.gate.json" --db none "$@" > "$out.log" 2>&1
    ab_status=$?
    secs=$(( $(date +%s) - start ))
    if [ ! -f "$out.gate.json" ] || { [ "$ab_status" != 0 ] && [ "$ab_status" != 1 ] && [ "$ab_status" != 4 ]; }; then
      echo "layout-selftest: ab $p --layout $layout failed (exit $ab_status); see $out.log" >&2
      exit 2
    fi
    line=$(/usr/bin/python3 ci/layout_selftest_count.py "$out.gate.json" "$p" "$layout" "$secs")
    decided_status=$?
    echo "layout-selftest: $line"
    summary+=("$line")
    if [ "$decided_status" != 0 ]; then status=1; fi
  done
done

echo
echo "layout-selftest: plain $plain against ${#perturbations[@]} layout-only perturbations (${targets[*]})"
for l in "${summary[@]}"; do echo "  $l"; done
echo "layout-selftest: builds ${build_s} s, total $(( $(date +%s) - t0 )) s; exit $status (1: some layout-only change was decided)"
exit "$status"
