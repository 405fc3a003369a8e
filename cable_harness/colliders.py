# SPDX-License-Identifier: GPL-3.0-or-later
"""Collider meshes: one BVHTree per collider object, and the triangles near the cables.

Each tree is built in the object's local space from its evaluated mesh (modifiers applied), so
moving a collider costs nothing and only a change of its geometry (reported by the depsgraph)
rebuilds the tree. The broad phase asks each tree for the triangles within reach of the cable
nodes; exact distances and contact forces are the solver's job (solver_core narrow phase).
Objects are looked up by name on every call, never kept.
"""

from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

from ..solver_core import DETECT_RADII, counted_folds, cut_zone, edge_neighbours, sharp_edges

_dirty_geometry: set = set()  # objects whose trees must be built again
# how often each object's geometry has changed (never reset while registered): a Simulate tick whose
# colliders show the same counts as the last one's has nothing new to collide with
_geometry_changes: dict = {}
# Colliders of up to this many triangles have the triangles near the cable found by testing every
# triangle's box against every point at once (numpy, some 5 ns a pair) rather than by a BVH query per
# point (some 2 us): on the equipment bay (7 colliders of 12-176 triangles, 240 nodes) the queries took
# 3.3 ms a tick, the box tests 0.6 ms; on a 200k-triangle mesh the queries stay
BOX_TEST_TRIANGLES = 400


def _geometry_changed(name: str) -> None:
    _dirty_geometry.add(name)
    _geometry_changes[name] = _geometry_changes.get(name, 0) + 1


@bpy.app.handlers.persistent
def _on_depsgraph_update(scene, depsgraph):
    for update in depsgraph.updates:
        if update.is_updated_geometry and isinstance(update.id, bpy.types.Object):
            _geometry_changed(update.id.name)


def _may_deform(ob) -> bool:
    data = getattr(ob, "data", None)
    return bool(ob.modifiers) or (data is not None and getattr(data, "shape_keys", None) is not None)


@bpy.app.handlers.persistent
def _on_frame_change(scene, depsgraph=None):
    # a frame change re-evaluates animated modifiers and shape keys: colliders that can deform
    # get their trees rebuilt (moving ones need nothing, their trees are in object space)
    for ob in scene.objects:
        if ob.cable_harness.role == "COLLIDER" and _may_deform(ob):
            _geometry_changed(ob.name)


@dataclass
class ColliderTree:
    name: str
    tree: BVHTree
    vertices: np.ndarray  # local space, Blender units
    triangles: np.ndarray  # (n, 3) vertex indices
    sharp: np.ndarray  # per triangle, the solver's sharp-edge bits, from the whole mesh
    neighbour: np.ndarray  # per triangle edge, the triangle across it (solver_core.edge_neighbours)
    fold: np.ndarray  # per triangle edge, tan(fold / 2) there (inf where sharp)
    low: np.ndarray  # per triangle, the lower corner of its box (local space)
    high: np.ndarray  # and the upper
    box: tuple  # the mesh's box: (lower corner, upper corner)

    def near(self, local_points: np.ndarray, reach: float) -> np.ndarray:
        """Indices of the triangles within ``reach`` of any of the points (local space, units), and
        perhaps a few more (a box test): those the cable may touch before it is fetched again."""
        # the points within reach of the mesh's box
        within_box = (local_points >= self.box[0] - reach) & (local_points <= self.box[1] + reach)
        points = local_points[np.all(within_box, axis=1)]
        if points.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        if self.triangles.shape[0] <= BOX_TEST_TRIANGLES:
            low, high = self.low - reach, self.high + reach
            within = np.ones((points.shape[0], self.triangles.shape[0]), dtype=bool)
            for axis in range(3):
                column = points[:, axis, None]
                within &= (column >= low[None, :, axis]) & (column <= high[None, :, axis])
            return np.flatnonzero(within.any(axis=0))
        hits = set()
        for p in points:
            for _co, _normal, index, _dist in self.tree.find_nearest_range(Vector(p), reach):
                hits.add(index)
        return np.fromiter(hits, dtype=np.int64, count=len(hits))


@dataclass
class Mount:
    """Where a connector sits on a collider (world, Blender units)."""

    collider: str
    point: np.ndarray  # the nearest point of the collider's surface
    normal: np.ndarray  # the surface's unit normal there (the triangle's winding: outward when closed)
    distance: float  # from the connector to that point


class ColliderCache:
    def __init__(self):
        self._trees: dict = {}
        self.builds = 0
        self._cuts: dict = {}  # collider name -> (key, cut triangles): the last mount zones cut out

    @staticmethod
    def geometry_changes(names) -> tuple:
        """How often each named object's geometry has changed so far."""
        return tuple(_geometry_changes.get(name, 0) for name in names)

    def tree(self, ob, depsgraph) -> ColliderTree | None:
        entry = self._trees.get(ob.name)
        if entry is not None and ob.name not in _dirty_geometry:
            return entry
        _dirty_geometry.discard(ob.name)
        evaluated = ob.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        try:
            mesh.calc_loop_triangles()
            n_verts, n_tris = len(mesh.vertices), len(mesh.loop_triangles)
            if n_tris == 0:
                self._trees.pop(ob.name, None)
                return None
            verts = np.empty(n_verts * 3, dtype=np.float32)
            mesh.vertices.foreach_get("co", verts)
            tris = np.empty(n_tris * 3, dtype=np.int32)
            mesh.loop_triangles.foreach_get("vertices", tris)
        finally:
            evaluated.to_mesh_clear()
        verts = verts.reshape(-1, 3).astype(np.float64)
        tris = tris.reshape(-1, 3)
        if bpy.app.version >= (4, 0, 0):
            tree = BVHTree.FromPolygons(verts, tris, all_triangles=True)
        else:  # Blender 3.x reads numpy index arrays wrongly ("index -1 must be less than ..."): lists
            tree = BVHTree.FromPolygons(verts.tolist(), tris.tolist(), all_triangles=True)
        corners = verts[tris]
        sharp = sharp_edges(corners)
        neighbour, fold = edge_neighbours(corners, sharp)
        low, high = corners.min(axis=1), corners.max(axis=1)
        entry = ColliderTree(
            ob.name, tree, verts, tris, sharp, neighbour, fold, low, high, (low.min(axis=0), high.max(axis=0))
        )
        self._trees[ob.name] = entry
        self.builds += 1
        return entry

    def mount(self, colliders, depsgraph, point_units, cable_radius_units: float) -> Mount | None:
        """The collider (of ``colliders``) whose surface is nearest to a connector at ``point_units``
        (world) and within DETECT_RADII cable radii of it, or None."""
        best = None
        p = Vector(point_units)
        for ob in colliders:
            entry = self.tree(ob, depsgraph)
            if entry is None:
                continue
            M = ob.matrix_world
            inverse = M.inverted_safe()
            scale_min = min(v.length for v in M.to_3x3().col)
            reach = DETECT_RADII * cable_radius_units / max(scale_min, 1e-12) * 1.01
            co, normal, _index, _dist = entry.tree.find_nearest(inverse @ p, reach)
            if co is None:
                continue
            world = np.array(M @ co)
            distance = float(np.linalg.norm(world - np.asarray(point_units)))
            if distance > DETECT_RADII * cable_radius_units or (best is not None and distance >= best.distance):
                continue
            n = np.array(inverse.to_3x3().transposed() @ normal)
            n /= max(float(np.linalg.norm(n)), 1e-300)
            best = Mount(ob.name, world, n, distance)
        return best

    def nearby_triangles(
        self, colliders, depsgraph, points_units: np.ndarray, reach_units: float, poses=None, mounts=None
    ):
        """World-space triangles (n, 3, 3) in Blender units within reach of any of the points, their
        sharp-edge bits and edge folds (solver_core.edge_folds; both from the mesh's edges, grouped once
        per mesh: grouping the fetched part's edges on every Simulate tick cost 3-4 ms). ``poses`` may
        place colliders (by name) elsewhere than their world matrix (part-way through a move).
        ``mounts``: {collider name: [(centre, radius), ...]} (world, Blender units), the mount zones of
        the connectors sitting on it, cut out (solver_core.cut_zone; the last cut is kept per collider)."""
        found = []
        flags = []
        folds = []
        for ob in colliders:
            entry = self.tree(ob, depsgraph)
            if entry is None:
                continue
            pose = poses.get(ob.name) if poses else None
            M = np.array([list(row) for row in (ob.matrix_world if pose is None else pose)])
            inverse = np.linalg.inv(M)
            local = points_units @ inverse[:3, :3].T + inverse[:3, 3]
            # a conservative local reach under non-uniform scale, margin included
            scale_min = min(np.linalg.norm(M[:3, :3], axis=0).min(), 1e30)
            reach = reach_units / max(scale_min, 1e-12) + ob.cable_harness.collider_margin
            idx = entry.near(local, reach)
            if idx.shape[0]:
                tri_local = entry.vertices[entry.triangles[idx]]
                tri_world = tri_local @ M[:3, :3].T + M[:3, 3]
                margin = ob.cable_harness.collider_margin * float(np.linalg.norm(M[:3, :3], axis=0).mean())
                if margin > 0.0:
                    # the collider's surface pushed out by its margin along the faces' normals
                    # (outward for closed meshes wound consistently)
                    n = np.cross(tri_world[:, 1] - tri_world[:, 0], tri_world[:, 2] - tri_world[:, 0])
                    n /= np.maximum(np.linalg.norm(n, axis=1), 1e-300)[:, None]
                    tri_world = tri_world + margin * n[:, None, :]
                sharp, fold = entry.sharp[idx], counted_folds(entry.neighbour, entry.fold, idx)
                zones = (mounts or {}).get(ob.name)
                if zones:
                    tri_world, sharp, fold = self._cut(ob.name, tri_world, sharp, fold, zones)
                found.append(tri_world)
                flags.append(sharp)
                folds.append(fold)
        if not found:
            return np.zeros((0, 3, 3)), np.zeros(0, dtype=np.uint8), np.zeros((0, 3))
        return np.concatenate(found), np.concatenate(flags), np.concatenate(folds)

    def _cut(self, name, triangles, sharp, fold, zones):
        """``triangles`` with the mount zones cut out; the same fetch and zones as last time (Simulate
        idling over a connector that stays put) reuse the last cut."""
        key = (triangles.tobytes(), tuple((tuple(np.round(c, 12)), round(r, 12)) for c, r in zones))
        last = self._cuts.get(name)
        if last is not None and last[0] == key:
            return last[1]
        for centre, radius in zones:
            triangles, sharp, fold = cut_zone(triangles, sharp, fold, np.asarray(centre, dtype=np.float64), radius)
        self._cuts[name] = (key, (triangles, sharp, fold))
        return triangles, sharp, fold


_HANDLERS = (("depsgraph_update_post", _on_depsgraph_update), ("frame_change_post", _on_frame_change))


def register():
    for name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if fn not in handlers:
            handlers.append(fn)


def unregister():
    for name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if fn in handlers:
            handlers.remove(fn)
    _dirty_geometry.clear()
    _geometry_changes.clear()
