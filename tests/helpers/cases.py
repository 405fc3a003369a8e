# SPDX-License-Identifier: GPL-3.0-or-later
"""Case documents and small helpers shared by the tests (no bpy here)."""

import copy

import numpy as np

from solver_core import Harness, parse_case, solve_case

WIRE = {"E": 126e6, "nu": 0.3, "density": 7958.0}  # Lv 2017, Table 2 (30 g over 300 mm of a 4 mm cable)


def cable(**overrides):
    doc = {
        "id": "W1",
        "length": 0.3,
        "diameter": 0.004,
        "material": dict(WIRE),
        "segments": 40,
        "start": {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        "end": None,
    }
    doc.update(copy.deepcopy(overrides))
    return doc


def case(*cables, **overrides):
    doc = {
        "format": "cable-harness-case/1",
        "gravity": [0.0, 0.0, -9.81],
        "cables": copy.deepcopy(list(cables)) or [cable()],
    }
    doc.update(copy.deepcopy(overrides))
    return doc


def solve(doc):
    """Solve a case document; returns the result document."""
    return solve_case(parse_case(doc))


def first(result, cable_id="W1"):
    return result["steps"][0]["cables"][cable_id]


def harness(doc):
    return Harness.from_case(parse_case(doc))


def rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def min_clearance(nodes, radius, obstacles=(), others=()):
    """Smallest (surface distance - radius) of a cable's segments to planes, spheres, meshes and other
    cables (list of (nodes, radius)), measured independently of the solver's contact code."""
    import numpy as np

    nodes = np.asarray(nodes, dtype=float)
    worst = np.inf
    samples = np.linspace(0.0, 1.0, 9)
    pts = (nodes[:-1, None, :] * (1 - samples)[None, :, None] + nodes[1:, None, :] * samples[None, :, None]).reshape(
        -1, 3
    )
    for o in obstacles:
        if o["type"] == "plane":
            n = np.asarray(o["normal"], float)
            d = (pts - np.asarray(o["point"], float)) @ n
        elif o["type"] == "sphere":
            d = np.linalg.norm(pts - np.asarray(o["center"], float), axis=1) - o["radius"]
        else:
            v = np.asarray(o["vertices"], float)
            t = np.asarray(o["triangles"], int)
            d = _points_mesh_distance(pts, v, t)
        worst = min(worst, float(d.min()) - radius)
    for other, other_radius in others:
        other = np.asarray(other, float)
        q = (other[:-1, None, :] * (1 - samples)[None, :, None] + other[1:, None, :] * samples[None, :, None]).reshape(
            -1, 3
        )
        d = np.linalg.norm(pts[:, None, :] - q[None, :, :], axis=2).min()
        worst = min(worst, float(d) - radius - other_radius)
    return worst


def _points_mesh_distance(points, v, t, chunk=256):
    """Brute-force distances from points (P, 3) to a triangle mesh: for every point and triangle the
    projection on the triangle's plane where its barycentric coordinates lie inside, else the nearest
    point on the triangle's three edges; the minimum over all triangles."""
    tri = np.asarray(v, float)[np.asarray(t, int)]  # (T, 3, 3)
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    e1, e2 = b - a, c - a
    n = np.cross(e1, e2)
    n /= np.linalg.norm(n, axis=1)[:, None]
    # barycentric coordinates from the 2x2 normal equations of q - a = u e1 + w e2
    g11, g12, g22 = (e1 * e1).sum(1), (e1 * e2).sum(1), (e2 * e2).sum(1)
    det = g11 * g22 - g12 * g12
    out = np.empty(len(points))
    for start in range(0, len(points), chunk):
        p = points[start : start + chunk, None, :]  # (P, 1, 3)
        ap = p - a[None]
        height = (ap * n[None]).sum(2)  # (P, T)
        r1, r2 = (ap * e1[None]).sum(2), (ap * e2[None]).sum(2)
        u = (g22 * r1 - g12 * r2) / det
        w = (g11 * r2 - g12 * r1) / det
        inside = (u >= 0) & (w >= 0) & (u + w <= 1)
        best = np.where(inside, np.abs(height), np.inf)
        for e0, e1_ in ((a, b), (b, c), (c, a)):
            d = e1_ - e0
            s = np.clip(((p - e0[None]) * d[None]).sum(2) / (d * d).sum(1)[None], 0.0, 1.0)
            gap = np.linalg.norm(p - (e0[None] + s[..., None] * d[None]), axis=2)
            best = np.minimum(best, gap)
        out[start : start + chunk] = best.min(axis=1)
    return out
