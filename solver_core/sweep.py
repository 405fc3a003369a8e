# SPDX-License-Identifier: GPL-3.0-or-later
"""Variation sweeps: variants of a case solved in parallel on Dask."""

from .errors import CaseError


def add_sweep_parser(sub) -> None:
    sweep = sub.add_parser("sweep", help="solve variants of a case in parallel (Dask) and summarise them")
    sweep.add_argument("sweep", help="sweep JSON file (format cable-harness-sweep/1)")
    sweep.add_argument("-o", "--output", required=True, help="output folder (results.csv, summary.json, plots)")
    sweep.add_argument("--scheduler", help="address of a running Dask scheduler (default: a local cluster)")
    sweep.add_argument("--workers", type=int, help="local cluster workers (default: one per core)")
    sweep.add_argument("-q", "--quiet", action="store_true", help="no progress on stdout")


def run_sweep_command(args) -> int:
    raise CaseError("sweep: not available yet")
