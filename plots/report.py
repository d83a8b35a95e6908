#!/usr/bin/env python3
"""pairbench's plot report: `/usr/bin/python3 plots/report.py --run FILE [--history DB] -o DIR`.
Reads a run file (and the history database), writes PNG + SVG figures and an offline index.html.
Needs Debian's python3-matplotlib; never runs a binary. Exit 2 on bad input, one line."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pairbench_report.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
