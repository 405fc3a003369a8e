# SPDX-License-Identifier: GPL-3.0-or-later
"""Command line: ``python -m solver_core solve CASE.json [-o RESULT.json]``."""

import argparse
import json
import math
import sys

from .case import load_case
from .errors import CaseError
from .harness import solve_case
from .materials import PRESETS

DESCRIPTION = """\
Solve the quasi-static equilibrium of the cables of a harness case (JSON, format
cable-harness-case/1, SI units) and write the result (cable-harness-result/1).

The result holds one entry per solve: the case as given first, then one per case step.
Exit status: 0 when every cable converged, 1 when some cable did not (the result is still
written, with converged: false and the last good state), 2 for an invalid case (one line on
stderr naming the offending field).
"""


def _finite(obj):
    """JSON has no Infinity: write unbounded values (e.g. the bend radius of a straight cable) as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def _summary(result) -> str:
    lines = []
    for i, step in enumerate(result["steps"]):
        for cid, c in step["cables"].items():
            radius = c["min_bend_radius"]
            radius_text = "straight" if radius is None or radius == float("inf") else f"{radius * 1e3:.1f} mm"
            state = "converged" if c["converged"] else "NOT converged"
            lines.append(f"step {i} cable {cid}: {state} in {c['iterations']} iterations, {c['solve_ms']:.2f} ms; "
                         f"length {c['length']:.4f} m, min bend radius {radius_text}, "
                         f"start force {[round(v, 4) for v in c['end_forces']['start']['force']]} N")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m solver_core", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    solve = sub.add_parser("solve", help="solve a case file and write the result")
    solve.add_argument("case", help="case JSON file")
    solve.add_argument("-o", "--output", help="result JSON file (default: print a summary only)")
    solve.add_argument("-q", "--quiet", action="store_true", help="no summary on stdout")
    check = sub.add_parser("check", help="validate a case file without solving it")
    check.add_argument("case")
    sub.add_parser("presets", help="list the material presets and their sources")
    args = parser.parse_args(argv)

    if args.command == "presets":
        for p in PRESETS.values():
            print(f"{p.name}: {p.description}\n    values: {p.values}\n    source: {p.source}")
        return 0
    try:
        case = load_case(args.case)
        if args.command == "check":
            print(f"{args.case}: valid ({len(case.cables)} cables, {len(case.steps)} steps)")
            return 0
        result = solve_case(case)
    except CaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            json.dump(_finite(result), fh, indent=1)
    if not args.quiet:
        print(_summary(result))
        for w in result.get("warnings", []):
            print(f"warning: {w}")
    ok = all(c["converged"] for step in result["steps"] for c in step["cables"].values())
    return 0 if ok else 1
