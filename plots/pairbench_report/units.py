"""Display units. Run files store SI base units (ns for the dispatch metric, B/s, FLOP/s, bytes);
only the report converts, and one axis or table column always uses one unit."""
import math

_TIME_SCALES = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]  # value in ns per unit
_DECIMAL = [("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15)]
_BINARY = [("B", 1.0), ("KiB", 2.0**10), ("MiB", 2.0**20), ("GiB", 2.0**30), ("TiB", 2.0**40)]

_TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def _pick(scales, typical):
    chosen = scales[0]
    for name, factor in scales:
        if typical >= factor * 0.9999:
            chosen = (name, factor)
    return chosen


def _typical(values):
    vals = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    if not vals:
        return 1.0
    return math.exp(sum(math.log(v) for v in vals) / len(vals))  # geometric mean


def scale_for(unit, values):
    """(divisor, display unit) so that the values read as plain numbers in one unit.
    Times go to ns/µs/ms/s, byte counts to KiB/MiB/GiB, everything else gets a decimal prefix."""
    typical = _typical(values)
    if unit in _TIME_UNITS_NS:
        base = _TIME_UNITS_NS[unit]
        name, factor = _pick(_TIME_SCALES, typical * base)
        return factor / base, name
    if unit in ("bytes", "B"):
        name, factor = _pick(_BINARY, typical)
        return factor, name
    name, factor = _pick(_DECIMAL, typical)
    return factor, f"{name}{unit}" if unit else (name or "")


def format_value(value, unit, digits=3):
    """One quantity in its own best unit: '1.45 µs', '53.2 GB/s', '64 MiB'."""
    if value is None or not math.isfinite(value):
        return "n/a"
    divisor, shown = scale_for(unit, [value])
    return f"{_g(value / divisor, digits)} {shown}".strip()


def _g(x, digits):
    if x == 0:
        return "0"
    if abs(x) >= 10**digits:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def format_ratio(ratio, low=None, high=None):
    if ratio is None:
        return "n/a"
    text = f"{_g(ratio, 3)}×"
    if low is not None and high is not None:
        text += f" [{_g(low, 3)}, {_g(high, 3)}]"
    return text


def format_size_tick(value):
    """A byte count as a short binary-prefixed tick label: '4 KiB', '1 GiB'."""
    name, factor = _pick(_BINARY, value)
    return f"{_g(value / factor, 3)} {name}"


def format_count_tick(value):
    """A plain count as a short tick label: 1000 -> '1k', 10000 -> '10k', 64 -> '64'."""
    if value >= 1e5:
        name, factor = _pick(_DECIMAL, value)
        return f"{_g(value / factor, 3)}{name}"
    return f"{value:,.0f}" if value == int(value) else _g(value, 4)


def metric_label(metric, unit):
    """A readable axis name for a deciding metric (the unit comes separately)."""
    names = {
        "ns_per_op": "time per op",
        "bytes_per_second": "bandwidth",
        "flop_per_second": "throughput",
        "items_per_second": "items per second",
        "ops_per_second": "ops per second",
        "elements_per_second": "elements per second",
        "peak_rss_bytes": "peak RSS",
    }
    return names.get(metric, metric.replace("_", " "))
