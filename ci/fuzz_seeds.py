"""ci/fuzz.sh's seed corpora: every run-file fixture (and every malformed one) minified as a
run_file_fuzzer seed, and pairs of them, joined by the separator the gate target splits at
(tests/fuzz/fuzz_checks.h), as gate_fuzzer seeds.

    fuzz_seeds.py FIXTURES_DIR SEEDS_DIR"""
import glob, json, os, sys

fixtures, seeds = sys.argv[1], sys.argv[2]


def minified(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        return json.dumps(json.loads(data), separators=(",", ":"), ensure_ascii=False).encode()
    except ValueError:
        return data  # not JSON (a truncated or empty file): a seed as it is


for path in glob.glob(f"{fixtures}/*.json") + glob.glob(f"{fixtures}/bad_run_files/*.json"):
    with open(os.path.join(seeds, "run_file_fuzzer", os.path.basename(path)), "wb") as f:
        f.write(minified(path))
separator = b"\n#### current run ####\n"
pairs = [
    ("run_minimal", "run_minimal"),
    ("run_cpu_a", "run_cpu_b"),
    ("run_cpu_b", "run_cpu_a"),
    ("run_minimal", "run_small"),
]
pairs += [
    ("run_minimal", "bad_run_files/" + os.path.basename(p)[:-5]) for p in glob.glob(f"{fixtures}/bad_run_files/*.json")
]
for a, b in pairs:
    with open(os.path.join(seeds, "gate_fuzzer", f"{a}-{b}".replace("/", "_")), "wb") as f:
        f.write(minified(f"{fixtures}/{a}.json") + separator + minified(f"{fixtures}/{b}.json"))
