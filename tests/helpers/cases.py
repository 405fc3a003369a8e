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
    cables (list of (nodes, radius)), measured exactly and independently of the solver's contact
    code: each straight segment against each primitive in closed form (brute force over all pairs)."""
    import numpy as np

    nodes = np.asarray(nodes, dtype=float)
    a, b = nodes[:-1], nodes[1:]
    worst = np.inf
    for o in obstacles:
        if o["type"] == "plane":
            n = np.asarray(o["normal"], float)
            d = (nodes - np.asarray(o["point"], float)) @ n  # linear along a segment: its ends
        elif o["type"] == "sphere":
            d = _points_segments_distance(np.asarray(o["center"], float)[None], a, b) - o["radius"]
        else:
            d = _segments_mesh_distance(a, b, np.asarray(o["vertices"], float), np.asarray(o["triangles"], int))
        worst = min(worst, float(d.min()) - radius)
    for other, other_radius in others:
        other = np.asarray(other, float)
        d = _segments_segments_distance(a, b, other[:-1], other[1:])
        worst = min(worst, float(d.min()) - radius - other_radius)
    return worst


def _points_segments_distance(p, a, b):
    """Distances (P, S) from points p (P, 3) to segments a-b (S, 3)."""
    import numpy as np

    d = b - a
    dd = np.maximum((d * d).sum(1), 1e-300)
    s = np.clip(((p[:, None, :] - a[None]) * d[None]).sum(2) / dd[None], 0.0, 1.0)
    return np.linalg.norm(p[:, None, :] - (a[None] + s[..., None] * d[None]), axis=2)


def _segments_segments_distance(a, b, c, e):
    """Distances (S, Q) between segments a-b (S, 3) and c-e (Q, 3): the smaller of the four ends
    against the other segment and, where it lies inside both, the critical point of the squared
    distance (non-parallel segments)."""
    import numpy as np

    best = np.minimum(_points_segments_distance(a, c, e), _points_segments_distance(b, c, e))
    best = np.minimum(best, _points_segments_distance(c, a, b).T)
    best = np.minimum(best, _points_segments_distance(e, a, b).T)
    d1, d2 = (b - a)[:, None, :], (e - c)[None, :, :]
    r = a[:, None, :] - c[None, :, :]
    A, B, C = (d1 * d1).sum(2), (d1 * d2).sum(2), (d2 * d2).sum(2)
    D, E = (d1 * r).sum(2), (d2 * r).sum(2)
    det = A * C - B * B
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (B * E - C * D) / det
        t = (A * E - B * D) / det
    inner = (det > 1e-12 * A * C) & (s > 0) & (s < 1) & (t > 0) & (t < 1)
    if inner.any():
        s, t = np.where(inner, s, 0.0), np.where(inner, t, 0.0)
        gap = np.linalg.norm(r + s[..., None] * d1 - t[..., None] * d2, axis=2)
        best = np.where(inner, np.minimum(best, gap), best)
    return best


def _segments_mesh_distance(a, b, v, t, chunk=2048):
    """Distance from each segment a-b (S, 3) to a triangle mesh: 0 where it passes through a
    triangle, else the smaller of its ends against the triangles and the segment against their
    edges (with no crossing, the closest points include an end of one or an edge of the other)."""
    import numpy as np

    nodes = np.concatenate([a, b[-1:]])
    ends = _points_mesh_distance(nodes, v, t)
    best = np.minimum(ends[:-1], ends[1:])
    tri = v[t]
    for start in range(0, len(tri), chunk):
        part = tri[start : start + chunk]
        for k in range(3):
            edge = _segments_segments_distance(a, b, part[:, k], part[:, (k + 1) % 3])
            best = np.minimum(best, edge.min(axis=1))
        # crossings (Moller-Trumbore): the segment meets the inside of a triangle
        p0, d = a[:, None, :], (b - a)[:, None, :]
        e1, e2 = (part[:, 1] - part[:, 0])[None], (part[:, 2] - part[:, 0])[None]
        h = np.cross(d, e2)
        det = (h * e1).sum(2)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            inv = 1.0 / det
            q0 = p0 - part[None, :, 0]
            u = (q0 * h).sum(2) * inv
            q = np.cross(q0, e1)
            w = (d * q).sum(2) * inv
            tt = (e2 * q).sum(2) * inv
            hit = (np.abs(det) > 1e-300) & (u >= 0) & (w >= 0) & (u + w <= 1) & (tt >= 0) & (tt <= 1)
        best = np.where(hit.any(axis=1), 0.0, best)
    return best


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


def minimise_argument(name: str) -> int:
    """Where ``name`` sits among minimise_rod_energy's arguments after pos and quat: the tests that
    wrap the kernel to run it one iteration at a time find its arguments by name."""
    import inspect

    from solver_core.solve.newton import minimise_rod_energy

    return (
        list(inspect.signature(getattr(minimise_rod_energy, "py_func", minimise_rod_energy)).parameters).index(name) - 2
    )


# bundle branches of a harness with junctions (test_wire_routes, test_formboard)
D = 0.0016
AT_ORIGIN = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}


def wire(wire_id, count=1, diameter=D, material=None):
    out = {"diameter": diameter, "material": material or dict(WIRE), "count": count}
    if wire_id is not None:
        out["id"] = wire_id
    return out


def branch(cid, length, start, end, wires):
    c = cable(id=cid, length=length, start=start, end=end, segments=12)
    c.pop("diameter")
    c.pop("material")
    c["bundle"] = {"wires": wires, "wrap": "taped"}
    return c


def at(jid, outlet):
    return {"junction": jid, "outlet": list(np.asarray(outlet, float) / np.linalg.norm(outlet))}


def connector(position, tangent):
    return {"position": list(position), "tangent": list(np.asarray(tangent, float) / np.linalg.norm(tangent))}
