# SPDX-License-Identifier: GPL-3.0-or-later
"""A junction's own contact with the obstacles (planes, spheres, meshes), and its path past other cables.

The junction's sleeve is a ball of the radius of its widest branch about its centre p; it touches an
obstacle with the penalty a cable node has (contact.py), E = k/2 max(0, r - d)^2, d the distance from p
to a plane (signed), to a sphere's surface, or to the nearest of a mesh's triangles (Ericson,
Real-Time Collision Detection (2005), Sec. 5.1.5). Its force on the junction is k (r - d) n, n the unit
vector from the nearest point to p. The stiffness starts as a node's of the stiffest branch over the
junction's diameter and is raised tenfold (as a cable's, up to three times) until the junction sinks
less than half of PENETRATION_TOLERANCE of its narrowest branch's radius: the branch ends it holds sink
as deep, and a branch cannot lift a node its holder pushes in (its own contact would be stiffened in
vain, as it is where a connector sits in an obstacle). No junction step sinks it deeper than twice
that (the branches' own tolerance), or than it is. A junction step is refused when its centre would pass
through an obstacle on the way (swept across a plane, into a sphere, or through a triangle): the
penalty alone cannot see a thin plate jumped over in one step. So is a step that takes the centre
into another cable (the branch ends it holds would pass through it: a junction does not yet rest on
another cable, so such a harness is refused rather than let through).

Plain numpy: a harness has a few junctions, and a mesh's triangles near one are found once per
neighbourhood (``NearbyTriangles``), not per evaluation.
"""

from dataclasses import dataclass, field

import numpy as np

MAX_STIFFENINGS = 3


def closest_points_on_triangles(p: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """The point of each triangle (m, 3, 3) nearest to ``p`` (3,), (m, 3) (Ericson 2005, Sec. 5.1.5: by
    the Voronoi region of the triangle that p projects into)."""
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = np.einsum("ij,ij->i", ab, ap), np.einsum("ij,ij->i", ac, ap)
    bp = p - b
    d3, d4 = np.einsum("ij,ij->i", ab, bp), np.einsum("ij,ij->i", ac, bp)
    cp = p - c
    d5, d6 = np.einsum("ij,ij->i", ab, cp), np.einsum("ij,ij->i", ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    out = np.empty_like(a)
    done = np.zeros(len(a), dtype=bool)

    def take(mask, points):
        nonlocal done
        mask = mask & ~done
        out[mask] = points[mask]
        done |= mask

    with np.errstate(divide="ignore", invalid="ignore"):
        take((d1 <= 0.0) & (d2 <= 0.0), a)  # vertex regions
        take((d3 >= 0.0) & (d4 <= d3), b)
        take((d6 >= 0.0) & (d5 <= d6), c)
        t = d1 / (d1 - d3)
        take((vc <= 0.0) & (d1 >= 0.0) & (d3 <= 0.0), a + t[:, None] * ab)  # edge regions
        t = d2 / (d2 - d6)
        take((vb <= 0.0) & (d2 >= 0.0) & (d6 <= 0.0), a + t[:, None] * ac)
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        take((va <= 0.0) & (d4 - d3 >= 0.0) & (d5 - d6 >= 0.0), b + t[:, None] * (c - b))
        denom = va + vb + vc
        v, w = vb / denom, vc / denom
        take(np.ones(len(a), dtype=bool), a + v[:, None] * ab + w[:, None] * ac)  # the face
    return out


def segment_crosses_triangles(p0: np.ndarray, p1: np.ndarray, tris: np.ndarray) -> bool:
    """Whether the segment p0 -> p1 passes through any of the triangles (m, 3, 3)."""
    return len(tris) > 0 and bool(np.any(_crossings(p0, p1, tris)))


def segments_cross_triangle(starts: np.ndarray, ends: np.ndarray, tri: np.ndarray) -> bool:
    """Whether any of the segments starts[i] -> ends[i] (m, 3) passes through the triangle (3, 3)."""
    return len(starts) > 0 and bool(np.any(_crossings(starts, ends, tri[None])))


def _crossings(p0: np.ndarray, p1: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """Per pair of segment and triangle, broadcast over the leading axis (segments (3,) or (m, 3),
    triangles (m, 3, 3) or (1, 3, 3)): whether the segment passes through the triangle (Moeller &
    Trumbore 1997, with the segment's parameter in [0, 1]; a segment in a triangle's plane does not
    cross it)."""
    direction = p1 - p0
    e1, e2 = tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]
    h = np.cross(direction, e2)
    det = np.einsum("...j,...j->...", e1, h)
    length = np.maximum(np.linalg.norm(direction, axis=-1), 1e-300)
    scale = np.linalg.norm(e1, axis=-1) * np.linalg.norm(e2, axis=-1) * length
    ok = np.abs(det) > 1e-12 * scale
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = p0 - tris[:, 0]
    u = inv * np.einsum("...j,...j->...", s, h)
    q = np.cross(s, e1)
    v = inv * np.einsum("...j,...j->...", q, direction)
    t = inv * np.einsum("...j,...j->...", e2, q)
    return ok & (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0) & (t >= 0.0) & (t <= 1.0)


def segment_distances(p0: np.ndarray, p1: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distance from the segment p0 -> p1 to each segment a[i] -> b[i] (m, 3) (Ericson 2005,
    Sec. 5.1.9: the closest points of the two lines, clamped to the segments; either may be a point)."""
    d1, d2, r = p1 - p0, b - a, p0 - a
    A = float(d1 @ d1)
    E = np.einsum("ij,ij->i", d2, d2)
    F = np.einsum("ij,ij->i", r, d2)
    C = r @ d1
    B = d2 @ d1
    tiny = 1e-300
    with np.errstate(divide="ignore", invalid="ignore"):
        if A <= tiny:
            s = np.zeros(len(a))
            t = np.where(E > tiny, np.clip(F / E, 0.0, 1.0), 0.0)
        else:
            denom = A * E - B * B
            s = np.where(denom > 1e-14 * A * E, np.clip((B * F - C * E) / denom, 0.0, 1.0), 0.0)
            s = np.where(E > tiny, s, np.clip(-C / A, 0.0, 1.0))  # a point: the nearest on p0 -> p1
            t = np.where(E > tiny, (B * s + F) / E, 0.0)
            low, high = t < 0.0, t > 1.0
            t = np.clip(t, 0.0, 1.0)
            s = np.where(low, np.clip(-C / A, 0.0, 1.0), np.where(high, np.clip((B - C) / A, 0.0, 1.0), s))
    gap = (p0 + s[:, None] * d1) - (a + t[:, None] * d2)
    return np.linalg.norm(gap, axis=1)


def cables_touch(a: tuple, b: tuple) -> bool:
    """Whether two cables, each (nodes (n, 3), radius, held (n,) bool), touch: their centre lines come
    closer than the sum of their radii, away from where a connector, clip or junction holds them
    (there a push goes to the holder; a segment from a held node counts from its middle on, so that
    cables plugged side by side do not touch). Boxes first, as most pairs are far apart."""
    (x, rx, held_x), (y, ry, held_y) = a, b
    reach = rx + ry
    if (x.min(axis=0) > y.max(axis=0) + reach).any() or (y.min(axis=0) > x.max(axis=0) + reach).any():
        return False
    x0, x1 = _free_parts(x, held_x)
    y0, y1 = _free_parts(y, held_y)
    if not len(x0) or not len(y0):
        return False
    lo, hi = np.minimum(y0, y1) - reach, np.maximum(y0, y1) + reach
    for p, q in zip(x0, x1):
        near = np.all((lo <= np.maximum(p, q)) & (hi >= np.minimum(p, q)), axis=1)
        if near.any() and segment_distances(p, q, y0[near], y1[near]).min() < reach:
            return True
    return False


def _free_parts(nodes: np.ndarray, held: np.ndarray) -> tuple:
    """The parts of a cable's segments that can carry contact: whole between free nodes, from the
    middle on next to a held node, none between two held nodes."""
    a, b = nodes[:-1].copy(), nodes[1:].copy()
    middle = 0.5 * (a + b)
    a[held[:-1]] = middle[held[:-1]]
    b[held[1:]] = middle[held[1:]]
    keep = ~(held[:-1] & held[1:])
    return a[keep], b[keep]


@dataclass
class NearbyTriangles:
    """A mesh's triangles within ``reach`` of a centre: every triangle within ``reach - r`` of a point
    that stays within ``r`` of the centre is among them."""

    centre: np.ndarray
    reach: float
    triangles: np.ndarray

    @classmethod
    def around(cls, all_triangles: np.ndarray, centre: np.ndarray, reach: float) -> "NearbyTriangles":
        if len(all_triangles) == 0:
            return cls(centre.copy(), reach, all_triangles)
        low, high = all_triangles.min(axis=1), all_triangles.max(axis=1)
        near = np.all((low <= centre + reach) & (high >= centre - reach), axis=1)
        return cls(centre.copy(), reach, all_triangles[near])


@dataclass
class JunctionContact:
    """One junction's ball against the obstacles: radius, stiffness, and its nearby triangles."""

    radius: float
    stiffness: float  # N/m
    allowed_depth: float  # m: how deep the ball may sink (its branches' ends sink as deep)
    nearby: NearbyTriangles | None = None
    obstacles_seen: object = None  # the ObstacleSet the triangles were taken from
    stiffenings: int = 0
    contacts: list = field(default_factory=list)  # the last accepted state's [(point, normal, force)]

    def _triangles(self, obstacles, p: np.ndarray) -> np.ndarray:
        """The triangles near ``p`` (taken again when the obstacles change or p moved away)."""
        if len(obstacles.triangles) == 0:
            return obstacles.triangles
        margin = 4.0 * self.radius
        stale = (
            self.nearby is None
            or self.obstacles_seen is not obstacles
            or np.linalg.norm(p - self.nearby.centre) > self.nearby.reach - self.radius - margin
        )
        if stale:
            self.nearby = NearbyTriangles.around(obstacles.triangles, p, 2.0 * margin + self.radius + margin)
            self.obstacles_seen = obstacles
        return self.nearby.triangles

    def touching(self, obstacles, p: np.ndarray) -> list:
        """[(nearest point, unit normal towards p, depth r - d > 0)] of every obstacle the ball reaches."""
        if obstacles.empty:
            return []
        out = []
        r = self.radius
        for point, normal in zip(obstacles.plane_point, obstacles.plane_normal):
            d = float((p - point) @ normal)
            if d < r:
                out.append((p - d * normal, normal.copy(), r - d))
        for centre, R in zip(obstacles.sphere_centre, obstacles.sphere_radius):
            offset = p - centre
            dist = float(np.linalg.norm(offset))
            if dist - R < r and dist > 0.0:
                n = offset / dist
                out.append((centre + R * n, n, r - (dist - R)))
        tris = self._triangles(obstacles, p)
        if len(tris):
            nearest = closest_points_on_triangles(p, tris)
            offsets = p - nearest
            dist = np.linalg.norm(offsets, axis=1)
            kept = []
            for i in np.flatnonzero((dist < r) & (dist > 0.0)):
                # triangles meeting at an edge or a corner nearest to p share that point: one contact
                if any(np.linalg.norm(nearest[i] - q) <= 1e-9 * r for q in kept):
                    continue
                kept.append(nearest[i])
                out.append((nearest[i], offsets[i] / dist[i], r - float(dist[i])))
        return out

    def energy(self, obstacles, p: np.ndarray) -> float:
        return 0.5 * self.stiffness * sum(depth * depth for _q, _n, depth in self.touching(obstacles, p))

    def force(self, obstacles, p: np.ndarray) -> np.ndarray:
        """The obstacles' force on the junction (N): minus the energy's gradient."""
        f = np.zeros(3)
        for _q, n, depth in self.touching(obstacles, p):
            f += self.stiffness * depth * n
        return f

    def hessian(self, obstacles, p: np.ndarray) -> np.ndarray:
        """The energy's Hessian in p, Gauss-Newton: k n n^T per contact (3, 3); the curvature of the
        distance to a sphere or a triangle's edge is left out, as for a cable (contact.py)."""
        H = np.zeros((3, 3))
        for _q, n, _depth in self.touching(obstacles, p):
            H += self.stiffness * np.outer(n, n)
        return H

    def depth(self, obstacles, p: np.ndarray) -> float:
        """How deep the ball sinks into the obstacles (m, 0 when clear)."""
        return max((depth for _q, _n, depth in self.touching(obstacles, p)), default=0.0)

    def too_deep(self, obstacles, p: np.ndarray) -> bool:
        return self.depth(obstacles, p) > self.allowed_depth

    def stiffen(self) -> bool:
        """Raise the stiffness tenfold; False once that was done MAX_STIFFENINGS times."""
        if self.stiffenings >= MAX_STIFFENINGS:
            return False
        self.stiffness *= 10.0
        self.stiffenings += 1
        return True

    def record(self, obstacles, p: np.ndarray) -> None:
        self.contacts = [(q, n, self.stiffness * depth * n) for q, n, depth in self.touching(obstacles, p)]

    @staticmethod
    def enters_cable(obstacles, p0: np.ndarray, p1: np.ndarray) -> bool:
        """Whether the centre's path p0 -> p1 enters another cable: within a capsule's radius of its
        centre line, from outside it."""
        if not len(obstacles.capsule_a):
            return False
        core = obstacles.capsule_radius
        start = segment_distances(p0, p0, obstacles.capsule_a, obstacles.capsule_b)
        path = segment_distances(p0, p1, obstacles.capsule_a, obstacles.capsule_b)
        return bool(np.any((path < core) & (start >= core)))

    def crosses(self, obstacles, p0: np.ndarray, p1: np.ndarray) -> bool:
        """Whether the centre's path p0 -> p1 passes through an obstacle: across a plane, into a
        sphere, through a triangle, or into another cable (a capsule's core: within its radius of its
        centre line, from outside it)."""
        if self.enters_cable(obstacles, p0, p1):
            return True
        for point, normal in zip(obstacles.plane_point, obstacles.plane_normal):
            if float((p0 - point) @ normal) >= 0.0 > float((p1 - point) @ normal):
                return True
        direction = p1 - p0
        length2 = float(direction @ direction)
        for centre, R in zip(obstacles.sphere_centre, obstacles.sphere_radius):
            t = 0.0 if length2 == 0.0 else min(1.0, max(0.0, float((centre - p0) @ direction) / length2))
            if np.linalg.norm(p0 + t * direction - centre) < R <= np.linalg.norm(p0 - centre):
                return True
        if len(obstacles.triangles) == 0:
            return False
        low, high = np.minimum(p0, p1), np.maximum(p0, p1)
        tris = obstacles.triangles
        if self.nearby is not None and self.obstacles_seen is obstacles:
            # a triangle the path passes through is within the farther end's distance of the centre
            farther = max(np.linalg.norm(p0 - self.nearby.centre), np.linalg.norm(p1 - self.nearby.centre))
            if farther < self.nearby.reach:
                tris = self.nearby.triangles
        near = np.all((tris.min(axis=1) <= high) & (tris.max(axis=1) >= low), axis=1)
        return segment_crosses_triangles(p0, p1, tris[near])
