#!/usr/bin/env bash
# Installs the Debian 12 packages pairbench needs, only those missing. Needs root (or sudo).
# The CUDA toolkit is not a Debian package here: where nvcc exists (/usr/local/cuda) the CUDA
# kernels are built; elsewhere the build goes on without them and GPU arms say why.
set -euo pipefail

packages=(
  cmake g++ make pkg-config git
  libbenchmark-dev libbenchmark-tools   # Google Benchmark, and its compare.py
  libgtest-dev libgmock-dev             # GoogleTest
  nlohmann-json3-dev libcli11-dev libsqlite3-dev
  libpq-dev                             # the history on a PostgreSQL server (libpq)
  postgresql-15                         # the history tests' throw-away server (tests/fixtures/postgres/)
  libopenblas-dev
  zlib1g-dev libhwy-dev                 # pipeline.loader decodes deflated samples; data.simd_preprocess uses Highway
  python3 python3-scipy python3-matplotlib   # compare.py needs scipy; plots/ needs matplotlib
  libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0   # allocator arms (LD_PRELOAD), alloc.* experiments
  chromium                              # plots tests: load the report in a headless browser
  valgrind                              # instruction counts where there is no PMU (callgrind)
  python3-jsonschema                    # the report validates run files against results/schema/
  python3-yaml                          # tests/slurm: the CI workflows parse
  slurm-wlm munge                       # tests/slurm: the job array on a one-node Slurm (~25 s)
  clang libclang-rt-14-dev              # the fuzzing tier (ci/fuzz.sh): libFuzzer, ASan, UBSan
  clang-format black                    # the house formatters (ci/format-check.sh: .clang-format, pyproject.toml)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "ci/setup-deps.sh: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
