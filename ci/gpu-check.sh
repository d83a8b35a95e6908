#!/usr/bin/env bash
# The GPU checks, for a machine with a CUDA device and a build made elsewhere (the build machine
# needs no GPU: CUDA code compiles and links everywhere). Runs every device-labelled test binary
# (CUDA against host references on fresh random inputs) and the quick profile with its GPU arms,
# and writes what it saw to OUT_DIR: nvidia-smi's view, each test's GoogleTest JSON, the run file.
#
#   ci/gpu-check.sh BIN_DIR TEST_DIR OUT_DIR [pairbench run options...]
#
# BIN_DIR holds pairbench and the bench_* binaries (build/bin), TEST_DIR the *_cuda_test,
# *_gpu_test, *_cublas_test and cuda_*_test binaries (build/tests). Exit status: 0 when every test passed and
# the run stored every benchmark; else the first failure's status. Without a device it says
# "skipped: no CUDA device" and exits 0, as the device tests do.
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: ci/gpu-check.sh BIN_DIR TEST_DIR OUT_DIR [pairbench run options...]" >&2
  exit 2
fi
bin_dir=$1 test_dir=$2 out_dir=$3
shift 3
mkdir -p "$out_dir"
if ! nvidia-smi -L >"$out_dir/nvidia-smi.txt" 2>&1; then
  echo "ci/gpu-check.sh: skipped: no CUDA device (nvidia-smi -L failed)"
  exit 0
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv >>"$out_dir/nvidia-smi.txt" 2>&1 || true
cat "$out_dir/nvidia-smi.txt"

status=0
mkdir -p "$out_dir/tests"
for t in "$test_dir"/*_test; do
  name=$(basename "$t")
  # The device tests by the naming rule of tests/CMakeLists.txt: a word cuda, gpu or cublas.
  [[ -x "$t" && "_${name}_" =~ _(cuda|gpu|cublas)_ ]] || continue
  start=$(date +%s%N)
  "$t" --gtest_output="json:$out_dir/tests/$name.json" >"$out_dir/tests/$name.log" 2>&1
  rc=$?
  printf '%-24s exit %d  %5s s  %s\n' "$name" "$rc" "$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}')" \
    "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test' "$out_dir/tests/$name.log" | tr -s ' \n' ' ')"
  if [ "$rc" != 0 ]; then
    tail -30 "$out_dir/tests/$name.log"
    [ "$status" = 0 ] && status=$rc
  fi
done

# The quick profile on this machine, GPU arms included; every arm is verified before it is timed
# (GPU_CHECK_RUN=0: the tests only).
[ "${GPU_CHECK_RUN:-1}" = 0 ] && exit "$status"
start=$(date +%s)
"$bin_dir/pairbench" run --profile quick --bench-dir "$bin_dir" --no-history --out "$out_dir/run-quick.json" "$@" \
  >"$out_dir/run-quick.log" 2>&1
rc=$?
echo "pairbench run --profile quick: exit $rc in $(( $(date +%s) - start )) s"
tail -40 "$out_dir/run-quick.log"
[ "$rc" != 0 ] && [ "$status" = 0 ] && status=$rc
exit "$status"
