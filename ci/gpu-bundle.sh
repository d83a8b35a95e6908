#!/usr/bin/env bash
# Packs a build made here (a CI runner without a GPU: CUDA code compiles and links everywhere) for
# a GPU host that has the NVIDIA driver and the CUDA 13 runtime but none of Debian's libraries
# (seen: Ubuntu 24.04 images with CUDA and PyTorch). Writes OUT_DIR/pairbench-gpu.tgz holding:
#   fresh/     the tracked source (reference results left out), build/bin (pairbench and the bench
#              binaries, without layout variants), build/tests (the device test binaries) and the
#              build's CMakeCache.txt (where the build was configured: its compiled-in paths)
#   lib/       the Debian shared libraries those binaries load, less libc, libstdc++ and CUDA's own
#              (the host's driver and runtime are the ones to use)
#   alloclib/  the allocators the alloc arms LD_PRELOAD (jemalloc, mimalloc, tcmalloc)
# Beside it OUT_DIR/pairbench-gpu-layouts.tar.xz, the layout variants (below). Run it there with
# ci/gpu-host-run.sh. Measured: about 30 MB packed, 90 MB unpacked; the variants 4 MB more.
#
#   ci/gpu-bundle.sh [BUILD_DIR=build] [OUT_DIR=results/gpu-bundle]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" 2>/dev/null && pwd) || { echo "ci/gpu-bundle.sh: ${1:-$root/build}: no such build folder" >&2; exit 2; }
out=${2:-$root/results/gpu-bundle}
for f in "$build/bin/pairbench" "$build/CMakeCache.txt"; do
  [ -e "$f" ] || { echo "ci/gpu-bundle.sh: $f: missing (build first: ci/build.sh)" >&2; exit 2; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/fresh/build/bin" "$stage/fresh/build/tests" "$stage/lib" "$stage/alloclib" "$out"
(cd "$root" && git ls-files -z | grep -zv '^results/reference/' | tar --null -cf - -T -) | tar -xf - -C "$stage/fresh"
mapfile -t bins < <(ls "$build"/bin/pairbench "$build"/bin/bench_* | grep -v '\.layout[0-9]*$')
mapfile -t tests < <(ls "$build"/tests/*_test 2>/dev/null | grep -E '_(cuda|gpu|cublas)_|/cuda_' || true)
cp "${bins[@]}" "$stage/fresh/build/bin/"
[ ${#tests[@]} -eq 0 ] || cp "${tests[@]}" "$stage/fresh/build/tests/"
cp "$build/CMakeCache.txt" "$stage/fresh/build/"
# What the binaries load from this machine, but what every host has (libc, libstdc++) or must
# bring itself (the CUDA driver and runtime libraries, matched to its driver).
for f in "${bins[@]}" "${tests[@]}"; do ldd "$f" | awk '/=> \//{print $3}'; done | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*|libpthread|libdl|librt|libcuda|libcudart|libcublas|libcublasLt|libcurand|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
for a in libjemalloc.so.2 libmimalloc.so.2 libtcmalloc_minimal.so.4; do
  if [ -e "/usr/lib/x86_64-linux-gnu/$a" ]; then cp -L "/usr/lib/x86_64-linux-gnu/$a" "$stage/alloclib/"; fi
done
tar czf "$out/pairbench-gpu.tgz.partial" -C "$stage" fresh lib alloclib
mv "$out/pairbench-gpu.tgz.partial" "$out/pairbench-gpu.tgz"
# The layout variants (bench_<area>.layout<k>, relinks of the same code: `run` and `ab` draw one per
# process by default) beside it, in xz with a dictionary larger than all of them together: they
# differ in placement only, so they pack to about 4 MB of about 100 MB (gzip's 32 KiB window
# cannot see that). LAYOUT_VARIANTS=0 leaves them out (then every process runs the plain binary).
rm -f "$out/pairbench-gpu-layouts.tar.xz"
mapfile -t variants < <(cd "$build/bin" && ls | grep -E '^bench_[a-z_]+\.layout[0-9]+$' || true)
if [ "${LAYOUT_VARIANTS:-1}" != 0 ] && [ ${#variants[@]} -gt 0 ]; then
  tar cf - -C "$build/bin" "${variants[@]}" | xz -T0 -6 --lzma2=dict=192MiB >"$out/pairbench-gpu-layouts.tar.xz.partial"
  mv "$out/pairbench-gpu-layouts.tar.xz.partial" "$out/pairbench-gpu-layouts.tar.xz"
  echo "ci/gpu-bundle.sh: wrote $out/pairbench-gpu-layouts.tar.xz ($(du -h "$out/pairbench-gpu-layouts.tar.xz" | cut -f1); ${#variants[@]} layout variants)"
fi
echo "ci/gpu-bundle.sh: wrote $out/pairbench-gpu.tgz ($(du -h "$out/pairbench-gpu.tgz" | cut -f1); ${#bins[@]} binaries, ${#tests[@]} device tests, $(ls "$stage/lib" | wc -l) libraries)"
echo "on the GPU host: bash ci/gpu-host-run.sh DIR_WITH_THE_TGZ bash ci/gpu-check.sh build/bin build/tests OUT_DIR"
