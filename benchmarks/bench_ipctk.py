# SPDX-License-Identifier: GPL-3.0-or-later
"""Our contact pipeline against the IPC Toolkit (ipctk) on the same Newton iterates.

    .venv/bin/python -m benchmarks.bench_ipctk

The cable of bench_contact rests on its 200k-triangle mesh while one end moves; every Newton iterate
of the 12 moving steps is recorded. For each step from one iterate to the next, ipctk does what our
solver does inside every iteration: its continuous broad phase (Candidates.build), the collision-free
step size with additive CCD at a minimum distance of the cable radius (Li et al. 2021, C-IPC), and the
barrier's active pairs, gradient and Hessian (Li et al. 2020). It is given only the triangles within
reach of the cable (those of the mesh's broad-phase tree that our solver considers, plus the cable's
whole path), and mesh-mesh candidates are taken out before its narrow phase, so it is timed on the
same work as ours, not on the static mesh's own pairs. Our figure is a whole Newton iteration
(energy, gradient, Hessian, factorisation, line search, CCD filter), so the comparison favours ipctk.

It also checks our step filter independently: ipctk's CCD at 0.98 R must allow every step we took
(a fraction below 1 would mean one of our steps brought a segment within 0.98 R of a triangle).
Prints the figures; docs/performance.md keeps them.
"""

import os
import sys
import time

import numpy as np
from scipy.spatial import cKDTree

from benchmarks.bench_contact import MESH_STEPS, mesh_case, moved_end
from solver_core import CableChange, Harness, parse_case
from solver_core.solve import equilibrium

R = 0.002


def _argument(name: str) -> int:
    """Where ``name`` sits among the Newton kernel's arguments after pos and quat."""
    import inspect

    from solver_core.solve.newton import minimise_rod_energy

    return (
        list(inspect.signature(getattr(minimise_rod_energy, "py_func", minimise_rod_energy)).parameters).index(name) - 2
    )


class IterateRecorder:
    """Wraps the Newton kernel, one iteration per call, keeping each (before, after) pair."""

    def __init__(self):
        self.steps = []
        self.iterations = 0
        self.seconds = 0.0
        self.real = equilibrium.minimise_rod_energy

    def __call__(self, pos, quat, *args):
        args = list(args)
        limit_at, handed_at = _argument("max_iterations"), _argument("handed")
        limit, total = args[limit_at], 0
        if limit == 0:
            return self.real(pos, quat, *args)
        while True:
            before = pos.copy()
            args[limit_at] = 1
            t = time.perf_counter()
            out = self.real(pos, quat, *args)
            self.seconds += time.perf_counter() - t
            self.iterations += out.iterations
            if out.iterations:
                self.steps.append((before, pos.copy()))
            total += out.iterations
            args[handed_at] = out.pairs
            if out.status != 1 or total >= limit or out.iterations == 0:
                return out._replace(iterations=total)


def record_iterates():
    doc, verts, tris = mesh_case()
    harness = Harness.from_case(parse_case(doc))
    harness.solve_step()
    origin = harness.cables["W"].model.origin.copy()
    start = harness.cables["W"].boundary.end
    recorder = IterateRecorder()
    equilibrium.minimise_rod_energy = recorder
    try:
        for k in range(1, MESH_STEPS + 1):
            harness.solve_step({"W": CableChange(end=moved_end(start, k))})
    finally:
        equilibrium.minimise_rod_energy = recorder.real
    return verts - origin, tris, recorder


def triangles_near(tree, centres, verts, tris, points, reach):
    """The triangles with a centre within ``reach`` of one of ``points``, as a local mesh."""
    near = np.unique(np.concatenate(tree.query_ball_point(points, reach)).astype(np.int64))
    used, local = np.unique(tris[near], return_inverse=True)
    return verts[used], local.reshape(-1, 3)


def median_ms(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1e3)
    return out, float(np.median(times))


def main():
    try:
        import ipctk
    except ImportError:
        print("ipctk is not installed (requirements/dev.txt lists it): nothing to compare")
        return 0
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    verts, tris, recorder = record_iterates()
    n = recorder.steps[0][0].shape[0]
    cable_edges = np.column_stack((np.arange(n - 1), np.arange(1, n))).astype(np.int32)
    centres = verts[tris].mean(axis=1)
    tree = cKDTree(centres)
    triangle_size = np.linalg.norm(verts[tris] - centres[:, None, :], axis=2).max()
    dhat = 0.2 * R
    barrier = ipctk.BarrierPotential(dhat, 1.0)
    ccd = ipctk.AdditiveCCD()
    ours_ms = recorder.seconds * 1e3 / max(recorder.iterations, 1)
    phases = {"broad phase": [], "CCD step": [], "barrier pairs": [], "barrier grad+Hessian": []}
    smallest_fraction, cut, deepest = 1.0, 0, -np.inf
    n_triangles, n_candidates = [], []
    for before, after in recorder.steps:
        # ipctk gets only the triangles a segment could reach during the step (chosen outside its
        # timing): within half a segment, a triangle's size, the radius and the step's motion
        motion = np.linalg.norm(after - before, axis=1).max()
        half_segment = 0.5 * np.linalg.norm(np.diff(before, axis=0), axis=1).max()
        reach = half_segment + triangle_size + R + motion
        mesh_v, mesh_f = triangles_near(tree, centres, verts, tris, np.vstack((before, after)), reach)
        faces = (mesh_f + n).astype(np.int32)
        edges = np.vstack((cable_edges, ipctk.edges(faces))).astype(np.int32)
        V0, V1 = np.vstack((before, mesh_v)), np.vstack((after, mesh_v))
        mesh = ipctk.CollisionMesh(V0, edges, faces)
        n_triangles.append(len(faces))
        candidates = ipctk.Candidates()
        _, ms = median_ms(lambda: candidates.build(mesh, V0, V1, inflation_radius=R))
        phases["broad phase"].append(ms)
        # only pairs with a cable primitive in them: the mesh does not move
        candidates.ev_candidates = [c for c in candidates.ev_candidates if (c.edge_id < n - 1) != (c.vertex_id < n)]
        candidates.ee_candidates = [c for c in candidates.ee_candidates if (c.edge0_id < n - 1) != (c.edge1_id < n - 1)]
        candidates.fv_candidates = [c for c in candidates.fv_candidates if c.vertex_id < n]
        candidates.vv_candidates = []
        n_candidates.append(len(candidates))
        fraction, ms = median_ms(
            lambda: candidates.compute_collision_free_stepsize(
                mesh, V0, V1, min_distance=0.98 * R, narrow_phase_ccd=ccd
            )
        )
        phases["CCD step"].append(ms)
        smallest_fraction = min(smallest_fraction, fraction)
        cut += fraction < 0.999
        collisions = ipctk.NormalCollisions()
        _, ms = median_ms(lambda: collisions.build(candidates, mesh, V1, dhat, dmin=R))
        phases["barrier pairs"].append(ms)
        _, ms = median_ms(lambda: (barrier.gradient(collisions, mesh, V1), barrier.hessian(collisions, mesh, V1)))
        phases["barrier grad+Hessian"].append(ms)
        # an independent depth of the iterate: ipctk's closest cable-mesh distance against the radius
        near = ipctk.NormalCollisions()
        near.build(candidates, mesh, V1, 2.0 * R)
        if len(near):
            deepest = max(deepest, R - np.sqrt(near.compute_minimum_distance(mesh, V1)))
    ipc_ms = sum(float(np.median(v)) for v in phases.values())
    print(
        f"{len(recorder.steps)} Newton iterates of 1 cable x {n - 1} segments on a {len(tris)}-triangle mesh "
        f"(per iterate, median {np.median(n_triangles):.0f} triangles within reach and "
        f"{np.median(n_candidates):.0f} cable-mesh candidates)"
    )
    print(f"  ours, a whole Newton iteration (contact, rod, factorisation, line search, CCD): {ours_ms:.2f} ms")
    print(
        "  ipctk 1.6.1, contact alone: "
        + ", ".join(f"{name} {np.median(v):.2f} ms" for name, v in phases.items())
        + f"; sum {ipc_ms:.2f} ms ({ipc_ms / ours_ms:.1f}x our whole iteration)"
    )
    print(
        f"  ipctk's CCD at 0.98 R on our steps: smallest collision-free fraction {smallest_fraction:.3f}, "
        f"{cut} of {len(recorder.steps)} steps it would cut (its conservative rescaling stops short where a "
        f"step approaches a pair already near 0.98 R); deepest iterate by ipctk's distances "
        f"{deepest / R * 100:.2f} % R"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
