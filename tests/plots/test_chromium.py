"""Loads the rendered index.html in headless Chromium (Debian package `chromium`, offline) and
checks that every figure loaded (naturalWidth > 0), that no markup from the run file became live
(no script but the check's own, no iframe) and that nothing was logged to the console.

Run directly, it exits 77 (ctest: skipped) when Chromium is not installed."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from helpers import CPU_RUN_SKIPPED, GPU_RUN, parse_page, run_report, tmpdir
import make_fleet
import make_history_export
from test_escaping import hostile_run

CHECK_SCRIPT = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var bad = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                .map(function (i) { return i.getAttribute('src'); });
  var out = document.createElement('pre');
  out.id = 'pairbench-check';
  out.textContent = 'PAIRBENCH-CHECK images=' + imgs.length + ' broken=' + bad.length +
      ' scripts=' + document.querySelectorAll('script').length +
      ' iframes=' + document.querySelectorAll('iframe').length + ' broken-list=' + bad.join(',');
  document.body.appendChild(out);
});
</script>"""

# Console output and load failures as Chromium logs them with --enable-logging=stderr --v=0.
PAGE_ERRORS = re.compile(r"CONSOLE|Uncaught|Failed to load|Refused to|Not allowed to load")


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def load_in_chromium(testcase, html_path):
    """Loads a copy of the page with the check script injected; returns (check line, page errors)."""
    with open(html_path, encoding="utf-8") as f:
        text = f.read()
    self_check = os.path.join(os.path.dirname(html_path), "check.html")
    with open(self_check, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", CHECK_SCRIPT + "</body>"))
    profile = tempfile.mkdtemp(prefix="pairbench-chromium-")
    testcase.addCleanup(shutil.rmtree, profile, True)
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
        "--dump-dom",
        "file://" + os.path.abspath(self_check),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    testcase.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    check = re.search(r'<pre id="pairbench-check">(PAIRBENCH-CHECK [^<]*)</pre>', proc.stdout)
    testcase.assertIsNotNone(check, "the check script did not run; stderr:\n" + proc.stderr[-2000:])
    errors = [line for line in proc.stderr.splitlines() if PAGE_ERRORS.search(line)]
    return check.group(1), errors


@unittest.skipIf(chromium() is None, "chromium not installed (ci/setup-deps.sh installs it)")
class Chromium(unittest.TestCase):
    def test_gpu_report_with_history_loads_cleanly(self):
        work = tmpdir(self)
        export = make_history_export.write(os.path.join(work, "export.json"), machine="f1x7e0e0a0d0b0c1")
        out = os.path.join(work, "report")
        rc, _, stderr = run_report("--run", GPU_RUN, "--history-export", export, "-o", out)
        self.assertEqual(rc, 0, stderr)
        _, page = parse_page(os.path.join(out, "index.html"))
        check, errors = load_in_chromium(self, os.path.join(out, "index.html"))
        self.assertIn(f"images={len(page.images)} broken=0 ", check)
        self.assertGreater(len(page.images), 20)
        self.assertIn("scripts=1 iframes=0", check)
        self.assertEqual(errors, [], "errors logged while loading the page")

    def test_fleet_page_loads_cleanly(self):
        work = tmpdir(self)
        export = os.path.join(work, "export.json")
        with open(export, "w", encoding="utf-8") as f:
            json.dump(make_fleet.build(), f)
        out = os.path.join(work, "report")
        rc, _, stderr = run_report("--run", CPU_RUN_SKIPPED, "--fleet", export, "-o", out)
        self.assertEqual(rc, 0, stderr)
        _, page = parse_page(os.path.join(out, "fleet.html"))
        check, errors = load_in_chromium(self, os.path.join(out, "fleet.html"))
        self.assertIn(f"images={len(page.images)} broken=0 ", check)
        self.assertGreater(len(page.images), 1)
        self.assertIn("scripts=1 iframes=0", check)
        self.assertEqual(errors, [], "errors logged while loading the page")

    def test_hostile_strings_stay_inert_in_a_browser(self):
        work = tmpdir(self)
        run = hostile_run(os.path.join(work, "hostile.json"))
        out = os.path.join(work, "report")
        rc, _, stderr = run_report("--run", run, "-o", out)
        self.assertEqual(rc, 0, stderr)
        check, errors = load_in_chromium(self, os.path.join(out, "index.html"))
        self.assertIn("broken=0 ", check)
        self.assertIn("scripts=1 iframes=0", check)  # only the check's own script
        self.assertEqual(errors, [], "errors logged while loading the page")


if __name__ == "__main__":
    if chromium() is None:
        print("SKIP: chromium not installed (ci/setup-deps.sh installs it)")
        sys.exit(77)
    unittest.main()
