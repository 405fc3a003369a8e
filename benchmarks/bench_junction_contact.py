# SPDX-License-Identifier: GPL-3.0-or-later
"""Free junctions coming to rest on obstacles: how many balance, and that none goes through.

    .venv/bin/python -m benchmarks.bench_junction_contact [--count N] [--seed S]

A random family of Y harnesses whose junction is the bottom of a V (a thick trunk coming down into it,
two branches rising from it; random junction mass 1-200 g, outlet tilt, spread, branch slack), over a
random obstacle under the junction: a floor, a zero-thickness plate of two triangles, or a sphere. For
each, one solve from the drawn routes. Prints how many converged (balanced, stable), how many ended
with the junction's centre through the obstacle (must be none, converged or not), how many rest on
it, and the median and worst time per solve.
"""

import argparse
import statistics
import time

import numpy as np

from solver_core import solve_case

STIFF = {"E": 2e9, "nu": 0.35, "density": 1400.0}


def _unit(v):
    v = np.asarray(v, dtype=float)
    return (v / np.linalg.norm(v)).tolist()


def _cable(cid, length, start, end, diameter):
    return {
        "id": cid,
        "length": length,
        "diameter": diameter,
        "material": STIFF,
        "segments": 20,
        "start": start,
        "end": end,
    }


def v_harness(obstacle, mass, tilt, spread_deg, length) -> dict:
    a = np.radians(spread_deg)
    out1, out2 = [np.cos(a), np.sin(a), tilt], [np.cos(a), -np.sin(a), tilt]
    end1 = [0.25 + 0.25 * np.cos(a), 0.25 * np.sin(a), 0.0]
    end2 = [end1[0], -end1[1], 0.0]
    origin = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    return {
        "format": "cable-harness-case/1",
        "cables": [
            _cable("trunk", length, origin, {"junction": "J", "outlet": _unit([1, 0, -tilt])}, 0.008),
            _cable("left", length, {"junction": "J", "outlet": _unit(out1)},
                   {"position": end1, "tangent": _unit([np.cos(a), np.sin(a), 0])}, 0.004),
            _cable("right", length, {"junction": "J", "outlet": _unit(out2)},
                   {"position": end2, "tangent": _unit([np.cos(a), -np.sin(a), 0])}, 0.004),
        ],
        "junctions": [{"id": "J", "position": [0.25, 0.0, 0.0], "mass": mass}],
        "obstacles": [obstacle],
    }  # fmt: skip


def random_obstacle(rng, height):
    kind = rng.choice(["plane", "plate", "sphere"])
    if kind == "plane":
        return kind, {"type": "plane", "point": [0, 0, height], "normal": [0, 0, 1]}
    if kind == "plate":
        corners = [[0.15, -0.1, height], [0.35, -0.1, height], [0.35, 0.1, height], [0.15, 0.1, height]]
        return kind, {"type": "mesh", "vertices": corners, "triangles": [[0, 1, 2], [0, 2, 3]]}
    radius = float(rng.uniform(0.01, 0.05))
    centre = [0.25 + float(rng.uniform(-0.02, 0.02)), float(rng.uniform(-0.01, 0.01)), height - radius]
    return kind, {"type": "sphere", "center": centre, "radius": radius}


def through(kind, obstacle, p) -> bool:
    """Whether the junction's centre ended inside the obstacle (under the floor, under the plate
    within its extent, or in the sphere)."""
    if kind == "plane":
        return p[2] < obstacle["point"][2]
    if kind == "plate":
        v = np.asarray(obstacle["vertices"])
        return p[2] < v[0, 2] and v[:, 0].min() <= p[0] <= v[:, 0].max() and v[:, 1].min() <= p[1] <= v[:, 1].max()
    return float(np.linalg.norm(p - np.asarray(obstacle["center"]))) < obstacle["radius"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    solve_case(v_harness({"type": "plane", "point": [0, 0, -0.05], "normal": [0, 0, 1]}, 0.01, 0.4, 40, 0.27))
    converged = went_through = resting = 0
    times, failures = [], []
    for k in range(args.count):
        mass = float(10 ** rng.uniform(-3, -0.7))
        tilt, spread, length = float(rng.uniform(0.0, 0.8)), float(rng.uniform(20, 70)), float(rng.uniform(0.255, 0.3))
        kind, obstacle = random_obstacle(rng, float(rng.uniform(-0.06, -0.005)))
        t0 = time.perf_counter()
        step = solve_case(v_harness(obstacle, mass, tilt, spread, length))["steps"][0]
        times.append(time.perf_counter() - t0)
        j = step["junctions"]["J"]
        converged += j["converged"]
        resting += bool(j["contacts"])
        went_through += through(kind, obstacle, np.asarray(j["position"]))
        if not j["converged"]:
            failures.append(f"{k} ({kind})")
    print(f"{args.count} junctions over random floors, plates and spheres (seed {args.seed}):")
    print(f"  converged {converged}, resting on the obstacle {resting}, through it {went_through}")
    print(f"  per solve: median {1e3 * statistics.median(times):.0f} ms, worst {1e3 * max(times):.0f} ms")
    if failures:
        print(f"  not converged (shown as failures): {', '.join(failures)}")


if __name__ == "__main__":
    main()
