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
    best = np.inf
    best_segment = -1
    best_t = 0.0
    cp = np.empty(3)
    cq = np.empty(3)
    for i in range(positions.shape[0] - 1):
        p0 = positions[i]
        p1 = positions[i + 1]
        for j in range(triangles.shape[0]):
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
