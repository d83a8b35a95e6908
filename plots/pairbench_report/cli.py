"""`report.py --run FILE [--history-export FILE] [--claims FILE] [--gate FILE] -o DIR`: figures and index.html
(with a `pairbench history export` file, the history section's trend figures and fleet.html, the
cross-machine page). The history reaches the report only as `pairbench` exports it, from SQLite or
PostgreSQL alike (`pairbench report --db DB` writes the export and passes it), and the claims
catalogue only as `pairbench` embeds it (`pairbench report` passes it as --claims; `pairbench list
--format claims-json` prints it): nothing here opens a database or reads the source tree.
Exit status 0 when written; 2 on bad input or usage, with one line naming the file and field."""
import argparse
import glob
import os
import sys

from .errors import BadInput

HISTORY_GONE = (
    "--history: report.py no longer reads a history database; `pairbench report --run FILE --db DB` "
    "(an SQLite path or a postgresql:// URL) exports the history and passes it as --history-export"
)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BadInput(f"usage: {message} (see --help)")


def _parser():
    p = _Parser(
        prog="report.py",
        description="Render pairbench's plot report: PNG and SVG figures plus an " "offline index.html.",
    )
    p.add_argument("--run", required=True, metavar="FILE", help="run file written by `pairbench run`")
    p.add_argument(
        "--history-export",
        "--fleet",
        dest="export",
        metavar="FILE",
        help="`pairbench history export` file (format pairbench-history-export/1; --fleet is its older "
        "name): the history section's trend figures, and fleet.html, the cross-machine page (trends "
        "per machine, verdicts per machine kind)",
    )
    p.add_argument("--history", metavar="DB", help=argparse.SUPPRESS)  # refused with HISTORY_GONE
    p.add_argument(
        "--claims",
        metavar="FILE",
        help="claims catalogue (`pairbench list --format claims-json`; `pairbench report` passes it): "
        "the claims' seeds and quoted figures; without it the claims are the run file's "
        "(pairbench.claims: their text and verdicts). The verdicts are always the run file's",
    )
    p.add_argument(
        "--confirmation",
        metavar="FILE",
        help="the nightly's same-runner confirmation of the gate's suspects (ci/confirm.sh's confirmed.json)",
    )
    p.add_argument(
        "--gate",
        metavar="FILE",
        help="the gate's JSON (`pairbench gate|compare|ab --json FILE`): its headline, and per regression "
        "and improvement the functions that added (removed) the most instructions per iteration",
    )
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="output folder (created if missing)")
    return p


def _prepare_outdir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        raise BadInput(f"{path}: cannot create the output folder: {err.strerror}") from None
    if not os.access(path, os.W_OK):
        raise BadInput(f"{path}: output folder is not writable")
    # Figures of an earlier report in the same folder would linger beside the new page: drop ours only.
    for old in glob.glob(os.path.join(path, "fig[0-9][0-9]*-*.png")) + glob.glob(
        os.path.join(path, "fig[0-9][0-9]*-*.svg")
    ):
        os.remove(old)


def build(args):
    from . import claims as claims_mod
    from . import page
    from .history import History
    from .runfile import load_run
    from . import fleet

    if args.history is not None:
        raise BadInput(HISTORY_GONE)
    run = load_run(args.run)
    catalogue = claims_mod.load_claims(args.claims) if args.claims else None
    fleet_export = fleet.load_export(args.export) if args.export else None
    history = History(fleet_export) if fleet_export else None
    from .gate import load_gate

    gate = load_gate(args.gate, args.confirmation) if args.gate else None
    if args.confirmation and not args.gate:
        raise BadInput("--confirmation: needs --gate (the gate whose suspects it confirmed)")
    _prepare_outdir(args.out)
    from . import figures  # matplotlib loads only once the inputs are known to be good

    results = claims_mod.stored_results(catalogue, run)  # the harness's verdicts, drawn
    writer = figures.Writer(args.out)
    exp_figs = {}
    for exp in run.experiments:
        figs = []
        notes = page.not_run_notes(exp)
        skipped = (
            ("; not run here: " + "; ".join(f"{r} ({len(v)} arm/point pairs)" for r, v in notes.items()))
            if notes
            else ""
        )
        plan = figures.figure_plan(exp, run)  # the figure the experiment declared (old run files: guessed)
        if exp["kind"] != "limit":
            f = figures.ratio_figure(exp, writer, plan)
            if f:
                figs.append(
                    {
                        "files": f,
                        "alt": f"ratios of {exp['name']} treatments to the baseline",
                        "caption": page.e(
                            f"Ratio of each treatment to the baseline across the grid "
                            f"(> 1: treatment better; bars: the interval the run file records){skipped}."
                        ),
                    }
                )
        f, error_counter = figures.metric_figure(exp, run, writer, plan)
        if f:
            what = "bandwidth" if exp["unit"] == "B/s" else exp["metric"]
            extra = (
                f", with {error_counter} beside it"
                if error_counter
                else ("; no error counter in this run" if plan["wants_error"] else "")
            )
            figs.append(
                {
                    "files": f,
                    "alt": f"{what} per arm for {exp['name']}",
                    "caption": page.e(
                        f"{what} per arm (median; whiskers: min to max over processes), with "
                        f"this machine's limit where the run measured one{extra}{skipped}."
                    ),
                }
            )
        f, knees = figures.scaling_figure(exp, run, writer, plan)
        if f:
            axis, counter = plan["scaling"]["arm_axis"], plan["scaling"]["counter"]
            figs.append(
                {
                    "files": f,
                    "alt": f"{exp['metric']} against {axis} for {exp['name']}",
                    "caption": page.e(
                        f"{exp['metric']} against the number of {axis}"
                        f"{', and ' + counter + ' beside it' if counter else ''}. More {axis} stop "
                        f"helping at: {'; '.join(knees)} (fewest {axis} within "
                        f"{100 * figures.KNEE_FRACTION:.0f} % of the best median){skipped}."
                    ),
                }
            )
        f = figures.rss_figure(exp, run, writer, plan)
        if f:
            figs.append(
                {
                    "files": f,
                    "alt": f"{exp['metric']} against {plan['memory_counter']} for {exp['name']}",
                    "caption": page.e(
                        f"{exp['metric']} against {plan['memory_counter']}: one point per arm "
                        "(colour) and grid point (marker); better is toward the "
                        f"{'lower' if exp['better'] == 'lower' else 'upper'} left."
                    ),
                }
            )
        exp_figs[exp["name"]] = figs
    hist_figs = figures.history_figures(history, run.machine_key(), writer) if history else []
    resolution_fig = figures.resolution_figure(history, writer) if history else None
    fleet_summary = fleet.write(args.out, fleet_export, writer) if fleet_export else None
    text = page.render(
        args.out,
        run,
        results,
        exp_figs,
        history,
        hist_figs,
        history.label if history else "",
        fleet_summary,
        gate,
        resolution_fig,
    )
    tmp = os.path.join(args.out, ".index.html.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, os.path.join(args.out, "index.html"))
    return writer.count


def main(argv=None):
    try:
        args = _parser().parse_args(argv)
        count = build(args)
    except BadInput as err:
        print(f"report: {err}", file=sys.stderr)
        return 2
    print(f"report: wrote {os.path.join(args.out, 'index.html')} and {count} figure(s) (PNG + SVG)")
    return 0
