# SPDX-License-Identifier: GPL-3.0-or-later
"""Obstacles as arrays for the contact kernels: planes, spheres, meshes (with their sharp edges and
folds) and other cables' segments as capsules."""

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..geometry.bvh import build_triangle_tree
from ..geometry.mounting import cut_zone
from ..kernel_arrays import ObstacleArrays


@dataclass
class ObstacleSet:
    """Everything a cable can touch, as arrays (world coordinates, metres)."""

    plane_point: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    plane_normal: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    sphere_centre: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    sphere_radius: np.ndarray = field(default_factory=lambda: np.zeros(0))
    triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    triangle_owner: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # obstacle index
    tree: tuple = None
    capsule_a: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    capsule_b: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    capsule_radius: np.ndarray = field(default_factory=lambda: np.zeros(0))
    triangle_sharp: np.ndarray = None  # per triangle, bit k: edge k (ab, bc, ca) is sharp or open
    triangle_fold: np.ndarray = None  # per triangle edge, tan(fold / 2) where it counts (edge_folds)

    def fingerprint(self) -> bytes:
        """A digest of the geometry (kept: an ObstacleSet is not changed once made, with_* make new ones)."""
        digest = self.__dict__.get("_fingerprint")
        if digest is None:
            h = hashlib.blake2b(digest_size=16)
            for a in (
                self.plane_point,
                self.plane_normal,
                self.sphere_centre,
                self.sphere_radius,
                self.triangles,
                self.capsule_a,
                self.capsule_b,
                self.capsule_radius,
            ):
                h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
                h.update(b"|")
            digest = self.__dict__["_fingerprint"] = h.digest()
        return digest

    @property
    def empty(self) -> bool:
        return (len(self.plane_point) + len(self.sphere_centre) + len(self.triangles) + len(self.capsule_a)) == 0

    def with_triangles(
        self, triangles: np.ndarray, owner: int, sharp: np.ndarray | None = None, folds: np.ndarray | None = None
    ) -> "ObstacleSet":
        """The same obstacles plus a mesh. ``sharp`` (see sharp_edges) must come from the whole mesh when
        ``triangles`` are only part of it: the part's own border is not an edge of the surface. ``folds``
        (edge_folds of the part, e.g. counted_folds from the whole mesh) saves grouping the part's edges
        again; it needs ``sharp``."""
        new = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
        tris = np.concatenate((self.triangles, new))
        owners = np.concatenate((self.triangle_owner, np.full(len(new), owner, dtype=np.int64)))
        flags = folded = None
        if sharp is not None:
            old = self.triangle_sharp if self.triangle_sharp is not None else sharp_edges(self.triangles)
            flags = np.concatenate((old, np.asarray(sharp, dtype=np.uint8)))
            if folds is not None:
                old_folds = self.triangle_fold
                if old_folds is None:
                    old_folds = edge_folds(self.triangles, old[: len(self.triangles)])
                folded = np.concatenate((old_folds, np.asarray(folds, dtype=np.float64).reshape(-1, 3)))
        return ObstacleSet(
            self.plane_point,
            self.plane_normal,
            self.sphere_centre,
            self.sphere_radius,
            tris,
            owners,
            None,
            self.capsule_a,
            self.capsule_b,
            self.capsule_radius,
            flags,
            folded,
        )

    def with_capsules(self, a, b, radius) -> "ObstacleSet":
        """The same obstacles plus segments of other cables (capsules from a to b of the given radii).
        The mesh's tree and edge flags are made here, once, and shared: a group of cables gets new
        capsules every step, and each copy would otherwise build the same tree again."""
        self._mesh_arrays()
        return ObstacleSet(
            self.plane_point,
            self.plane_normal,
            self.sphere_centre,
            self.sphere_radius,
            self.triangles,
            self.triangle_owner,
            self.tree,
            np.asarray(a, float),
            np.asarray(b, float),
            np.asarray(radius, float),
            self.triangle_sharp,
            self.triangle_fold,
        )

    def _mesh_arrays(self) -> None:
        """The triangle tree and the edges' flags and folds, made on first use (derived from the
        triangles alone, which never change)."""
        if self.tree is None:
            if len(self.triangles):
                t = build_triangle_tree(self.triangles)
                self.tree = (t.node_min, t.node_max, t.node_left, t.node_right, t.node_start, t.node_count, t.order)
            else:
                z = np.zeros((1, 3))
                e = np.full(1, -1, dtype=np.int64)
                self.tree = (
                    z,
                    z - 1.0,
                    e,
                    e,
                    np.zeros(1, dtype=np.int64),
                    np.zeros(1, dtype=np.int64),
                    np.zeros(0, dtype=np.int64),
                )
        if self.triangle_fold is None:
            # one grouping of the mesh's edges serves both
            groups = _edge_groups(self.triangles) if len(self.triangles) else None
            if self.triangle_sharp is None:
                self.triangle_sharp = sharp_edges(self.triangles, groups=groups)
            self.triangle_fold = edge_folds(self.triangles, self.triangle_sharp, groups)
        elif self.triangle_sharp is None:
            self.triangle_sharp = sharp_edges(self.triangles)

    def kernel_arrays(self) -> ObstacleArrays:
        """The arrays the compiled kernels take (kernel_arrays.ObstacleArrays; builds the triangle tree
        on first use)."""
        self._mesh_arrays()
        return ObstacleArrays(
            self.plane_point,
            self.plane_normal,
            self.sphere_centre,
            self.sphere_radius,
            self.triangles,
            self.triangle_owner,
            *self.tree,
            self.capsule_a,
            self.capsule_b,
            self.capsule_radius,
            self.triangle_sharp,
            self.triangle_fold,
        )


SHARP_EDGE_DEGREES = 30.0


def _edge_groups(triangles: np.ndarray):
    """Each triangle edge (ab, bc, ca), grouped with the edges of other faces it coincides with:
    (tri, bit, start, group, counts), sorted by edge, and the unit face normals."""
    n = len(triangles)
    pts = triangles.reshape(-1, 3)
    scale = max(float(np.abs(pts).max()), 1e-12)
    keys = np.round(pts / (scale * 1e-9)).astype(np.int64)
    _, vid = np.unique(keys, axis=0, return_inverse=True)
    vid = vid.reshape(n, 3)
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1), 1e-300)[:, None]
    a = np.concatenate((vid[:, 0], vid[:, 1], vid[:, 2]))
    b = np.concatenate((vid[:, 1], vid[:, 2], vid[:, 0]))
    edge = np.stack((np.minimum(a, b), np.maximum(a, b)), axis=1)
    tri = np.tile(np.arange(n), 3)
    bit = np.repeat(np.arange(3), n)
    order = np.lexsort((edge[:, 1], edge[:, 0]))
    edge, tri, bit = edge[order], tri[order], bit[order]
    start = np.concatenate(([True], (np.diff(edge, axis=0) != 0).any(axis=1)))
    group = np.cumsum(start) - 1
    counts = np.bincount(group)
    return tri, bit, start, group, counts, normals


def sharp_edges(triangles: np.ndarray, degrees: float = SHARP_EDGE_DEGREES, groups=None) -> np.ndarray:
    """Per triangle, a bit per edge (ab, bc, ca) that is sharp: its faces meet at more than ``degrees``,
    or it is open (a boundary) or shared by more than two faces. ``groups``: _edge_groups(triangles),
    when already known."""
    n = len(triangles)
    if n == 0:
        return np.zeros(0, dtype=np.uint8)
    tri, bit, start, group, counts, normals = groups or _edge_groups(triangles)
    sharp = counts[group] != 2
    pair = np.flatnonzero(counts[group] == 2)
    first = pair[start[pair]]
    second = first + 1
    cos = np.abs(np.einsum("ij,ij->i", normals[tri[first]], normals[tri[second]]))
    bent = cos < np.cos(np.radians(degrees))
    sharp[first] |= bent
    sharp[second] |= bent
    out = np.zeros(n, dtype=np.uint8)
    np.bitwise_or.at(out, tri[sharp], (1 << bit[sharp]).astype(np.uint8))
    return out


def edge_neighbours(triangles: np.ndarray, sharp: np.ndarray, groups=None) -> tuple:
    """Per triangle edge (ab, bc, ca): the triangle across it (-1 where the edge is open or shared by
    more than two faces) and tan(fold / 2) of the faces' fold there, inf at an edge ``sharp`` marks
    (see sharp_edges). Both faces of an edge carry its fold; counted_folds picks the one that counts
    it. ``groups``: _edge_groups(triangles), when already known."""
    n = len(triangles)
    neighbour = np.full((n, 3), -1, dtype=np.int64)
    fold = np.zeros((n, 3))
    if n == 0:
        return neighbour, fold
    tri, bit, start, group, counts, normals = groups or _edge_groups(triangles)
    pair = np.flatnonzero(counts[group] == 2)
    first = pair[start[pair]]
    second = first + 1
    neighbour[tri[first], bit[first]] = tri[second]
    neighbour[tri[second], bit[second]] = tri[first]
    cos = np.clip(np.abs(np.einsum("ij,ij->i", normals[tri[first]], normals[tri[second]])), 0.0, 1.0)
    # tan(theta / 2) = sin(theta) / (1 + cos(theta))
    half = np.sqrt(1.0 - cos * cos) / (1.0 + cos)
    fold[tri[first], bit[first]] = half
    fold[tri[second], bit[second]] = half
    flags = np.asarray(sharp, dtype=np.int64)
    marked = ((flags[tri] >> bit) & 1) != 0
    fold[tri[marked], bit[marked]] = np.inf
    return neighbour, fold


def counted_folds(neighbour: np.ndarray, fold: np.ndarray, index: np.ndarray) -> np.ndarray:
    """edge_folds of the triangles ``index`` of a mesh, from the whole mesh's edge_neighbours: each
    edge is counted by one face of the part (the lower-numbered where both faces are in it), so that a
    part fetched near a cable (the Blender layer's colliders) needs no grouping of its own edges."""
    index = np.asarray(index, dtype=np.int64)
    inside = np.zeros(len(neighbour), dtype=bool)
    inside[index] = True
    across = neighbour[index]
    shared = (across >= 0) & inside[np.maximum(across, 0)]
    counts = ~shared | (index[:, None] < across)
    return np.where(counts, fold[index], 0.0)


def edge_folds(triangles: np.ndarray, sharp: np.ndarray, groups=None) -> np.ndarray:
    """Per triangle edge (ab, bc, ca), tan(fold / 2) of the faces' fold there where this triangle
    counts the edge's segment contact (TRI_EDGE; one of the two faces sharing it), inf at an edge
    ``sharp`` marks (open, or from the whole mesh), 0 elsewhere. A straight segment lying across a
    fold with its nodes on the two faces cuts into them by up to (l/2) tan(fold/2) between its nodes:
    over a flat triangulation (a box side's diagonal) nothing, and node pairs carry it exactly.
    ``groups``: _edge_groups(triangles), when already known."""
    neighbour, fold = edge_neighbours(triangles, sharp, groups)
    return counted_folds(neighbour, fold, np.arange(len(triangles)))


def obstacles_from_case(obstacles) -> ObstacleSet:
    """The obstacles of a case document (already validated) as one ObstacleSet; the mount zones of
    meshes connectors are mounted on (parse_case's "mount_zones") cut out (mounting.cut_zone)."""
    planes = [o for o in obstacles if o["type"] == "plane"]
    spheres = [o for o in obstacles if o["type"] == "sphere"]
    tris, owners = [], []
    mounted = any(o.get("mount_zones") for o in obstacles)
    flags, folds = [], []
    for index, o in enumerate(obstacles):
        if o["type"] == "mesh":
            v = np.asarray(o["vertices"], dtype=np.float64)
            t = v[np.asarray(o["triangles"], dtype=np.int64)]
            if mounted:
                # each mesh's edges from its own whole mesh, so that the cut pieces keep them
                sharp = sharp_edges(t)
                fold = edge_folds(t, sharp)
                for *centre, radius in o.get("mount_zones", ()):
                    t, sharp, fold = cut_zone(t, sharp, fold, np.array(centre), radius)
                flags.append(sharp)
                folds.append(fold)
            tris.append(t)
            owners.append(np.full(len(t), index, dtype=np.int64))
    found = ObstacleSet(
        np.array([p["point"] for p in planes], dtype=np.float64).reshape(-1, 3),
        np.array([p["normal"] for p in planes], dtype=np.float64).reshape(-1, 3),
        np.array([s["center"] for s in spheres], dtype=np.float64).reshape(-1, 3),
        np.array([s["radius"] for s in spheres], dtype=np.float64),
        np.concatenate(tris) if tris else np.zeros((0, 3, 3)),
        np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64),
    )
    if mounted:
        found.triangle_sharp = np.concatenate(flags)
        found.triangle_fold = np.concatenate(folds)
    return found
