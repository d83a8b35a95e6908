#!/bin/sh
# Google Benchmark's compare.py (Debian: libbenchmark-tools, python3-scipy) must read pairbench
# run files unchanged. Exit 77 (skipped) where compare.py or scipy is not installed.
set -eu
compare=/usr/share/benchmark/compare.py
[ -f "$compare" ] || { echo "skipped: $compare not installed (libbenchmark-tools)"; exit 77; }
/usr/bin/python3 -c 'import scipy' 2>/dev/null || { echo "skipped: python3-scipy not installed"; exit 77; }
out=$(/usr/bin/python3 "$compare" benchmarks "$1" "$2")
echo "$out"
# Every benchmark of the first run appears in the comparison.
for name in $(/usr/bin/python3 -c 'import json,sys; print("\n".join(sorted({b["name"] for b in json.load(open(sys.argv[1]))["benchmarks"]})))' "$1"); do
  echo "$out" | grep -q -F "$name" || { echo "missing from compare.py output: $name"; exit 1; }
done
