# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact speed: a cable resting on a 200k-triangle mesh while one end moves, ten touching cables,
and building the broad-phase tree of a million-triangle mesh.

    .venv/bin/python -m benchmarks.bench_contact        (or: python3 tools/dev.py bench)

Pinned to one core. Targets (issue #3): <= 5 ms per step for the single cable on the mesh,
<= 25 ms per step for ten cables of 100 segments with cable-cable contact.
"""

import math
import os
import time

import numpy as np

from solver_core import CableChange, Frame, Harness, parse_case
from solver_core.bvh import build_triangle_tree

MATERIAL = {"preset": "lv2017_harness"}


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


def single_cable_on_mesh():
    verts, tris = wavy_mesh(317)  # 199 712 triangles
    doc = {"format": "cable-harness-case/1", "cables": [{
        "id": "W", "length": 0.6, "diameter": 0.004, "material": MATERIAL, "segments": 100,
        "start": {"position": [0.0, 0.0, 0.03], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        "end": {"position": [0.55, 0.0, 0.03], "tangent": [1, 0, 0], "normal": [0, 0, 1]}}],
        "obstacles": [{"type": "mesh", "vertices": verts.tolist(), "triangles": tris.tolist()}]}
    t0 = time.perf_counter()
    harness = Harness.from_case(parse_case(doc))
    report = harness.solve_step()["W"]
    cold = time.perf_counter() - t0
    assert report.converged, report.message
    contacts = len(harness.cable_result("W")["contacts"])
    end = harness.cables["W"].boundary.end
    times = []
    for k in range(1, 61):
        # the end connector travels a circle of 3 cm radius over the mesh
        a = 2 * math.pi * k / 60
        moved = Frame(end.position + np.array([0.03 * (math.cos(a) - 1), 0.03 * math.sin(a), 0.0]), end.tangent,
                      end.normal)
        t = time.perf_counter()
        report = harness.solve_step({"W": CableChange(end=moved)})["W"]
        times.append((time.perf_counter() - t) * 1e3)
        assert report.converged, report.message
    return len(tris), cold, contacts, float(np.median(times)), float(np.max(times))


def ten_touching_cables():
    cables = []
    for k in range(10):
        # a fan of cables crossing each other over a table
        angle = math.radians(-45 + 10 * k)
        d = np.array([math.cos(angle), math.sin(angle), 0.0])
        start = -0.25 * d + np.array([0, 0, 0.004 * k + 0.002])
        cables.append({"id": f"C{k}", "length": 0.52, "diameter": 0.004, "material": MATERIAL, "segments": 100,
                       "start": {"position": start.tolist(), "tangent": d.tolist(), "normal": [0, 0, 1]},
                       "end": {"position": (start + 0.5 * d).tolist(), "tangent": d.tolist(), "normal": [0, 0, 1]},
                       "route": [start.tolist(), (start + 0.25 * d + [0, 0, 0.003 * k]).tolist(),
                                 (start + 0.5 * d).tolist()]})
    doc = {"format": "cable-harness-case/1", "cables": cables, "contact": {"cable_cable": True},
           "obstacles": [{"type": "plane", "point": [0, 0, -0.05], "normal": [0, 0, 1]}]}
    harness = Harness.from_case(parse_case(doc))
    t0 = time.perf_counter()
    reports = harness.solve_step()
    cold = time.perf_counter() - t0
    assert all(r.converged for r in reports.values()), {k: r.message for k, r in reports.items()}
    times = []
    for k in range(1, 21):
        end = harness.cables["C0"].boundary.end
        moved = Frame(end.position + np.array([0.0, 0.0, 0.001 * (1 if k % 2 else -1)]), end.tangent, end.normal)
        t = time.perf_counter()
        reports = harness.solve_step({"C0": CableChange(end=moved)})
        times.append((time.perf_counter() - t) * 1e3)
        assert all(r.converged for r in reports.values())
    touching = sum(len(harness.cable_result(c)["contacts"]) for c in harness.cables)
    return cold, touching, float(np.median(times)), float(np.max(times))


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
    n_tris, cold, contacts, median, worst = single_cable_on_mesh()
    print(f"1 cable x 100 segments on a {n_tris}-triangle mesh: cold solve incl. tree {cold * 1e3:.0f} ms, "
          f"{contacts} contacts; moving end: median {median:.2f} ms/step, worst {worst:.2f} ms (target 5 ms)")
    cold, touching, median, worst = ten_touching_cables()
    print(f"10 cables x 100 segments with cable-cable contact: cold {cold * 1e3:.0f} ms, {touching} contacts; "
          f"moving one end: median {median:.1f} ms/step, worst {worst:.1f} ms (target 25 ms)")
    n_tris, seconds = big_tree()
    print(f"broad-phase tree over {n_tris} triangles built in {seconds:.2f} s")


if __name__ == "__main__":
    main()
