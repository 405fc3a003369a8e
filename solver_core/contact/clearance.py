# SPDX-License-Identifier: GPL-3.0-or-later
"""Clearance of a cable to the scene: the smallest gap between its surface and any triangle.

A design read-out (reports, the Blender panel), not part of the equilibrium: exact segment-triangle
distances over the candidate triangles a broad phase found near the cable.
"""

import numpy as np

from .._jit import njit
from ..geometry.contact_geometry import segment_triangle


@njit
def _nearest_segment_triangle(positions, triangles):
    """The nearest segment-triangle pair, in the order of a brute force over segments then triangles
    (the first pair of least distance), skipping the pairs whose bounding spheres lie no nearer than
    the best distance so far: exact, and 9 of 10 pairs left out on the equipment bay (its clearance
    read-out took 6 ms per cable and frame, a fifth of a bake)."""
    n = positions.shape[0] - 1
    m = triangles.shape[0]
    seg_c = np.empty((n, 3))
    seg_r = np.empty(n)
    for i in range(n):
        d2 = 0.0
        for k in range(3):
            seg_c[i, k] = 0.5 * (positions[i, k] + positions[i + 1, k])
            d2 += (positions[i + 1, k] - positions[i, k]) ** 2
        seg_r[i] = 0.5 * np.sqrt(d2)
    tri_c = np.empty((m, 3))
    tri_r = np.empty(m)
    for j in range(m):
        for k in range(3):
            tri_c[j, k] = (triangles[j, 0, k] + triangles[j, 1, k] + triangles[j, 2, k]) / 3.0
        r2 = 0.0
        for v in range(3):
            d2 = 0.0
            for k in range(3):
                d2 += (triangles[j, v, k] - tri_c[j, k]) ** 2
            r2 = max(r2, d2)
        tri_r[j] = np.sqrt(r2)
    best = np.inf
    best_segment = -1
    best_t = 0.0
    cp = np.empty(3)
    cq = np.empty(3)
    for i in range(n):
        p0 = positions[i]
        p1 = positions[i + 1]
        for j in range(m):
            reach = best + seg_r[i] + tri_r[j]  # the spheres' distance bounds the pair's from below
            d2 = 0.0
            for k in range(3):
                d2 += (seg_c[i, k] - tri_c[j, k]) ** 2
            if d2 >= reach * reach:
                continue
            t, d = segment_triangle(p0, p1, triangles, j, cp, cq)
            if d < best:
                best = d
                best_segment = i
                best_t = t
    return best, best_segment, best_t


def clearance_to_triangles(positions: np.ndarray, radius: float, triangles: np.ndarray):
    """(gap, arc-length fraction index) of a cable whose centre line is ``positions`` (n, 3) and whose
    radius is ``radius`` to triangles (m, 3, 3): the gap is negative where the cable cuts a triangle.
    Returns (inf, -1.0) when there are no triangles. The second value is the segment index plus the
    parameter along it, so a caller maps it to arc length with its own node spacing."""
    positions = np.ascontiguousarray(positions, dtype=np.float64)
    triangles = np.ascontiguousarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    if positions.ndim != 2 or positions.shape[1] != 3 or len(positions) < 2:
        raise ValueError("clearance: positions must be an (n >= 2, 3) array")
    if len(triangles) == 0:
        return float("inf"), -1.0
    distance, segment, t = _nearest_segment_triangle(positions, triangles)
    return float(distance - radius), float(segment + t)
