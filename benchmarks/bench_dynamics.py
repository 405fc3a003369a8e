# SPDX-License-Identifier: GPL-3.0-or-later
"""Dynamic steps (solver.dynamics): accuracy against the cantilever's first frequency, energy kept over
100 periods, and the cost of a frame of film while a cable swings.

    .venv/bin/python -m benchmarks.bench_dynamics          (or: python3 tools/dev.py bench)

1. A cantilever (0.3 m, 4 mm, E = 2 GPa) bent by its weight and released in zero gravity: its period
   against Euler-Bernoulli's 2 pi / (1.875^2 sqrt(EI / (mu L^4))) at 20 and 40 segments, 40 time steps
   per period; then 100 periods undamped at 100 steps per period: the energy left.
2. A sagging 0.5 m Lv 2017 cable whose end is swung 5 cm sideways in 0.1 s: milliseconds of solving per
   frame (1/24 s) at time steps of 4 and 2 ms, for 20 and 100 segments (median of 24 frames), and how
   many times real time that is; the same with solver.model "cosserat_pbd" (XPBD steps). Pinned to one
   core.
"""

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from solver_core import CableChange, Frame, Harness, parse_case

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
# the cantilever bent by its weight and released, as the tests build it
from solver.test_dynamics import T1 as PERIOD  # noqa: E402
from solver.test_dynamics import hanging_case  # noqa: E402
from solver.test_dynamics import released_cantilever as released  # noqa: E402
from solver.test_dynamics import total_energy as energy  # noqa: E402


def period_error(segments):
    h = released(segments, PERIOD / 40)
    times, tip = [], []
    for _ in range(6 * 40):
        h.solve_step(duration=PERIOD / 40)
        times.append(h.time)
        tip.append(h.cables["c"].state.positions[-1, 2])
    t, v = np.array(times), np.array(tip)
    k = np.flatnonzero((v[:-1] < 0) & (v[1:] >= 0))
    crossings = t[k] - v[k] * (t[k + 1] - t[k]) / (v[k + 1] - v[k])
    return (float(np.mean(np.diff(crossings))) - PERIOD) / PERIOD


def energy_kept():
    h = released(20, PERIOD / 100)
    start = energy(h)
    for _ in range(100):
        h.solve_step(duration=PERIOD)
    return energy(h) / start


def swing_frames(segments, time_step, model="cosserat"):
    doc = hanging_case({"time_step": time_step, "damping": 0.5}, segments)
    doc["solver"]["model"] = model
    h = Harness.from_case(parse_case(doc))
    h.solve_step()
    end = h.cables["c"].boundary.end
    moved = Frame(end.position + np.array([0.0, 0.05, 0.0]), end.tangent, end.normal)
    h.solve_step({"c": CableChange(end=moved)}, duration=0.1)
    ms = []
    for _ in range(24):
        t0 = time.perf_counter()
        report = h.solve_step(duration=1.0 / 24.0)["c"]
        ms.append((time.perf_counter() - t0) * 1e3)
        assert report.converged, report.message
    return statistics.median(ms)


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    swing_frames(20, 0.004)  # compile first
    for segments in (20, 40):
        print(
            f"cantilever period error, {segments} segments, 40 steps per period: {period_error(segments) * 100:+.2f} %"
        )
    print(f"energy left after 100 periods undamped (100 steps per period): {energy_kept() * 100:.2f} %")
    swing_frames(20, 0.004, "cosserat_pbd")
    for model in ("cosserat", "cosserat_pbd"):
        for segments in (20, 100):
            for time_step in (0.004, 0.002):
                ms = swing_frames(segments, time_step, model)
                print(
                    f"swinging cable, {model}, {segments} segments, time step {time_step * 1e3:.0f} ms: "
                    f"{ms:.1f} ms per frame (1/24 s; {1000.0 / 24.0 / ms:.1f}x real time)"
                )


if __name__ == "__main__":
    main()
