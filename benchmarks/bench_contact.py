# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact speed: a cable resting on a 200k-triangle mesh while one end moves, ten touching cables,
and building the broad-phase tree of a million-triangle mesh.

    .venv/bin/python -m benchmarks.bench_contact        (or: python3 tools/dev.py bench)

Pinned to one core. Targets: <= 5 ms per step for the single cable on the mesh,
<= 25 ms per step for ten cables of 100 segments with cable-cable contact.
"""

import math
import os
import time

import numpy as np

from solver_core import CableChange, Frame, Harness, parse_case
from solver_core.geometry.bvh import build_triangle_tree

MATERIAL = {"preset": "lv2017_harness"}
# Interactive accuracy: force residual 1e-5 of the cable's force scale. On faceted meshes the
# residual stalls near there (the contact force's derivative jumps at facet edges).
TOLERANCE = 1e-5
STEPS = 10  # moving steps of the ten cables (solved together: ~45 ms each)
# moving-end steps of the cable on the mesh: the later ones along the end's circle slide the cable
# further over the facets and take more iterations, so a median over the first five flatters
MESH_STEPS = 12
LIFT = 0.002 + 0.0005  # the cable's radius plus a little air over the surface


def wavy_mesh(n: int, extent=(-0.2, 0.8, -0.4, 0.4), depth=-0.0, amplitude=0.004):
    """A gently wavy surface of 2 (n - 1)^2 triangles."""
    x = np.linspace(extent[0], extent[1], n)
    y = np.linspace(extent[2], extent[3], n)
    X, Y = np.meshgrid(x, y)
    Z = depth + amplitude * np.sin(X * 30.0) * np.cos(Y * 20.0)
    verts = np.column_stack((X.ravel(), Y.ravel(), Z.ravel()))
    i = np.arange(n - 1)
    a = (i[:, None] * n + i[None, :]).ravel()
    tris = np.concatenate((np.column_stack((a, a + 1, a + n + 1)), np.column_stack((a, a + n + 1, a + n))))
    return verts, tris


def surface_height(x, y, amplitude=0.004):
    return amplitude * np.sin(x * 30.0) * np.cos(y * 20.0)


def mesh_case():
    """The case of one cable lying along the wavy 200k-triangle mesh, with the mesh's arrays."""
    verts, tris = wavy_mesh(317)  # 199 712 triangles
    xs = np.linspace(0.0, 0.55, 111)
    route = [[x, 0.0, surface_height(x, 0.0) + LIFT] for x in xs]
    # the cable lies along the surface: as long as its route there (a longer one would start
    # compressed and buckle its way across the waves first)
    length = float(np.linalg.norm(np.diff(np.array(route), axis=0), axis=1).sum())
    doc = {
        "format": "cable-harness-case/1",
        "cables": [
            {
                "id": "W",
                "length": length,
                "diameter": 0.004,
                "material": MATERIAL,
                "segments": 100,
                "start": {"position": route[0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
                "end": {"position": route[-1], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
                "route": route,
            }
        ],
        "obstacles": [{"type": "mesh", "vertices": verts.tolist(), "triangles": tris.tolist()}],
        "solver": {"tolerance": TOLERANCE},
    }
    return doc, verts, tris


def moved_end(start, k):
    """Step k of the end connector's path from its first pose ``start``: round a circle of 2 cm
    radius, 3 mm above the surface."""
    a = 2 * math.pi * k / 60
    p = start.position + np.array([0.02 * (math.cos(a) - 1), 0.02 * math.sin(a), 0.0])
    p[2] = surface_height(p[0], p[1]) + LIFT
    return Frame(p, start.tangent, start.normal)


def single_cable_on_mesh():
    doc, verts, tris = mesh_case()
    t0 = time.perf_counter()
    harness = Harness.from_case(parse_case(doc))
    report = harness.solve_step()["W"]
    cold = time.perf_counter() - t0
    if not report.converged:
        print("  cold solve on the mesh did not converge:", report.message[:80])
    contacts = len(harness.cable_result("W")["contacts"])
    end = harness.cables["W"].boundary.end
    times, iterations = [], []
    failed = 0
    for k in range(1, MESH_STEPS + 1):
        t = time.perf_counter()
        report = harness.solve_step({"W": CableChange(end=moved_end(end, k))})["W"]
        times.append((time.perf_counter() - t) * 1e3)
        iterations.append(report.iterations)
        failed += not report.converged
    return len(tris), cold, contacts, float(np.median(times)), float(np.max(times)), failed, iterations


def ten_touching_cables():
    cables = []
    for k in range(10):
        # a fan of cables crossing each other over a table
        angle = math.radians(-45 + 10 * k)
        d = np.array([math.cos(angle), math.sin(angle), 0.0])
        start = -0.25 * d + np.array([0, 0, 0.004 * k + 0.002])
        cables.append(
            {
                "id": f"C{k}",
                "length": 0.52,
                "diameter": 0.004,
                "material": MATERIAL,
                "segments": 100,
                "start": {"position": start.tolist(), "tangent": d.tolist(), "normal": [0, 0, 1]},
                "end": {"position": (start + 0.5 * d).tolist(), "tangent": d.tolist(), "normal": [0, 0, 1]},
                "route": [start.tolist(), (start + 0.25 * d + [0, 0, 0.003 * k]).tolist(), (start + 0.5 * d).tolist()],
            }
        )
    doc = {
        "format": "cable-harness-case/1",
        "cables": cables,
        "contact": {"cable_cable": True},
        "solver": {"tolerance": TOLERANCE},
        "obstacles": [{"type": "plane", "point": [0, 0, -0.05], "normal": [0, 0, 1]}],
    }
    harness = Harness.from_case(parse_case(doc))
    t0 = time.perf_counter()
    reports = harness.solve_step()
    cold = time.perf_counter() - t0
    if not all(r.converged for r in reports.values()):
        print(
            "  cold solve of the ten cables did not converge:",
            {k: r.message[:60] for k, r in reports.items() if not r.converged},
        )
    times, iterations = [], []
    failed = 0
    for k in range(1, STEPS + 1):
        end = harness.cables["C0"].boundary.end
        moved = Frame(end.position + np.array([0.0, 0.0, 0.001 * (1 if k % 2 else -1)]), end.tangent, end.normal)
        t = time.perf_counter()
        reports = harness.solve_step({"C0": CableChange(end=moved)})
        times.append((time.perf_counter() - t) * 1e3)
        iterations.append(max(r.iterations for r in reports.values()))
        failed += not all(r.converged for r in reports.values())
    touching = sum(len(harness.cable_result(c)["contacts"]) for c in harness.cables)
    return cold, touching, float(np.median(times)), float(np.max(times)), failed, iterations


def big_tree():
    verts, tris = wavy_mesh(708)  # about a million triangles
    triangles = verts[tris]
    build_triangle_tree(triangles[:1000])  # compile
    t = time.perf_counter()
    build_triangle_tree(triangles)
    return len(tris), time.perf_counter() - t


def main():
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    # Newton iterations per step are printed too: timings drift between runs on a shared machine, the
    # iteration counts do not (and the ten cables' depend on which of the pile's equilibria the cold
    # solve settles into)
    n_tris, cold, contacts, median, worst, failed, iterations = single_cable_on_mesh()
    print(
        f"1 cable x 100 segments on a {n_tris}-triangle mesh: cold solve incl. tree {cold * 1e3:.0f} ms, "
        f"{contacts} contacts; moving end: median {median:.2f} ms/step, worst {worst:.2f} ms (target 5 ms), "
        f"{failed} of {MESH_STEPS} steps not converged; Newton iterations {iterations}"
    )
    cold, touching, median, worst, failed, iterations = ten_touching_cables()
    print(
        f"10 cables x 100 segments with cable-cable contact: cold {cold * 1e3:.0f} ms, {touching} contacts; "
        f"moving one end: median {median:.1f} ms/step, worst {worst:.1f} ms (target 25 ms), "
        f"{failed} of {STEPS} steps not converged; Newton iterations {iterations}"
    )
    n_tris, seconds = big_tree()
    print(f"broad-phase tree over {n_tris} triangles built in {seconds:.2f} s")


if __name__ == "__main__":
    main()
