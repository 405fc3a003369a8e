# SPDX-License-Identifier: GPL-3.0-or-later
"""Solver speed: cold and warm solves of a clamped-clamped U-shape, first call, compile time.

    .venv/bin/python -m benchmarks.bench_solver          (or: python3 tools/dev.py bench)

Prints, for 20 ... 1000 segments: the cold solve from the straight-line initial guess (the route
[start, end], paid out to the cable length), the cold solve from the solver's own initial guess,
and the warm re-solve after the end connector moves 1 mm and turns 2 degrees; then the first solve
in a fresh process with a warm numba cache, and the compile time with an empty cache. Pinned to
one core. Targets: 100 segments cold <= 20 ms, warm <= 1 ms; 1000 segments warm <= 10 ms.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from solver_core import CableChange, Frame, Harness, parse_case

ROOT = Path(__file__).resolve().parent.parent

SEGMENTS = (20, 50, 100, 200, 500, 1000)


def u_shape_case(segments: int, straight: bool) -> dict:
    cable = {
        "id": "U",
        "length": 0.5,
        "diameter": 0.004,
        "material": {"preset": "lv2017_harness"},
        "segments": segments,
        "start": {"position": [0.0, 0.0, 0.0], "tangent": [0.0, 0.0, -1.0], "normal": [1.0, 0.0, 0.0]},
        "end": {"position": [0.2, 0.0, 0.0], "tangent": [0.0, 0.0, 1.0], "normal": [1.0, 0.0, 0.0]},
    }
    if straight:
        cable["route"] = [[0.0, 0.0, 0.0], [0.2, 0.0, 0.0]]
    return {"format": "cable-harness-case/1", "gravity": [0.0, 0.0, -9.81], "cables": [cable]}


def _turn_about_y(v, degrees):
    a = math.radians(degrees)
    R = np.array([[math.cos(a), 0.0, math.sin(a)], [0.0, 1.0, 0.0], [-math.sin(a), 0.0, math.cos(a)]])
    return R @ v


def cold_ms(segments: int, straight: bool, repeats: int) -> tuple:
    best, iterations = math.inf, 0
    case = parse_case(u_shape_case(segments, straight))
    for _ in range(repeats):
        h = Harness.from_case(case)
        report = h.solve_step()["U"]
        assert report.converged, report.message
        if report.solve_ms < best:
            best, iterations = report.solve_ms, report.iterations
    return best, iterations


def warm_ms(segments: int, repeats: int) -> tuple:
    h = Harness.from_case(parse_case(u_shape_case(segments, False)))
    h.solve_step()
    end = h.cables["U"].boundary.end
    moved = Frame(
        end.position + np.array([0.001, 0.0, 0.0]), _turn_about_y(end.tangent, 2.0), _turn_about_y(end.normal, 2.0)
    )
    times, iterations = [], []
    for k in range(repeats):
        report = h.solve_step({"U": CableChange(end=moved if k % 2 == 0 else end)})["U"]
        assert report.converged, report.message
        times.append(report.solve_ms)
        iterations.append(report.iterations)
    return float(np.median(times)), float(np.median(iterations))


FIRST_CALL = """
import time, json
t0 = time.perf_counter()
from solver_core import parse_case, solve_case
from benchmarks.bench_solver import u_shape_case
t1 = time.perf_counter()
solve_case(parse_case(u_shape_case(100, False)))
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_solve_s": t2 - t1}))
"""


def fresh_process(cache_dir: str | None) -> dict:
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run(
        [sys.executable, "-c", FIRST_CALL], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    cold_ms(20, True, 1)  # compile or load the kernels before timing
    print("U-shape, 0.5 m Lv 2017 cable, ends 0.2 m apart; times in ms (best cold, median warm)")
    print(
        f"{'segments':>8} {'cold straight':>14} {'iters':>6} {'cold guess':>11} {'iters':>6} {'warm':>8} {'iters':>6}"
    )
    rows = []
    for n in SEGMENTS:
        repeats = 5 if n <= 200 else 2
        cs, ci = cold_ms(n, True, repeats)
        cg, gi = cold_ms(n, False, repeats)
        w, wi = warm_ms(n, 21)
        rows.append((n, cs, cg, w))
        print(f"{n:>8} {cs:>14.2f} {ci:>6} {cg:>11.2f} {gi:>6} {w:>8.3f} {wi:>6.0f}")
    n = np.array([r[0] for r in rows], float)
    for label, k in (("cold straight", 1), ("warm", 3)):
        t = np.array([r[k] for r in rows])
        slope = np.polyfit(np.log(n[2:]), np.log(t[2:]), 1)[0]
        print(f"growth exponent of {label} time over 100..1000 segments: {slope:.2f} (1 = linear)")
    with tempfile.TemporaryDirectory() as empty:
        compile_run = fresh_process(empty)
    warm_run = fresh_process(None)
    warm_run = fresh_process(None)
    print(
        f"fresh process, warm numba cache: import {warm_run['import_s']:.2f} s, "
        f"first solve (100 segments) {warm_run['first_solve_s']:.2f} s"
    )
    print(f"fresh process, empty numba cache: first solve incl. compile {compile_run['first_solve_s']:.2f} s")


if __name__ == "__main__":
    main()
