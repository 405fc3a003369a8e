# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether a cable's centre line passes through an obstacle while it moves from one state to the next,
measured independently of the solver (numpy only): the nodes move on straight lines, each segment
sweeps the bilinear patch between its two places. Used on consecutive Newton iterates (and any other
states a solve passes), so that a solve that ends on the far side of an obstacle is seen to have
gone through it rather than round it.

- A triangle (a face of a mesh: a zero-thickness plate or a closed box) is passed through when the
  patch cuts the inside of the triangle: tested on the patch cut into thin strips, each strip as two
  triangles, against the face (edge-by-edge segment-triangle tests both ways).
- A sphere is passed through when the patch comes nearer its centre than its radius less ``core``
  (the centre line cannot dip that deep while the cable's surface stays within 1 % of a radius of
  the sphere's): the distance is minimised over the patch by sampling the motion and solving for the
  closest point of each sampled segment exactly.
- A plane (a half-space) is passed through when a node ends beyond it by more than ``core``.
"""

import numpy as np

STRIPS = 24  # time strips per step; the patch of one strip is nearly flat for the steps a solve takes


def _segment_hits_triangle(p, q, a, b, c, eps=1e-12):
    """Row by row: whether segment p->q cuts the inside of triangle abc (Moller-Trumbore, the ends and
    edges excluded by eps). All (m, 3)."""
    d = q - p
    e1, e2 = b - a, c - a
    h = np.cross(d, e2)
    det = np.einsum("mk,mk->m", h, e1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv = 1.0 / det
        s = p - a
        u = np.einsum("mk,mk->m", s, h) * inv
        qv = np.cross(s, e1)
        v = np.einsum("mk,mk->m", d, qv) * inv
        t = np.einsum("mk,mk->m", e2, qv) * inv
    with np.errstate(invalid="ignore"):
        return (np.abs(det) > 1e-300) & (u > eps) & (v > eps) & (u + v < 1 - eps) & (t > eps) & (t < 1 - eps)


def _triangles_meet(tri_a, tri_b):
    """Row by row, (m, 3, 3) each: whether the two triangles intersect (an edge of one through the
    other)."""
    hit = np.zeros(tri_a.shape[0], dtype=bool)
    for i, j in ((0, 1), (1, 2), (2, 0)):
        hit |= _segment_hits_triangle(tri_a[:, i], tri_a[:, j], tri_b[:, 0], tri_b[:, 1], tri_b[:, 2])
        hit |= _segment_hits_triangle(tri_b[:, i], tri_b[:, j], tri_a[:, 0], tri_a[:, 1], tri_a[:, 2])
    return hit


def _mesh_triangles(obstacle):
    v = np.asarray(obstacle["vertices"], dtype=float)
    return v[np.asarray(obstacle["triangles"])]


def passes_through_mesh(before, after, obstacle) -> bool:
    """Whether the centre line, moving from ``before`` to ``after`` (nodes, world), cuts a face of the
    mesh obstacle at any time of the motion. A segment cutting a face already at the start (a route
    drawn through the part) is not held to it."""
    tris = _mesh_triangles(obstacle)
    corners = np.stack([before[:-1], before[1:], after[:-1], after[1:]])
    seg_lo, seg_hi = corners.min(axis=0), corners.max(axis=0)
    tri_lo, tri_hi = tris.min(axis=1), tris.max(axis=1)
    overlap = ((seg_lo[:, None] <= tri_hi[None]) & (seg_hi[:, None] >= tri_lo[None])).all(axis=2)
    seg, tri = np.nonzero(overlap)
    if seg.size == 0:
        return False
    t = tris[tri]
    # The patch lies in the convex hull of its four corners: with all of them strictly on one side of
    # a face's plane it cannot reach the face (a cable resting on a box's top never crosses its plane,
    # and testing it strip by strip cost 0.1 s per motion).
    normal = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    side = np.einsum("cmk,mk->cm", corners[:, seg] - t[None, :, 0], normal)
    straddles = (side.min(axis=0) <= 0.0) & (side.max(axis=0) >= 0.0)
    seg, t = seg[straddles], t[straddles]
    if seg.size == 0:
        return False
    # a segment through a face at the start (a route drawn through the part) is free to come out
    through = np.unique(seg[_segment_hits_triangle(before[seg], before[seg + 1], t[:, 0], t[:, 1], t[:, 2])])
    keep = ~np.isin(seg, through)
    seg, t = seg[keep], t[keep]
    # every strip of every pair at once: strip k runs from time k / STRIPS to (k + 1) / STRIPS
    s0 = (np.arange(STRIPS) / STRIPS)[:, None, None]
    s1 = s0 + 1.0 / STRIPS
    move_a, move_b = after[seg] - before[seg], after[seg + 1] - before[seg + 1]
    a, b = before[seg] + s0 * move_a, before[seg + 1] + s0 * move_b
    d, c = before[seg] + s1 * move_a, before[seg + 1] + s1 * move_b
    t = np.broadcast_to(t, (STRIPS, *t.shape)).reshape(-1, 3, 3)
    first = np.stack([a, b, c], axis=2).reshape(-1, 3, 3)
    second = np.stack([a, c, d], axis=2).reshape(-1, 3, 3)
    return bool((_triangles_meet(first, t) | _triangles_meet(second, t)).any())


def _closest_to_point(a, b, c):
    e = b - a
    ee = np.maximum(np.einsum("...k,...k->...", e, e), 1e-300)
    t = np.clip(np.einsum("...k,...k->...", c - a, e) / ee, 0.0, 1.0)
    return np.linalg.norm(a + t[..., None] * e - c, axis=-1)


def nearest_to_sphere_centre(before, after, centre, samples=4 * STRIPS + 1) -> float:
    """The least distance of the moving centre line from the sphere's centre over the motion."""
    c = np.asarray(centre, dtype=float)
    s = np.linspace(0.0, 1.0, samples)[:, None, None]
    p = before[None] + s * (after - before)[None]
    dist = _closest_to_point(p[:, :-1], p[:, 1:], c)
    # refine about the sampled minimum of each segment (golden-section over the motion's time)
    best = dist.min()
    k = np.unravel_index(np.argmin(dist), dist.shape)
    lo, hi = max(0.0, (k[0] - 1) / (samples - 1)), min(1.0, (k[0] + 1) / (samples - 1))
    i = k[1]
    g = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(40):
        m1, m2 = hi - g * (hi - lo), lo + g * (hi - lo)
        f1 = _closest_to_point(*(before[i : i + 2] + m1 * (after[i : i + 2] - before[i : i + 2])), c)
        f2 = _closest_to_point(*(before[i : i + 2] + m2 * (after[i : i + 2] - before[i : i + 2])), c)
        if f1 < f2:
            hi = m2
        else:
            lo = m1
        best = min(best, f1, f2)
    return float(best)


def passes_through(before, after, obstacle, core) -> bool:
    """Whether the centre line passes through ``obstacle`` (case format) between the two states;
    ``core``: how deep under a sphere's or plane's surface the centre line may go (m)."""
    before, after = np.asarray(before, float), np.asarray(after, float)
    kind = obstacle["type"]
    if kind == "mesh":
        return passes_through_mesh(before, after, obstacle)
    if kind == "sphere":
        r = float(obstacle["radius"])
        started = nearest_to_sphere_centre(before, before, obstacle["center"]) < r - core
        return not started and nearest_to_sphere_centre(before, after, obstacle["center"]) < r - core
    if kind == "plane":
        n = np.asarray(obstacle["normal"], float)
        n /= np.linalg.norm(n)
        depth = -((after - np.asarray(obstacle["point"], float)) @ n)
        return bool(depth.max() > core)
    raise ValueError(kind)
