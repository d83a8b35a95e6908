"""Reads and checks a pairbench run file (Google Benchmark JSON plus a `pairbench` section).

Every field the report uses is checked once here; a bad one raises BadInput naming the file and
the field (`pairbench.experiments[2].points[0].arms[1].median: expected a number, got string`).
What is optional is filled with a default, so the rest of the report never guesses.
"""
import json
import math
import statistics

from .errors import BadInput

ROLES = ("baseline", "treatment", "limit")


class _Checker:
    def __init__(self, path):
        self.path = path

    def fail(self, where, what):
        raise BadInput(f"{self.path}: field {where}: {what}")

    @staticmethod
    def _kind(value):
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "boolean"
        if isinstance(value, (int, float)):
            return "number"
        if isinstance(value, str):
            return "string"
        if isinstance(value, list):
            return "list"
        return "object"

    def obj(self, parent, key, where, required=True):
        value = parent.get(key) if isinstance(parent, dict) else None
        if value is None:
            if required:
                self.fail(f"{where}{key}", "missing")
            return {}
        if not isinstance(value, dict):
            self.fail(f"{where}{key}", f"expected an object, got {self._kind(value)}")
        return value

    def lst(self, parent, key, where, required=True):
        value = parent.get(key)
        if value is None:
            if required:
                self.fail(f"{where}{key}", "missing")
            return []
        if not isinstance(value, list):
            self.fail(f"{where}{key}", f"expected a list, got {self._kind(value)}")
        return value

    def text(self, parent, key, where, required=False, default=""):
        value = parent.get(key)
        if value is None:
            if required:
                self.fail(f"{where}{key}", "missing")
            return default
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)  # grid values may be written as numbers
        if not isinstance(value, str):
            self.fail(f"{where}{key}", f"expected a string, got {self._kind(value)}")
        return value

    def number(self, parent, key, where, required=False):
        """A finite float, or None when absent, null or not finite (NaN is written as null)."""
        value = parent.get(key)
        if value is None:
            if required:
                self.fail(f"{where}{key}", "missing")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(f"{where}{key}", f"expected a number, got {self._kind(value)}")
        value = float(value)
        return value if math.isfinite(value) else None

    def element(self, value, where):
        if not isinstance(value, dict):
            self.fail(where, f"expected an object, got {self._kind(value)}")
        return value


def _parse_constant(name):
    return float("nan") if name == "NaN" else float(name.replace("Infinity", "inf"))


def load_run(path):
    """Reads and checks the run file at `path`; returns a RunFile."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, expected a run file") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}") from None
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_parse_constant)
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise BadInput(f"{path}: not valid JSON: nested too deeply") from None
    return RunFile(path, doc)


def axis_order(benchmark_name):
    """Axis names in the order the benchmark name lists them: `exp/arm/a:1/b:2` -> [a, b]."""
    axes = []
    for part in benchmark_name.split("/")[2:]:
        if ":" in part:
            axes.append(part.split(":", 1)[0])
    return axes


def as_number(text):
    """A grid value as a float, or None when it is not a plain number ('cpu', '4096x1024')."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


class RunFile:
    """The checked content of one run file. Experiments, points, arms and ratios are plain dicts
    with every key the report reads present."""

    def __init__(self, path, doc):
        self.path = path
        c = _Checker(path)
        if not isinstance(doc, dict):
            c.fail("(top level)", f"expected an object, got {c._kind(doc)}")
        if "pairbench" not in doc:
            c.fail("pairbench", "missing: not a pairbench run file (no 'pairbench' section)")
        pb = c.obj(doc, "pairbench", "")
        self.fixture_note = c.text(doc, "fixture_note", "")
        self.context = c.obj(doc, "context", "", required=False)
        self.schema_version = c.number(pb, "schema_version", "pairbench.")
        self.profile = c.text(pb, "profile", "pairbench.")
        self.started_at = c.text(pb, "started_at", "pairbench.")
        self.finished_at = c.text(pb, "finished_at", "pairbench.")
        self.command = c.text(pb, "command", "pairbench.")
        self.repetitions = c.number(pb, "repetitions", "pairbench.")
        self.environment = self._environment(c, c.obj(pb, "environment", "pairbench.", required=False))
        self.experiments = [self._experiment(c, e, f"pairbench.experiments[{i}]")
                            for i, e in enumerate(c.lst(pb, "experiments", "pairbench."))]
        self.not_run = []
        for i, n in enumerate(c.lst(pb, "not_run", "pairbench.", required=False)):
            w = f"pairbench.not_run[{i}]."
            c.element(n, w[:-1])
            self.not_run.append({
                "name": c.text(n, "name", w), "experiment": c.text(n, "experiment", w),
                "arm": c.text(n, "arm", w), "verification": c.text(n, "verification", w),
                "reason": c.text(n, "reason", w)})
        self.samples = {}  # benchmark name -> list of benchmarks[] entries (one per process)
        for i, b in enumerate(c.lst(doc, "benchmarks", "")):
            w = f"benchmarks[{i}]."
            c.element(b, w[:-1])
            name = c.text(b, "name", w, required=True)
            self.samples.setdefault(name, []).append(b)
        self.experiment_by_name = {e["name"]: e for e in self.experiments}

    @staticmethod
    def _environment(c, env):
        warnings = env.get("warnings", [])
        if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
            c.fail("pairbench.environment.warnings", "expected a list of strings")
        out = dict(env)
        out["warnings"] = list(warnings)
        return out

    def _experiment(self, c, e, where):
        c.element(e, where)
        w = where + "."
        better = c.text(e, "better", w, default="lower")
        if better not in ("lower", "higher"):
            c.fail(w + "better", f"expected 'lower' or 'higher', got {better!r}")
        exp = {
            "name": c.text(e, "name", w, required=True),
            "question": c.text(e, "question", w),
            "claim": c.text(e, "claim", w),
            "kind": c.text(e, "kind", w, default="comparison"),
            "metric": c.text(e, "metric", w, default="value"),
            "unit": c.text(e, "unit", w),
            "better": better,
            "timing": c.text(e, "timing", w),
            "points": [],
        }
        for i, p in enumerate(c.lst(e, "points", w)):
            exp["points"].append(self._point(c, p, f"{w}points[{i}]", exp))
        axes = []
        for p in exp["points"]:
            for a in p["arms"]:
                for axis in axis_order(a["benchmark"]):
                    if axis not in axes:
                        axes.append(axis)
            for axis in p["params"]:
                if axis not in axes:
                    axes.append(axis)
        exp["axes"] = axes
        return exp

    def _point(self, c, p, where, exp):
        c.element(p, where)
        w = where + "."
        params = {}
        for k, v in c.obj(p, "params", w, required=False).items():
            if isinstance(v, (dict, list)) or v is None or isinstance(v, bool):
                c.fail(f"{w}params.{k}", "expected a string or number")
            params[str(k)] = str(v)
        point = {"params": params, "arms": [], "ratios": [], "targets": []}
        for i, a in enumerate(c.lst(p, "arms", w)):
            aw = f"{w}arms[{i}]"
            c.element(a, aw)
            aw += "."
            arm = {
                "arm": c.text(a, "arm", aw, required=True),
                "role": c.text(a, "role", aw, default="treatment"),
                "benchmark": c.text(a, "benchmark", aw),
                "unit": c.text(a, "unit", aw, default=exp["unit"]),
                "verification": c.text(a, "verification", aw, default="not_run"),
                "reason": c.text(a, "reason", aw),
                "samples": c.number(a, "samples", aw) or 0,
                "median": c.number(a, "median", aw),
                "min": c.number(a, "min", aw),
                "max": c.number(a, "max", aw),
                "cv": c.number(a, "cv", aw),
                "percent_of_limit": c.number(a, "percent_of_limit", aw),
                "limit": None,
                "synthetic": bool(a.get("synthetic", False)),
            }
            if a.get("limit") is not None:
                lim = c.obj(a, "limit", aw)
                arm["limit"] = {"benchmark": c.text(lim, "benchmark", aw + "limit."),
                                "median": c.number(lim, "median", aw + "limit.", required=True),
                                "counter": c.text(lim, "counter", aw + "limit.")}
                if arm["limit"]["median"] is None:
                    arm["limit"] = None
            point["arms"].append(arm)
        for i, r in enumerate(c.lst(p, "ratios", w, required=False)):
            rw = f"{w}ratios[{i}]"
            c.element(r, rw)
            rw += "."
            ratio = {
                "treatment": c.text(r, "treatment", rw, required=True),
                "ratio": c.number(r, "ratio", rw),
                "ci_low": c.number(r, "ci_low", rw),
                "ci_high": c.number(r, "ci_high", rw),
                "confidence": c.number(r, "confidence", rw),
                "ratio_of_medians": c.number(r, "ratio_of_medians", rw),
            }
            if ratio["ratio"] is not None and ratio["ratio"] > 0:
                point["ratios"].append(ratio)
        for i, t in enumerate(c.lst(p, "targets", w, required=False)):
            tw = f"{w}targets[{i}]"
            c.element(t, tw)
            tw += "."
            met = t.get("met")
            if met is not None and not isinstance(met, bool):
                c.fail(tw + "met", "expected true or false")
            point["targets"].append({
                "arm": c.text(t, "arm", tw), "text": c.text(t, "text", tw),
                "bound": c.number(t, "bound", tw), "median": c.number(t, "median", tw), "met": met})
        return point

    # ---- derived views -------------------------------------------------------------------

    def counter_values(self, benchmark, counter):
        """Every finite value of `counter` over the benchmark's process samples."""
        out = []
        for entry in self.samples.get(benchmark, []):
            v = entry.get(counter)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                out.append(float(v))
        return out

    def counter_median(self, benchmark, counter):
        values = self.counter_values(benchmark, counter)
        return statistics.median(values) if values else None

    def metric_values(self, benchmark):
        """The deciding metric of each process sample (`metric_value`)."""
        return self.counter_values(benchmark, "metric_value")

    def machine_key(self):
        return str(self.environment.get("machine_key", "") or "")
