#!/usr/bin/env python3
"""pairbench's plot report: `/usr/bin/python3 plots/report.py --run FILE [--history-export FILE]
[--claims FILE] -o DIR`. Reads a run file (and a `pairbench history export`, the claims catalogue),
writes PNG + SVG figures and an offline index.html (and fleet.html). `pairbench report` calls it
with both. Needs Debian's python3-matplotlib; never runs a binary nor opens a database. Exit 2 on
bad input, one line."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pairbench_report.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
