#!/usr/bin/env bash
# The GPU host's reference measurements in one visit (issue 36's done-when), for a bundle made
# elsewhere (ci/gpu-bundle.sh) and run through ci/gpu-host-run.sh. Each step's output lands in
# OUT_DIR as it ends; with ARCHIVE set, OUT_DIR is packed into it after every step, so that a visit
# cut short keeps what it measured. Steps (STEPS, in this order, default all):
#   tests    every device test binary (ci/gpu-check.sh, tests only)
#   first    the quick profile with a fresh calibration cache: run-quick-first.json, its wall time
#   warm     the quick profile again (calibration cached): run-quick-warm.json
#   torch    PyTorch's figures beside the warm run's (ci/torch_side_by_side.py): torch-side-by-side.md
#   planted  `ab` at defaults of this build against CANDIDATE (a planted change: a build directory,
#            or the .tar.xz of bench binaries that ci/gpu-planted-build.sh packs, laid over a copy
#            of this build's bin/) over the GPU benchmarks: ab-planted/ and ab-planted.gate.json
#   aa       `ab` at defaults of this build against itself over the GPU benchmarks: ab-aa/, ab-aa.gate.json
# Each step's wall time goes to OUT_DIR/steps.tsv. Exit status: 0, else the first failed step's
# (the ab steps' own: 1 a regression decided, 4 undecided where --undecided fails).
# AB_ARGS: more arguments for both ab steps (word-split), e.g. "--budget 0 --undecided pass".
#
#   STEPS="tests first warm" ARCHIVE=/tmp/out.tgz bash ci/gpu-reference.sh OUT_DIR [CANDIDATE]
#   bash ci/gpu-host-run.sh DIR bash ci/gpu-reference.sh OUT_DIR DIR/pairbench-gpu-planted.tar.xz
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: [STEPS=...] [ARCHIVE=FILE] bash ci/gpu-reference.sh OUT_DIR [CANDIDATE]" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "ci/gpu-reference.sh: $1: cannot create" >&2; exit 2; }
candidate=${2:-}
# Absolute: gpu-host-run.sh runs this from the unpacked source root, not where it was called from.
[ -z "$candidate" ] || [ ! -e "$candidate" ] || candidate=$(cd "$(dirname "$candidate")" && pwd)/$(basename "$candidate")
if [[ "$candidate" == *.tar.xz ]]; then  # bench binaries to lay over a copy of this build's bin/
  [ -f "$candidate" ] || { echo "ci/gpu-reference.sh: $candidate: no such file" >&2; exit 2; }
  overlay_root=$(mktemp -d)  # not under OUT_DIR: ARCHIVE packs that
  trap 'rm -rf "$overlay_root"' EXIT
  overlay=$overlay_root/candidate-build
  mkdir -p "$overlay/bin" && cp -a build/bin/. "$overlay/bin/" &&
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$candidate" "$overlay/bin" ||
    { echo "ci/gpu-reference.sh: $candidate: cannot unpack" >&2; exit 2; }
  candidate=$overlay
fi
steps=${STEPS:-tests first warm torch planted aa}
pb=build/bin/pairbench
# The benchmarks that use the CUDA device in the quick profile (`pairbench list --format json`,
# "cuda": true): every device:cuda point, and the experiments that exist only on a GPU.
gpu_benchmarks='device:cuda|^(copy\.(h2d|d2h|bidirectional|overlap|creation)|limits\.gpu_copy|precision\.gpu_gemm|alloc\.gpu_allocators)/|^precision\.d2l_matmul/cublas/'
status=0

pack() {
  [ -n "${ARCHIVE:-}" ] || return 0
  tar czf "$ARCHIVE.partial" -C "$(dirname "$out")" "$(basename "$out")" && mv "$ARCHIVE.partial" "$ARCHIVE"
}

step() {  # step NAME COMMAND...: runs it, logs to OUT_DIR/NAME.log, records its wall time
  local name=$1 start rc
  shift
  start=$(date +%s.%N)
  "$@" >"$out/$name.log" 2>&1
  rc=$?
  printf '%s\t%d\t%.1f\n' "$name" "$rc" "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" >>"$out/steps.tsv"
  echo "== $name: exit $rc, $(tail -1 "$out/steps.tsv" | cut -f3) s"
  tail -12 "$out/$name.log"
  [ "$rc" != 0 ] && [ "$status" = 0 ] && status=$rc
  pack
  return 0
}

{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,ecc.mode.current,temperature.gpu \
    --format=csv
  echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  uname -a
} >"$out/host.txt" 2>&1
printf 'step\texit\twall_s\n' >"$out/steps.tsv"

for s in $steps; do
  case $s in
    tests) step tests env GPU_CHECK_RUN=0 bash ci/gpu-check.sh build/bin build/tests "$out/device-tests" ;;
    first)
      rm -rf results/calibration
      step first "$pb" run --profile quick --bench-dir build/bin --out "$out/run-quick-first.json" ;;
    warm) step warm "$pb" run --profile quick --bench-dir build/bin --out "$out/run-quick-warm.json" ;;
    torch) step torch python3 ci/torch_side_by_side.py "$out/run-quick-warm.json" "$out/torch-side-by-side.md" \
             --json "$out/torch-side-by-side.json" ;;
    planted)
      if [ -z "$candidate" ]; then echo "== planted: skipped (no CANDIDATE)"; continue; fi
      step planted "$pb" ab --baseline-build build --candidate-build "$candidate" --benchmarks "$gpu_benchmarks" \
        --out-dir "$out/ab-planted" --json "$out/ab-planted.gate.json" --markdown "$out/ab-planted.md" ${AB_ARGS:-} ;;
    aa) step aa "$pb" ab --baseline-build build --candidate-build build --benchmarks "$gpu_benchmarks" \
          --out-dir "$out/ab-aa" --json "$out/ab-aa.gate.json" --markdown "$out/ab-aa.md" ${AB_ARGS:-} ;;
    *) echo "ci/gpu-reference.sh: STEPS: unknown step '$s' (tests first warm torch planted aa)" >&2; exit 2 ;;
  esac
done
cp results/history.sqlite "$out/" 2>/dev/null
pack
cat "$out/steps.tsv"
exit "$status"
