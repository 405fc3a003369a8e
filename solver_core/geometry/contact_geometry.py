# SPDX-License-Identifier: GPL-3.0-or-later
"""Exact closest points between a cable segment and obstacle primitives (numba kernels).

The cable's centre line is a chain of segments; contact is measured from segments, not nodes,
so a cable cannot slip through a thin plate or over an edge between two nodes. Every closest-point
function returns the parameter t in [0, 1] of the closest point on the segment p0 + t (p1 - p0),
the closest point on the primitive and the distance between them; ``nodes_within`` and
``segments_near_capsules`` say only whether two chains come that near. Algorithms follow Ericson,
Real-Time Collision Detection (2005), 5.1.5 and 5.1.9.
"""

import math

import numpy as np

from .._jit import njit


@njit
def _clamp01(x):
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


@njit
def nodes_within(a, b, distance):
    """Whether some node of ``a`` (n, 3) lies within ``distance`` of some node of ``b`` (stops at the
    first such pair)."""
    limit = distance * distance
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            dx, dy, dz = a[i, 0] - b[j, 0], a[i, 1] - b[j, 1], a[i, 2] - b[j, 2]
            if dx * dx + dy * dy + dz * dz < limit:
                return True
    return False


@njit
def segments_near_capsules(pos, node_part, cap_a, cap_b, within):
    """Whether some segment of the chain ``pos`` (two consecutive nodes of one part, ``node_part``)
    comes within ``within[j]`` of the centre segment ``cap_a[j]`` ``cap_b[j]`` of some capsule j
    (exact distances, segment_segment, for the pairs whose boxes, the capsule's grown by within[j],
    overlap; stops at the first such pair)."""
    cp, cq = np.empty(3), np.empty(3)
    n_seg = pos.shape[0] - 1
    lo, hi = np.empty((n_seg, 3)), np.empty((n_seg, 3))
    for i in range(n_seg):
        for k in range(3):
            lo[i, k] = min(pos[i, k], pos[i + 1, k])
            hi[i, k] = max(pos[i, k], pos[i + 1, k])
    for j in range(cap_a.shape[0]):
        w = within[j]
        c_lo0, c_hi0 = min(cap_a[j, 0], cap_b[j, 0]) - w, max(cap_a[j, 0], cap_b[j, 0]) + w
        c_lo1, c_hi1 = min(cap_a[j, 1], cap_b[j, 1]) - w, max(cap_a[j, 1], cap_b[j, 1]) + w
        c_lo2, c_hi2 = min(cap_a[j, 2], cap_b[j, 2]) - w, max(cap_a[j, 2], cap_b[j, 2]) + w
        for i in range(n_seg):
            if lo[i, 0] > c_hi0 or hi[i, 0] < c_lo0 or lo[i, 1] > c_hi1 or hi[i, 1] < c_lo1:
                continue
            if lo[i, 2] > c_hi2 or hi[i, 2] < c_lo2 or node_part[i] != node_part[i + 1]:
                continue
            if segment_segment(pos[i], pos[i + 1], cap_a[j], cap_b[j], cp, cq)[2] <= w:
                return True
    return False


@njit
def closest_point_on_segment(p0, p1, q, out):
    """Parameter t of the point of segment p0 p1 closest to q; the point goes to out."""
    dx, dy, dz = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    dd = dx * dx + dy * dy + dz * dz
    t = 0.0
    if dd > 0.0:
        t = _clamp01(((q[0] - p0[0]) * dx + (q[1] - p0[1]) * dy + (q[2] - p0[2]) * dz) / dd)
    out[0] = p0[0] + t * dx
    out[1] = p0[1] + t * dy
    out[2] = p0[2] + t * dz
    return t


@njit
def segment_segment(p0, p1, q0, q1, cp, cq):
    """Closest points of segments p0 p1 and q0 q1: returns (s, t, distance), points in cp and cq."""
    d1x, d1y, d1z = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    d2x, d2y, d2z = q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]
    rx, ry, rz = p0[0] - q0[0], p0[1] - q0[1], p0[2] - q0[2]
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    eps = 1e-300
    if a <= eps and e <= eps:
        s = 0.0
        t = 0.0
    elif a <= eps:
        s = 0.0
        t = _clamp01(f / e)
    else:
        c = d1x * rx + d1y * ry + d1z * rz
        if e <= eps:
            t = 0.0
            s = _clamp01(-c / a)
        else:
            b = d1x * d2x + d1y * d2y + d1z * d2z
            denom = a * e - b * b
            s = _clamp01((b * f - c * e) / denom) if denom > 1e-14 * a * e else 0.0
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = _clamp01(-c / a)
            elif t > 1.0:
                t = 1.0
                s = _clamp01((b - c) / a)
    for k in range(3):
        cp[k] = p0[k] + s * (p1[k] - p0[k])
        cq[k] = q0[k] + t * (q1[k] - q0[k])
    dx, dy, dz = cp[0] - cq[0], cp[1] - cq[1], cp[2] - cq[2]
    return s, t, math.sqrt(dx * dx + dy * dy + dz * dz)


@njit
def closest_point_on_triangle(p, tris, t, out):
    """Point of triangle ``tris[t]`` closest to p (Ericson 5.1.5); returns its squared distance.

    Triangles are passed as the array and an index, not as three row views: building views in a
    loop over thousands of contact pairs cost twice the arithmetic."""
    abx, aby, abz = tris[t, 1, 0] - tris[t, 0, 0], tris[t, 1, 1] - tris[t, 0, 1], tris[t, 1, 2] - tris[t, 0, 2]
    acx, acy, acz = tris[t, 2, 0] - tris[t, 0, 0], tris[t, 2, 1] - tris[t, 0, 1], tris[t, 2, 2] - tris[t, 0, 2]
    apx, apy, apz = p[0] - tris[t, 0, 0], p[1] - tris[t, 0, 1], p[2] - tris[t, 0, 2]
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        out[0], out[1], out[2] = tris[t, 0, 0], tris[t, 0, 1], tris[t, 0, 2]
    else:
        bpx, bpy, bpz = p[0] - tris[t, 1, 0], p[1] - tris[t, 1, 1], p[2] - tris[t, 1, 2]
        d3 = abx * bpx + aby * bpy + abz * bpz
        d4 = acx * bpx + acy * bpy + acz * bpz
        cpx, cpy, cpz = p[0] - tris[t, 2, 0], p[1] - tris[t, 2, 1], p[2] - tris[t, 2, 2]
        d5 = abx * cpx + aby * cpy + abz * cpz
        d6 = acx * cpx + acy * cpy + acz * cpz
        vc = d1 * d4 - d3 * d2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        if d3 >= 0.0 and d4 <= d3:
            out[0], out[1], out[2] = tris[t, 1, 0], tris[t, 1, 1], tris[t, 1, 2]
        elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
            v = d1 / (d1 - d3)
            out[0], out[1], out[2] = tris[t, 0, 0] + v * abx, tris[t, 0, 1] + v * aby, tris[t, 0, 2] + v * abz
        elif d6 >= 0.0 and d5 <= d6:
            out[0], out[1], out[2] = tris[t, 2, 0], tris[t, 2, 1], tris[t, 2, 2]
        elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
            w = d2 / (d2 - d6)
            out[0], out[1], out[2] = tris[t, 0, 0] + w * acx, tris[t, 0, 1] + w * acy, tris[t, 0, 2] + w * acz
        elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
            w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
            out[0] = tris[t, 1, 0] + w * (tris[t, 2, 0] - tris[t, 1, 0])
            out[1] = tris[t, 1, 1] + w * (tris[t, 2, 1] - tris[t, 1, 1])
            out[2] = tris[t, 1, 2] + w * (tris[t, 2, 2] - tris[t, 1, 2])
        else:
            denom = 1.0 / (va + vb + vc)
            v = vb * denom
            w = vc * denom
            out[0] = tris[t, 0, 0] + abx * v + acx * w
            out[1] = tris[t, 0, 1] + aby * v + acy * w
            out[2] = tris[t, 0, 2] + abz * v + acz * w
    dx, dy, dz = p[0] - out[0], p[1] - out[1], p[2] - out[2]
    return dx * dx + dy * dy + dz * dz


@njit
def _segment_crosses_triangle(p0, p1, tris, tri):
    """Parameter in [0, 1] where the segment pierces the triangle, or -1 (Moller-Trumbore)."""
    ax, ay, az = tris[tri, 0, 0], tris[tri, 0, 1], tris[tri, 0, 2]
    e1x, e1y, e1z = tris[tri, 1, 0] - ax, tris[tri, 1, 1] - ay, tris[tri, 1, 2] - az
    e2x, e2y, e2z = tris[tri, 2, 0] - ax, tris[tri, 2, 1] - ay, tris[tri, 2, 2] - az
    dx, dy, dz = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    hx, hy, hz = dy * e2z - dz * e2y, dz * e2x - dx * e2z, dx * e2y - dy * e2x
    det = e1x * hx + e1y * hy + e1z * hz
    if abs(det) < 1e-300:
        return -1.0
    inv = 1.0 / det
    sx, sy, sz = p0[0] - ax, p0[1] - ay, p0[2] - az
    u = (sx * hx + sy * hy + sz * hz) * inv
    if u < 0.0 or u > 1.0:
        return -1.0
    qx, qy, qz = sy * e1z - sz * e1y, sz * e1x - sx * e1z, sx * e1y - sy * e1x
    v = (dx * qx + dy * qy + dz * qz) * inv
    if v < 0.0 or u + v > 1.0:
        return -1.0
    t = (e2x * qx + e2y * qy + e2z * qz) * inv
    return t if 0.0 <= t <= 1.0 else -1.0


@njit
def segment_triangle(p0, p1, tris, tri, cp, cq):
    """Closest points of segment p0 p1 and triangle ``tris[tri]``: (t, distance), points in cp (segment), cq."""
    best = np.inf
    best_t = 0.0
    sp = np.empty(3)
    tq = np.empty(3)
    t_cross = _segment_crosses_triangle(p0, p1, tris, tri)
    if t_cross >= 0.0:
        for k in range(3):
            cp[k] = p0[k] + t_cross * (p1[k] - p0[k])
            cq[k] = cp[k]
        return t_cross, 0.0
    # endpoints against the face
    for end in range(2):
        p = p0 if end == 0 else p1
        d2 = closest_point_on_triangle(p, tris, tri, tq)
        if d2 < best:
            best = d2
            best_t = float(end)
            for k in range(3):
                cp[k] = p[k]
                cq[k] = tq[k]
    # the segment against the three edges
    for e in range(3):
        s, _t, d = segment_segment(p0, p1, tris[tri, e], tris[tri, (e + 1) % 3], sp, tq)
        if d * d < best:
            best = d * d
            best_t = s
            for k in range(3):
                cp[k] = sp[k]
                cq[k] = tq[k]
    return best_t, math.sqrt(best)
