# SPDX-License-Identifier: GPL-3.0-or-later
"""Command line: ``python -m solver_core solve CASE.json [-o RESULT.json|RESULT.jsonl]``, ``check``,
``presets`` and ``sweep SWEEP.json -o OUTDIR`` (sweep.py)."""

import argparse
import gc
import os
import sys
import tempfile

import numpy as np

from .bundle import RULES as BUNDLE_RULES
from .case import load_case
from .errors import CaseError
from .materials import PRESETS

DESCRIPTION = """\
Solve the quasi-static equilibrium of the cables of a harness case (JSON, format
cable-harness-case/1, SI units) and write the result (cable-harness-result/1).

The result holds one entry per solve: the case as given first, then one per case step.
It is written step by step as it is solved, to a temporary file beside the output that
replaces the output only once complete. An output ending in .jsonl is written as JSON
Lines (cable-harness-result-stream/1): a header line, one line per step, an end line.

Exit status: 0 when every cable converged, 1 when some cable did not (the result is still
written, with converged: false and the last good state), 2 for an invalid case or output
(one line on stderr naming the offending field or file), 3 for an internal error.
"""


class AtomicOutput:
    """An output file written through a temporary file in the same folder and renamed over it when
    complete (os.replace is atomic within a file system): a failure midway leaves any previous file as
    it was. Opening it checks the target before any work is done."""

    def __init__(self, path: str, option: str = "-o"):
        self.path = path
        if not path:
            raise CaseError(f"{option}: the output path is empty")
        if os.path.isdir(path):
            raise CaseError(f"{option} {path}: is a folder, not a file")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise CaseError(f"{option} {path}: the folder {folder} does not exist")
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise CaseError(f"{option} {path}: the file is not writable")
        try:
            fd, self.temp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
        except OSError as exc:
            raise CaseError(f"{option} {path}: cannot write in {folder}: {exc.strerror}") from None
        self.file = os.fdopen(fd, "w", encoding="utf-8")
        self.option = option

    def write(self, text: str) -> None:
        try:
            self.file.write(text)
        except OSError as exc:
            self.discard()
            raise CaseError(f"{self.option} {self.path}: writing failed: {exc.strerror}") from None

    def commit(self) -> None:
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            os.replace(self.temp, self.path)
        except OSError as exc:
            self.discard()
            raise CaseError(f"{self.option} {self.path}: writing failed: {exc.strerror}") from None

    def discard(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass
        if os.path.exists(self.temp):
            os.unlink(self.temp)


def _summary_lines(index: int, step: dict):
    for cid, c in step["cables"].items():
        radius = c["min_bend_radius"]
        radius_text = "straight" if radius is None else f"{radius * 1e3:.1f} mm"
        state = "converged" if c["converged"] else "NOT converged"
        when = f" (t = {step['time']:.4g} s)" if "time" in step else ""
        yield (
            f"step {index}{when} cable {cid}: {state} in {c['iterations']} iterations, {c['solve_ms']:.2f} ms; "
            f"length {c['length']:.4f} m, min bend radius {radius_text}, "
            f"start force {[round(v, 4) for v in c['end_forces']['start']['force']]} N"
        )


def solve_to(case, output, lines: bool, echo) -> tuple:
    """Solve a case step by step, writing each step to ``output`` (an AtomicOutput or None) as it is
    solved; returns (every cable converged in every step, the warnings)."""
    from .harness import Harness
    from .results import RESULT_FORMAT, STREAM_FORMAT, dumps, dumps_stream_step
    from .run_case import iter_steps
    from .wire_routes import wires_document

    wires = {"wires": wires_document(case.wires)} if case.wires else {}
    harness = Harness.from_case(case)
    # What exists now (the case, the compiled kernels, the models) lives until the end: the garbage
    # collector need not traverse it again after every step's documents (at 1000 segments its full
    # collections doubled the mean cost of building a step's result).
    gc.collect()
    gc.freeze()
    try:
        ok = True
        if output is not None:
            if lines:
                output.write(
                    dumps(
                        {
                            "format": STREAM_FORMAT,
                            "result_format": RESULT_FORMAT,
                            "cables": [c.id for c in case.cables],
                            "steps": 1 + len(case.steps),
                            **wires,
                        }
                    )
                    + "\n"
                )
            else:
                head = dumps({"format": RESULT_FORMAT, **wires})[:-1]  # the object left open for the steps
                output.write(f'{head},"steps":[')
        for index, step in enumerate(iter_steps(case, harness, packed=lines)):
            ok = ok and all(c["converged"] for c in step["cables"].values())
            if output is not None:
                if lines:
                    output.write(dumps_stream_step(index, step) + "\n")
                else:
                    output.write(("," if index else "") + dumps(step))
            if echo is not None:
                for line in _summary_lines(index, step):
                    echo(line)
        warnings = list(harness.warnings)
        if output is not None:
            if lines:
                output.write(dumps({"end": True, "converged": ok, "warnings": warnings}) + "\n")
            else:
                output.write("]" + (f',"warnings":{dumps(warnings)}' if warnings else "") + "}\n")
    finally:
        gc.unfreeze()  # the caller's objects are its own again
    return ok, warnings


def _solve(args) -> int:
    output = AtomicOutput(args.output) if args.output else None
    try:
        case = load_case(args.case)
        echo = None if args.quiet else print
        # Non-finite intermediate values are caught where results are built (results.py) and reported
        # as failures with a message; numpy's warnings about them would only break stderr's one line.
        with np.errstate(all="ignore"):
            ok, warnings = solve_to(case, output, bool(args.output) and args.output.endswith(".jsonl"), echo)
        if output is not None:
            output.commit()
    except BaseException:
        if output is not None:
            output.discard()
        raise
    if not args.quiet:
        for line in _wire_lines(case.wires):
            print(line)
        for w in warnings:
            print(f"warning: {w}")
    return 0 if ok else 1


def _wire_lines(routes):
    """The bill of materials' routed wires, a line each: ends, length to cut, the cables it runs on."""
    for r in routes:
        yield (
            f"wire {r.id}: {r.count} x {1e3 * r.diameter:.2f} mm, {r.start[0]} ({r.start[1]}) to {r.end[0]} "
            f"({r.end[1]}), cut {r.length:.4f} m, through {' > '.join(r.cables)}"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m solver_core", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    solve = sub.add_parser("solve", help="solve a case file and write the result")
    solve.add_argument("case", help="case JSON file")
    solve.add_argument(
        "-o",
        "--output",
        help="result file: RESULT.json (one document) or RESULT.jsonl (JSON Lines, "
        "one line per step); default: print a summary only",
    )
    solve.add_argument("-q", "--quiet", action="store_true", help="no summary on stdout")
    check = sub.add_parser("check", help="validate a case file without solving it")
    check.add_argument("case")
    sub.add_parser("presets", help="list the material presets and their sources")
    from .sweep import add_sweep_parser

    add_sweep_parser(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "presets":
        for p in PRESETS.values():
            print(f"{p.name}: {p.description}\n    values: {p.values}\n    source: {p.source}")
        print(BUNDLE_RULES)
        return 0
    try:
        if args.command == "check":
            case = load_case(args.case)
            print(f"{args.case}: valid ({len(case.cables)} cables, {len(case.steps)} steps)")
            return 0
        if args.command == "sweep":
            from .sweep import run_sweep_command

            return run_sweep_command(args)
        return _solve(args)
    except CaseError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, said in one line rather than a traceback
        print(
            f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]} (please report it with "
            f"the case)",
            file=sys.stderr,
        )
        return 3
