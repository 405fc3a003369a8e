# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact of a cable with obstacles and other cables, inside the energy minimisation.

Obstacles: planes (the smooth-plane unilateral constraint of Jin 2016), spheres, triangles (meshes,
open or closed, with a BVH) and capsules (segments of other cables, frozen while this cable is
solved); self-contact pairs meet the cable's own segments, both sides moving. The cable's centre
line must keep a distance of at least its radius (plus the primitive's radius) from every primitive.

Normal contact is a penalty E = k/2 max(0, r - d)^2 per pair. Pairs are nodes against primitives
(planes, triangles, other cables' segments), which carries faces smoothly; segments against spheres;
segments against the mesh edges they could cut between their nodes (sharp, open or folded edges,
TRI_EDGE): the distance between two segments, a sum of smooth terms as in IPC's edge-edge pairs (Li
et al. 2020), so that a cable cannot slip through a thin plate or over an edge between nodes, and a
coarse segment cannot cut a tessellated curve; and segments against other cables' segments where
their closest point lies inside the segment, carrying only what reaches beyond their deeper node,
k/2 (D_s^2 - D_n^2). The force is compressive and vanishes with a gap, the complementarity
conditions of Jin 2016, Eqs. 9-12; the stiffness k = E_c l (a line contact over the segment length
l) is raised until the penetration is below a set fraction of the radius. The Hessian is k J^T J
plus the curvature of node distances (left out of the Gauss-Newton matrix).

Friction is lumped at nodes: E = mu N phi(|P (x - a)|) with the lagged normal force N and contact
normal (P projects on the tangent plane), the anchor a where the node stuck, and phi the Huber
function (quadratic below the stick width eps, linear beyond): the Coulomb force mu N once the node
slides (Lv 2017, Eqs. 32-36: static mu_s while sticking, dynamic mu_d once sliding).
"""

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from ._jit import njit, njit_inline
from .bvh import build_triangle_tree, query_box
from .contact_geometry import closest_point_on_segment, closest_point_on_triangle, segment_segment, segment_triangle
from .rod_energy import _band_add

# Pair kinds. Node pairs carry faces and side-by-side cables smoothly; segment pairs only count
# where a feature (a plate edge, a fold, a crossing cable) reaches between two nodes. TRI_SEG: a
# segment piercing a face (a start drawn through a plate); TRI_EDGE: a segment against a mesh edge
# (primitive 3 * triangle + edge).
PLANE, SPHERE, TRI_NODE, TRI_SEG, CAP_NODE, CAP_SEG, SELF_NODE, SELF_SEG, TRI_EDGE = 0, 1, 2, 3, 4, 5, 6, 7, 8
NODE_KINDS = (PLANE, TRI_NODE, CAP_NODE, SELF_NODE)
SELF_KINDS = (SELF_NODE, SELF_SEG)
END_POWER = 32.0  # the power mean of a segment pair's end depths: within 4 % below their maximum
INTERIOR = 1e-3  # a facet or capsule segment pair's closest point must lie this far inside the segment
# Penetration allowed at convergence, as a fraction of the cable radius: the contact stiffness is
# raised tenfold (up to three times) until the solution stays within it
# (equilibrium._minimise_with_interactions)
PENETRATION_TOLERANCE = 0.005
# A mesh edge whose fold a straight segment could cut deeper than this fraction of the radius between
# its nodes gets segment pairs (TRI_EDGE; the accuracy promised for converged results). At half of it
# (the penetration tolerance) a gently wavy 200k-triangle mesh under a 100-segment cable got them on
# every edge, and a step cost 7.4 ms instead of 5.0.
FOLD_CUT_TOLERANCE = 0.01
MIN_SEPARATION = 0.5  # radii between a centre line and a surface that no step may cross (approach_fraction)
CABLE_SEGMENT_APPROACH = 0.1  # radii a step may carry a segment across another cable's (approach_fraction)


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

    def with_triangles(self, triangles: np.ndarray, owner: int, sharp: np.ndarray | None = None) -> "ObstacleSet":
        """The same obstacles plus a mesh. ``sharp`` (see sharp_edges) must come from the whole mesh when
        ``triangles`` are only part of it: the part's own border is not an edge of the surface."""
        new = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
        tris = np.concatenate((self.triangles, new))
        owners = np.concatenate((self.triangle_owner, np.full(len(new), owner, dtype=np.int64)))
        flags = None
        if sharp is not None:
            old = self.triangle_sharp if self.triangle_sharp is not None else sharp_edges(self.triangles)
            flags = np.concatenate((old, np.asarray(sharp, dtype=np.uint8)))
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
        )

    def with_capsules(self, a, b, radius) -> "ObstacleSet":
        """The same obstacles plus segments of other cables (capsules from a to b of the given radii)."""
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

    def kernel_arrays(self) -> tuple:
        """The tuple of arrays the compiled kernels take (builds the triangle tree on first use): planes
        (points, normals), spheres (centres, radii), triangles and their owning obstacle, the triangle
        tree (7 arrays, bvh.py), other cables' segments as capsules (a, b, radii), and per triangle its
        sharp-edge bits and edge folds (sharp_edges, edge_folds). A plain tuple, not a named one:
        numba's on-disk cache names a named tuple's class by its module, which is another one inside
        Blender (bl_ext...) than on the command line, and the two share the compiled kernels."""
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
        if self.triangle_sharp is None:
            self.triangle_sharp = sharp_edges(self.triangles)
        if self.triangle_fold is None:
            self.triangle_fold = edge_folds(self.triangles, self.triangle_sharp)
        return (
            (
                self.plane_point,
                self.plane_normal,
                self.sphere_centre,
                self.sphere_radius,
                self.triangles,
                self.triangle_owner,
            )
            + self.tree
            + (self.capsule_a, self.capsule_b, self.capsule_radius, self.triangle_sharp, self.triangle_fold)
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


def sharp_edges(triangles: np.ndarray, degrees: float = SHARP_EDGE_DEGREES) -> np.ndarray:
    """Per triangle, a bit per edge (ab, bc, ca) that is sharp: its faces meet at more than ``degrees``,
    or it is open (a boundary) or shared by more than two faces."""
    n = len(triangles)
    if n == 0:
        return np.zeros(0, dtype=np.uint8)
    tri, bit, start, group, counts, normals = _edge_groups(triangles)
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


def edge_folds(triangles: np.ndarray, sharp: np.ndarray) -> np.ndarray:
    """Per triangle edge (ab, bc, ca), tan(fold / 2) of the faces' fold there where this triangle
    counts the edge's segment contact (TRI_EDGE; one of the two faces sharing it), inf at an edge
    ``sharp`` marks (open, or from the whole mesh), 0 elsewhere. A straight segment lying across a
    fold with its nodes on the two faces cuts into them by up to (l/2) tan(fold/2) between its nodes:
    over a flat triangulation (a box side's diagonal) nothing, and node pairs carry it exactly."""
    n = len(triangles)
    out = np.zeros((n, 3))
    if n == 0:
        return out
    tri, bit, start, group, counts, normals = _edge_groups(triangles)
    pair = np.flatnonzero(counts[group] == 2)
    first = pair[start[pair]]
    second = first + 1
    cos = np.clip(np.abs(np.einsum("ij,ij->i", normals[tri[first]], normals[tri[second]])), 0.0, 1.0)
    # tan(theta / 2) = sin(theta) / (1 + cos(theta))
    out[tri[first], bit[first]] = np.sqrt(1.0 - cos * cos) / (1.0 + cos)
    flags = np.asarray(sharp, dtype=np.int64)
    counted = np.ones(len(tri), dtype=bool)
    counted[second] = False
    marked = counted & (((flags[tri] >> bit) & 1) != 0)
    out[tri[marked], bit[marked]] = np.inf
    return out


def obstacles_from_case(obstacles) -> ObstacleSet:
    """The obstacles of a case document (already validated) as one ObstacleSet."""
    planes = [o for o in obstacles if o["type"] == "plane"]
    spheres = [o for o in obstacles if o["type"] == "sphere"]
    tris, owners = [], []
    for index, o in enumerate(obstacles):
        if o["type"] == "mesh":
            v = np.asarray(o["vertices"], dtype=np.float64)
            t = np.asarray(o["triangles"], dtype=np.int64)
            tris.append(v[t])
            owners.append(np.full(len(t), index, dtype=np.int64))
    return ObstacleSet(
        np.array([p["point"] for p in planes], dtype=np.float64).reshape(-1, 3),
        np.array([p["normal"] for p in planes], dtype=np.float64).reshape(-1, 3),
        np.array([s["center"] for s in spheres], dtype=np.float64).reshape(-1, 3),
        np.array([s["radius"] for s in spheres], dtype=np.float64),
        np.concatenate(tris) if tris else np.zeros((0, 3, 3)),
        np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64),
    )


# ---------------------------------------------------------------- pairs


@njit
def _cell_key(ix, iy, iz, mask):
    return ((ix * 73856093) ^ (iy * 19349663) ^ (iz * 83492791)) & mask


@njit
def capsule_grid(cap_a, cap_b, cell):
    """A hashed uniform grid over capsules by their midpoints: (cell coordinates per capsule, bucket
    starts, capsules sorted by bucket, hash mask). Built per search in O(capsules): the other cables
    move between solves, and brute force over all their segments for every node was most of a
    many-cable solve."""
    m = cap_a.shape[0]
    size = 16
    while size < 2 * m:
        size *= 2
    mask = size - 1
    coords = np.empty((m, 3), dtype=np.int64)
    keys = np.empty(m, dtype=np.int64)
    start = np.zeros(size + 1, dtype=np.int64)
    for c in range(m):
        for k in range(3):
            coords[c, k] = int(math.floor(0.5 * (cap_a[c, k] + cap_b[c, k]) / cell))
        keys[c] = _cell_key(coords[c, 0], coords[c, 1], coords[c, 2], mask)
        start[keys[c] + 1] += 1
    for b in range(size):
        start[b + 1] += start[b]
    fill = start[:-1].copy()
    items = np.empty(m, dtype=np.int64)
    for c in range(m):
        items[fill[keys[c]]] = c
        fill[keys[c]] += 1
    return coords, start, items, mask


@njit
def capsules_near(lo, hi, cell, coords, start, items, mask, out):
    """Capsules whose midpoint cell lies in the cells covering [lo, hi] (each once), into ``out``
    (grown as needed); returns (out, count)."""
    n = 0
    i0, i1 = int(math.floor(lo[0] / cell)), int(math.floor(hi[0] / cell))
    j0, j1 = int(math.floor(lo[1] / cell)), int(math.floor(hi[1] / cell))
    k0, k1 = int(math.floor(lo[2] / cell)), int(math.floor(hi[2] / cell))
    for ix in range(i0, i1 + 1):
        for iy in range(j0, j1 + 1):
            for iz in range(k0, k1 + 1):
                b = _cell_key(ix, iy, iz, mask)
                for q in range(start[b], start[b + 1]):
                    c = items[q]
                    if coords[c, 0] == ix and coords[c, 1] == iy and coords[c, 2] == iz:
                        if n >= out.shape[0]:
                            grown = np.empty(2 * out.shape[0], dtype=np.int64)
                            grown[:n] = out[:n]
                            out = grown
                        out[n] = c
                        n += 1
    return out, n


@njit
def _box(pos, i, j, margin, lo, hi):
    """lo, hi = the box around nodes i..j (one node or a segment), widened by ``margin``."""
    for k in range(3):
        lo[k] = min(pos[i, k], pos[j, k]) - margin
        hi[k] = max(pos[i, k], pos[j, k]) + margin


@njit
def find_pairs(pos, node_radius, node_part, reach, obstacles, self_gap):
    """Candidate contact pairs within ``reach`` of the cable surface: (kind, element, primitive),
    element a node for node kinds and a segment otherwise; pairs of one element are contiguous.
    With self_gap > 0 the cable also meets its own segments (primitive = segment index), those
    closer than ``self_gap`` segments along it excepted.

    ``pos`` may hold several cables one after the other (a group solved together, rod_group.py):
    ``node_part`` numbers the cable of each node, the "segment" between two cables is no segment
    (it meets nothing), and segments of different cables always meet. ``node_radius`` is each
    node's cable radius."""
    (
        plane_p,
        plane_n,
        sph_c,
        sph_r,
        tris,
        _owner,
        t_min,
        t_max,
        t_left,
        t_right,
        t_start,
        t_count,
        t_order,
        cap_a,
        cap_b,
        cap_r,
        tri_sharp,
        tri_fold,
    ) = obstacles
    n_nodes = pos.shape[0]
    n_seg = n_nodes - 1
    cap = 64 + 8 * n_nodes
    kind = np.empty(cap, dtype=np.int64)
    elem = np.empty(cap, dtype=np.int64)
    prim = np.empty(cap, dtype=np.int64)
    n = 0
    hits = np.empty(256, dtype=np.int64)
    lo = np.empty(3)
    hi = np.empty(3)
    cp = np.empty(3)
    cq = np.empty(3)
    r_max = 0.0
    for i in range(n_nodes):
        r_max = max(r_max, node_radius[i])
    # other cables' segments: a capsule whose midpoint lies more than half its length and its radius
    # beyond a query box cannot touch anything in it
    n_cap = cap_a.shape[0]
    cap_margin = 0.0
    for c in range(n_cap):
        half = 0.5 * math.sqrt(
            (cap_b[c, 0] - cap_a[c, 0]) ** 2 + (cap_b[c, 1] - cap_a[c, 1]) ** 2 + (cap_b[c, 2] - cap_a[c, 2]) ** 2
        )
        cap_margin = max(cap_margin, half + cap_r[c])
    cap_margin += r_max + reach
    cell = 2.0 * cap_margin
    cap_coords, cap_start, cap_items, cap_mask = capsule_grid(cap_a, cap_b, cell)
    near = np.empty(64, dtype=np.int64)
    # the cable's own segments, for self-contact, through a grid of their own (a search over all of
    # them for every node and segment grew with the square of the segment count); a link between two
    # cables of a group is entered as a point and never met
    self_margin = 0.0
    seg_b = pos[1:].copy()
    for c in range(n_seg):
        if node_part[c] != node_part[c + 1]:
            for k in range(3):
                seg_b[c, k] = pos[c, k]
        elif self_gap > 0:
            half = 0.5 * math.sqrt(
                (pos[c + 1, 0] - pos[c, 0]) ** 2 + (pos[c + 1, 1] - pos[c, 1]) ** 2 + (pos[c + 1, 2] - pos[c, 2]) ** 2
            )
            self_margin = max(self_margin, half)
    self_margin += 2.0 * r_max + reach
    self_cell = 2.0 * self_margin
    self_coords, self_start, self_items, self_mask = capsule_grid(pos[:-1], seg_b, self_cell)
    for i in range(n_nodes):
        radius = node_radius[i]
        for p in range(plane_p.shape[0]):
            d = (
                (pos[i, 0] - plane_p[p, 0]) * plane_n[p, 0]
                + (pos[i, 1] - plane_p[p, 1]) * plane_n[p, 1]
                + (pos[i, 2] - plane_p[p, 2]) * plane_n[p, 2]
            )
            if d < radius + reach:
                if n >= cap:
                    kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                kind[n], elem[n], prim[n] = PLANE, i, p
                n += 1
        if tris.shape[0] > 0:
            _box(pos, i, i, radius + reach, lo, hi)
            hits, count = _query(t_min, t_max, t_left, t_right, t_start, t_count, t_order, lo, hi, hits)
            for h in range(count):
                tri = hits[h]
                d2 = closest_point_on_triangle(pos[i], tris, tri, cq)
                if d2 < (radius + reach) ** 2:
                    if n >= cap:
                        kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                    kind[n], elem[n], prim[n] = TRI_NODE, i, tri
                    n += 1
        if self_gap > 0:
            _box(pos, i, i, self_margin, lo, hi)
            near, n_near = capsules_near(lo, hi, self_cell, self_coords, self_start, self_items, self_mask, near)
            for h in range(n_near):
                c = near[h]
                if node_part[c] != node_part[c + 1]:
                    continue
                if node_part[c] == node_part[i] and c + 1 > i - self_gap and c < i + self_gap:
                    continue
                closest_point_on_segment(pos[c], pos[c + 1], pos[i], cq)
                d = math.sqrt((pos[i, 0] - cq[0]) ** 2 + (pos[i, 1] - cq[1]) ** 2 + (pos[i, 2] - cq[2]) ** 2)
                if d < radius + node_radius[c] + reach:
                    if n >= cap:
                        kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                    kind[n], elem[n], prim[n] = SELF_NODE, i, c
                    n += 1
        n_near = 0
        if n_cap > 0:
            _box(pos, i, i, cap_margin, lo, hi)
            near, n_near = capsules_near(lo, hi, cell, cap_coords, cap_start, cap_items, cap_mask, near)
        for h in range(n_near):
            c = near[h]
            u = closest_point_on_segment(cap_a[c], cap_b[c], pos[i], cq)
            if u >= 1.0 and _continues(cap_a, cap_b, c):
                continue  # the shared node is the next capsule's start: counted there, once
            d = math.sqrt((pos[i, 0] - cq[0]) ** 2 + (pos[i, 1] - cq[1]) ** 2 + (pos[i, 2] - cq[2]) ** 2)
            if d < cap_r[c] + radius + reach:
                if n >= cap:
                    kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                kind[n], elem[n], prim[n] = CAP_NODE, i, c
                n += 1
    for i in range(n_seg):
        if node_part[i] != node_part[i + 1]:
            continue  # the link between two cables of a group
        radius = node_radius[i]
        _box(pos, i, i + 1, radius + reach, lo, hi)
        for s in range(sph_c.shape[0]):
            closest_point_on_segment(pos[i], pos[i + 1], sph_c[s], cp)
            d = math.sqrt((cp[0] - sph_c[s, 0]) ** 2 + (cp[1] - sph_c[s, 1]) ** 2 + (cp[2] - sph_c[s, 2]) ** 2)
            if d < sph_r[s] + radius + reach:
                if n >= cap:
                    kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                kind[n], elem[n], prim[n] = SPHERE, i, s
                n += 1
        if tris.shape[0] > 0:
            hits, count = _query(t_min, t_max, t_left, t_right, t_start, t_count, t_order, lo, hi, hits)
            # folds this segment could cut deeper than FOLD_CUT_TOLERANCE between its nodes, (l/2)
            # tan(fold/2) (edge_folds), get edge pairs; flatter ones are left to the node pairs
            seg_len = math.sqrt(
                (pos[i + 1, 0] - pos[i, 0]) ** 2 + (pos[i + 1, 1] - pos[i, 1]) ** 2 + (pos[i + 1, 2] - pos[i, 2]) ** 2
            )
            flat_fold = 2.0 * FOLD_CUT_TOLERANCE * radius / max(seg_len, 1e-300)
            for h in range(count):
                tri = hits[h]
                if tri_sharp[tri] == 0 and max(tri_fold[tri, 0], tri_fold[tri, 1], tri_fold[tri, 2]) <= flat_fold:
                    continue  # no sharp edge or fold a segment could cut: the node pairs carry it
                t, d = segment_triangle(pos[i], pos[i + 1], tris, tri, cp, cq)
                if not (d < radius + reach):
                    continue
                if d == 0.0 and INTERIOR < t < 1.0 - INTERIOR and tri_sharp[tri] != 0:
                    # a segment piercing the face (a start drawn through a plate): pushed out along it
                    if n >= cap:
                        kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                    kind[n], elem[n], prim[n] = TRI_SEG, i, tri
                    n += 1
                # the segment against each sharp edge it comes near, wherever their closest points lie
                # now: sliding over the edge between two searches, it can bring the edge between its
                # nodes (a cable draped over a plate came to rest with the plate's edge on its centre
                # line when only segments whose closest point lay inside them at the search were seen)
                for k in range(3):
                    if not (tri_fold[tri, k] > flat_fold):
                        continue  # flat enough, or counted with the other face that shares it
                    _s, _u, d_edge = segment_segment(pos[i], pos[i + 1], tris[tri, k], tris[tri, (k + 1) % 3], cp, cq)
                    if d_edge < radius + reach:
                        if n >= cap:
                            kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                        kind[n], elem[n], prim[n] = TRI_EDGE, i, 3 * tri + k
                        n += 1
        if self_gap > 0:
            _box(pos, i, i + 1, self_margin, lo, hi)
            near, n_near = capsules_near(lo, hi, self_cell, self_coords, self_start, self_items, self_mask, near)
            for h in range(n_near):
                c = near[h]
                # each pair of segments once (the later one is the primitive)
                if node_part[c] != node_part[c + 1] or c <= i or (node_part[c] == node_part[i] and c < i + self_gap):
                    continue
                # every segment pair within reach, also where the closest points are at a node now
                # (a crossing between cables at a shallow angle slides along them several times as
                # fast as their nodes move, and one unseen at the search crossed by 5 % of a radius);
                # at a node the pair carries nothing beyond that node's pair (contact_energy_of)
                s_, t_, d = segment_segment(pos[i], pos[i + 1], pos[c], pos[c + 1], cp, cq)
                if d < radius + node_radius[c] + reach:
                    if n >= cap:
                        kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                    kind[n], elem[n], prim[n] = SELF_SEG, i, c
                    n += 1
        n_near = 0
        if n_cap > 0:
            _box(pos, i, i + 1, cap_margin, lo, hi)
            near, n_near = capsules_near(lo, hi, cell, cap_coords, cap_start, cap_items, cap_mask, near)
            _box(pos, i, i + 1, radius + reach, lo, hi)
        for h in range(n_near):
            c = near[h]
            if (
                min(cap_a[c, 0], cap_b[c, 0]) > hi[0] + cap_r[c]
                or max(cap_a[c, 0], cap_b[c, 0]) < lo[0] - cap_r[c]
                or min(cap_a[c, 1], cap_b[c, 1]) > hi[1] + cap_r[c]
                or max(cap_a[c, 1], cap_b[c, 1]) < lo[1] - cap_r[c]
                or min(cap_a[c, 2], cap_b[c, 2]) > hi[2] + cap_r[c]
                or max(cap_a[c, 2], cap_b[c, 2]) < lo[2] - cap_r[c]
            ):
                continue
            s_, t_, d = segment_segment(pos[i], pos[i + 1], cap_a[c], cap_b[c], cp, cq)
            if t_ >= 1.0 and _continues(cap_a, cap_b, c):
                continue  # the other cable's node shared with its next segment: counted there, once
            # interior on this segment only: the other cable's node touching it is this solve's
            # concern too (that node's own pair lives in the other cable's solve)
            if d < cap_r[c] + radius + reach and INTERIOR < s_ < 1.0 - INTERIOR:
                if n >= cap:
                    kind, elem, prim, cap = _grow(kind, elem, prim, cap)
                kind[n], elem[n], prim[n] = CAP_SEG, i, c
                n += 1
    return kind[:n].copy(), elem[:n].copy(), prim[:n].copy()


@njit
def segment_penetration(pos, node_radius, node_part, obstacles):
    """Deepest penetration of any segment (not only node) into planes, spheres and triangles, in
    metres (0 when clear): catches a whole segment passing through a face between two nodes that
    are each far from it, which node-based contact pairs cannot see."""
    (
        plane_p,
        plane_n,
        sph_c,
        sph_r,
        tris,
        _owner,
        t_min,
        t_max,
        t_left,
        t_right,
        t_start,
        t_count,
        t_order,
        _cap_a,
        _cap_b,
        _cap_r,
        _sharp,
        _fold,
    ) = obstacles
    deepest = 0.0
    hits = np.empty(256, dtype=np.int64)
    lo = np.empty(3)
    hi = np.empty(3)
    cp = np.empty(3)
    cq = np.empty(3)
    for i in range(pos.shape[0] - 1):
        if node_part[i] != node_part[i + 1]:
            continue
        radius = node_radius[i]
        for p in range(plane_p.shape[0]):
            for end in range(2):
                q = pos[i + end]
                d = (
                    (q[0] - plane_p[p, 0]) * plane_n[p, 0]
                    + (q[1] - plane_p[p, 1]) * plane_n[p, 1]
                    + (q[2] - plane_p[p, 2]) * plane_n[p, 2]
                )
                deepest = max(deepest, radius - d)
        for s in range(sph_c.shape[0]):
            closest_point_on_segment(pos[i], pos[i + 1], sph_c[s], cq)
            d = math.sqrt((cq[0] - sph_c[s, 0]) ** 2 + (cq[1] - sph_c[s, 1]) ** 2 + (cq[2] - sph_c[s, 2]) ** 2)
            deepest = max(deepest, radius + sph_r[s] - d)
        if tris.shape[0] > 0:
            _box(pos, i, i + 1, radius, lo, hi)
            hits, count = _query(t_min, t_max, t_left, t_right, t_start, t_count, t_order, lo, hi, hits)
            for h in range(count):
                tri = hits[h]
                _t, d = segment_triangle(pos[i], pos[i + 1], tris, tri, cp, cq)
                deepest = max(deepest, radius - d)
    return deepest


@njit
def _query(t_min, t_max, t_left, t_right, t_start, t_count, t_order, lo, hi, hits):
    """Triangles whose boxes overlap [lo, hi], growing the buffer until they fit."""
    count = query_box(t_min, t_max, t_left, t_right, t_start, t_count, t_order, lo, hi, hits, 0)
    while count < 0:
        hits = np.empty(hits.shape[0] * 4, dtype=np.int64)
        count = query_box(t_min, t_max, t_left, t_right, t_start, t_count, t_order, lo, hi, hits, 0)
    return hits, count


@njit
def _continues(cap_a, cap_b, c):
    """Whether capsule c + 1 starts where capsule c ends (the next segment of the same cable)."""
    return (
        c + 1 < cap_a.shape[0]
        and cap_a[c + 1, 0] == cap_b[c, 0]
        and cap_a[c + 1, 1] == cap_b[c, 1]
        and cap_a[c + 1, 2] == cap_b[c, 2]
    )


@njit
def _grow(kind, elem, prim, cap):
    new_cap = cap * 2
    k2 = np.empty(new_cap, dtype=np.int64)
    e2 = np.empty(new_cap, dtype=np.int64)
    p2 = np.empty(new_cap, dtype=np.int64)
    k2[:cap] = kind
    e2[:cap] = elem
    p2[:cap] = prim
    return k2, e2, p2, new_cap


# ---------------------------------------------------------------- geometry of one pair


@njit_inline
def pair_geometry(pos, kind, elem, prim, obstacles, cp, cq, normal):
    """(t, distance to the primitive's surface, u) for one pair (u: parameter on the cable's own other
    segment, for self pairs; their radius is the caller's); cp = point on the cable centre line (t = 0
    for node pairs), cq = closest point of the primitive, normal = unit vector from cq towards cp."""
    plane_p, plane_n, sph_c, sph_r, tris = obstacles[0], obstacles[1], obstacles[2], obstacles[3], obstacles[4]
    cap_a, cap_b, cap_r = obstacles[13], obstacles[14], obstacles[15]
    i = elem
    if kind == PLANE:
        d = (
            (pos[i, 0] - plane_p[prim, 0]) * plane_n[prim, 0]
            + (pos[i, 1] - plane_p[prim, 1]) * plane_n[prim, 1]
            + (pos[i, 2] - plane_p[prim, 2]) * plane_n[prim, 2]
        )
        for k in range(3):
            cp[k] = pos[i, k]
            cq[k] = pos[i, k] - d * plane_n[prim, k]
            normal[k] = plane_n[prim, k]
        return 0.0, d, 0.0
    t = 0.0
    u = 0.0  # parameter of the closest point on the other segment (self pairs)
    extra = 0.0
    if kind == TRI_NODE:
        for k in range(3):
            cp[k] = pos[i, k]
        closest_point_on_triangle(pos[i], tris, prim, cq)
    elif kind == CAP_NODE:
        for k in range(3):
            cp[k] = pos[i, k]
        closest_point_on_segment(cap_a[prim], cap_b[prim], pos[i], cq)
        extra = cap_r[prim]
    elif kind == SPHERE:
        t = closest_point_on_segment(pos[i], pos[i + 1], sph_c[prim], cp)
        for k in range(3):
            cq[k] = sph_c[prim, k]
        extra = sph_r[prim]
    elif kind == TRI_SEG:
        t, _d = segment_triangle(pos[i], pos[i + 1], tris, prim, cp, cq)
    elif kind == TRI_EDGE:
        tri, k = prim // 3, prim % 3
        t, _u, _d = segment_segment(pos[i], pos[i + 1], tris[tri, k], tris[tri, (k + 1) % 3], cp, cq)
    elif kind == CAP_SEG:
        t, _u, _d = segment_segment(pos[i], pos[i + 1], cap_a[prim], cap_b[prim], cp, cq)
        extra = cap_r[prim]
    elif kind == SELF_NODE:
        for k in range(3):
            cp[k] = pos[i, k]
        u = closest_point_on_segment(pos[prim], pos[prim + 1], pos[i], cq)
    else:  # SELF_SEG
        t, u, _d = segment_segment(pos[i], pos[i + 1], pos[prim], pos[prim + 1], cp, cq)
    dx, dy, dz = cp[0] - cq[0], cp[1] - cq[1], cp[2] - cq[2]
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d > 1e-14:
        normal[0], normal[1], normal[2] = dx / d, dy / d, dz / d
    elif kind == TRI_NODE or kind == TRI_SEG or kind == TRI_EDGE:
        # on the face: its normal, by the triangle's winding (outward for closed meshes)
        tri = prim // 3 if kind == TRI_EDGE else prim
        e1 = tris[tri, 1] - tris[tri, 0]
        e2 = tris[tri, 2] - tris[tri, 0]
        nx = e1[1] * e2[2] - e1[2] * e2[1]
        ny = e1[2] * e2[0] - e1[0] * e2[2]
        nz = e1[0] * e2[1] - e1[1] * e2[0]
        ln = math.sqrt(nx * nx + ny * ny + nz * nz) + 1e-300
        normal[0], normal[1], normal[2] = nx / ln, ny / ln, nz / ln
    else:
        normal[0], normal[1], normal[2] = 0.0, 0.0, 1.0
    return t, d - extra, u


@njit
def _feature_projector(q, tris, tri, J):
    """J = dq/dx for the closest point q of triangle ``tris[tri]``: the face's tangent projector on the
    face, e e^T along an edge, 0 at a vertex (how the closest point follows the node)."""
    a = tris[tri, 0]
    ab = tris[tri, 1] - a
    ac = tris[tri, 2] - a
    n = np.cross(ab, ac)
    nn = n @ n
    J[:, :] = 0.0
    if nn <= 0.0:
        return
    # barycentric coordinates of q
    v = (np.cross(q - a, ac) @ n) / nn
    w = (np.cross(ab, q - a) @ n) / nn
    u = 1.0 - v - w
    tol = 1e-9
    zeros = (1 if u <= tol else 0) + (1 if v <= tol else 0) + (1 if w <= tol else 0)
    if zeros == 0:
        for r in range(3):
            for s in range(3):
                J[r, s] = (1.0 if r == s else 0.0) - n[r] * n[s] / nn
    elif zeros == 1:
        if u <= tol:
            e = tris[tri, 2] - tris[tri, 1]
        elif v <= tol:
            e = ac
        else:
            e = ab
        ee = e @ e
        for r in range(3):
            for s in range(3):
                J[r, s] = e[r] * e[s] / ee


@njit
def _curvature_hessian(kind, prim, obstacles, cp, cq, normal, H):
    """Second derivative of the node-to-primitive distance, (I - dq/dx - n n^T) / |x - q|."""
    tris, cap_a, cap_b = obstacles[4], obstacles[13], obstacles[14]
    J = np.zeros((3, 3))
    if kind == TRI_NODE:
        _feature_projector(cq, tris, prim, J)
    else:  # CAP_NODE: along the capsule axis unless the closest point is an end
        e = cap_b[prim] - cap_a[prim]
        ee = e @ e
        t = ((cq - cap_a[prim]) @ e) / ee if ee > 0.0 else 0.0
        if 1e-12 < t < 1.0 - 1e-12:
            for r in range(3):
                for s in range(3):
                    J[r, s] = e[r] * e[s] / ee
    dist = math.sqrt((cp[0] - cq[0]) ** 2 + (cp[1] - cq[1]) ** 2 + (cp[2] - cq[2]) ** 2)
    for r in range(3):
        for s in range(3):
            H[r, s] = ((1.0 if r == s else 0.0) - J[r, s] - normal[r] * normal[s]) / max(dist, 1e-12)


@njit
def contact_energy(
    pos,
    kind,
    elem,
    prim,
    obstacles,
    node_radius,
    stiffness,
    node_len,
    seg_len,
    node_dof,
    grad,
    band,
    bw,
    mode,
    pair_gap,
    pair_t,
    pair_normal,
    pair_point,
    pair_u,
    pair_force,
):
    """Penalty energy of every pair (``contact_energy_of`` with all pairs live)."""
    return contact_energy_of(
        np.arange(kind.shape[0]),
        pos,
        kind,
        elem,
        prim,
        obstacles,
        node_radius,
        stiffness,
        node_len,
        seg_len,
        node_dof,
        grad,
        band,
        bw,
        mode,
        pair_gap,
        pair_t,
        pair_normal,
        pair_point,
        pair_u,
        pair_force,
        np.empty((0, 12)),
    )


@njit
def pair_gaps(live, pos, kind, elem, prim, obstacles, node_radius, pair_gap, pair_t, pair_normal, pair_point, pair_u):
    """Geometry of the pairs ``live``: gap d - r (negative: penetration), segment parameter, normal,
    contact point on the cable and the parameter on the other segment (self pairs)."""
    cp = np.empty(3)
    cq = np.empty(3)
    nrm = np.empty(3)
    for idx in range(live.shape[0]):
        p = live[idx]
        t, d, u = pair_geometry(pos, kind[p], elem[p], prim[p], obstacles, cp, cq, nrm)
        self_pair = kind[p] == SELF_NODE or kind[p] == SELF_SEG
        pair_gap[p] = d - node_radius[elem[p]] - (node_radius[prim[p]] if self_pair else 0.0)
        pair_t[p] = t
        pair_u[p] = u
        for k in range(3):
            pair_normal[p, k] = nrm[k]
            pair_point[p, k] = cp[k]


@njit
def pair_nodes(kind, elem, prim):
    """The nodes each pair's gap depends on: (a, b) on the cable's side, (c, d) on the other side for
    a cable's own segments (-1 where there is none)."""
    nodes = np.full((kind.shape[0], 4), -1, dtype=np.int64)
    for p in range(kind.shape[0]):
        i = elem[p]
        nodes[p, 0] = i
        is_node = kind[p] == PLANE or kind[p] == TRI_NODE or kind[p] == CAP_NODE or kind[p] == SELF_NODE
        nodes[p, 1] = i if is_node else i + 1
        if kind[p] == SELF_NODE or kind[p] == SELF_SEG:
            nodes[p, 2] = prim[p]
            nodes[p, 3] = prim[p] + 1
    return nodes


@njit
def pair_moves(nodes, node_move, out):
    """How far each pair's gap can shrink when node n moves ``node_move[n]``: a gap is 1-Lipschitz in
    the positions of the nodes it depends on (pair_nodes)."""
    for p in range(nodes.shape[0]):
        move = max(node_move[nodes[p, 0]], node_move[nodes[p, 1]])
        if nodes[p, 2] >= 0:
            move += max(node_move[nodes[p, 2]], node_move[nodes[p, 3]])
        out[p] = move


@njit
def evaluate_reachable(
    pos, kind, elem, prim, obstacles, node_radius, moves, pair_gap, pair_t, pair_normal, pair_point, pair_u, fresh
):
    """Evaluates at ``pos`` the pairs not evaluated there yet whose gap bound a step moving each pair by
    ``moves`` (pair_moves) could close: the step filter needs their true normal (the others cannot
    be reached)."""
    n = 0
    for p in range(kind.shape[0]):
        if not fresh[p] and not (pair_gap[p] >= moves[p]):
            n += 1
    if n == 0:
        return
    reachable = np.empty(n, dtype=np.int64)
    j = 0
    for p in range(kind.shape[0]):
        if not fresh[p] and not (pair_gap[p] >= moves[p]):
            reachable[j] = p
            fresh[p] = True
            j += 1
    pair_gaps(
        reachable, pos, kind, elem, prim, obstacles, node_radius, pair_gap, pair_t, pair_normal, pair_point, pair_u
    )


@njit
def lower_gaps(moves, pair_gap, fresh):
    """After a step moving each pair by ``moves`` (pair_moves): every gap becomes a lower bound of the
    new gap, and no pair is evaluated at the new positions yet."""
    for p in range(pair_gap.shape[0]):
        pair_gap[p] -= moves[p]
        fresh[p] = False


@njit
def pairs_that_may_touch(pair_gap):
    """The pairs whose gap (or lower bound of it) is not positive: all others are open."""
    n = 0
    for p in range(pair_gap.shape[0]):
        if not (pair_gap[p] > 0.0):
            n += 1
    live = np.empty(n, dtype=np.int64)
    j = 0
    for p in range(pair_gap.shape[0]):
        if not (pair_gap[p] > 0.0):
            live[j] = p
            j += 1
    return live


@njit
def contact_energy_of(
    live,
    pos,
    kind,
    elem,
    prim,
    obstacles,
    node_radius,
    stiffness,
    node_len,
    seg_len,
    node_dof,
    grad,
    band,
    bw,
    mode,
    pair_gap,
    pair_t,
    pair_normal,
    pair_point,
    pair_u,
    pair_force,
    pair_end_grad,
):
    """Penalty energy of the pairs ``live`` (indices; the others must be open); mode 0: energy only,
    1: + gradient, 2: + gradient and Hessian, 3: + gradient and the Gauss-Newton part of the Hessian
    only (no curvature of the distance, which is negative where a cable presses on an edge and would
    keep the matrix indefinite).

    Per pair, records the gap d - r (negative: penetration), the segment parameter, normal and the
    contact point on the cable. Every pair acts: each term is C1, so the energy stays C1 where a cable
    rests in the folds of a faceted surface (choosing one facet there would put a kink in the gradient
    exactly where the cable lies); near shared edges the contact is locally stiffer, which changes
    only the already tiny penetration. ``pair_gap`` is the geometric gap of every pair, also of segment
    pairs that do not act (the step filter needs it: a segment must not sweep over an edge its nodes
    hide); ``pair_force`` is the force a pair exerts on the cable (0 where it is open or does not act).
    ``pair_end_grad`` (n_pairs, 12, or empty to skip): in mode 2, per acting segment pair between two
    cables, the gradient of the power mean M of its ends over its own two nodes [0:6] and the other
    segment's [6:12]; the newton module couples the two cables by it (its in-band blocks are added here).
    """
    cp = np.empty(3)
    cq = np.empty(3)
    nrm = np.empty(3)
    Hc = np.empty((3, 3))
    pair_gaps(live, pos, kind, elem, prim, obstacles, node_radius, pair_gap, pair_t, pair_normal, pair_point, pair_u)
    # A segment pair carries only what it reaches beyond the same kind of contact at its deeper node
    # (an edge or a crossing cable between nodes): E = k/2 (D_s^2 - D_n^2) with the depths D = max(0,
    # -gap). Over a flat face the deepest point is a node and E = 0; as a crossing slides towards a
    # node, node pair plus segment pair stay k/2 D_s^2, so the hand-over is seamless. (Switching
    # segment pairs on and off made the energy jump; counting only the excess depth, (D_s - D_n)^2,
    # made it dip half-way and pulled crossings towards those spots.)
    #
    # Against another cable "the same contact" is the crossing's own: the deepest pair of the node
    # against anything, as for triangles, took a node pressed from below by one cable for the crossing
    # of another from above (in a pile of crossed cables the upper contact cancelled against the lower
    # one, and Newton stalled on the kink where the two depths were equal). Between two cables of a
    # group it is the four ends of the two segments, each against the other segment, as a power mean
    # (see SELF_SEG below); against capsules (cables solved one at a time) the node's pair with the
    # capsule or a neighbour of it, whose hand-over still has kinks where nearly parallel cables press
    # on each other over several nodes.
    n_nodes = pos.shape[0]
    node_gap = np.full(n_nodes, np.inf)  # deepest triangle pair per node
    node_pair = np.full(n_nodes, -1, dtype=np.int64)
    first_pair = np.full(n_nodes, -1, dtype=np.int64)  # per node, its live capsule and self node pairs
    end_pair = np.empty(4, dtype=np.int64)  # a segment pair's end pairs: each end against the other segment
    end_node = np.empty(4, dtype=np.int64)
    end_own = np.empty(4, dtype=np.bool_)
    end_weight = np.empty(4)
    n_ends = 0
    next_pair = np.full(kind.shape[0], -1, dtype=np.int64)
    for idx in range(live.shape[0]):
        p = live[idx]
        if kind[p] == TRI_NODE and pair_gap[p] < node_gap[elem[p]]:
            node_gap[elem[p]] = pair_gap[p]
            node_pair[elem[p]] = p
        elif kind[p] == CAP_NODE or kind[p] == SELF_NODE:
            next_pair[p] = first_pair[elem[p]]
            first_pair[elem[p]] = p
    energy = 0.0
    for idx in range(live.shape[0]):
        p = live[idx]
        gap = pair_gap[p]
        for k in range(3):
            pair_force[p, k] = 0.0
        if pair_end_grad.shape[0] == kind.shape[0]:
            for k in range(12):
                pair_end_grad[p, k] = 0.0
        if not (gap < 0.0):
            continue
        is_node = kind[p] == PLANE or kind[p] == TRI_NODE or kind[p] == CAP_NODE or kind[p] == SELF_NODE
        depth = -gap
        j, q, node_depth = -1, -1, 0.0  # a segment pair's deeper node, its node pair and depth
        if kind[p] == TRI_SEG:
            i = elem[p]
            j = i if node_gap[i] <= node_gap[i + 1] else i + 1
            if node_gap[j] < 0.0:
                q = node_pair[j]
                node_depth = -node_gap[j]
        elif kind[p] == CAP_SEG:
            for j_candidate in (elem[p], elem[p] + 1):
                r = first_pair[j_candidate]
                while r >= 0:
                    if kind[r] == CAP_NODE and abs(prim[r] - prim[p]) <= 1 and -pair_gap[r] > node_depth:
                        j, q, node_depth = j_candidate, r, -pair_gap[r]
                    r = next_pair[r]
        elif kind[p] == SELF_SEG:
            # the four ends of the two segments, each against the other segment: none is deeper than
            # the segments' own closest approach, which is one of them wherever it lies at an end (two
            # nearly parallel segments). Their maximum switches between ends with different gradients
            # where two tie (a crossing at a node of both cables): a power mean just below it instead.
            n_ends = 0
            for side in range(2):
                near_node = elem[p] if side == 0 else prim[p]
                near_prim = prim[p] if side == 0 else elem[p]
                for j_candidate in (near_node, near_node + 1):
                    r = first_pair[j_candidate]
                    while r >= 0:
                        if kind[r] == SELF_NODE and prim[r] == near_prim and pair_gap[r] < 0.0 and n_ends < 4:
                            end_pair[n_ends] = r
                            end_node[n_ends] = j_candidate
                            end_own[n_ends] = side == 0
                            n_ends += 1
                        r = next_pair[r]
            deepest = 0.0
            for e in range(n_ends):
                deepest = max(deepest, -pair_gap[end_pair[e]])
            if n_ends > 0:
                # in units of the deepest, or D^p underflows
                total = 0.0
                for e in range(n_ends):
                    total += (-pair_gap[end_pair[e]] / deepest) ** END_POWER
                node_depth = deepest * (total / 4.0) ** (1.0 / END_POWER)
                for e in range(n_ends):
                    # dM/dD_e of the power mean M = (sum D^p / 4)^(1/p)
                    end_weight[e] = (-pair_gap[end_pair[e]] / node_depth) ** (END_POWER - 1.0) / 4.0
        if not is_node and depth <= node_depth:
            continue
        nrm[0], nrm[1], nrm[2] = pair_normal[p, 0], pair_normal[p, 1], pair_normal[p, 2]
        t = pair_t[p]
        k_pair = stiffness * (node_len[elem[p]] if is_node else seg_len[elem[p]])
        for k in range(3):
            pair_force[p, k] = k_pair * depth * nrm[k]
            if q >= 0:
                pair_force[p, k] -= k_pair * node_depth * pair_normal[q, k]
        if kind[p] == SELF_SEG:
            for e in range(n_ends):
                # each end pair pushes its node away from the other side: this cable when it is its own
                r, g_e = end_pair[e], k_pair * node_depth * end_weight[e]
                for k in range(3):
                    pair_force[p, k] -= (g_e if end_own[e] else -g_e) * pair_normal[r, k]
        energy += 0.5 * k_pair * (depth * depth - node_depth * node_depth)
        if mode == 0:
            continue
        if kind[p] == SELF_SEG:
            # - k M dM/dD_e grad(D_e) per end pair (both its sides move)
            for e in range(n_ends):
                r, g_e = end_pair[e], k_pair * node_depth * end_weight[e]
                cn, un = prim[r], pair_u[r]
                for k in range(3):
                    grad[node_dof[end_node[e]] + k] += g_e * pair_normal[r, k]
                    grad[node_dof[cn] + k] -= g_e * (1.0 - un) * pair_normal[r, k]
                    grad[node_dof[cn + 1] + k] -= g_e * un * pair_normal[r, k]
        # d(depth)/dx = -normal, shared by a segment's nodes as (1 - t) and t
        if is_node:
            i0, w0, i1, w1 = elem[p], 1.0, elem[p], 0.0
        else:
            i0, w0, i1, w1 = elem[p], 1.0 - t, elem[p] + 1, t
        f = k_pair * depth
        self_pair = kind[p] == SELF_NODE or kind[p] == SELF_SEG
        for k in range(3):
            grad[node_dof[i0] + k] -= f * w0 * nrm[k]
            grad[node_dof[i1] + k] -= f * w1 * nrm[k]
            if q >= 0:
                grad[node_dof[j] + k] += k_pair * node_depth * pair_normal[q, k]
        if self_pair:
            # both sides move: the cable's other segment (prim, at u) is pushed the opposite way
            c, u = prim[p], pair_u[p]
            for k in range(3):
                grad[node_dof[c] + k] += f * (1.0 - u) * nrm[k]
                grad[node_dof[c + 1] + k] += f * u * nrm[k]
            if q >= 0:
                cn, un = prim[q], pair_u[q]
                for k in range(3):
                    grad[node_dof[cn] + k] -= k_pair * node_depth * (1.0 - un) * pair_normal[q, k]
                    grad[node_dof[cn + 1] + k] -= k_pair * node_depth * un * pair_normal[q, k]
        if mode < 2:
            continue
        if self_pair:
            # the other side's own block (its two nodes are neighbours, inside the band); the blocks
            # coupling both sides lie outside it and enter the Newton step as a low-rank update
            c, u = prim[p], pair_u[p]
            for a in range(2):
                wa = 1.0 - u if a == 0 else u
                for b in range(2):
                    wb = 1.0 - u if b == 0 else u
                    if wa == 0.0 or wb == 0.0:
                        continue
                    for r in range(3):
                        for s in range(3):
                            _band_add(
                                band, bw, node_dof[c + a] + r, node_dof[c + b] + s, k_pair * wa * wb * nrm[r] * nrm[s]
                            )
        if mode == 2 and (kind[p] == TRI_NODE or kind[p] == CAP_NODE):
            # curvature of the distance: the normal turns as the node slides round an edge or a cable
            pair_geometry(pos, kind[p], elem[p], prim[p], obstacles, cp, cq, nrm)
            _curvature_hessian(kind[p], prim[p], obstacles, cp, cq, nrm, Hc)
            for r in range(3):
                for s in range(3):
                    _band_add(band, bw, node_dof[i0] + r, node_dof[i0] + s, -f * Hc[r, s])
        for a in range(2):
            ia, wa = (i0, w0) if a == 0 else (i1, w1)
            for b in range(2):
                ib, wb = (i0, w0) if b == 0 else (i1, w1)
                if wa == 0.0 or wb == 0.0:
                    continue
                for r in range(3):
                    for s in range(3):
                        _band_add(band, bw, node_dof[ia] + r, node_dof[ib] + s, k_pair * wa * wb * nrm[r] * nrm[s])
        if kind[p] == SPHERE:
            # A sphere is smooth: the curvature of its distance is the real surface's, and where a
            # cable lies over its top it is what makes the top unstable (it is kept in the
            # Gauss-Newton model too, mode 3: the facet and crossing terms left out there are saddles
            # of the discretisation only).
            _sphere_segment_curvature(pos, elem[p], obstacles[2][prim[p]], f, node_dof, band, bw)
        if mode == 2 and kind[p] == SELF_SEG and n_ends > 0 and pair_end_grad.shape[0] == kind.shape[0]:
            # - k grad(M) grad(M)^T of E = k/2 (D_s^2 - M^2): near a node the segment pair's own
            # k grad(D_s) grad(D_s)^T is nearly cancelled by it, and without it the model counted a
            # crossing at a node up to three times (node pair plus two segment pairs): Newton then
            # crept towards a pile's equilibrium by a factor ~0.6 per iteration (rho ~ 1.4). The
            # curvature of M (the power mean's rounding of the ends' maximum) is left out.
            c = prim[p]
            for e in range(n_ends):
                r, w = end_pair[e], end_weight[e]
                un = pair_u[r]
                node_slot = (0 if end_own[e] else 6) + 3 * (end_node[e] - (elem[p] if end_own[e] else c))
                other = 6 if end_own[e] else 0
                for k in range(3):
                    pair_end_grad[p, node_slot + k] -= w * pair_normal[r, k]
                    pair_end_grad[p, other + k] += w * (1.0 - un) * pair_normal[r, k]
                    pair_end_grad[p, other + 3 + k] += w * un * pair_normal[r, k]
            for side in range(2):
                base, off = (elem[p], 0) if side == 0 else (c, 6)
                for a in range(2):
                    for b in range(2):
                        for r in range(3):
                            for s in range(3):
                                _band_add(
                                    band,
                                    bw,
                                    node_dof[base + a] + r,
                                    node_dof[base + b] + s,
                                    -k_pair * pair_end_grad[p, off + 3 * a + r] * pair_end_grad[p, off + 3 * b + s],
                                )
        if mode == 2 and q >= 0:
            # - k grad(D_n) grad(D_n)^T: the node pair's own term is already counted with the node;
            # left out of the Gauss-Newton matrix, which must stay positive semi-definite
            for r in range(3):
                for s in range(3):
                    _band_add(
                        band, bw, node_dof[j] + r, node_dof[j] + s, -k_pair * pair_normal[q, r] * pair_normal[q, s]
                    )
    return energy


@njit
def _sphere_segment_curvature(pos, i, centre, f, node_dof, band, bw):
    """Adds -f grad^2(d) of the distance d(x_i, x_i+1) = min_t |(1 - t) x_i + t x_i+1 - c| to a sphere's
    centre (the radius is a constant). With the closest point p at t, n = (p - c) / r, e = x_i+1 - x_i
    and W = [(1 - t) I, t I]: grad^2(d) = W^T (I - n n^T) W / r - g g^T r / |e|^2, the second term
    the minimisation over t (a Schur complement), g = [(1 - t) e / r - n, t e / r + n]; at an end of
    the segment (t clamped) only the first term, on that node."""
    e = pos[i + 1] - pos[i]
    ee = e @ e
    t = ((centre - pos[i]) @ e) / ee if ee > 0.0 else 0.0
    interior = 0.0 < t < 1.0
    t = min(max(t, 0.0), 1.0)
    q = (1.0 - t) * pos[i] + t * pos[i + 1] - centre
    r = math.sqrt(q @ q)
    if r <= 0.0:
        return
    n = q / r
    w = (1.0 - t, t)
    g = np.empty((2, 3))
    for k in range(3):
        g[0, k] = (1.0 - t) * e[k] / r - n[k]
        g[1, k] = t * e[k] / r + n[k]
    for a in range(2):
        for b in range(2):
            for u in range(3):
                for v in range(3):
                    h = w[a] * w[b] * ((1.0 if u == v else 0.0) - n[u] * n[v]) / r
                    if interior:
                        h -= g[a, u] * g[b, v] * r / ee
                    if h != 0.0:
                        _band_add(band, bw, node_dof[i + a] + u, node_dof[i + b] + v, -f * h)


@njit
def friction_energy(pos, node_dof, active, normal, normal_force, anchor, mu, eps, grad, band, bw, mode):
    """Lumped Coulomb friction, mu N phi(|P (x - a)|) with the Huber function phi (stick width eps)."""
    energy = 0.0
    u = np.empty(3)
    for i in range(pos.shape[0]):
        if not active[i]:
            continue
        n0, n1, n2 = normal[i, 0], normal[i, 1], normal[i, 2]
        dx, dy, dz = pos[i, 0] - anchor[i, 0], pos[i, 1] - anchor[i, 1], pos[i, 2] - anchor[i, 2]
        dn = dx * n0 + dy * n1 + dz * n2
        u[0], u[1], u[2] = dx - dn * n0, dy - dn * n1, dz - dn * n2
        mag = math.sqrt(u[0] ** 2 + u[1] ** 2 + u[2] ** 2)
        c = mu[i] * normal_force[i]
        if mag < eps:
            energy += c * mag * mag / (2.0 * eps)
            scale = c / eps
        else:
            energy += c * (mag - 0.5 * eps)
            scale = c / mag
        if mode == 0:
            continue
        for k in range(3):
            grad[node_dof[i] + k] += scale * u[k]
        if mode < 2:
            continue
        # Hessian: (c/eps) P when sticking, (c/|u|) (P - u u^T/|u|^2) when sliding; both positive semi-definite
        for r in range(3):
            for s in range(3):
                P = (1.0 if r == s else 0.0) - normal[i, r] * normal[i, s]
                h = scale * P
                if mag >= eps:
                    h -= scale * u[r] * u[s] / (mag * mag)
                _band_add(band, bw, node_dof[i] + r, node_dof[i] + s, h)
    return energy


@njit
def plunge_step_length(approach, scale, kind, elem, pair_gap, fresh, stiffness, node_len, seg_len, slope, curvature):
    """(alpha, penalty): how far along a Newton step to go when it closes open facet pairs.

    Open pairs are not in the Newton model, so a step sliding a cable over a tessellated surface
    pushes nodes into the next facets, which they did not touch yet (the normal jumps at every facet
    edge); the penalty then costs up to ten thousand times the gain the model predicted, and raising
    the damping until a step passed took several factorisations per iteration. Along the step, with
    the pairs' gaps linearised (a_p: approach per unit step, g_p: gap), the energy is the model plus
    the penalty of the facet pairs it closes,
        phi(alpha) = -G alpha + C alpha^2 / 2 + sum_p k_p / 2 (alpha a_p - g_p)_+^2,
    G = -grad . delta, C = delta . H . delta: a convex piecewise quadratic, whose minimum is found
    exactly by walking its breakpoints g_p / a_p in order. ``penalty`` is the last sum at that alpha
    (the caller's predicted gain includes it). A step that closes no open facet pair is not this
    function's business: (1, 0), and the caller damps it as before. ``approach``: per pair, from
    approach_fraction for the step before it was cut to ``scale`` of its length.

    Node-facet pairs, segments against mesh edges and spheres, and node and segment pairs between
    cables count. A pile of crossed cables solved together has the same trouble: near equilibrium a
    step slides cables over each other into pairs just open, mostly segments crossing between nodes
    (measured on the ten crossing cables of the contact benchmark: 0.51-0.53 s per step with node
    pairs only, 0.37 s with both, cold 4.8 -> 2.7 s); so does a cable lifting off and landing on a
    sphere, its one pair switching on and off every other iteration (a drape of 7 segments spent its
    whole budget of 10,000 iterations so). A segment pair between cables is counted with its full
    depth (k l_segment); near a node it carries only what reaches beyond its ends, so the step is cut
    somewhat shorter there than it need be. Planes have no edges to slide into (counting them sent
    the pile of the contact benchmark into another of its equilibria, 35-45 iterations per step
    instead of 26-29); segments piercing a face and pairs against capsules are left to the step
    filter and the trust region."""
    n = kind.shape[0]
    count = 0
    touch_at = np.empty(n)
    ka2 = np.empty(n)
    kag = np.empty(n)
    for p in range(n):
        if not fresh[p] or not (pair_gap[p] > 0.0):
            continue  # touching pairs are in the model; pairs not evaluated here cannot be reached
        if kind[p] != TRI_NODE and kind[p] != TRI_EDGE and kind[p] != SPHERE and kind[p] != SELF_NODE:
            if kind[p] != SELF_SEG:
                continue
        a = scale * approach[p]
        if not (a > pair_gap[p]):
            continue
        is_node = kind[p] == PLANE or kind[p] == TRI_NODE or kind[p] == CAP_NODE or kind[p] == SELF_NODE
        k = stiffness * (node_len[elem[p]] if is_node else seg_len[elem[p]])
        touch_at[count] = pair_gap[p] / a
        ka2[count] = k * a * a
        kag[count] = k * a * pair_gap[p]
        count += 1
    if count == 0 or not (curvature > 0.0) or not (slope > 0.0):
        return 1.0, 0.0
    order = np.argsort(touch_at[:count])
    # phi'(alpha) = -G + alpha (C + sum k a^2) - sum k a g over the pairs touched before alpha
    A = 0.0
    B = 0.0
    alpha = 1.0
    for idx in range(count + 1):
        upto = touch_at[order[idx]] if idx < count else 1.0
        root = (slope + B) / (curvature + A)
        if root <= upto:
            alpha = root
            break
        if idx < count:
            A += ka2[order[idx]]
            B += kag[order[idx]]
    penalty = 0.0
    for idx in range(count):
        q = order[idx]
        if touch_at[q] < alpha:
            penalty += 0.5 * (ka2[q] * alpha - kag[q]) ** 2 / ka2[q]
    return min(alpha, 1.0), penalty


@njit
def approach_fraction(
    delta, node_dof, kind, elem, prim, pair_gap, pair_t, pair_u, pair_normal, node_radius, reach, approach
):
    """The largest fraction (at most 1) of a step that carries no node farther than ``reach`` (beyond
    the pairs searched) and no contact point farther towards its primitive than its gap (at least
    half a radius): sliding along a surface is free, approaching it is not, so no step can jump
    through an obstacle. A Newton step that would push a free node deep into a surface it does not
    touch yet is cut short where it touches (the filter of continuous collision detection), keeping
    its direction; the next iteration sees the contact.

    Where a segment would cross another cable's segment between nodes (CAP_SEG, SELF_SEG), only a
    tenth of a radius is allowed: a segment plunged across another cable there is pushed out by a
    force the Gauss-Newton model of segment pairs does not follow (it leaves out the curvature of
    their distance), and Newton could not lift it out again (found in the ten-cable fan: a segment
    58 um deep with 38 N on it, the node pairs at both its ends open).

    ``approach`` receives how far the step carries each pair's contact point towards its primitive
    (to first order; 0 for the pairs passed over, which cannot reach theirs)."""
    fraction = 1.0
    n_nodes = node_dof.shape[0]
    largest2 = 0.0
    for i in range(n_nodes):
        a = node_dof[i]
        move2 = delta[a] ** 2 + delta[a + 1] ** 2 + delta[a + 2] ** 2
        if not (move2 <= reach * reach):
            fraction = min(fraction, reach / math.sqrt(move2))
        if not (move2 <= largest2):
            largest2 = move2
    # A contact point moves at most as far as the farther of its nodes (both sides together for a
    # cable's own segments): a pair whose gap is at least twice the largest node move cannot be
    # approached beyond its gap, and is passed over (most of the candidates near convergence).
    unreachable = 2.0 * math.sqrt(largest2)
    for p in range(kind.shape[0]):
        approach[p] = 0.0
        if pair_gap[p] >= unreachable:
            continue
        slack = CABLE_SEGMENT_APPROACH if (kind[p] == CAP_SEG or kind[p] == SELF_SEG) else 0.5
        allowed = max(pair_gap[p], slack * node_radius[elem[p]])
        # ... but never nearer to the obstacle's surface (the other centre line) than MIN_SEPARATION
        # radii, the minimum separation of additive CCD: the slack lets a touching point sink half a
        # radius per step, and two such steps carried nodes through zero-thickness plates
        allowed = max(0.0, min(allowed, pair_gap[p] + (1.0 - MIN_SEPARATION) * node_radius[elem[p]]))
        i = elem[p]
        if kind[p] == PLANE or kind[p] == TRI_NODE or kind[p] == CAP_NODE or kind[p] == SELF_NODE:
            w0, w1 = 1.0, 0.0
        else:
            w0, w1 = 1.0 - pair_t[p], pair_t[p]
        j = i + 1 if w1 != 0.0 else i
        move = 0.0
        for k in range(3):
            move -= (w0 * delta[node_dof[i] + k] + w1 * delta[node_dof[j] + k]) * pair_normal[p, k]
        if kind[p] == SELF_NODE or kind[p] == SELF_SEG:
            # the other side may come the other way in the same step: both share the gap
            c, u = prim[p], pair_u[p]
            for k in range(3):
                move += ((1.0 - u) * delta[node_dof[c] + k] + u * delta[node_dof[c + 1] + k]) * pair_normal[p, k]
        approach[p] = move
        if not (move <= allowed):
            fraction = min(fraction, allowed / move) if move > 0.0 else 0.0
    return fraction


@njit
def segment_pair_curvature(pos, i, c, t, u, f, vecs, coefs):
    """The curvature -f grad^2(d) of a segment pair between two cables (d: distance of the closest
    points at t on segment i and u on segment c; f = k depth, the pair's force), as rank-one terms
    coefs[m] vecs[m] vecs[m]^T over (i, i + 1, c, c + 1), three coordinates each. Returns how many.

    d = min over the segment parameters s of |w(x, s)|; with h = d^2 / 2 its Hessian is
    J^T J - B A^-1 B^T (J = dw/dx, A = h_ss, B = h_xs: the closest points slide along the
    segments), so grad^2 d = (J^T P J - B A^-1 B^T) / d with P the projector across the normal.
    The sliding term stiffens, the other softens; both are f / d in size, tiny beside k n n^T but
    alone in the directions the cables slide over each other, where a pressed crossing shifts its
    load between a segment's nodes. (Without them Newton crept to a pile's equilibrium by a factor
    ~0.65 per iteration, rho ~ 0.32: the matrix ~1.7 times too soft along the cables' sliding.)"""
    w = np.empty(3)
    e1 = np.empty(3)
    e2 = np.empty(3)
    for k in range(3):
        w[k] = (1.0 - t) * pos[i, k] + t * pos[i + 1, k] - (1.0 - u) * pos[c, k] - u * pos[c + 1, k]
        e1[k] = pos[i + 1, k] - pos[i, k]
        e2[k] = pos[c + 1, k] - pos[c, k]
    d = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if not (d > 0.0 and f > 0.0):
        return 0
    n = w / d
    # -f/d J^T P J: two unit vectors across the normal
    a = np.zeros(3)
    a[np.argmin(np.abs(n))] = 1.0
    t1 = a - (a @ n) * n
    t1 /= math.sqrt(t1 @ t1)
    t2 = np.array([n[1] * t1[2] - n[2] * t1[1], n[2] * t1[0] - n[0] * t1[2], n[0] * t1[1] - n[1] * t1[0]])
    m = 0
    for tm in (t1, t2):
        for k in range(3):
            vecs[m, k] = (1.0 - t) * tm[k]
            vecs[m, 3 + k] = t * tm[k]
            vecs[m, 6 + k] = -(1.0 - u) * tm[k]
            vecs[m, 9 + k] = -u * tm[k]
        coefs[m] = -f / d
        m += 1
    # +f/d B A^-1 B^T over the parameters not held at a segment's end
    t_free, u_free = 0.0 < t < 1.0, 0.0 < u < 1.0
    e11, e22, e12 = e1 @ e1, e2 @ e2, e1 @ e2
    if t_free and u_free and not (e11 * e22 - e12 * e12 > 1e-4 * e11 * e22):
        return m  # nearly parallel: where the closest points lie is all but undetermined
    B = np.zeros((12, 2))
    A = np.zeros((2, 2))
    n_s = 0
    if t_free:
        for k in range(3):
            B[k, 0] = -w[k] + (1.0 - t) * e1[k]
            B[3 + k, 0] = w[k] + t * e1[k]
            B[6 + k, 0] = -(1.0 - u) * e1[k]
            B[9 + k, 0] = -u * e1[k]
        A[0, 0] = e11
        n_s = 1
    if u_free:
        for k in range(3):
            B[k, n_s] = -(1.0 - t) * e2[k]
            B[3 + k, n_s] = -t * e2[k]
            B[6 + k, n_s] = (1.0 - u) * e2[k] + w[k]
            B[9 + k, n_s] = u * e2[k] - w[k]
        A[n_s, n_s] = e22
        if n_s == 1:
            A[0, 1] = A[1, 0] = -e12
        n_s += 1
    if n_s == 0:
        return m
    # B A^-1 B^T = (B L^-T)(B L^-T)^T with A = L L^T
    l00 = math.sqrt(A[0, 0])
    for r in range(12):
        vecs[m, r] = B[r, 0] / l00
    coefs[m] = f / d
    m += 1
    if n_s == 2:
        l10 = A[1, 0] / l00
        l11 = math.sqrt(A[1, 1] - l10 * l10)
        for r in range(12):
            vecs[m, r] = (B[r, 1] - l10 * B[r, 0] / l00) / l11
        coefs[m] = f / d
        m += 1
    return m
