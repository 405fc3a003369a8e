# SPDX-License-Identifier: GPL-3.0-or-later
"""Holders mounted on an obstacle: a connector sits on its device's face, a clip on its bracket.

The holder's point lies on the face (or within a cable radius of it), so the cable's first node is
inside the contact distance of the very surface the cable leaves: the contact barrier cannot be met
there, and the solve fails or reports the route as passing through an obstacle. A harness engineer
means the cable to leave the face, not to be pushed off it: the part of the mounting obstacle around
the holder (the mount zone) is not an obstacle to the cable. The zone reaches at least to where a
cable leaving along the outlet is a radius clear of the face (r / cos of the outlet's tilt from the
face normal, with a margin), and never less than MOUNT_RADII radii. Triangles crossing the zone's
sphere are split (midpoint subdivision) down to ZONE_PIECES pieces per zone radius; the pieces
inside are dropped. The edges of the pieces that lie on the original mesh's edges keep its
sharp-edge bits and folds; the new inner edges are flat; the edges at the rim of the hole are open.

The cut mesh is moved into the obstacle by NUDGE zone radii along its faces' normals (nanometres):
a connector exactly on the face would otherwise lie in the plane of the faces around it, where the
step filter's test of a face edge against the surface a static segment sweeps (a degenerate
triangle, crossing.py) reads rounding noise as a crossing for any edge whose line passes through
the connector (the diagonal of a box's face under a connector at its centre): every solve failed
with "a holder's motion would carry the cable through an obstacle".

Pure numpy, used by the case parser (connectors with ``mounted_on``) and the Blender layer.
"""

import math

import numpy as np

MOUNT_RADII = 3.0  # the zone's radius is at least this many cable radii
CLEAR_MARGIN = 1.25  # and reaches this far past where a cable along the outlet is one radius clear
MAX_TILT_DEGREES = 75.0  # outlets tilted further from the face normal are taken as tilted this far
INTO_DEGREES = 95.0  # an outlet more than this from the face normal points into the obstacle
DETECT_RADII = 1.25  # a holder this close to a surface (in cable radii) is mounted on it
ZONE_PIECES = 3.0  # split triangles crossing the zone down to (zone radius / this) across
MAX_SPLITS = 14  # levels of subdivision at most (a 1 m face and a 1 mm zone need 10)
NUDGE = 1e-6  # of the zone radius: how far the cut mesh is moved into the obstacle


def mount_radius(cable_radius: float, outlet, normal) -> float:
    """The mount zone's radius for a holder whose cable leaves along ``outlet`` (unit) from a face of
    unit ``normal`` (outward)."""
    cos = float(np.dot(outlet, normal))
    cos = max(cos, math.cos(math.radians(MAX_TILT_DEGREES)))
    return max(MOUNT_RADII * cable_radius, CLEAR_MARGIN * cable_radius / cos)


def points_into(outlet, normal) -> bool:
    """Whether an outlet points into the obstacle whose face has this outward ``normal``."""
    return float(np.dot(outlet, normal)) < math.cos(math.radians(INTO_DEGREES))


def closest_on_triangles(point, triangles: np.ndarray) -> tuple:
    """(distance, closest point, unit face normal, triangle index) of the triangle nearest to
    ``point`` among ``triangles`` (n, 3, 3); the normal follows the triangle's winding (outward for a
    closed mesh wound consistently). (inf, None, None, -1) without triangles."""
    tris = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    if not len(tris):
        return math.inf, None, None, -1
    out = _closest_points(point, tris)
    dist = np.linalg.norm(out - point, axis=1)
    k = int(np.argmin(dist))
    n = np.cross(tris[k, 1] - tris[k, 0], tris[k, 2] - tris[k, 0])
    norm = float(np.linalg.norm(n))
    return float(dist[k]), out[k], (n / norm if norm > 0.0 else np.array([0.0, 0.0, 1.0])), k


def distances(point, triangles: np.ndarray) -> np.ndarray:
    """Distance from ``point`` to each of ``triangles`` (n, 3, 3)."""
    tris = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    return np.linalg.norm(_closest_points(point, tris) - np.asarray(point, dtype=np.float64), axis=1)


def _closest_points(point, tris):
    p = np.asarray(point, dtype=np.float64)
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    bp, cp = p - b, p - c
    d3, d4 = _dot(ab, bp), _dot(ac, bp)
    d5, d6 = _dot(ab, cp), _dot(ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    # the face region (Ericson, Real-Time Collision Detection 5.1.5), then each edge and vertex region
    denom = va + vb + vc
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(denom != 0.0, vb / denom, 0.0)
        w = np.where(denom != 0.0, vc / denom, 0.0)
        out = a + ab * v[:, None] + ac * w[:, None]
        regions = [
            ((d1 <= 0.0) & (d2 <= 0.0), a),
            ((d3 >= 0.0) & (d4 <= d3), b),
            ((d6 >= 0.0) & (d5 <= d6), c),
            ((vc <= 0.0) & (d1 >= 0.0) & (d3 <= 0.0), a + ab * (d1 / (d1 - d3))[:, None]),
            ((vb <= 0.0) & (d2 >= 0.0) & (d6 <= 0.0), a + ac * (d2 / (d2 - d6))[:, None]),
            (
                (va <= 0.0) & ((d4 - d3) >= 0.0) & ((d5 - d6) >= 0.0),
                b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))[:, None],
            ),
        ]
    done = np.zeros(len(tris), dtype=bool)
    for mask, q in regions:
        use = mask & ~done
        out[use] = q[use]
        done |= use
    return out


def _dot(x, y):
    return np.einsum("ij,ij->i", x, y)


def _segment_distances(centre, a, b):
    """Distance from ``centre`` to each segment a[i] b[i]."""
    d = b - a
    t = np.clip(_dot(centre - a, d) / np.maximum(_dot(d, d), 1e-300), 0.0, 1.0)
    return np.linalg.norm(a + d * t[:, None] - centre, axis=1)


def cut_zone(triangles, sharp, folds, centre, zone: float) -> tuple:
    """``triangles`` (n, 3, 3) with the mount zone (a ball of radius ``zone`` about ``centre``) cut
    out, and their sharp-edge bits (obstacles.sharp_edges) and edge folds (obstacles.edge_folds; inf
    where sharp) to match. Triangles clear of the zone are kept as they are."""
    tris = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    sharp = np.asarray(sharp, dtype=np.uint8).reshape(-1)
    folds = np.asarray(folds, dtype=np.float64).reshape(-1, 3)
    centre = np.asarray(centre, dtype=np.float64)
    if not len(tris) or not zone > 0.0:
        return tris, sharp, folds
    edge_bits = ((sharp[:, None] >> np.arange(3)) & 1).astype(bool)
    near = distances(centre, tris) < zone
    kept = [(tris[~near], edge_bits[~near], folds[~near])]
    small = zone / ZONE_PIECES
    work = (tris[near], edge_bits[near], folds[near])
    pieces = []
    for _level in range(MAX_SPLITS + 1):
        t, bits, fold = work
        if not len(t):
            break
        inside = np.linalg.norm(t - centre, axis=2).max(axis=1) <= zone
        t, bits, fold = t[~inside], bits[~inside], fold[~inside]
        clear = distances(centre, t) >= zone if len(t) else np.zeros(0, dtype=bool)
        pieces.append((t[clear], bits[clear], fold[clear]))
        t, bits, fold = t[~clear], bits[~clear], fold[~clear]
        size = np.linalg.norm(t - np.roll(t, -1, axis=1), axis=2).max(axis=1) if len(t) else np.zeros(0)
        final = (size <= small) | (_level == MAX_SPLITS)
        # small enough: a piece whose centroid is outside the zone stays
        outside = np.linalg.norm(t.mean(axis=1) - centre, axis=1) > zone
        pieces.append((t[final & outside], bits[final & outside], fold[final & outside]))
        work = _split(t[~final], bits[~final], fold[~final])
    cut_t = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros((0, 3, 3))
    cut_bits = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros((0, 3), dtype=bool)
    cut_fold = np.concatenate([p[2] for p in pieces]) if pieces else np.zeros((0, 3))
    if len(cut_t):
        # the rim of the hole is open: an edge of the remaining pieces that comes within a piece's
        # size of the zone may border a dropped piece (marking a flat inner edge open as well costs
        # a second, equal contact distance there, nothing more)
        a, b = cut_t, np.roll(cut_t, -1, axis=1)
        reach = zone + small * 1.01
        rim = _segment_distances(centre, a.reshape(-1, 3), b.reshape(-1, 3)).reshape(-1, 3) <= reach
        cut_bits = cut_bits | rim
        cut_fold = np.where(rim, np.inf, cut_fold)
    all_t = np.concatenate([kept[0][0], cut_t])
    all_bits = np.concatenate([kept[0][1], cut_bits])
    all_fold = np.concatenate([kept[0][2], cut_fold])
    flags = (all_bits.astype(np.uint8) * (1 << np.arange(3, dtype=np.uint8))).sum(axis=1).astype(np.uint8)
    normals = np.cross(all_t[:, 1] - all_t[:, 0], all_t[:, 2] - all_t[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1), 1e-300)[:, None]
    return all_t - (NUDGE * zone) * normals[:, None, :], flags, all_fold


def _split(t, bits, fold):
    """Each triangle in four at its edge midpoints. Edge k of a triangle runs from corner k to corner
    k + 1; the halves of an edge keep its bits and fold, the new inner edges are flat."""
    if not len(t):
        return t, bits, fold
    a, b, c = t[:, 0], t[:, 1], t[:, 2]
    ab, bc, ca = 0.5 * (a + b), 0.5 * (b + c), 0.5 * (c + a)
    no = np.zeros(len(t), dtype=bool)
    flat = np.zeros(len(t))
    children = [
        (np.stack([a, ab, ca], 1), [bits[:, 0], no, bits[:, 2]], [fold[:, 0], flat, fold[:, 2]]),
        (np.stack([ab, b, bc], 1), [bits[:, 0], bits[:, 1], no], [fold[:, 0], fold[:, 1], flat]),
        (np.stack([ca, bc, c], 1), [no, bits[:, 1], bits[:, 2]], [flat, fold[:, 1], fold[:, 2]]),
        (np.stack([ab, bc, ca], 1), [no, no, no], [flat, flat, flat]),
    ]
    return (
        np.concatenate([x[0] for x in children]),
        np.concatenate([np.stack(x[1], 1) for x in children]),
        np.concatenate([np.stack(x[2], 1) for x in children]),
    )
