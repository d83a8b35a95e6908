"""Reads and checks a pairbench run file (Google Benchmark JSON plus a `pairbench` section).

The checks are the harness's (harness/store/run_file.cpp), against the same schema file
(results/schema/run-file.schema.json, with python3-jsonschema) and in the same order: the file (a
regular file within the schema's size limit: a FIFO would block, /dev/urandom never ends), the JSON
text, the nesting depth, finite numbers (the harness's parser refuses NaN, Infinity and numbers
past a double's range as it reads them), the schema, then what a schema cannot say. A bad file
raises BadInput with one line worded as the harness words it:
`FILE: pairbench.experiments[2].points[0].arms[1].median: expected a number or null, is the string "x"`.
RunFile then fills in what is optional, so the rest of the report never guesses.
"""
import json
import math
import os
import re
import stat
import statistics
import sys

from .errors import BadInput

ROLES = ("baseline", "treatment", "limit")
SCHEMA_PATH = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "schema", "run-file.schema.json")
)
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]+")
_LARGEST_DOUBLE = sys.float_info.max
_schema_cache = {}


def _schema():
    """(validator, limits) for the run-file schema, loaded once."""
    if not _schema_cache:
        try:
            import jsonschema
        except ImportError:
            raise BadInput(
                "python3-jsonschema is not installed (ci/setup-deps.sh installs it): " "run files cannot be checked"
            ) from None
        try:
            with open(SCHEMA_PATH, encoding="utf-8") as f:
                schema = json.load(f)
        except (OSError, ValueError) as e:
            raise BadInput(f"{SCHEMA_PATH}: cannot read the run-file schema: {e}") from None
        _schema_cache["validator"] = jsonschema.Draft202012Validator(schema)
        _schema_cache["best_match"] = jsonschema.exceptions.best_match
        _schema_cache["limits"] = schema["x-pairbench-limits"]
    return _schema_cache


# ---- wording shared with harness/store/json_schema.cpp ----------------------------------------------


def quoted(text, max_chars):
    """JSON-quoted (control characters escaped), cut after max_chars with '...' inside the quotes."""
    cut = len(text) > max_chars
    q = json.dumps(text[:max_chars] if cut else text, ensure_ascii=False)
    return q[:-1] + '..."' if cut else q


def member_path(parent, key):
    if _PLAIN_KEY.fullmatch(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{quoted(key, 100)}]"


def element_path(parent, index):
    return f"{parent}[{index}]"


def path_text(steps):
    path = ""
    for step in steps:
        path = element_path(path, step) if isinstance(step, int) else member_path(path, step)
    return path


def describe(value):
    """What a value is, for 'expected X, is Y'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "the string " + quoted(value, 40)
    return "the number " + json.dumps(value)


def _type_text(types):
    words = {
        "object": "an object",
        "array": "an array",
        "integer": "an integer",
        "boolean": "true or false",
        "null": "null",
        "string": "a string",
        "number": "a number",
    }
    return " or ".join(words[t] for t in ([types] if isinstance(types, str) else types))


def _expected(error):
    if isinstance(error.schema, dict) and "x-expected" in error.schema:
        return error.schema["x-expected"]
    kind, value = error.validator, error.validator_value
    if kind == "type":
        return _type_text(value)
    if kind == "const":
        return json.dumps(value)
    if kind == "enum":
        return "one of " + ", ".join(json.dumps(v) for v in value)
    if kind == "minimum":
        return f"a number >= {json.dumps(value)}"
    if kind == "maximum":
        return f"a number <= {json.dumps(value)}"
    if kind == "exclusiveMinimum":
        return f"a number > {json.dumps(value)}"
    if kind == "minLength":
        return "a non-empty string" if value == 1 else f"a string of at least {value} characters"
    return error.message  # a keyword the schema does not use today; the C++ validator refuses it


# ---- reading ------------------------------------------------------------------------------------

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_regular(path, st, max_bytes, what):
    if not stat.S_ISREG(st.st_mode):
        kind = next((text for test, text in _KINDS if test(st.st_mode)), "not a regular file")
        raise BadInput(f"{path}: expected a regular file ({what}), is {kind}")
    if st.st_size > max_bytes:
        raise BadInput(f"{path}: {_too_large(max_bytes, st.st_size, what)}")


def _too_large(max_bytes, size, what):
    gib = f" ({max_bytes >> 30} GiB)" if max_bytes % (1 << 30) == 0 else ""
    return f"expected {what} of at most {max_bytes} bytes{gib}, is {size} bytes"


def _benchmark_named_at(doc, steps):
    """' (benchmark "NAME")' when the path lies inside benchmarks[i] or pairbench.instructions[i] and that
    entry has a non-empty name: what a reader of the message looks for."""
    if steps[:1] == ["benchmarks"] and len(steps) > 1:
        entries, index = doc.get("benchmarks"), steps[1]
    elif steps[:2] == ["pairbench", "instructions"] and len(steps) > 2:
        entries, index = doc["pairbench"].get("instructions"), steps[2]
    else:
        return ""
    if not isinstance(entries, list) or not isinstance(index, int) or index >= len(entries):
        return ""
    entry = entries[index]
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
        return ""
    return f" (benchmark {quoted(entry['name'], 100)})"


def read_bytes(path, max_bytes, what="a run file"):
    """The file's bytes, after checking up front that it is a regular file within the limit; `what`
    names the file in messages ("a run file", "a history export", "the gate's JSON"). The one reader
    of the report's input files."""
    try:
        _check_regular(path, os.stat(path), max_bytes, what)
        # O_NONBLOCK: the path may have become a FIFO since the stat; fstat says what was opened.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise BadInput(f"{path}: cannot open: {e.strerror}") from None
    try:
        _check_regular(path, os.fstat(fd), max_bytes, what)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise BadInput(f"{path}: {_too_large(max_bytes, size, what)} (and growing)")
        return b"".join(chunks)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}") from None
    finally:
        os.close(fd)


class _NotJson:
    """What json.loads makes of NaN, Infinity and -Infinity: not JSON, reported with its path."""

    def __init__(self, text):
        self.text = text


def _first_defect(doc, max_depth):
    """(path, problem) for the first of: nesting past max_depth, NaN/Infinity, a lone surrogate (in
    document order, as the harness's parser meets them); else the first non-finite number; else None."""
    non_finite = None
    stack = [(doc, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth + 1 > max_depth:
                return None, (
                    f"expected JSON nested at most {max_depth} levels deep (a run file needs 10), " "is nested deeper"
                )
            if isinstance(value, dict):
                children = []
                for key, member in value.items():
                    at = member_path(path, key)
                    if _is_broken_text(key):
                        return at, "not valid JSON: a \\u escape that is half of a UTF-16 surrogate pair"
                    children.append((member, at, depth + 1))
            else:
                children = [(member, element_path(path, i), depth + 1) for i, member in enumerate(value)]
            stack.extend(reversed(children))
        elif isinstance(value, _NotJson):
            return path, "not valid JSON: NaN and Infinity are not JSON numbers; expected a finite number"
        elif isinstance(value, str):
            if _is_broken_text(value):
                return path, "not valid JSON: a \\u escape that is half of a UTF-16 surrogate pair"
        elif (
            non_finite is None
            and not isinstance(value, bool)
            and isinstance(value, (int, float))
            and (abs(value) > _LARGEST_DOUBLE or not math.isfinite(value))
        ):
            # Python reads 1e999 as infinity and keeps 400-digit integers; nlohmann refuses both.
            non_finite = (path, "expected a finite number, is a number too large for a double")
    return non_finite


def _is_broken_text(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_references(doc, fail):
    """What the schema cannot say (as harness/store/run_file.cpp checks it)."""
    pb = doc["pairbench"]
    experiment_at = {}
    for i, e in enumerate(pb["experiments"]):
        if e["name"] in experiment_at:
            fail(
                f"pairbench.experiments[{i}].name",
                f"expected a name no other experiment has, is "
                f"{describe(e['name'])} (also pairbench.experiments[{experiment_at[e['name']]}].name)",
            )
        experiment_at[e["name"]] = i
    for where, entries in (("benchmarks", doc["benchmarks"]), ("pairbench.instructions", pb.get("instructions", []))):
        for i, b in enumerate(entries):
            at = element_path(where, i)
            if b["experiment"] not in experiment_at:
                fail(
                    at + ".experiment", f"expected one of pairbench.experiments[].name, is {describe(b['experiment'])}"
                )
            prefix = f"{b['experiment']}/{b['arm']}"
            if b["name"] != prefix and not b["name"].startswith(prefix + "/"):
                fail(
                    at + ".name",
                    f"expected a name starting with {quoted(prefix, 100)} (its experiment/arm), is "
                    f"{describe(b['name'])}",
                )


def parse_run_file(data, source):
    """Checks run-file bytes (see the module's docstring); returns the document."""
    schema = _schema()
    limits = schema["limits"]

    def fail(path, problem):
        raise BadInput(f"{source}: {path or '(top level)'}: {problem}")

    if len(data) > limits["max_bytes"]:
        raise BadInput(f"{source}: {_too_large(limits['max_bytes'], len(data))}")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a UTF-8 byte order mark, which the harness's parser skips too
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{source}: not valid JSON: not UTF-8 text at byte {e.start}") from None
    if not text:
        raise BadInput(f"{source}: not valid JSON: the file is empty")
    try:
        doc = json.loads(text, parse_constant=_NotJson)
    except json.JSONDecodeError as e:
        why = "the text ends early (truncated?)" if e.pos >= len(text) else e.msg
        raise BadInput(f"{source}: not valid JSON at line {e.lineno}, column {e.colno} (byte {e.pos}): {why}") from None
    except ValueError as e:  # an integer of more digits than Python converts (4300); the harness reads it as infinite
        raise BadInput(f"{source}: not valid JSON: {str(e).split(';')[0]}") from None
    except RecursionError:
        raise BadInput(
            f"{source}: expected JSON nested at most {limits['max_depth']} levels deep (a run file needs "
            "10), is nested deeper"
        ) from None
    defect = _first_defect(doc, limits["max_depth"])
    if defect:
        path, problem = defect
        if path is None:
            raise BadInput(f"{source}: {problem}")
        fail(path, problem)
    error = schema["best_match"](schema["validator"].iter_errors(doc))
    if error is not None:
        steps = list(error.absolute_path)
        if error.validator == "required":
            missing = next(name for name in error.validator_value if name not in error.instance)
            fail(path_text(steps + [missing]), "missing" + _benchmark_named_at(doc, steps + [missing]))
        fail(
            path_text(steps),
            f"expected {_expected(error)}, is {describe(error.instance)}" f"{_benchmark_named_at(doc, steps)}",
        )
    _check_references(doc, fail)
    return doc


def load_run(path):
    """Reads and checks the run file at `path`; returns a RunFile."""
    doc = parse_run_file(read_bytes(path, _schema()["limits"]["max_bytes"]), path)
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


# A median more than 5 % above its limit is a measurement defect (harness/analysis/summary.h's
# kLimitDefectMargin): the limit was not the best this machine can do.
LIMIT_DEFECT_MARGIN = 0.05


def limit_defect(raw_arm, arm):
    """The harness's `limit_defect` text; for run files written before it existed, the same
    judgement from percent_of_limit, so an old figure above its limit is never shown plainly."""
    text = raw_arm.get("limit_defect")
    if isinstance(text, str) and text:
        return text
    pct = arm["percent_of_limit"]
    if pct is not None and pct > 100.0 * (1 + LIMIT_DEFECT_MARGIN):
        of = arm["limit"]["benchmark"] if arm["limit"] and arm["limit"]["benchmark"] else "its limit"
        return f"measured {pct:.0f} % of {of}: a limit must be the best this machine can do"
    return ""


def _text(parent, key, default=""):
    value = parent.get(key)
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)  # grid values may be numbers


def _number(parent, key):
    """A finite float, or None when absent or null (the harness writes a NaN as null)."""
    value = parent.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _figure(f):
    """The experiment's declared figure with every key present; None for run files from before
    experiments declared one (the report then falls back to its old rules, figures.figure_plan)."""
    if not isinstance(f, dict):
        return None
    values = f.get("arm_values", {})
    return {
        "kind": _text(f, "kind", "metric"),
        "x_axis": _text(f, "x_axis"),
        "x_scale": _text(f, "x_scale", "auto"),
        "y_scale": _text(f, "y_scale", "auto"),
        "counter": _text(f, "counter"),
        "arm_axis": _text(f, "arm_axis"),
        "arm_values": {
            str(k): float(v)
            for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        },
    }


class RunFile:
    """The content of one run file (checked by load_run; tests build it from hand-made documents).
    Experiments, points, arms and ratios are plain dicts with every key the report reads present."""

    def __init__(self, path, doc):
        self.path = path
        pb = doc.get("pairbench", {})
        self.fixture_note = _text(doc, "fixture_note")
        self.context = doc.get("context", {})
        self.schema_version = _number(pb, "schema_version")
        self.profile = _text(pb, "profile")
        self.started_at = _text(pb, "started_at")
        self.finished_at = _text(pb, "finished_at")
        self.command = _text(pb, "command")
        self.repetitions = _number(pb, "repetitions")
        env = dict(pb.get("environment", {}))
        env["warnings"] = list(env.get("warnings", []))
        self.environment = env
        self.experiments = [self._experiment(e) for e in pb.get("experiments", [])]
        self.not_run = [
            {
                "name": _text(n, "name"),
                "experiment": _text(n, "experiment"),
                "arm": _text(n, "arm"),
                "verification": _text(n, "verification"),
                "reason": _text(n, "reason"),
            }
            for n in pb.get("not_run", [])
        ]
        self.samples = {}  # benchmark name -> list of benchmarks[] entries (one per process)
        for b in doc.get("benchmarks", []):
            self.samples.setdefault(b["name"], []).append(b)
        self.experiment_by_name = {e["name"]: e for e in self.experiments}
        # The harness's claim verdicts (harness/analysis/claims.cpp); None in run files written before it judged them.
        claims = pb.get("claims")
        self.claims = [c for c in claims if isinstance(c, dict)] if isinstance(claims, list) else None

    def _experiment(self, e):
        exp = {
            "name": e["name"],
            "question": _text(e, "question"),
            "claim": _text(e, "claim"),
            "kind": _text(e, "kind", "comparison"),
            "metric": _text(e, "metric", "value"),
            "unit": _text(e, "unit"),
            "better": _text(e, "better", "lower"),
            "timing": _text(e, "timing"),
            "figure": _figure(e.get("figure")),
            "points": [],
        }
        exp["points"] = [self._point(p, exp) for p in e.get("points", [])]
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

    @staticmethod
    def _point(p, exp):
        point = {
            "params": {str(k): _text(p["params"], k) for k in p.get("params", {})},
            "arms": [],
            "ratios": [],
            "targets": [],
        }
        for a in p.get("arms", []):
            arm = {
                "arm": a["arm"],
                "role": _text(a, "role", "treatment"),
                "benchmark": _text(a, "benchmark"),
                "unit": _text(a, "unit", exp["unit"]),
                "verification": _text(a, "verification", "not_run"),
                "reason": _text(a, "reason"),
                "samples": _number(a, "samples") or 0,
                "median": _number(a, "median"),
                "min": _number(a, "min"),
                "max": _number(a, "max"),
                "cv": _number(a, "cv"),
                "percent_of_limit": _number(a, "percent_of_limit"),
                "limit": None,
                "synthetic": bool(a.get("synthetic", False)),
                "secondary": {
                    str(name): {"unit": _text(m, "unit"), "better": _text(m, "better"), "median": _number(m, "median")}
                    for name, m in a.get("secondary", {}).items()
                    if isinstance(m, dict)
                },
            }
            lim = a.get("limit")
            if lim is not None and _number(lim, "median") is not None:
                arm["limit"] = {
                    "benchmark": _text(lim, "benchmark"),
                    "median": _number(lim, "median"),
                    "counter": _text(lim, "counter"),
                    "best_of": _number(lim, "best_of"),
                }
            arm["limit_defect"] = limit_defect(a, arm)
            point["arms"].append(arm)
        for r in p.get("ratios", []):
            ratio = {
                "treatment": r["treatment"],
                "ratio": _number(r, "ratio"),
                "ci_low": _number(r, "ci_low"),
                "ci_high": _number(r, "ci_high"),
                "confidence": _number(r, "confidence"),
                "ratio_of_medians": _number(r, "ratio_of_medians"),
            }
            if ratio["ratio"] is not None and ratio["ratio"] > 0:
                point["ratios"].append(ratio)
        for t in p.get("targets", []):
            point["targets"].append(
                {
                    "arm": _text(t, "arm"),
                    "text": _text(t, "text"),
                    "bound": _number(t, "bound"),
                    "median": _number(t, "median"),
                    "met": t.get("met"),
                }
            )
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
