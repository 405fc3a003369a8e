# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether two branches of one harness pass through each other away from the junction they share.

Branches meeting at a junction are no contact obstacles to each other (they overlap where they leave
it), so nothing in their solve keeps them apart elsewhere either: a state where they cut through each
other is no physical equilibrium and must not be called converged. Near a shared junction two
branches leaving at an angle theta overlap over (r_a + r_b) / sin(theta / 2) of their length; that
stretch (and one segment more) is left out of the test.

Every pair of branches is tested in one kernel (``first_crossing``): a harness's warm step tests its
branches once or twice, and a test per pair in Python cost more than the step's branch solves.
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit

MIN_HALF_ANGLE_SINE = 0.05  # outlets closer than ~6 degrees run together: their overlap is capped
MAX_OVERLAP_FRACTION = 0.25  # of the shorter branch
SHALLOW = 0.01  # a cut shallower than this fraction of the thinner radius is round-off of a touch


class Branches(NamedTuple):
    """The branches of a harness as ``first_crossing`` reads them, concatenated in branch order."""

    nodes: np.ndarray  # (N, 3) world
    first: np.ndarray  # (B + 1,) int: branch b's nodes are first[b]:first[b + 1]
    arc: np.ndarray  # (N,) arc length of each node along its branch
    radius: np.ndarray  # (B,)
    longest: np.ndarray  # (B,) its longest segment
    end_junction: np.ndarray  # (B, 2) int: the junction at its start and its end, -1 where none
    outward: np.ndarray  # (B, 2, 3): the direction it leaves each of those junctions in (unit)


@njit
def _clamp01(x):
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


@njit
def _dot(x, y, z, u, v, w):
    return x * u + y * v + z * w


@njit
def segment_distance(p0, p1, q0, q1) -> float:
    """The smallest distance between segments p0 p1 and q0 q1, exact: the closest points of the two
    lines clamped to the segments, either of which may be a point (Ericson 2005, Sec. 5.1.9)."""
    d1x, d1y, d1z = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    d2x, d2y, d2z = q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]
    rx, ry, rz = p0[0] - q0[0], p0[1] - q0[1], p0[2] - q0[2]
    a = _dot(d1x, d1y, d1z, d1x, d1y, d1z)
    e = _dot(d2x, d2y, d2z, d2x, d2y, d2z)
    f = _dot(d2x, d2y, d2z, rx, ry, rz)
    s = t = 0.0
    if a <= 1e-300 and e <= 1e-300:
        pass
    elif a <= 1e-300:
        t = _clamp01(f / e)
    else:
        c = _dot(d1x, d1y, d1z, rx, ry, rz)
        if e <= 1e-300:
            s = _clamp01(-c / a)
        else:
            b = _dot(d1x, d1y, d1z, d2x, d2y, d2z)
            denom = a * e - b * b
            s = _clamp01((b * f - c * e) / denom) if denom > 1e-12 * a * e else 0.0
            t = (b * s + f) / e
            if t < 0.0:
                t, s = 0.0, _clamp01(-c / a)
            elif t > 1.0:
                t, s = 1.0, _clamp01((b - c) / a)
    gx = rx + s * d1x - t * d2x
    gy = ry + s * d1y - t * d2y
    gz = rz + s * d1z - t * d2z
    return math.sqrt(gx * gx + gy * gy + gz * gz)


@njit
def _kept(arc, lo, hi, side, cut):
    """The node range lo:hi of a branch less the stretch within ``cut`` of arc length of its ``side``
    end (0 start, 1 end)."""
    if side == 0:
        while lo < hi and arc[lo] <= cut:
            lo += 1
    else:
        end = arc[hi - 1]
        while hi > lo and arc[hi - 1] >= end - cut:
            hi -= 1
    return lo, hi


@njit
def _near(nodes, a0, a1, b0, b1, distance) -> bool:
    """Whether some node of a0:a1 lies within ``distance`` of some node of b0:b1 (none where their
    boxes lie further apart)."""
    for c in range(3):  # first their boxes
        if nodes[a0:a1, c].min() - distance > nodes[b0:b1, c].max():
            return False
        if nodes[b0:b1, c].min() - distance > nodes[a0:a1, c].max():
            return False
    limit = distance * distance
    for i in range(a0, a1):
        for j in range(b0, b1):
            dx, dy, dz = nodes[i, 0] - nodes[j, 0], nodes[i, 1] - nodes[j, 1], nodes[i, 2] - nodes[j, 2]
            if dx * dx + dy * dy + dz * dz < limit:
                return True
    return False


@njit
def first_crossing(nodes, first, arc, radius, longest, end_junction, outward):
    """(a, b, depth): the first pair of branches a < b that cut into each other deeper than SHALLOW of
    the thinner radius away from the junctions they share, and how deep (m); (-1, -1, 0) where none
    do. Only pairs whose boxes, grown by a radius and a segment, meet are measured."""
    n_branches = radius.shape[0]
    low = np.empty((n_branches, 3))
    high = np.empty((n_branches, 3))
    for b in range(n_branches):
        grow = radius[b] + longest[b]
        for c in range(3):
            low[b, c] = nodes[first[b] : first[b + 1], c].min() - grow
            high[b, c] = nodes[first[b] : first[b + 1], c].max() + grow
    for a in range(n_branches):
        for b in range(a + 1, n_branches):
            apart = False
            for c in range(3):
                if low[a, c] > high[b, c] or low[b, c] > high[a, c]:
                    apart = True
            if apart:
                continue
            ra, rb = radius[a], radius[b]
            seg = max(longest[a], longest[b])
            a0, a1, b0, b1 = first[a], first[a + 1], first[b], first[b + 1]
            shorter = min(arc[a1 - 1], arc[b1 - 1])
            for side_a in range(2):
                for side_b in range(2):
                    k = end_junction[a, side_a]
                    if k < 0 or k != end_junction[b, side_b]:
                        continue
                    u, v = outward[a, side_a], outward[b, side_b]
                    cos = _dot(u[0], u[1], u[2], v[0], v[1], v[2])
                    half_sine = math.sqrt(max(0.0, 0.5 * (1.0 - cos)))
                    overlap = min((ra + rb) / max(half_sine, MIN_HALF_ANGLE_SINE), MAX_OVERLAP_FRACTION * shorter)
                    a0, a1 = _kept(arc, a0, a1, side_a, overlap + seg)
                    b0, b1 = _kept(arc, b0, b1, side_b, overlap + seg)
            if a1 - a0 < 2 or b1 - b0 < 2 or not _near(nodes, a0, a1, b0, b1, ra + rb + seg):
                continue
            closest = np.inf
            for i in range(a0, a1 - 1):
                for j in range(b0, b1 - 1):
                    closest = min(closest, segment_distance(nodes[i], nodes[i + 1], nodes[j], nodes[j + 1]))
            depth = ra + rb - closest
            if depth > SHALLOW * min(ra, rb):
                return a, b, depth
    return -1, -1, 0.0
