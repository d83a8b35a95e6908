#!/usr/bin/env bash
# Fuzzing tier: `ci/fuzz.sh [seconds]` (default 600) builds the libFuzzer targets of tests/fuzz/
# (the run-file reader; the gate on two parsed runs) with clang, AddressSanitizer and UBSan in
# their own tree (${BUILD_FUZZ_DIR:-build-fuzz}), then runs each for an equal share of the budget.
# Exit 0: no crash, timeout (an input taking > 10 s), leak or broken invariant; 1: one of those,
# with the input kept in build-fuzz/artifacts/<target>/ (and $ARTIFACTS_DIR/fuzz/ when set): copy
# it to tests/fixtures/fuzz_regressions/ with the fix. 2: the fuzz build failed. Where clang or
# libFuzzer (Debian: clang, libclang-rt-14-dev) is missing it says "skipped" and exits 0.
# Corpora grow in build-fuzz/corpus/<target>/ from run to run; the seeds are tests/fixtures/.
# FUZZ_JOBS=2 runs the targets at once, each for the whole budget (default: one after the other).
set -uo pipefail
cd "$(dirname "$0")/.."
budget_s="${1:-600}"
build="${BUILD_FUZZ_DIR:-build-fuzz}"
targets=(run_file_fuzzer gate_fuzzer)

probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > "$probe_dir/p.cpp"
if ! command -v clang++ >/dev/null 2>&1 ||
   ! clang++ -fsanitize=fuzzer "$probe_dir/p.cpp" -o "$probe_dir/p" >/dev/null 2>&1; then
  echo "ci/fuzz.sh: skipped: clang/libFuzzer not installed (Debian packages clang, libclang-rt-14-dev)"
  exit 0
fi

# -O1 -g, as AddressSanitizer's guide builds: a shorter compile than RelWithDebInfo's -O2 (the
# fuzz build is part of every ci/test.sh), and the stack traces of a finding stay readable.
cmake -S . -B "$build" -DPAIRBENCH_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" \
  >"$probe_dir/configure.log" 2>&1 || { cat "$probe_dir/configure.log" >&2; echo "ci/fuzz.sh: configure failed" >&2; exit 2; }
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$probe_dir/build.log" 2>&1 ||
  { cat "$probe_dir/build.log" >&2; echo "ci/fuzz.sh: build failed" >&2; exit 2; }

# Seeds from the test fixtures, minified (inputs cost time in proportion to their bytes): every
# good run file and every bad one, and for the gate pairs of runs joined by the separator line
# the gate target splits at (tests/fuzz/fuzz_checks.h). Inputs a fuzzer once failed on come too.
fixtures=tests/fixtures
seeds="$build/seeds"
rm -rf "$seeds" && mkdir -p "$seeds/run_file_fuzzer" "$seeds/gate_fuzzer"
/usr/bin/python3 ci/fuzz_seeds.py "$fixtures" "$seeds" || cp "$fixtures"/*.json "$fixtures"/bad_run_files/*.json "$seeds/run_file_fuzzer/"
for target in "${targets[@]}"; do cp "$fixtures/fuzz_regressions/$target"-* "$seeds/$target/" 2>/dev/null; done

# Runs one target for $2 seconds; its log is $build/logs/<target>.log, its exit status libFuzzer's.
fuzz_target() {
  local target=$1 seconds=$2 max_len=8192
  # -max_len: a run file of a few benchmarks (run_minimal.json is 4.7 KB minified; two for the
  # gate) reaches every path, and longer inputs only cost time; longer seeds are read truncated.
  # -timeout 10: an input that takes 10 s is a bug (a hang).
  [ "$target" = gate_fuzzer ] && max_len=32768
  mkdir -p "$build/corpus/$target" "$build/artifacts/$target" "$build/logs"
  UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    "$build/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
    -dict=tests/fuzz/run_file.dict -print_final_stats=1 -artifact_prefix="$build/artifacts/$target/$target-" \
    "$build/corpus/$target" "$seeds/$target" >"$build/logs/$target.log" 2>&1
}

# One target after the other, each with an equal share of the budget; or, with FUZZ_JOBS >= 2, all
# at once, each for the whole budget.
declare -A status_of
if [ "${FUZZ_JOBS:-1}" -ge 2 ]; then
  per_target_s=$budget_s
  declare -A pid_of
  for target in "${targets[@]}"; do fuzz_target "$target" "$per_target_s" & pid_of[$target]=$!; done
  for target in "${targets[@]}"; do wait "${pid_of[$target]}"; status_of[$target]=$?; done
else
  per_target_s=$(( budget_s / ${#targets[@]} ))
  (( per_target_s >= 1 )) || per_target_s=1
  for target in "${targets[@]}"; do fuzz_target "$target" "$per_target_s"; status_of[$target]=$?; done
fi

failed=0
for target in "${targets[@]}"; do
  log="$build/logs/$target.log"
  artifacts="$build/artifacts/$target"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  inputs=$(find "$build/corpus/$target" -type f | wc -l)
  if [ "${status_of[$target]}" = 0 ]; then
    echo "ci/fuzz.sh: $target: ${runs:-?} executions in $per_target_s s (${rate:-?} exec/s), corpus $inputs inputs: no crash, timeout or leak"
  else
    failed=1
    echo "ci/fuzz.sh: $target FAILED (libFuzzer exit ${status_of[$target]}) after ${runs:-?} executions; last lines of $log:" >&2
    grep -v '^#[0-9]' "$log" | tail -n 40 >&2
    echo "ci/fuzz.sh: kept inputs: $(ls "$artifacts" | tr '\n' ' ')(in $artifacts)" >&2
    if [ -n "${ARTIFACTS_DIR:-}" ]; then
      mkdir -p "$ARTIFACTS_DIR/fuzz" && cp "$artifacts"/* "$log" "$ARTIFACTS_DIR/fuzz/" 2>/dev/null
    fi
  fi
done
exit "$failed"
