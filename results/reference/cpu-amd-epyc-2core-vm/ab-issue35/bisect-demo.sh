#!/usr/bin/env bash
# A range of 8 commits on top of main: the 5th plants ~12 % more micro-kernel work in the blocked
# GEMM (every 8th full tile computed twice), the others change docs only.
set -euo pipefail
rm -rf /tmp/bis; git clone -q /work/main /tmp/bis; cd /tmp/bis
git config user.email demo@example.invalid; git config user.name demo
good=$(git rev-parse HEAD)
for i in 1 2 3 4 5 6 7 8; do
  if [ $i = 5 ]; then
    python3 - <<'PY'
p='kernels/gemm/cpu_gemm.cpp'
s=open(p).read()
old='''            if (w == nr && h == mr) {
              kern.fn(kc, ap, bp, ct, n, accumulate);'''
new='''            if (w == nr && h == mr) {
              if ((ir / mr) % 8 == 0) kern.fn(kc, ap, bp, edge, nr, false);  // planted: wasted work
              kern.fn(kc, ap, bp, ct, n, accumulate);'''
assert old in s; open(p,'w').write(s.replace(old,new))
PY
    git commit -qam "plant: the blocked GEMM computes every 8th tile twice"
  else
    echo "docs-only change $i" >> docs/bisect.md
    git commit -qam "docs: line $i"
  fi
done
bad=$(git rev-parse HEAD)
echo "good $good bad $bad planted $(git rev-parse HEAD~3)"
time /work/main/build/bin/pairbench bisect --good $good --bad $bad --benchmarks 'precision.cpu_gemm_loops/blocked/n:256' --json /tmp/bisect.json
