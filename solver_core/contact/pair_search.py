# SPDX-License-Identifier: GPL-3.0-or-later
"""Candidate contact pairs (broad phase: the triangle tree, a hashed grid over other cables'
segments, the cable's own segments) and the deepest penetration of any segment."""

import math

import numpy as np

from .._jit import njit
from ..geometry.bvh import query_box
from ..geometry.contact_geometry import (
    closest_point_on_segment,
    closest_point_on_triangle,
    segment_segment,
    segment_triangle,
)
from .contact import (
    CAP_NODE,
    CAP_SEG,
    FOLD_CUT_TOLERANCE,
    INTERIOR,
    PLANE,
    SELF_NODE,
    SELF_SEG,
    SPHERE,
    TRI_EDGE,
    TRI_NODE,
    TRI_SEG,
)

# node_part numbers from here on mark cables of a group that do not meet each other (rod_group.py)
APART_PARTS = 1 << 20


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
    (it meets nothing), and segments of different cables always meet, but for two numbered from
    APART_PARTS on (branches of a harness, which meet at their junctions). ``node_radius`` is each
    node's cable radius."""
    # the obstacles' arrays by name (kernel_arrays.ObstacleArrays)
    plane_p = obstacles.plane_point
    plane_n = obstacles.plane_normal
    sph_c = obstacles.sphere_centre
    sph_r = obstacles.sphere_radius
    tris = obstacles.triangles
    t_min = obstacles.tree_min
    t_max = obstacles.tree_max
    t_left = obstacles.tree_left
    t_right = obstacles.tree_right
    t_start = obstacles.tree_start
    t_count = obstacles.tree_count
    t_order = obstacles.tree_order
    cap_a = obstacles.capsule_a
    cap_b = obstacles.capsule_b
    cap_r = obstacles.capsule_radius
    tri_sharp = obstacles.triangle_sharp
    tri_fold = obstacles.triangle_fold
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
                if node_part[c] >= APART_PARTS and node_part[i] >= APART_PARTS and node_part[c] != node_part[i]:
                    continue  # two branches of a harness: they meet at their junctions, not in contact
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
                if node_part[c] >= APART_PARTS and node_part[i] >= APART_PARTS and node_part[c] != node_part[i]:
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
    # the obstacles' arrays by name (kernel_arrays.ObstacleArrays)
    plane_p = obstacles.plane_point
    plane_n = obstacles.plane_normal
    sph_c = obstacles.sphere_centre
    sph_r = obstacles.sphere_radius
    tris = obstacles.triangles
    t_min = obstacles.tree_min
    t_max = obstacles.tree_max
    t_left = obstacles.tree_left
    t_right = obstacles.tree_right
    t_start = obstacles.tree_start
    t_count = obstacles.tree_count
    t_order = obstacles.tree_order
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
