#!/usr/bin/env bash
# The house formatters, checked: clang-format (.clang-format) over every tracked C++ and CUDA source,
# black (pyproject.toml) over every tracked Python file. Exit 0 when nothing would change, 1 naming
# each file that would, 77 ("skipped") where a formatter is missing (ci/setup-deps.sh installs both).
# FIX=1 rewrites the files instead of checking them.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in clang-format black; do
  if ! command -v "$tool" >/dev/null; then
    echo "ci/format-check.sh: skipped: $tool is not installed (ci/setup-deps.sh installs it)" >&2
    exit 77
  fi
done
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t cpp < <(git ls-files -- '*.cpp' '*.h' '*.cu' '*.cuh' ':!:tests/fixtures/**')
  mapfile -t py < <(git ls-files -- '*.py' ':!:tests/fixtures/**')
else
  mapfile -t cpp < <(find bench kernels harness tests -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -not -path 'tests/fixtures/*')
  mapfile -t py < <(find ci plots tests -type f -name '*.py' -not -path 'tests/fixtures/*')
fi
if [ "${FIX:-0}" = 1 ]; then
  clang-format -i "${cpp[@]}"
  black -q "${py[@]}"
  exit 0
fi
status=0
unformatted=()
for f in "${cpp[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if ((${#unformatted[@]})); then
  printf 'ci/format-check.sh: clang-format would change %s\n' "${unformatted[@]}" >&2
  status=1
fi
err=$(mktemp)
if ! black --check -q "${py[@]}" 2>"$err"; then
  sed 's/^would reformat /ci\/format-check.sh: black would change /' "$err" >&2
  status=1
fi
rm -f "$err"
if [ "$status" = 0 ]; then
  echo "ci/format-check.sh: ${#cpp[@]} C++/CUDA and ${#py[@]} Python files formatted"
else
  echo "ci/format-check.sh: FIX=1 ci/format-check.sh rewrites them" >&2
fi
exit "$status"
