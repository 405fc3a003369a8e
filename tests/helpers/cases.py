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
            d = np.array([_point_mesh_distance(p, v, t) for p in pts])
        worst = min(worst, float(d.min()) - radius)
    for other, other_radius in others:
        other = np.asarray(other, float)
        q = (other[:-1, None, :] * (1 - samples)[None, :, None] + other[1:, None, :] * samples[None, :, None]).reshape(
            -1, 3
        )
        d = np.linalg.norm(pts[:, None, :] - q[None, :, :], axis=2).min()
        worst = min(worst, float(d) - radius - other_radius)
    return worst


def _point_mesh_distance(p, v, t):
    """Brute-force distance from a point to a triangle mesh (barycentric projection and edges)."""
    import numpy as np

    best = np.inf
    for a, b, c in v[t]:
        n = np.cross(b - a, c - a)
        n /= np.linalg.norm(n)
        q = p - ((p - a) @ n) * n
        # inside test by barycentric coordinates
        m = np.array([b - a, c - a]).T
        uv, *_ = np.linalg.lstsq(m, q - a, rcond=None)
        if uv[0] >= 0 and uv[1] >= 0 and uv.sum() <= 1:
            best = min(best, abs((p - a) @ n))
        for e0, e1 in ((a, b), (b, c), (c, a)):
            s = np.clip((p - e0) @ (e1 - e0) / ((e1 - e0) @ (e1 - e0)), 0, 1)
            best = min(best, np.linalg.norm(p - (e0 + s * (e1 - e0))))
    return best
