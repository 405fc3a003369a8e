# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether a step carries a cable's centre line through a triangle of an obstacle mesh.

The step filter of the Newton iteration (step_limits.approach_fraction) limits each contact pair's
approach along its normal to first order, over the candidate pairs of the last search; a segment
that turns about a node resting on a thin plate, or sweeps across a plate's edge between its nodes,
can pass it. This is the exact test behind every accepted step, with the nodes moving on straight
lines: a node's path through a face, a segment piercing a face at the end of the step, or a face's
edge through the surface the segment sweeps (the bilinear patch a0 b0 b1 a1, as two triangles).
Segments that pierce a face at the start (a route drawn through an obstacle) are not held to it, so
that such a start can be repaired.
"""

import numpy as np

from .._jit import njit
from ..geometry.contact_geometry import _segment_crosses_triangle
from .pair_search import _query


@njit
def step_crosses_triangles(pos0, pos1, node_part, obstacles):
    tris = obstacles.triangles
    if tris.shape[0] == 0:
        return False
    # the triangle tree by name (kernel_arrays.ObstacleArrays)
    t_min, t_max, t_left, t_right = obstacles.tree_min, obstacles.tree_max, obstacles.tree_left, obstacles.tree_right
    t_start, t_count, t_order = obstacles.tree_start, obstacles.tree_count, obstacles.tree_order
    hits = np.empty(64, dtype=np.int64)
    lo = np.empty(3)
    hi = np.empty(3)
    swept = np.empty((2, 3, 3))
    for i in range(pos0.shape[0] - 1):
        if node_part[i] != node_part[i + 1]:
            continue
        for k in range(3):
            lo[k] = min(pos0[i, k], pos0[i + 1, k], pos1[i, k], pos1[i + 1, k])
            hi[k] = max(pos0[i, k], pos0[i + 1, k], pos1[i, k], pos1[i + 1, k])
        hits, count = _query(t_min, t_max, t_left, t_right, t_start, t_count, t_order, lo, hi, hits)
        if count == 0:
            continue
        for k in range(3):
            swept[0, 0, k] = pos0[i, k]
            swept[0, 1, k] = pos0[i + 1, k]
            swept[0, 2, k] = pos1[i + 1, k]
            swept[1, 0, k] = pos0[i, k]
            swept[1, 1, k] = pos1[i + 1, k]
            swept[1, 2, k] = pos1[i, k]
        for h in range(count):
            tri = hits[h]
            if _segment_crosses_triangle(pos0[i], pos0[i + 1], tris, tri) >= 0.0:
                continue  # through the face already: free to come out
            if (
                _segment_crosses_triangle(pos1[i], pos1[i + 1], tris, tri) >= 0.0
                or _segment_crosses_triangle(pos0[i], pos1[i], tris, tri) >= 0.0
                or _segment_crosses_triangle(pos0[i + 1], pos1[i + 1], tris, tri) >= 0.0
            ):
                return True
            for e in range(3):
                a = tris[tri, e]
                b = tris[tri, (e + 1) % 3]
                # the triangle indices typed as int64 (not literals): one compiled version, not three
                first, second = np.int64(0), np.int64(1)
                if (
                    _segment_crosses_triangle(a, b, swept, first) >= 0.0
                    or _segment_crosses_triangle(a, b, swept, second) >= 0.0
                ):
                    return True
    return False
