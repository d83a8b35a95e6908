"""Figures, each written as PNG and SVG: ratios across the grid, the deciding metric per arm with
the machine's limit, accuracy beside speed, allocator time against peak RSS, history trends.

Every string from a run file reaches matplotlib as plain text (mathtext is off), so a `$` or a
`<script>` in a benchmark name is drawn as itself.
"""
import math
import statistics
import re
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.transforms import offset_copy  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator  # noqa: E402

from . import units  # noqa: E402
from .runfile import as_number  # noqa: E402

plt.rcParams.update(
    {
        "text.parse_math": False,  # strings from run files are text, never TeX
        "svg.fonttype": "none",  # SVG text stays text: small files, selectable
        "svg.hashsalt": "pairbench",  # stable ids, so SVGs diff cleanly
        "font.size": 9,
        "axes.titlesize": 9.5,
        "axes.labelsize": 9,
        "legend.fontsize": 8,
        "figure.titlesize": 11,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)

PNG_DPI = 110
BASELINE_COLOUR = "#404040"
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]


def wrap(text, width=80):
    return "\n".join(textwrap.wrap(str(text), width=width, break_long_words=True, break_on_hyphens=False)) or ""


def label(text):
    """Legend labels that start with '_' are hidden by matplotlib: keep them visible."""
    text = str(text)
    return "\u200b" + text if text.startswith("_") else text


def _g(x):
    if x == 0:
        return "0"
    if abs(x) >= 1e7 or abs(x) < 1e-3:
        return f"{x:.0e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def plain_log_axis(axis, lo, hi):
    """A log axis with plain-number tick labels (the default ones would need mathtext)."""
    decades = math.log10(hi / lo) if lo > 0 and hi > 0 else 1
    subs = (1.0, 2.0, 5.0) if decades < 2.5 else (1.0,)
    if decades < 0.6:
        subs = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: _g(v)))
    axis.set_minor_locator(LogLocator(base=10, subs="auto") if decades < 6 else NullLocator())
    axis.set_minor_formatter(NullFormatter())


def axis_title(axis_name):
    if axis_name.endswith("_us"):
        return f"{axis_name} (µs)"
    if axis_name.endswith("_ns"):
        return f"{axis_name} (ns)"
    if axis_name.endswith("_ms"):
        return f"{axis_name} (ms)"
    if axis_name == "bytes" or axis_name.endswith("_bytes"):
        return f"{axis_name} (size)"
    return axis_name


def is_size_axis(axis_name):
    return axis_name == "bytes" or axis_name.endswith("_bytes") or axis_name == "size"


def grid_x_axis(ax, axis_name, values, scale="auto"):
    """Ticks at the grid's own values, labelled in their unit; log scale as declared, or (auto)
    when they span 8x."""
    values = sorted(set(values))
    lo, hi = values[0], values[-1]
    if log_scale(values, scale):
        ax.set_xscale("log", base=2 if is_size_axis(axis_name) else 10)
        ax.set_xlim(lo / 1.6, hi * 1.6)
    else:
        pad = (hi - lo) * 0.1 or max(abs(hi) * 0.1, 1)
        ax.set_xlim(lo - pad, hi + pad)
    fmt = units.format_size_tick if is_size_axis(axis_name) else units.format_count_tick
    if len(values) > 12:
        step = math.ceil(len(values) / 12)
        values = values[::step]
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(axis_title(axis_name))
    longest = max(len(fmt(v)) for v in values)
    if len(values) * (longest + 2) > 60:
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right")


def categorical_x_axis(ax, labels, title):
    ax.set_xticks(range(len(labels)))
    width = 22 if len(labels) > 3 else 40
    ax.set_xticklabels([wrap(lb, width) for lb in labels])
    ax.set_xlim(-0.6, len(labels) - 0.4)
    if sum(len(lb) + 4 for lb in labels) > 90 or any(len(lb) > width for lb in labels):
        plt.setp(ax.get_xticklabels(), rotation=25, ha="right")
    ax.set_xlabel(title)
    ax.grid(False, axis="x")


class Writer:
    """Saves figures as figNN-<slug>.png/.svg in the output folder; names are safe file names."""

    def __init__(self, outdir):
        self.outdir = outdir
        self.count = 0

    def save(self, fig, slug):
        self.count += 1
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", slug).strip("._-")[:60] or "figure"
        stem = f"fig{self.count:02d}-{safe}"
        # Constrained layout makes room for titles, labels and legends (axes legends outside the
        # axes included); it runs while the PNG is drawn and is then frozen for the SVG.
        fig.savefig(f"{self.outdir}/{stem}.png", dpi=PNG_DPI)
        fig.set_layout_engine("none")
        fig.savefig(f"{self.outdir}/{stem}.svg")
        plt.close(fig)
        return {"png": f"{stem}.png", "svg": f"{stem}.svg"}


# ---- what to draw: the experiment's declared figure ---------------------------------------------


def figure_plan(exp, run):
    """What to draw for `exp`, from the figure its declaration put in the run file (`figure`:
    kind, x_axis, x_scale, y_scale, counter, arm_axis, arm_values; bench/common/experiment.h):
    {"declared", "x_axis", "x_scale", "y_scale", "error_counter" (accuracy), "wants_error",
     "scaling" ({"arm_values", "arm_axis", "counter"}) and "memory_counter"}."""
    hint = exp.get("figure")
    if hint is None:
        return legacy_figure_plan(exp, run)
    kind, counter = hint["kind"], hint["counter"]
    plan = {
        "declared": True,
        "x_axis": hint["x_axis"],
        "x_scale": hint["x_scale"],
        "y_scale": hint["y_scale"],
        "error_counter": None,
        "wants_error": kind == "accuracy",
        "scaling": None,
        "memory_counter": None,
    }
    if kind == "accuracy" and counter and _has_counter(exp, run, counter):
        plan["error_counter"] = counter
    elif kind == "scaling" and hint["arm_values"]:
        plan["scaling"] = {
            "arm_values": dict(hint["arm_values"]),
            "arm_axis": hint["arm_axis"] or "arm",
            "counter": counter,
        }
    elif kind == "memory" and counter and counter != exp["metric"]:
        plan["memory_counter"] = counter
    return plan


def _has_counter(exp, run, counter):
    return any(run.counter_values(a["benchmark"], counter) for p in exp["points"] for a in p["arms"])


# Run files written before experiments declared their figure have no `figure`: for those only,
# the report keeps the rules it used to guess by (counter names, arm names, experiment names).
ERROR_COUNTERS = ("rel_error", "relative_error", "max_rel_error", "error", "max_abs_error")
RSS_COUNTERS = ("peak_rss_bytes", "max_rss_bytes", "rss_peak_bytes")
_WORKERS_ARM = re.compile(r"^workers_(\d+)$")


def worker_counts(exp):
    """Old run files: {arm: worker count} when every arm is named workers_<n>; else None."""
    order, _ = arm_order(exp)
    found = {a: _WORKERS_ARM.match(a) for a in order}
    if not order or not all(found.values()):
        return None
    return {a: int(m.group(1)) for a, m in found.items()}


def legacy_figure_plan(exp, run):
    error = next((c for c in ERROR_COUNTERS if _has_counter(exp, run, c)), None)
    counts = worker_counts(exp)
    rss = None
    if exp["metric"] not in RSS_COUNTERS:
        rss = next((c for c in RSS_COUNTERS if _has_counter(exp, run, c)), None)
    return {
        "declared": False,
        "x_axis": "",
        "x_scale": "auto",
        "y_scale": "auto",
        "error_counter": error,
        "wants_error": exp["name"].startswith("precision.") or exp["metric"] == "flop_per_second",
        "scaling": (
            {"arm_values": counts, "arm_axis": "worker threads", "counter": "consumer_idle_fraction"}
            if counts is not None and exp["better"] == "higher"
            else None
        ),
        "memory_counter": rss,
    }


def log_scale(values, scale, span=8.0, inclusive=True):
    """Whether an axis over `values` is logarithmic: as declared, or (auto) where they are all
    positive and span `span` times or more (more than, with inclusive=False). Never with a value <= 0."""
    values = [v for v in values if v is not None]
    if not values or min(values) <= 0 or scale == "linear":
        return False
    if scale == "log":
        return True
    ratio = max(values) / min(values)
    return ratio >= span if inclusive else ratio > span


# ---- helpers over an experiment ---------------------------------------------------------------


def arm_order(exp):
    order, roles = [], {}
    for p in exp["points"]:
        for a in p["arms"]:
            if a["arm"] not in roles:
                order.append(a["arm"])
                roles[a["arm"]] = a["role"]
    order.sort(key=lambda n: 0 if roles[n] == "baseline" else 1)
    return order, roles


def arm_colours(exp):
    order, roles = arm_order(exp)
    colours, i = {}, 0
    for name in order:
        if roles[name] == "baseline":
            colours[name] = BASELINE_COLOUR
        else:
            colours[name] = PALETTE[i % len(PALETTE)]
            i += 1
    return colours


def varying_axes(exp, points):
    """(numeric varying axes, other varying axes) among `points`, in the experiment's axis order."""
    numeric, other = [], []
    for axis in exp["axes"]:
        values = {p["params"].get(axis) for p in points}
        if len(values) <= 1:
            continue
        if all(v is not None and as_number(v) is not None for v in values):
            numeric.append(axis)
        else:
            other.append(axis)
    return numeric, other


def _layout(exp, points, x_axis=""):
    """How to lay the grid out: ('line', x_axis, panel_axes) with the declared x axis where it
    varies among the points, else when exactly one numeric axis varies; else ('categorical', None,
    varying axes)."""
    numeric, other = varying_axes(exp, points)
    if x_axis and x_axis in numeric:
        return "line", x_axis, [a for a in numeric + other if a != x_axis]
    if len(numeric) == 1:
        return "line", numeric[0], other
    return "categorical", None, numeric + other


def _fixed_text(exp, points, shown_axes):
    """The grid values every point shares and no axis or label shows: 'device:cpu ops:1000'."""
    fixed = []
    for axis in exp["axes"]:
        if axis in shown_axes:
            continue
        values = {p["params"].get(axis) for p in points}
        if len(values) == 1 and None not in values:
            fixed.append(f"{axis}:{param_text(axis, next(iter(values)))}")
    return " ".join(fixed)


def param_text(axis, value):
    """A grid value for a figure label: byte sizes with binary prefixes, the rest as written."""
    n = as_number(value)
    if n is not None and is_size_axis(axis) and n >= 1024:
        return units.format_size_tick(n)
    return str(value)


def _sub_label(params, axes):
    return " ".join(f"{a}:{param_text(a, params.get(a, ''))}" for a in axes)


def place_legend(ax, entries, **kw):
    """Inside the axes when short; otherwise under the axes (below the tick labels and the axis
    label), or to the right when the tick labels are rotated. Limits are listed after the arms."""
    handles, labels = ax.get_legend_handles_labels()
    pairs = sorted(zip(handles, labels), key=lambda hl: hl[1].startswith("limit:") or "'s limit: " in hl[1])
    kw.setdefault("handles", [h for h, _ in pairs])
    kw.setdefault("labels", [lb for _, lb in pairs])
    if entries <= 3:
        return ax.legend(loc="best", **kw)
    if any(t.get_rotation() for t in ax.get_xticklabels()):
        return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kw)
    below = offset_copy(ax.transAxes, fig=ax.figure, y=-40, units="points")
    return ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=below,
        ncols=2 if entries > 2 else 1,
        borderaxespad=0.0,
        **kw,
    )


def _dodge(i, n, log):
    off = (i - (n - 1) / 2) * 0.045
    return (lambda x: x * 10**off) if log else (lambda x: x + off)


def _title(fig, exp, subtitle):
    q = exp["question"] or exp["name"]
    fig.suptitle(wrap(q, 85), fontweight="bold")


# ---- 1. ratios across the grid -----------------------------------------------------------------


def ratio_figure(exp, writer, plan=None):
    """Each treatment's ratio to the baseline with its interval, across the grid; a line at 1.
    `plan` (figure_plan) gives the x axis and its scale; the ratio axis is always logarithmic."""
    pts = [p for p in exp["points"] if any(r["ci_low"] is not None for r in p["ratios"])]
    if not pts:
        return None
    plan = plan or {"x_axis": "", "x_scale": "auto"}
    colours = arm_colours(exp)
    baseline = next((a["arm"] for p in pts for a in p["arms"] if a["role"] == "baseline"), "baseline")
    confs = sorted({round(100 * r["confidence"]) for p in pts for r in p["ratios"] if r["confidence"]})
    if len(confs) == 1:
        conf_text = f"{confs[0]}\u00a0% interval"  # no-break space: the wrap keeps "90 %" together
    elif confs:
        conf_text = f"{confs[0]}–{confs[-1]}\u00a0% intervals"
    else:
        conf_text = "interval"
    mode, x_axis, panel_axes = _layout(exp, pts, plan["x_axis"])
    all_vals = [
        v for p in pts for r in p["ratios"] for v in (r["ratio"], r["ci_low"], r["ci_high"]) if v is not None and v > 0
    ] + [1.0]
    lo, hi = min(all_vals) / 1.25, max(all_vals) * 1.25
    if mode == "line":
        series = {}
        for p in pts:
            for r in p["ratios"]:
                if r["ci_low"] is None:
                    continue
                key = (r["treatment"], _sub_label(p["params"], panel_axes))
                series.setdefault(key, []).append((as_number(p["params"][x_axis]), r))
        if len(series) > 12:  # too many lines to tell apart: one row per point instead
            numeric, other = varying_axes(exp, pts)
            mode, x_axis, panel_axes = "categorical", None, numeric + other
    fixed = _fixed_text(exp, pts, ([x_axis] if x_axis else []) + panel_axes)
    subtitle = (
        f"{exp['name']}{' at ' + fixed if fixed else ''}: each treatment vs the baseline '{baseline}' "
        f"(> 1: treatment better); bars: {conf_text}"
    )
    if mode == "line":
        fig, ax = plt.subplots(figsize=(8, 4.6), layout="constrained")
        xs_all = [x for s in series.values() for x, _ in s]
        log_x = log_scale(xs_all, plan["x_scale"])
        styles = ["-", "--", ":", "-."]
        sub_keys = sorted({k[1] for k in series})
        for i, (key, rows) in enumerate(sorted(series.items())):
            rows.sort(key=lambda t: t[0])
            shift = _dodge(i, len(series), log_x)
            xs = [shift(x) for x, _ in rows]
            ys = [r["ratio"] for _, r in rows]
            err = [[r["ratio"] - r["ci_low"] for _, r in rows], [r["ci_high"] - r["ratio"] for _, r in rows]]
            name = key[0] + (f" · {key[1]}" if key[1] else "")
            ax.errorbar(
                xs,
                ys,
                yerr=err,
                marker=MARKERS[sub_keys.index(key[1]) % len(MARKERS)],
                capsize=3,
                color=colours.get(key[0], PALETTE[0]),
                ls=styles[sub_keys.index(key[1]) % len(styles)],
                label=label(name),
            )
        grid_x_axis(ax, x_axis, xs_all, plan["x_scale"])
        ax.set_yscale("log")
        ax.set_ylim(lo, hi)
        plain_log_axis(ax.yaxis, lo, hi)
        ax.axhline(1.0, color="black", lw=1, ls="--", zorder=0)
        ax.set_ylabel(f"ratio to '{baseline}' (×, log scale)")
        ax.set_title(wrap(subtitle, 95))
        place_legend(ax, len(series), title="treatment")
    else:
        rows = []
        for p in pts:
            for r in p["ratios"]:
                if r["ci_low"] is not None:
                    rows.append((_sub_label(p["params"], panel_axes) if panel_axes else "", r))
        height = 1.9 + 0.42 * len(rows)
        fig, ax = plt.subplots(figsize=(8, min(height, 40)), layout="constrained")
        for i, (pl, r) in enumerate(rows):
            y = len(rows) - 1 - i
            ax.errorbar(
                [r["ratio"]],
                [y],
                xerr=[[r["ratio"] - r["ci_low"]], [r["ci_high"] - r["ratio"]]],
                marker="o",
                capsize=3,
                color=colours.get(r["treatment"], PALETTE[0]),
                ls="none",
            )
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([wrap(r["treatment"] + (f" · {pl}" if pl else ""), 45) for pl, r in reversed(rows)])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        plain_log_axis(ax.xaxis, lo, hi)
        ax.axvline(1.0, color="black", lw=1, ls="--", zorder=0)
        ax.set_xlabel(f"ratio to '{baseline}' (×, log scale; > 1: treatment better)")
        ax.grid(False, axis="y")
        ax.set_title(wrap(subtitle, 70))
    _title(fig, exp, subtitle)
    return writer.save(fig, exp["name"] + "-ratio")


# ---- 2. the deciding metric per arm, with the machine's limit ----------------------------------


def drawn_limit(arm):
    """The arm's limit when it is in the deciding metric's unit (a limit placed against a secondary
    counter, e.g. fusion's bytes_per_second, is not drawn on the metric's axis)."""
    return arm["limit"] if arm["limit"] and not arm["limit"].get("counter") else None


def metric_figure(exp, run, writer, plan=None):
    """Median of the deciding metric per arm (whiskers: min to max over processes) across the grid,
    with each limit the summary attached drawn as a horizontal line. Where the plan (figure_plan)
    has an error counter, a panel under each one shows it (accuracy beside speed)."""
    pts = [p for p in exp["points"] if any(a["median"] is not None for a in p["arms"])]
    if not pts:
        return None, None
    plan = plan or figure_plan(exp, run)
    error_counter = plan["error_counter"]
    order, roles = arm_order(exp)
    colours = arm_colours(exp)
    mode, x_axis, panel_axes = _layout(exp, pts, plan["x_axis"])
    if mode == "line":
        panels = []
        for p in pts:
            key = _sub_label(p["params"], panel_axes)
            if key not in panels:
                panels.append(key)
        if len(panels) > 6:
            numeric, other = varying_axes(exp, pts)
            mode, x_axis, panel_axes = "categorical", None, numeric + other
    if mode == "categorical":
        panels = [""]
        if len(pts) == 1:
            mode = "arms"  # one point: the arms themselves are the categories
    unit = exp["unit"]
    values = [v for p in pts for a in p["arms"] for v in (a["median"], a["min"], a["max"]) if v is not None]
    values += [a["limit"]["median"] for p in pts for a in p["arms"] if drawn_limit(a)]
    divisor, shown = units.scale_for(unit, values)
    positive = [v for v in values if v > 0]
    meds = [a["median"] for p in pts for a in p["arms"] if a["median"] is not None and a["median"] > 0]
    log_y = log_scale(meds, plan["y_scale"], inclusive=False)
    if len(panel_axes) == 1:  # one axis: its values are the labels, its name the axis title
        cat_labels = [param_text(panel_axes[0], p["params"].get(panel_axes[0], "")) for p in pts]
        cat_title = axis_title(panel_axes[0])
    else:
        cat_labels = [_sub_label(p["params"], panel_axes) if panel_axes else "all" for p in pts]
        cat_title = "grid point" if panel_axes else ""
    better = "lower" if exp["better"] == "lower" else "higher"
    heights = []
    for _ in panels:
        heights += [1.0, 0.62] if error_counter else [1.0]
    n_limits = len({(a["limit"]["benchmark"], a["limit"]["median"]) for p in pts for a in p["arms"] if drawn_limit(a)})
    legend_rows = math.ceil((len(order) + n_limits) / 2) if len(order) + n_limits > 3 else 0
    legend_rows += math.ceil(len(order) / 2) if error_counter and len(order) > 3 else 0
    fig = plt.figure(figsize=(8.5, 0.9 + 3.3 * sum(heights) + len(panels) * 0.2 * legend_rows), layout="constrained")
    gs = fig.add_gridspec(len(heights), 1, height_ratios=heights)
    for row, panel in enumerate(panels):
        step = 2 if error_counter else 1
        ax = fig.add_subplot(gs[row * step, 0])
        eax = fig.add_subplot(gs[row * step + 1, 0]) if error_counter else None
        panel_pts = [p for p in pts if mode != "line" or _sub_label(p["params"], panel_axes) == panel]
        present = [
            n for n in order if any(a["arm"] == n and a["median"] is not None for p in panel_pts for a in p["arms"])
        ]
        xs_all = [as_number(p["params"][x_axis]) for p in panel_pts] if mode == "line" else []
        log_x = mode == "line" and log_scale(xs_all, plan["x_scale"])
        entries, err_values, limits = 0, [], {}
        for i, name in enumerate(present):
            if mode == "line":
                shift = _dodge(i, len(present), log_x)
            elif mode == "categorical":
                shift = lambda x, i=i: x + (i - (len(present) - 1) / 2) * 0.7 / max(len(present), 1)
            else:
                shift = lambda x, i=i: i
            xs, ys, lo_err, hi_err, ex, ey, best_pct = [], [], [], [], [], [], None
            worst_defect, defects = None, []
            for p in panel_pts:
                a = next((a for a in p["arms"] if a["arm"] == name), None)
                if a is None or a["median"] is None:
                    continue
                if drawn_limit(a):
                    limits.setdefault((a["limit"]["benchmark"], a["limit"]["median"]), set()).add(name)
                x = as_number(p["params"][x_axis]) if mode == "line" else pts.index(p)
                m = a["median"] / divisor
                xs.append(shift(x))
                ys.append(m)
                lo_err.append(m - (a["min"] / divisor if a["min"] is not None else m))
                hi_err.append((a["max"] / divisor if a["max"] is not None else m) - m)
                if a["percent_of_limit"] is not None and drawn_limit(a):
                    if a["limit_defect"]:  # above its limit: flagged on the point, never a plain figure
                        worst_defect = max(worst_defect or 0, a["percent_of_limit"])
                        defects.append((shift(x), m))
                    else:
                        best_pct = max(best_pct or 0, a["percent_of_limit"])
                if error_counter:
                    e = run.counter_median(a["benchmark"], error_counter)
                    if e is not None and e > 0:
                        ex.append(shift(x))
                        ey.append(e)
            text = f"{name} ({roles[name]})"
            if best_pct is not None:
                text += f", up to {best_pct:.0f} % of limit" if best_pct >= 10 else f", up to {best_pct:.2g} % of limit"
            if worst_defect is not None:
                text += f", DEFECT: {worst_defect:.0f} % of its limit (not the best this machine can do)"
            ax.errorbar(
                xs,
                ys,
                yerr=[lo_err, hi_err],
                marker=MARKERS[i % len(MARKERS)],
                capsize=3,
                ms=6,
                color=colours[name],
                ls="-" if mode == "line" else "none",
                label=label(text) if mode != "arms" else None,
            )
            entries += 1
            for x, y in defects:
                ax.annotate(
                    "DEFECT",
                    (x, y),
                    xytext=(0, 9),
                    textcoords="offset points",
                    ha="center",
                    fontsize=7,
                    fontweight="bold",
                    color="#8f1b1b",
                )
            if mode == "arms":
                for x, y in zip(xs, ys):
                    ax.annotate(
                        units.format_value(y * divisor, unit),
                        (x, y),
                        xytext=(8, 0),
                        textcoords="offset points",
                        va="center",
                        fontsize=8,
                    )
            if eax is not None and ey:
                eax.plot(
                    ex,
                    ey,
                    marker=MARKERS[i % len(MARKERS)],
                    color=colours[name],
                    ls="-" if mode == "line" else "none",
                    label=label(name),
                )
                err_values += ey
        shared = len(limits) == 1 or all(len(arms) == len(present) for arms in limits.values())
        for k, ((bench, med), arms) in enumerate(sorted(limits.items())):
            colour = "black" if shared or len(arms) != 1 else colours.get(next(iter(arms)), "black")
            ax.axhline(
                med / divisor,
                color=colour,
                ls=(0, (4, 2)) if k % 2 == 0 else (0, (1, 1.5)),
                lw=1.2,
                label=label(
                    (f"{next(iter(arms))}'s limit" if len(arms) == 1 and not shared else "limit")
                    + f": {units.format_value(med, unit)} ({bench})"
                ),
            )
            entries += 1
        if mode == "line":
            grid_x_axis(ax, x_axis, xs_all, plan["x_scale"])
        elif mode == "categorical":
            categorical_x_axis(ax, cat_labels, cat_title)
        else:
            categorical_x_axis(ax, [f"{n} ({roles[n]})" for n in present], "arm")
        if log_y:
            ax.set_yscale("log")
            lo_v, hi_v = min(positive) / divisor / 1.5, max(positive) / divisor * 1.5
            ax.set_ylim(lo_v, hi_v)
            plain_log_axis(ax.yaxis, lo_v, hi_v)
        else:
            ax.set_ylim(0, max(values) / divisor * 1.12 if values else 1)
        ax.set_ylabel(wrap(f"{units.metric_label(exp['metric'], unit)} ({shown}); {better} is better", 40))
        shown_axes = ([x_axis] if x_axis else []) + panel_axes
        fixed = _fixed_text(exp, panel_pts, shown_axes)
        ax.set_title(wrap(" · ".join(t for t in (exp["name"], panel, fixed) if t), 80))
        if mode != "arms" or limits:
            place_legend(ax, entries)
        if eax is not None:
            if mode == "line":
                grid_x_axis(eax, x_axis, xs_all, plan["x_scale"])
            elif mode == "categorical":
                categorical_x_axis(eax, cat_labels, cat_title)
            else:
                categorical_x_axis(eax, present, "arm")
            eax.set_title(wrap(f"accuracy at the same points: {error_counter} (median over processes)", 80))
            eax.set_ylabel(wrap(f"{error_counter.replace('_', ' ')} (dimensionless); lower is better", 40))
            if err_values:
                eax.set_yscale("log")
                lo_e, hi_e = min(err_values) / 3, max(err_values) * 3
                eax.set_ylim(lo_e, hi_e)
                plain_log_axis(eax.yaxis, lo_e, hi_e)
                place_legend(eax, len(present))
    _title(fig, exp, "")
    return writer.save(fig, exp["name"] + ("-accuracy" if error_counter else "-metric")), error_counter


# ---- 3. memory: the metric against peak RSS (allocators) -----------------------------------------


def rss_figure(exp, run, writer, plan=None):
    """The deciding metric against the plan's memory counter (peak RSS): one point per arm and
    grid point. None where the plan has no memory counter (the declared figure is not 'memory')."""
    counter = (plan or figure_plan(exp, run))["memory_counter"]
    if counter is None:
        return None
    order, roles = arm_order(exp)
    colours = arm_colours(exp)
    numeric, other = varying_axes(exp, exp["points"])
    workload_axes = numeric + other
    rows = []
    for p in exp["points"]:
        for a in p["arms"]:
            rss = run.counter_median(a["benchmark"], counter)
            if a["median"] is None or rss is None:
                continue
            rows.append((a, _sub_label(p["params"], workload_axes) if workload_axes else "all", rss))
    if not rows:
        return None
    workloads = []
    for _, w, _ in rows:
        if w not in workloads:
            workloads.append(w)
    unit = exp["unit"]
    ys = [v for a, _, _ in rows for v in (a["median"], a["min"], a["max"]) if v is not None]
    divisor, shown = units.scale_for(unit, ys)
    xdiv, xshown = units.scale_for("bytes", [r for _, _, r in rows])
    fig, ax = plt.subplots(figsize=(8, 5.2), layout="constrained")
    for a, w, rss in rows:
        m = a["median"] / divisor
        lo = m - (a["min"] / divisor if a["min"] is not None else m)
        hi = (a["max"] / divisor if a["max"] is not None else m) - m
        ax.errorbar(
            [rss / xdiv],
            [m],
            yerr=[[lo], [hi]],
            marker=MARKERS[workloads.index(w) % len(MARKERS)],
            color=colours[a["arm"]],
            ms=7,
            capsize=3,
            ls="none",
        )
    xs = [r / xdiv for _, _, r in rows]
    if min(xs) > 0 and max(xs) / min(xs) > 20:
        ax.set_xscale("log")
        plain_log_axis(ax.xaxis, min(xs) / 1.5, max(xs) * 1.5)
    pos = [v / divisor for v in ys if v > 0]
    if pos and max(pos) / min(pos) > 20:
        ax.set_yscale("log")
        ax.set_ylim(min(pos) / 1.5, max(pos) * 1.5)
        plain_log_axis(ax.yaxis, min(pos) / 1.5, max(pos) * 1.5)
    better = "lower" if exp["better"] == "lower" else "higher"
    ax.set_xlabel(f"{counter} ({xshown}, median over processes); lower is better")
    ax.set_ylabel(f"{units.metric_label(exp['metric'], unit)} ({shown}); {better} is better")
    arm_handles = [
        Line2D([], [], color=colours[n], marker="o", ls="none", label=label(f"{n} ({roles[n]})"))
        for n in order
        if any(a["arm"] == n for a, _, _ in rows)
    ]
    load_handles = [
        Line2D([], [], color="grey", marker=MARKERS[i % len(MARKERS)], ls="none", label=label(wrap(w, 40)))
        for i, w in enumerate(workloads)
    ]
    # Two legends: the inner one is a plain artist (not counted by the tight bounding box), so it
    # stays inside the axes; the arms go outside on the right.
    first = ax.legend(handles=load_handles, title="workload (grid point)", loc="best")
    ax.add_artist(first)
    ax.legend(handles=arm_handles, title="arm", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    sub = (
        f"{exp['name']}: one point per arm and workload; whiskers: min to max "
        f"over processes; better is toward the {'lower' if better == 'lower' else 'upper'} left"
    )
    ax.set_title(wrap(sub, 90))
    _title(fig, exp, sub)
    return writer.save(fig, exp["name"] + "-rss")


# ---- 3b. worker scaling (C5: where more workers stop helping) ---------------------------------

KNEE_FRACTION = 0.95  # the knee: fewest workers whose median reaches 95 % of the best median


def knee(medians, better="higher"):
    """medians: {workers: median} -> fewest workers within KNEE_FRACTION of the best."""
    if better == "lower":
        best = min(medians.values())
        return min(w for w, m in medians.items() if m * KNEE_FRACTION <= best)
    best = max(medians.values())
    return min(w for w, m in medians.items() if m >= KNEE_FRACTION * best)


def _count_noun(noun, n):
    """'worker threads' for 2, 'worker thread' for 1 (the arm axis is declared in the plural)."""
    return noun[:-1] if n == 1 and noun.endswith("s") else noun


def _secondary_meta(exp, counter):
    """(unit, better) the summary recorded for a secondary counter, else ("", "")."""
    for p in exp["points"]:
        for a in p["arms"]:
            meta = a.get("secondary", {}).get(counter)
            if meta:
                return meta.get("unit", ""), meta.get("better", "")
    return "", ""


def scaling_figure(exp, run, writer, plan=None):
    """The deciding metric against each arm's number (the plan's arm_values: worker count), one
    line per other grid point, with the knee marked, and the plan's counter (the consumer's idle
    fraction) beside it. Returns (files, knees text) or (None, [])."""
    scaling = (plan or figure_plan(exp, run))["scaling"]
    if scaling is None:
        return None, []
    counts, idle_counter, arm_axis = scaling["arm_values"], scaling["counter"], scaling["arm_axis"]
    lines = {}
    for p in exp["points"]:
        rest = {k: v for k, v in p["params"].items()}
        key = _sub_label(rest, [a for a in exp["axes"] if a in rest])
        for a in p["arms"]:
            if a["median"] is None:
                continue
            if a["arm"] not in counts:
                continue
            idle = run.counter_median(a["benchmark"], idle_counter) if idle_counter else None
            lines.setdefault(key, {})[counts[a["arm"]]] = (a["median"], a["min"], a["max"], idle)
    lines = {k: v for k, v in lines.items() if len(v) >= 2}
    if not lines:
        return None, []
    has_idle = any(v[3] is not None for pts in lines.values() for v in pts.values())
    ys = [v[i] for pts in lines.values() for v in pts.values() for i in range(3) if v[i] is not None]
    divisor, shown = units.scale_for(exp["unit"], ys)
    fig, axes = plt.subplots(
        1, 2 if has_idle else 1, figsize=(11 if has_idle else 7, 4.8), layout="constrained", squeeze=False
    )
    ax = axes[0][0]
    knees = []
    xs_all = sorted(set(counts.values()))
    for i, (key, pts) in enumerate(lines.items()):
        colour = PALETTE[i % len(PALETTE)]
        ws = sorted(pts)
        med = [pts[w][0] / divisor for w in ws]
        lo = [m - (pts[w][1] / divisor if pts[w][1] is not None else m) for m, w in zip(med, ws)]
        hi = [(pts[w][2] / divisor if pts[w][2] is not None else m) - m for m, w in zip(med, ws)]
        ax.errorbar(ws, med, yerr=[lo, hi], marker="o", capsize=3, color=colour, label=label(wrap(key, 40)))
        k = knee({w: pts[w][0] for w in ws}, exp["better"])
        ax.plot([k], [pts[k][0] / divisor], marker="*", ms=16, color=colour, ls="none")
        knees.append(f"{key}: {_g(k)} {_count_noun(arm_axis, k)}")
        if has_idle:
            idle = [(w, pts[w][3]) for w in ws if pts[w][3] is not None]
            scale = 100 if _secondary_meta(exp, idle_counter)[0] == "fraction" else 1
            axes[0][1].plot(
                [w for w, _ in idle], [scale * v for _, v in idle], marker="o", color=colour, label=label(wrap(key, 40))
            )
    for a in [ax] + ([axes[0][1]] if has_idle else []):
        a.set_xticks(xs_all)
        a.set_xlabel(f"{arm_axis} (arm)")
    ax.set_ylabel(f"{units.metric_label(exp['metric'], exp['unit'])} ({shown}); {exp['better']} is better")
    ax.set_title(
        wrap(
            f"median over processes (whiskers: min to max); star: the knee, fewest "
            f"{_count_noun(arm_axis, 2)} within {100 * KNEE_FRACTION:.0f} % of the best",
            60,
        ),
        fontsize="medium",
    )
    place_legend(ax, len(lines), title="grid point")
    if has_idle:
        side = axes[0][1]
        side_unit, side_better = _secondary_meta(exp, idle_counter)
        side.set_ylabel(
            wrap(
                f"{idle_counter.replace('_', ' ')} ({'% of the time' if side_unit == 'fraction' else side_unit or 'value'})"
                + (f"; {side_better} is better" if side_better else ""),
                45,
            )
        )
        if side_unit == "fraction":
            side.set_ylim(0, 100)
        side.set_title(f"{idle_counter} (median over processes)", fontsize="medium")
    _title(fig, exp, "")
    return writer.save(fig, exp["name"] + "-scaling"), knees


# ---- 4. history ---------------------------------------------------------------------------------


def resolution_figure(history, writer):
    """Each benchmark's resolution over time (docs/gate.md, "Resolution": the smallest change a gate
    between two runs could decide from its history, at its sample size), one panel per machine:
    thin grey lines per benchmark, the median over benchmarks bold, the 5 % threshold dashed.
    None where no series has 3 runs."""
    machines = [m for m in history.machines() if any(s.resolutions for (b, mm), s in history.series.items() if mm == m)]
    if not machines:
        return None
    fig, axes = plt.subplots(len(machines), 1, figsize=(9, 3.2 * len(machines)), squeeze=False, layout="constrained")
    for ax, machine in zip(axes[:, 0], machines):
        by_time = {}
        for (bench, m), s in sorted(history.series.items()):
            if m != machine or not s.resolutions:
                continue
            ax.plot([t for t, _ in s.resolutions], [100 * r for _, r in s.resolutions], color="0.75", lw=0.6)
            for t, r in s.resolutions:
                by_time.setdefault(t, []).append(r)
        times = sorted(by_time)
        ax.plot(
            times,
            [100 * statistics.median(by_time[t]) for t in times],
            color=PALETTE[0],
            lw=2.2,
            marker="o",
            ms=3,
            label="median over benchmarks",
        )
        ax.axhline(5, color="0.3", ls="--", lw=1, label="5 % threshold")
        ax.set_yscale("log")
        ax.set_ylabel("resolution (± %)")
        ax.set_title(f"machine {machine}", fontsize=10)
        ax.legend(loc="upper right", fontsize=8)
    return writer.save(fig, "resolution-over-time")


def history_figures(history, this_machine, writer, per_figure=6):
    """Per experiment, small multiples: each benchmark's per-run median over time (dots: process
    samples), one line per machine, change points as red lines, the machine's baseline as a star.
    `history`: history.History, the runs of a `pairbench history export`."""
    out = []
    machines = history.machines()
    mcolour = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(machines)}
    for experiment, series in sorted(history.experiments().items()):
        benches = []
        for s in series:
            if s.benchmark not in benches:
                benches.append(s.benchmark)
        for start in range(0, len(benches), per_figure):
            chunk = benches[start : start + per_figure]
            ncols = 2 if len(chunk) > 1 else 1
            nrows = math.ceil(len(chunk) / ncols)
            # The last, short row holds the legend (figure legends outside the axes need mpl >= 3.7).
            fig = plt.figure(figsize=(11 if ncols == 2 else 8, 1.4 + 2.9 * nrows), layout="constrained")
            gs = fig.add_gridspec(nrows + 1, ncols, height_ratios=[1.0] * nrows + [0.16])
            axes = [[fig.add_subplot(gs[r, c]) for c in range(ncols)] for r in range(nrows)]
            legend_ax = fig.add_subplot(gs[nrows, :])
            legend_ax.axis("off")
            any_cp = any_base = False
            seen_machines = []
            unit_text = ""
            for idx, bench in enumerate(chunk):
                ax = axes[idx // ncols][idx % ncols]
                bs = [s for s in series if s.benchmark == bench]
                # Exports from before points carried values: the medians alone set the scale.
                vals = [v for s in bs for _, _, vs in s.runs for v in vs] or [m for s in bs for _, _, m in s.medians()]
                divisor, shown = units.scale_for(bs[0].unit, vals)
                unit_text = units.metric_label(bs[0].metric, bs[0].unit)
                for s in bs:
                    colour = mcolour[s.machine_key]
                    mine = s.machine_key == this_machine
                    if s.machine_key not in seen_machines:
                        seen_machines.append(s.machine_key)
                    med = s.medians()
                    ax.plot(
                        [t for _, t, _ in med],
                        [m / divisor for _, _, m in med],
                        color=colour,
                        lw=1.8 if mine else 1.0,
                        alpha=1.0 if mine else 0.7,
                        marker="o",
                        ms=3,
                    )
                    dots_t = [t for _, t, vs in s.runs for _ in vs]
                    dots_v = [v / divisor for _, _, vs in s.runs for v in vs]
                    ax.plot(dots_t, dots_v, ls="none", marker=".", ms=2.5, color=colour, alpha=0.35)
                    for rid, before, after in history.change_points.get((s.benchmark, s.machine_key), []):
                        t = history.runs[rid]["started_at"]
                        ax.axvline(t, color="#d62728", ls="--", lw=1.1)
                        change = (after / before - 1) * 100 if before else float("nan")
                        ax.annotate(
                            f"{change:+.0f} %",
                            xy=(t, 1),
                            xycoords=("data", "axes fraction"),
                            xytext=(3, -10),
                            textcoords="offset points",
                            color="#d62728",
                            fontsize=7.5,
                        )
                        any_cp = True
                    base = history.baselines.get(s.machine_key)
                    for rid, t, m in med:
                        if rid == base:
                            ax.plot(
                                [t],
                                [m / divisor],
                                marker="*",
                                ms=13,
                                color="#ffb000",
                                mec="black",
                                mew=0.7,
                                ls="none",
                                zorder=5,
                            )
                            any_base = True
                name = bench[len(experiment) + 1 :] if bench.startswith(experiment + "/") else bench
                ax.set_title(wrap(name, 55 if ncols == 2 else 90))
                ax.set_ylabel(
                    f"{units.metric_label(bs[0].metric, bs[0].unit)} ({shown})"
                    + (f"; {bs[0].better} is better" if bs[0].better in ("lower", "higher") else "")
                )
                loc = mdates.AutoDateLocator(maxticks=6)
                ax.xaxis.set_major_locator(loc)
                ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))
                # Not zero-based: a 5 % step must be visible; at least +-8 % around the median so that
                # ordinary noise does not look dramatic.
                if vals:
                    mid = sorted(vals)[len(vals) // 2] / divisor
                    lo = min(min(vals) / divisor, mid * 0.92)
                    hi = max(max(vals) / divisor, mid * 1.08)
                    pad = (hi - lo) * 0.08
                    ax.set_ylim(lo - pad, hi + pad)
            for idx in range(len(chunk), nrows * ncols):
                axes[idx // ncols][idx % ncols].set_visible(False)
            handles = [
                Line2D(
                    [],
                    [],
                    color=mcolour[m],
                    marker="o",
                    ms=3,
                    label=label(f"machine {m}" + (" (this run's machine)" if m == this_machine else "")),
                )
                for m in seen_machines
            ]
            handles.append(Line2D([], [], color="grey", marker=".", ls="none", label="one process sample"))
            if any_cp:
                handles.append(Line2D([], [], color="#d62728", ls="--", label="change point (change of median)"))
            if any_base:
                handles.append(
                    Line2D(
                        [],
                        [],
                        color="#ffb000",
                        marker="*",
                        mec="black",
                        ms=11,
                        ls="none",
                        label="this machine's baseline run",
                    )
                )
            legend_ax.legend(handles=handles, loc="center", ncols=min(len(handles), 3), frameon=False)
            part = (
                f" ({start // per_figure + 1} of {math.ceil(len(benches) / per_figure)})"
                if len(benches) > per_figure
                else ""
            )
            fig.suptitle(
                wrap(f"Is {experiment} getting worse? {unit_text} per run over time{part}", 90), fontweight="bold"
            )
            out.append(
                {
                    "experiment": experiment,
                    "benchmarks": chunk,
                    "files": writer.save(fig, f"history-{experiment}-{start // per_figure + 1}"),
                }
            )
    return out
