"""Shared pieces of the CI-script tests: a scratch checkout (the repository's files linked into a
temporary folder, with its own results/), a pairbench that records every command line it is given
and runs the real one, and running a script with a time limit."""
import glob
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("PAIRBENCH_BUILD_DIR", os.path.join(REPO, "build"))
PAIRBENCH = os.path.join(BUILD, "bin", "pairbench")
# One small real experiment: 2 arms, 4 processes each on the quick profile, under a second here.
SMALL_EXPERIMENT = "dispatch.readback_in_loop"
# The simulated bench (tests/bench/sim_bench.cpp): its times are a generator's that a test declares,
# so a verdict on it follows from the declaration and not from the machine's load.
SIM_EXPERIMENT = "sim.declared"
SIM_BINARY = "bench_sim"
SIM = os.path.join(BUILD, "tests", "sim_bench", SIM_BINARY)
SKIPPED = 77


def scratch_checkout(testcase, replace=None):
    """A folder that looks like the repository (every top-level entry linked, ci/ and ci/slurm/
    linked file by file) with an empty results/, so scripts that write under results/ leave the
    real checkout alone. `replace` maps a relative path under ci/ to the text of an executable
    stand-in."""
    root = tempfile.mkdtemp(prefix="pairbench-ci-")
    testcase.addCleanup(shutil.rmtree, root, True)
    for name in os.listdir(REPO):
        if name in ("results", "ci") or name.startswith("build"):
            continue
        os.symlink(os.path.join(REPO, name), os.path.join(root, name))
    for folder, _, files in os.walk(os.path.join(REPO, "ci")):
        rel = os.path.relpath(folder, REPO)
        os.makedirs(os.path.join(root, rel), exist_ok=True)
        for f in files:
            os.symlink(os.path.join(folder, f), os.path.join(root, rel, f))
    for rel, text in (replace or {}).items():
        path = os.path.join(root, rel)
        os.remove(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o755)
    os.makedirs(os.path.join(root, "results"))
    return root


def recording_build_dir(testcase, root, simulated=False):
    """A build folder whose bin/pairbench appends its command line to calls.txt and then runs the
    real pairbench (which still finds its bench binaries and plots/ from where it was built).
    `simulated`: the real pairbench is a copy in bin/real/ beside a copy of the simulated bench, the
    only bench binary it then finds (pairbench runs the bench binaries beside its own executable)."""
    build = os.path.join(root, "build-recording")
    os.makedirs(os.path.join(build, "bin"))
    log = os.path.join(build, "calls.txt")
    real = PAIRBENCH
    if simulated:
        os.makedirs(os.path.join(build, "bin", "real"))
        real = os.path.join(build, "bin", "real", "pairbench")
        shutil.copy2(PAIRBENCH, real)
        shutil.copy2(SIM, os.path.join(build, "bin", "real", SIM_BINARY))
    with open(os.path.join(build, "bin", "pairbench"), "w", encoding="utf-8") as f:
        f.write(
            f'#!/bin/bash\nprintf "%q " "$@" >> {shlex.quote(log)}\necho >> {shlex.quote(log)}\n'
            f'exec {shlex.quote(real)} "$@"\n'
        )
    os.chmod(os.path.join(build, "bin", "pairbench"), 0o755)
    return build, log


def calls(log):
    """The recorded command lines, each a list of arguments."""
    if not os.path.exists(log):
        return []
    with open(log, encoding="utf-8") as f:
        return [shlex.split(line) for line in f if line.strip()]


def run_script(args, env=None, cwd=None, timeout=120):
    """(exit status, stdout, stderr) of a script run with the given extra environment."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PAIRBENCH_", "SBATCH_"))}
    full_env.update({"MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"})
    full_env.update(env or {})
    proc = subprocess.run(args, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def stored_runs(db):
    """The machine keys of the runs stored in a SQLite history, oldest first."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [row[0] for row in con.execute("SELECT machine_key FROM runs ORDER BY id")]
    finally:
        con.close()


def shared_database(testcase, root):
    """The database the jobs upload to: a database of its own on the PostgreSQL test server
    (tests/fixtures/postgres/, whose URL the ctest fixture writes to PAIRBENCH_PG_STATE_FILE) where
    one runs, else a SQLite file in `root` (every job of these tests runs on this host)."""
    state = os.environ.get("PAIRBENCH_PG_STATE_FILE", "")
    url = ""
    if state and os.path.exists(state):
        with open(state, encoding="utf-8") as f:
            url = f.read().strip()
    if not url.startswith("postgresql://"):
        return os.path.join(root, "shared-history.sqlite")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    host, user = query["host"][0], query["user"][0]
    bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
    name = "fleet_" + os.path.basename(root).replace("-", "_").lower()
    subprocess.run(
        [os.path.join(bindir, "createdb"), "-h", host, "-U", user, name], check=True, timeout=60, capture_output=True
    )
    testcase.addCleanup(
        subprocess.run,
        [os.path.join(bindir, "dropdb"), "-h", host, "-U", user, "--force", name],
        timeout=60,
        capture_output=True,
    )
    return f"postgresql:///{name}?host={host}&user={user}"


def runs_per_machine(db, workdir):
    """{machine_key: runs} as `pairbench history export` reports them (SQLite or PostgreSQL)."""
    out = os.path.join(workdir, "export-check.json")
    proc = subprocess.run(
        [PAIRBENCH, "history", "export", "--db", db, "--out", out], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        raise AssertionError(f"pairbench history export failed ({proc.returncode}): {proc.stderr[-2000:]}")
    with open(out, encoding="utf-8") as f:
        return {m["machine_key"]: m["runs"] for m in json.load(f)["machines"]}
