# SPDX-License-Identifier: GPL-3.0-or-later
"""Command line: ``python -m solver_core solve CASE.json [-o RESULT.json|RESULT.jsonl]``, ``check``,
``presets``, ``formboard CASE.json -o BOARD.svg`` (formboard.py), ``envelope CASE.json -o MESH.stl``
(envelope.py), ``calibrate TESTS.json --library LIB.json`` (calibration.py), ``kbl CASE.json -o
HARNESS.kbl`` and ``read-kbl HARNESS.kbl`` (kbl_command.py) and ``sweep SWEEP.json -o OUTDIR`` (sweep.py)."""

import argparse
import gc
import os
import sys
import time

import numpy as np

from ..errors import CaseError, check_title
from ..specs.bundle import RULES as BUNDLE_RULES
from ..specs.case import load_case, read_json, step_duration
from ..specs.materials import PRESETS
from . import signals
from .output_files import AtomicOutput  # noqa: F401  (the command line's output, also used by benchmarks)

DESCRIPTION = """\
Solve the quasi-static equilibrium of the cables of a harness case (JSON, format
cable-harness-case/1, SI units) and write the result (cable-harness-result/1).

The result holds one entry per solve: the case as given first, then one per case step.
It is written step by step as it is solved, to a temporary file beside the output that
replaces the output only once complete. An output ending in .jsonl is written as JSON
Lines (cable-harness-result-stream/1): a header line, one line per step, an end line.

Exit status: 0 when every cable converged, 1 when some cable did not (the result is still
written, with converged: false and the last good state), 2 for an invalid case or output
(one line on stderr naming the offending field or file), 3 for an internal error, and 128 plus
the signal's number when stopped by SIGINT (Ctrl-C: 130), SIGTERM (143) or SIGHUP (129): one line
on stderr, no temporary file left, a previous result file as it was.
"""


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


PROGRESS_INTERVAL = 5.0  # [s] between progress lines of a long dynamic step (stderr)


class _Progress:
    """A line on stderr every PROGRESS_INTERVAL while a step of a dynamic case has been solving that
    long (a step of 100 s at 1 ms runs for minutes): which step, which time step of how many, how long
    so far. The integrator calls the harness's solve_boundaries once per stage (two per time step of
    the cosserat model): counting the calls gives the progress without a callback in the solver."""

    def __init__(self, case, harness, write):
        import threading

        from ..solve.dynamics import time_steps

        self.write, self.total = write, 1 + len(case.steps)
        self.index, self.stages, self.started = 0, 0, time.monotonic()
        self.stages_of = {}
        if case.solver.model != "cosserat_pbd":  # its integrator has stages of its own
            for i in range(len(case.steps)):
                self.stages_of[i + 1] = 2 * time_steps(step_duration(case, i), case.solver.dynamics.time_step)
        solve = harness.solve_boundaries

        def counted(ids, targets):
            self.stages += 1
            return solve(ids, targets)

        harness.solve_boundaries = counted
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self.thread.start()

    def begin(self, index) -> None:
        self.index, self.stages, self.started = index, 0, time.monotonic()

    def _run(self) -> None:
        while not self.stop.wait(PROGRESS_INTERVAL):
            elapsed = time.monotonic() - self.started
            if elapsed < PROGRESS_INTERVAL or self.index >= self.total:
                continue
            stages = self.stages_of.get(self.index)
            where = f"time step {max(1, self.stages // 2)} of {stages // 2}" if stages else "solving"
            self.write(f"step {self.index} of {self.total - 1}: {where} ({elapsed:.0f} s so far)")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(1.0)


def solve_to(case, output, lines: bool, echo) -> tuple:
    """Solve a case step by step, writing each step to ``output`` (an AtomicOutput or None) as it is
    solved; returns (every cable converged in every step, the warnings)."""
    from ..session.harness import Harness
    from ..session.results import RESULT_FORMAT, STREAM_FORMAT, dumps, dumps_stream_step
    from ..specs.wire_routes import wires_document
    from .run_case import iter_steps

    wires = {"wires": wires_document(case.wires)} if case.wires else {}
    harness = Harness.from_case(case)
    # What exists now (the case, the compiled kernels, the models) lives until the end: the garbage
    # collector need not traverse it again after every step's documents (at 1000 segments its full
    # collections doubled the mean cost of building a step's result).
    gc.collect()
    gc.freeze()
    progress = None
    if case.solver.dynamics is not None:
        progress = _Progress(case, harness, lambda line: print(line, file=sys.stderr, flush=True))
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
            if progress is not None:
                progress.begin(index + 1)
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
        if progress is not None:
            progress.close()
        gc.unfreeze()  # the caller's objects are its own again
    return ok, warnings


def _envelope(args) -> int:
    from .envelope import motion_envelope, obj_text, stl_text

    kind = os.path.splitext(args.output)[1].lower()
    if kind not in (".stl", ".obj"):
        raise CaseError(f"-o {args.output}: an envelope is written as .stl or .obj")
    output = AtomicOutput(args.output)
    try:
        case = load_case(args.case)
        ids = [c.id for c in case.cables]
        if args.cable is None and len(ids) > 1:
            raise CaseError(f"--cable: the case has {len(ids)} cables ({', '.join(ids)}); name one")
        cable_id = ids[0] if args.cable is None else args.cable
        result = read_json(args.result, "result file") if args.result else None
        with np.errstate(all="ignore"):
            envelope, clearance = motion_envelope(case, cable_id, result, args.voxel)
        if kind == ".stl":
            output.write_bytes(stl_text(envelope, cable_id))
        else:
            output.write(obj_text(envelope, cable_id))
        output.commit()
    except BaseException:
        output.discard()
        raise
    print(
        f"{args.output}: envelope of {cable_id!r}, {len(envelope.triangles)} triangles, closed, volume "
        f"{envelope.volume * 1e6:.4g} cm^3 at a {envelope.voxel * 1e3:.3g} mm voxel"
    )
    if clearance is not None:
        gap, step, s = clearance["gap"], clearance["step"], clearance["s"]
        print(f"  least clearance {gap * 1e3:.3g} mm, at step {step}, s = {s:.4g} m")
    return 0


def _calibrate(args) -> int:
    from ..specs.material_library import library_text, read_library
    from .calibration import fit_stiffness

    library = read_library(args.library, missing_ok=True)
    output = AtomicOutput(args.library, "--library")
    try:
        doc = read_json(args.tests, "calibration file")
        with np.errstate(all="ignore"):
            entry = fit_stiffness(doc)
        library[doc["name"]] = entry
        output.write(library_text(library))
        output.commit()
    except BaseException:
        output.discard()
        raise
    fit = entry["fit"]
    interval = fit["EI_interval_95"]
    spread = f" (95 %: {interval[0]:.4g} to {interval[1]:.4g})" if interval else f" ({fit.get('note')})"
    print(f"{doc['name']}: EI = {entry['EI']:.5g} N m^2{spread}, residual {1e3 * fit['residual_rms_m']:.3g} mm rms")
    gj = fit["GJ"]
    print(f"  GJ = {entry['GJ']:.5g} N m^2" + (f" ({gj['assumed']})" if "assumed" in gj else " (twist tests)"))
    print(f"  stored in {args.library} as material preset {doc['name']!r} (solve --materials {args.library})")
    return 0


def _solve(args) -> int:
    output = AtomicOutput(args.output) if args.output else None
    try:
        if args.materials:
            from ..specs.material_library import read_library, use_library

            use_library(read_library(args.materials), args.materials)
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


def _formboard(args) -> int:
    from .formboard import board_svg, formboard

    dxf = args.output.lower().endswith(".dxf")
    if not (dxf or args.output.lower().endswith(".svg")):
        raise CaseError(f"-o {args.output}: a formboard is written as SVG (BOARD.svg) or DXF (BOARD.dxf)")
    if dxf:
        from .formboard_dxf import board_dxf, dxf_available

        if not dxf_available():
            board_dxf(None, "")  # says in one line what is missing
    output = AtomicOutput(args.output)
    try:
        case = load_case(args.case)
        result = read_json(args.result, "result file") if args.result else None
        with np.errstate(all="ignore"):
            board = formboard(case, result, args.step)
        title = args.title or os.path.splitext(os.path.basename(args.case))[0]
        check_title(title, "--title" if args.title else "the case file's name (give --title)")
        with np.errstate(all="ignore"):
            output.write(board_dxf(board, title) if dxf else board_svg(board, title))
        output.commit()
    except BaseException:
        output.discard()
        raise
    failed = [r.cable for r in board.runs if not r.converged]
    print(f"{args.output}: {len(board.runs)} runs, {sum(r.length for r in board.runs) * 1e3:.0f} mm in all")
    for cid in failed:
        print(f"warning: cable {cid!r} did not converge; the board shows its last good state")
    return 1 if failed else 0


def _wire_lines(routes):
    """The bill of materials' routed wires, a line each: ends, length to cut, the cables it runs on."""
    for r in routes:
        yield (
            f"wire {r.id}: {r.count} x {1e3 * r.diameter:.2f} mm, {r.start[0]} ({r.start[1]}) to {r.end[0]} "
            f"({r.end[1]}), cut {r.length:.4f} m, through {' > '.join(r.cables)}"
        )


class _OneLineParser(argparse.ArgumentParser):
    """Bad options are said in one line on stderr, exit 2, as bad input is everywhere else."""

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {message} (--help lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
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
    solve.add_argument("--materials", help="a material library (calibrate's): its names are material presets")
    check = sub.add_parser("check", help="validate a case file without solving it")
    check.add_argument("case")
    sub.add_parser("presets", help="list the material presets and their sources")
    board = sub.add_parser(
        "formboard", help="lay the solved harness flat at its solved lengths: a 1:1 formboard drawing (SVG)"
    )
    board.add_argument("case", help="case JSON file")
    board.add_argument(
        "-o", "--output", required=True, help="the drawing: BOARD.svg, or BOARD.dxf where ezdxf is installed"
    )
    board.add_argument("--result", help="the case's result JSON (default: the case is solved first)")
    board.add_argument(
        "--step", type=int, default=0, help="the solve to draw: 0 the case as routed (default), k after step k"
    )
    board.add_argument("--title", help="the title block's name (default: the case file's name)")
    envelope = sub.add_parser(
        "envelope", help="the space a cable sweeps over a case's steps, as a closed mesh (STL or OBJ)"
    )
    envelope.add_argument("case", help="case JSON file")
    envelope.add_argument("-o", "--output", required=True, help="the mesh: ENVELOPE.stl or ENVELOPE.obj (metres)")
    envelope.add_argument("--cable", help="the cable's id (needed when the case has several)")
    envelope.add_argument("--voxel", type=float, help="resolution in m (default: a quarter of the cable's radius)")
    envelope.add_argument("--result", help="the case's result JSON (default: the case is solved first)")
    calibrate = sub.add_parser(
        "calibrate", help="fit a cable's EI (and GJ) to bench tests with the solver and store it in a material library"
    )
    calibrate.add_argument("tests", help="calibration JSON (cable-harness-calibration/1)")
    calibrate.add_argument("--library", required=True, help="the material library to add it to (made if missing)")
    from .kbl_command import add_kbl_parsers
    from .sweep import add_sweep_parser

    add_kbl_parsers(sub)
    add_sweep_parser(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "presets":
        for p in PRESETS.values():
            print(f"{p.name}: {p.description}\n    values: {p.values}\n    source: {p.source}")
        print(BUNDLE_RULES)
        return 0
    previous = signals.install()
    try:
        return _run(args)
    finally:
        signals.restore(previous)


def _run(args) -> int:
    try:
        if args.command == "check":
            case = load_case(args.case)
            print(f"{args.case}: valid ({len(case.cables)} cables, {len(case.steps)} steps)")
            for w in case.warnings:
                print(f"warning: {w}")
            return 0
        if args.command == "sweep":
            from .sweep import run_sweep_command

            return run_sweep_command(args)
        if args.command == "formboard":
            return _formboard(args)
        if args.command == "calibrate":
            return _calibrate(args)
        if args.command == "envelope":
            return _envelope(args)
        if args.command in ("kbl", "read-kbl"):
            from .kbl_command import run_kbl_command

            return run_kbl_command(args)
        return _solve(args)
    except BaseException as exc:
        stop = signals.as_interruption(exc)
        if stop is not None:
            # what stopped the run, then what is kept: a sweep's rows so far; a solve's previous result
            kept = (
                f"; the rows solved so far are kept in {args.output}, run the sweep again to resume"
                if args.command == "sweep"
                else ""
            )
            print(f"interrupted by {stop.name}{kept}", file=sys.stderr)
            return stop.exit_code
        if isinstance(exc, CaseError):
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
        if not isinstance(exc, Exception):
            raise
        # a bug, said in one line rather than a traceback
        print(
            f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]} (please report it with "
            f"the case)",
            file=sys.stderr,
        )
        return 3
