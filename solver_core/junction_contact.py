# SPDX-License-Identifier: GPL-3.0-or-later
"""A junction's own contact with the obstacles (planes, spheres, meshes).

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
penalty alone cannot see a thin plate jumped over in one step.

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
    """Whether the segment p0 -> p1 passes through any of the triangles (m, 3, 3) (Moeller & Trumbore
    1997, with the segment's parameter in [0, 1]; a segment in a triangle's plane does not cross it)."""
    if len(tris) == 0:
        return False
    direction = p1 - p0
    e1, e2 = tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]
    h = np.cross(direction, e2)
    det = np.einsum("ij,ij->i", e1, h)
    scale = np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1) * max(float(np.linalg.norm(direction)), 1e-300)
    ok = np.abs(det) > 1e-12 * scale
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = p0 - tris[:, 0]
    u = inv * np.einsum("ij,ij->i", s, h)
    q = np.cross(s, e1)
    v = inv * (q @ direction)
    t = inv * np.einsum("ij,ij->i", e2, q)
    return bool(np.any(ok & (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0) & (t >= 0.0) & (t <= 1.0)))


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

    def crosses(self, obstacles, p0: np.ndarray, p1: np.ndarray) -> bool:
        """Whether the centre's path p0 -> p1 passes through an obstacle: across a plane, into a
        sphere, or through a triangle."""
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
