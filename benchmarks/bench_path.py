# SPDX-License-Identifier: GPL-3.0-or-later
"""A path of warm steps through the command line's writer: outside cost per step against the solve.

    .venv/bin/python -m benchmarks.bench_path

The clamped-clamped U-shape of bench_solver.py (0.5 m Lv 2017 cable), its end connector moved 1 mm
per step for 200 steps, solved and streamed as JSON Lines by ``cli.solve_to`` exactly as
``python -m solver_core solve CASE -o RESULT.jsonl`` does. Prints per warm step: the wall time of the
whole step (solve, bookkeeping, result document, JSON, write) against the solve time the solver
reports (``solve_ms``: the cable's whole solve, Harness.solve_cable), and the parts. Target: wall <=
1.5 x solve at 100 and 1000 segments.
"""

import json
import os
import sys
import tempfile
import time

import numpy as np

from benchmarks.bench_solver import u_shape_case
from solver_core import Harness, parse_case
from solver_core.io.cli import AtomicOutput, solve_to
from solver_core.session.results import dumps_stream_step, step_result

STEPS = 200


def path_case(segments: int) -> dict:
    doc = u_shape_case(segments, straight=False)
    steps = []
    for k in range(1, STEPS + 1):
        x = 0.2 - 0.001 * (k % 40 if (k // 40) % 2 == 0 else 40 - k % 40)
        steps.append(
            {
                "cables": {
                    "U": {"end": {"position": [x, 0.0, 0.0], "tangent": [0.0, 0.0, 1.0], "normal": [1.0, 0.0, 0.0]}}
                }
            }
        )
    doc["steps"] = steps
    return doc


def measure(segments: int) -> dict:
    case = parse_case(path_case(segments))
    solve_to(parse_case(u_shape_case(segments, False)), None, True, None)  # compile and warm up
    folder = tempfile.mkdtemp()
    out = AtomicOutput(os.path.join(folder, "r.jsonl"))
    stamps = []

    def echo(line):
        stamps.append(time.perf_counter())

    t0 = time.perf_counter()
    solve_to(case, out, True, echo)
    out.commit()
    wall = np.diff(stamps)[1:]  # warm steps: from one step's end to the next's
    lines = open(os.path.join(folder, "r.jsonl")).read().splitlines()[2:-1]
    solve = np.array([json.loads(line)["cables"]["U"]["solve_ms"] for line in lines])
    # the parts, on a harness of its own
    h = Harness.from_case(case)
    h.solve_step()
    parts = {"solve_step": [], "result": [], "json": []}
    for index, changes in enumerate(case.steps[:50]):
        a = time.perf_counter()
        h.solve_step(changes)
        b = time.perf_counter()
        doc = step_result(h, packed=True)
        c = time.perf_counter()
        dumps_stream_step(index, doc)
        d = time.perf_counter()
        parts["solve_step"].append(b - a)
        parts["result"].append(c - b)
        parts["json"].append(d - c)
    return {
        "wall_ms": 1e3 * float(np.median(wall)),
        "solve_ms": float(np.median(solve)),
        "total_s": time.perf_counter() - t0,
        **{k + "_ms": 1e3 * float(np.median(v)) for k, v in parts.items()},
    }


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    for segments in (100, 1000):
        m = measure(segments)
        print(
            f"{segments:5d} segments: wall {m['wall_ms']:.3f} ms per warm step, solve {m['solve_ms']:.3f} ms "
            f"(ratio {m['wall_ms'] / m['solve_ms']:.2f}); parts: solve_step {m['solve_step_ms']:.3f} ms, "
            f"result {m['result_ms']:.3f} ms, json {m['json_ms']:.3f} ms",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
