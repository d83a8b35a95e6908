"""Shared helpers for the report's tests: paths, running report.py, parsing the page it writes."""
import html.parser
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
REPORT = os.path.join(REPO, "plots", "report.py")
FIXTURES = os.path.join(REPO, "tests", "fixtures")
GPU_RUN = os.path.join(FIXTURES, "run_gpu.json")
CPU_RUN_SKIPPED = os.path.join(FIXTURES, "run_cpu_a.json")  # CUDA arms not_supported
CPU_RUN_DISPATCH = os.path.join(HERE, "data", "run_cpu_dispatch.json")  # a fuller real CPU run

sys.path.insert(0, os.path.join(REPO, "plots"))
sys.path.insert(0, HERE)


def run_report(*args, timeout=120):
    """Runs report.py with this interpreter; returns (exit status, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, REPORT, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    return proc.returncode, proc.stdout, proc.stderr


# The harness judges claims (harness/analysis/claims.cpp); ctest names the one it built.
PAIRBENCH = os.environ.get("PAIRBENCH_EXE") or os.path.join(REPO, "build", "bin", "pairbench")


def pairbench(*args, timeout=120):
    """Runs the built harness; returns (exit status, stdout, stderr)."""
    if not os.access(PAIRBENCH, os.X_OK):
        raise AssertionError(f"{PAIRBENCH}: no pairbench executable (build it, or set PAIRBENCH_EXE as ctest does)")
    proc = subprocess.run([PAIRBENCH, *args], capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def judged(testcase, run):
    """A copy of `run` with the harness's claim verdicts (`pairbench summarise`), as `pairbench
    report` hands it to report.py: the report draws verdicts, never decides them."""
    out = os.path.join(tmpdir(testcase), "judged-" + os.path.basename(run))
    rc, _, stderr = pairbench("summarise", "--run", run, "--out", out)
    testcase.assertEqual(rc, 0, f"pairbench summarise {run}: {stderr}")
    return out


def tmpdir(testcase):
    d = tempfile.TemporaryDirectory(prefix="pairbench-plots-")
    testcase.addCleanup(d.cleanup)
    return d.name


class PageParser(html.parser.HTMLParser):
    """Collects what the escaping and loading checks look at: tags, attributes, image sources."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.attributes = []
        self.images = []
        self.links = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            self.attributes.append((tag, name, value))
            if tag == "img" and name == "src":
                self.images.append(value)
            if tag == "a" and name == "href":
                self.links.append(value)

    def handle_data(self, data):
        self.text.append(data)


def parse_page(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parser = PageParser()
    parser.feed(text)
    parser.close()
    return text, parser
