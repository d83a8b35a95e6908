#!/usr/bin/env bash
# On a GPU host, from a folder holding pairbench-gpu.tgz (ci/gpu-bundle.sh): unpacks it, puts the
# source where the build was configured (the binaries carry that path: the plots, the claims),
# installs the allocators where the alloc arms look for them (where they are missing), finds
# CUDA's libraries (the toolkit's, or Python wheels' such as PyTorch's) and runs COMMAND in the
# unpacked source root with LD_LIBRARY_PATH set. Its exit status is COMMAND's (2: cannot unpack).
#
#   bash ci/gpu-host-run.sh BUNDLE_DIR COMMAND...
#   bash ci/gpu-host-run.sh /tmp/b bash ci/gpu-check.sh build/bin build/tests /tmp/b/out
#
# Seen working with this recipe on an H200 host (16-core Xeon, Ubuntu 24.04, driver 580, CUDA
# 13.0): CUDA's libraries under the toolkit's targets/x86_64-linux/lib and PyTorch's nvidia/cu13/lib
# and nvidia/nccl/lib.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bash ci/gpu-host-run.sh BUNDLE_DIR COMMAND..." >&2
  exit 2
fi
bundle=$(cd "$1" 2>/dev/null && pwd) || { echo "ci/gpu-host-run.sh: $1: no such folder" >&2; exit 2; }
shift
tar xzf "$bundle/pairbench-gpu.tgz" -C "$bundle" || { echo "ci/gpu-host-run.sh: cannot unpack $bundle/pairbench-gpu.tgz" >&2; exit 2; }
if [ -e "$bundle/pairbench-gpu-layouts.tar.xz" ]; then  # xz, else Python's lzma (hosts without xz-utils)
  { command -v xz >/dev/null && tar xJf "$bundle/pairbench-gpu-layouts.tar.xz" -C "$bundle/fresh/build/bin"; } ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$bundle/pairbench-gpu-layouts.tar.xz" "$bundle/fresh/build/bin" ||
    echo "ci/gpu-host-run.sh: note: cannot unpack the layout variants; every process runs the plain binaries" >&2
fi
cache="$bundle/fresh/build/CMakeCache.txt"
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")
if [ -n "$src" ] && [ "$src" != "$bundle/fresh" ]; then
  if [ -e "$src" ] && [ ! -L "$src" ]; then
    echo "ci/gpu-host-run.sh: note: $src exists here; the build's compiled-in paths point there, not at $bundle/fresh" >&2
  else
    mkdir -p "$(dirname "$src")" && ln -sfn "$bundle/fresh" "$src"
  fi
  configured=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$cache")
  if [ -n "$configured" ] && [ "$configured" != "$src/build" ] && [ ! -e "$configured" ]; then
    mkdir -p "$(dirname "$configured")" && ln -sfn "$bundle/fresh/build" "$configured"
  fi
fi
for lib in "$bundle"/alloclib/*; do
  [ -e "$lib" ] || continue
  target="/usr/lib/x86_64-linux-gnu/$(basename "$lib")"
  [ -e "$target" ] || cp "$lib" "$target" 2>/dev/null ||
    echo "ci/gpu-host-run.sh: note: cannot install $target; the $(basename "$lib") arm will say not_supported" >&2
done
cuda=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublas.so.13*' -o -name 'libcurand.so.10*' -o -name 'libnccl.so.2*' \) 2>/dev/null |
  xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$bundle/lib:${cuda}${LD_LIBRARY_PATH:-}"
cd "$bundle/fresh" && "$@"
