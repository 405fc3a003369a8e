# SPDX-License-Identifier: GPL-3.0-or-later
"""Robustness: random drapes over plates, boxes, spheres and tessellated cylinders (4-40 segments,
random lengths, heights and holder moves), and random piles of 3-10 crossed cables with cable-cable
contact. Prints the converged fraction, the worst penetration over all iterates, how many cables end
on the other side of the obstacle they were routed over, and the median and worst time per solve.

    .venv/bin/python -m benchmarks.bench_robustness [--drapes N] [--piles N] [--seed S]

Every Newton iterate of the drapes is seen (the kernel is run one iteration per call, as in
tests/solver/test_intersection_free.py); for the piles, the state at the end of every kernel call.
Targets: 100 % converged, no penetration beyond 1 % of the radius at any iterate, none through.
"""

import argparse
import time

import numpy as np

import solver_core.equilibrium as equilibrium
from solver_core import CableChange, Frame, Harness, parse_case

R = 0.002
MATERIAL = {"E": 126e6, "nu": 0.3, "density": 7958.0}
# benchmark code shares the test helpers' independent clearance measurement
from tests.helpers.cases import min_clearance  # noqa: E402
from tests.helpers.obstacles import box as _box  # noqa: E402
from tests.helpers.obstacles import cylinder as _cylinder  # noqa: E402
from tests.helpers.obstacles import plate as _plate  # noqa: E402


def _obstacle(kind, rng):
    """An obstacle document, the x-range the cable is routed over, the height below which a node in
    that range is on the far side of it, and its half-width across the route (|y| beyond which a cable
    has gone round it)."""
    if kind == "plate":
        half_width = rng.uniform(0.1, 0.5)
        return _plate(0.25, 0.45, half_width), (0.25, 0.45), 0.0, half_width
    if kind == "box":
        return _box((0.22, -0.3, -0.2), (0.48, 0.3, 0.0)), (0.22, 0.48), 0.0, 0.3
    r = rng.uniform(0.05, 0.12) if kind == "sphere" else rng.uniform(0.04, 0.1)
    if kind == "sphere":
        obstacle = {"type": "sphere", "center": [0.35, 0.0, -r], "radius": r}
        return obstacle, (0.35 - 0.5 * r, 0.35 + 0.5 * r), -r, r
    obstacle = _cylinder(0.35, -r, r, 0.4, facets=int(rng.integers(8, 33)))
    return obstacle, (0.35 - 0.5 * r, 0.35 + 0.5 * r), -r, 0.2


def _through(nodes, footprint, below, widest, half_width):
    """On the far side of the obstacle without having gone round it: under its footprint while no
    iterate reached beyond its half-width across the route (``widest``: the largest |y| of any
    iterate), so that the only way there was through it."""
    if widest >= half_width:
        return False
    # points along the segments, not the nodes alone: five segments can span the footprint between nodes
    s = np.linspace(0.0, 1.0, 17)
    points = (nodes[:-1, None, :] * (1 - s)[None, :, None] + nodes[1:, None, :] * s[None, :, None]).reshape(-1, 3)
    x0, x1 = footprint
    over = (points[:, 0] > x0) & (points[:, 0] < x1) & (np.abs(points[:, 1]) < 0.1)
    return bool((points[over, 2] < below).any())


class Recorder:
    """Wraps the Newton kernel: one iteration per call (every=True) or whole calls, keeping the
    positions after each."""

    def __init__(self, every: bool):
        self.every = every
        self.states = []
        self.real = equilibrium.minimise_rod_energy

    def __call__(self, pos, quat, *args):
        if not self.every or args[14] == 0:
            out = self.real(pos, quat, *args)
            self.states.append(pos.copy())
            return out
        args = list(args)
        limit, total = args[14], 0
        while True:
            args[14] = 1
            out = self.real(pos, quat, *args)
            self.states.append(pos.copy())
            total += out[1]
            args[16:22] = [out[5], out[6], out[7], out[8], out[9], pos.copy()]
            if out[0] != 1 or total >= limit:
                return (out[0], total, *out[2:])


def drapes(n, rng):
    kinds = ["plate", "box", "sphere", "cylinder"]
    converged = through = refused = 0
    worst_iterate = worst_final = 0.0
    times = []
    for k in range(n):
        kind = kinds[k % 4]
        obstacle, footprint, below, half_width = _obstacle(kind, rng)
        segments = int(rng.integers(4, 41))
        height = rng.uniform(0.01, 0.08)
        span = 0.7
        length = span * rng.uniform(1.02, 1.3)
        doc = {
            "format": "cable-harness-case/1",
            "obstacles": [obstacle],
            "cables": [
                {
                    "id": "W",
                    "length": length,
                    "diameter": 2 * R,
                    "material": MATERIAL,
                    "segments": segments,
                    "start": {"position": [0.0, 0.0, height], "tangent": [1, 0, 0]},
                    "end": {"position": [span, 0.0, height], "tangent": [1, 0, 0]},
                    "route": [[0.0, 0.0, height], [0.35, 0.0, height + 0.03], [span, 0.0, height]],
                }
            ],
        }
        recorder = Recorder(every=True)
        equilibrium.minimise_rod_energy = recorder
        try:
            h = Harness.from_case(parse_case(doc))
            origin = h.cables["W"].model.origin.copy()
            ok, refusal = True, False
            for step in range(4):
                change = None
                if step:
                    end = h.cables["W"].boundary.end
                    moved = end.position + rng.uniform(-0.02, 0.02, 3) * np.array([1.0, 1.0, 0.5])
                    change = {"W": CableChange(end=Frame(moved, end.tangent, end.normal))}
                t0 = time.perf_counter()
                report = h.solve_step(change)["W"]
                times.append(time.perf_counter() - t0)
                ok = ok and report.converged
                refusal = refusal or report.refused
            nodes = np.array(h.cable_result("W")["nodes"])
        finally:
            equilibrium.minimise_rod_energy = recorder.real
        converged += ok
        # a random holder move can pull a taut cable past its ultimate length: refusing that step is
        # the right answer (Lv 2017, Sec. 2.4), counted apart from failures to converge
        refused += (not ok) and refusal
        widest = max(np.abs(p[:, 1] + origin[1]).max() for p in recorder.states)
        through += _through(nodes, footprint, below, widest, half_width)
        if ok:
            worst_final = max(worst_final, -min_clearance(nodes, R, [obstacle]))
        worst_iterate = max(worst_iterate, max(-min_clearance(p + origin, R, [obstacle]) for p in recorder.states))
    return converged, refused, through, worst_final, worst_iterate, times


def piles(n, rng):
    converged = 0
    worst = 0.0
    times = []
    for _ in range(n):
        count = int(rng.integers(3, 11))
        cables = []
        for c in range(count):
            angle = rng.uniform(0, np.pi)
            d = np.array([np.cos(angle), np.sin(angle), 0.0])
            z = 0.005 * c + 0.001
            a, b = -0.15 * d + [0, 0, z], 0.15 * d + [0, 0, z]
            cables.append(
                {
                    "id": f"C{c}",
                    "length": 0.33,
                    "diameter": 2 * R,
                    "material": MATERIAL,
                    "segments": 40,
                    "start": {"position": a.tolist(), "tangent": d.tolist()},
                    "end": {"position": b.tolist(), "tangent": d.tolist()},
                }
            )
        doc = {
            "format": "cable-harness-case/1",
            "cables": cables,
            "contact": {"cable_cable": True},
            "obstacles": [{"type": "plane", "point": [0, 0, -0.06], "normal": [0, 0, 1]}],
        }
        t0 = time.perf_counter()
        h = Harness.from_case(parse_case(doc))
        reports = h.solve_step()
        times.append(time.perf_counter() - t0)
        ok = all(r.converged for r in reports.values())
        converged += ok
        if not ok:
            continue  # a failed solve keeps its last good states, which were never meant to be clear
        results = {cid: np.array(h.cable_result(cid)["nodes"]) for cid in h.cables}
        for cid, nodes in results.items():
            others = [(results[o], R) for o in results if o != cid]
            worst = max(worst, -min_clearance(nodes, R, [], others))
    return converged, worst, times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--drapes", type=int, default=200)
    parser.add_argument("--piles", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    ok, refused, through, final, iterate, times = drapes(args.drapes, rng)
    print(
        f"drapes: {ok}/{args.drapes} converged on all 4 steps ({refused} of the others with a step "
        f"refused for overstretching), {through} through their obstacle, "
        f"worst penetration {final / R * 100:.2f} % R in a converged result, {iterate / R * 100:.2f} % R over all "
        f"iterates; "
        f"per solve median {np.median(times) * 1e3:.1f} ms, worst {max(times) * 1e3:.0f} ms"
    )
    if args.piles:
        ok, worst, times = piles(args.piles, rng)
        print(
            f"piles: {ok}/{args.piles} converged, worst cable-cable penetration {worst / R * 100:.2f} % R when "
            f"converged; "
            f"per solve median {np.median(times) * 1e3:.0f} ms, worst {max(times) * 1e3:.0f} ms"
        )


if __name__ == "__main__":
    main()
