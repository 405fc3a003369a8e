# SPDX-License-Identifier: GPL-3.0-or-later
"""Clearance read-outs, sharp edges and edge folds (clearance.py, obstacles.py) against exact geometry."""

import numpy as np
import pytest


def test_sharp_edges_are_bends_and_open_borders_of_the_whole_mesh():
    from solver_core.contact.obstacles import ObstacleSet, sharp_edges

    # a 4 x 4 grid (i, j = 0..4) folded up by 90 degrees along i = 2
    def vertex(i, j):
        return [min(i, 2), j, max(i - 2, 0)]

    quads = [(i, j) for j in range(4) for i in range(4)]
    tris = []
    for i, j in quads:
        tris += [[(i, j), (i + 1, j), (i + 1, j + 1)], [(i, j), (i + 1, j + 1), (i, j + 1)]]
    triangles = np.array([[vertex(*v) for v in t] for t in tris], float)
    flags = sharp_edges(triangles)

    def expected_sharp(t):
        edges = [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])]
        on_border = [(p[0] == q[0] in (0, 4)) or (p[1] == q[1] in (0, 4)) for p, q in edges]
        on_fold = [p[0] == q[0] == 2 for p, q in edges]
        return any(b or f for b, f in zip(on_border, on_fold))

    assert [bool(f) for f in flags] == [expected_sharp(t) for t in tris]
    # a part of the mesh keeps the whole mesh's flags: its own border is no edge of the surface
    part = np.arange(8, 16)
    kept = ObstacleSet().with_triangles(triangles[part], 0, flags[part])
    kept.kernel_arrays()
    assert np.array_equal(kept.triangle_sharp, flags[part])
    assert (sharp_edges(triangles[part]) != 0).sum() > (flags[part] != 0).sum()


def test_a_part_of_a_mesh_counts_each_of_its_folds_once_with_the_whole_meshs_angle(rng):
    # The Blender layer fetches the triangles near the cables on every tick and takes their edge folds
    # from the whole mesh (counted_folds): every edge of the part must be counted by exactly one of
    # its faces in the part, with tan(fold / 2) of the two faces of the whole mesh (inf where sharp),
    # also where the other face was not fetched. Reference: the angle between the faces' normals.
    from solver_core.contact.obstacles import counted_folds, edge_folds, edge_neighbours, sharp_edges

    n = 8
    height = rng.uniform(-0.05, 0.05, (n + 1, n + 1))
    tris = []
    for i in range(n):
        for j in range(n):
            a, b, c, d = (i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1)
            tris += [[a, b, c], [a, c, d]]
    triangles = np.array([[[v[0] * 0.1, v[1] * 0.1, height[v]] for v in t] for t in tris])
    sharp = sharp_edges(triangles)
    neighbour, fold = edge_neighbours(triangles, sharp)
    faces = {}
    for t, tri in enumerate(tris):
        for k in range(3):
            faces.setdefault(frozenset((tri[k], tri[(k + 1) % 3])), []).append((t, k))

    def normal(t):
        p = triangles[t]
        m = np.cross(p[1] - p[0], p[2] - p[0])
        return m / np.linalg.norm(m)

    for part in (np.arange(len(tris)), np.sort(rng.choice(len(tris), 40, replace=False))):
        out = counted_folds(neighbour, fold, part)
        where = {t: r for r, t in enumerate(part)}
        for shared in faces.values():
            mine = [(where[t], k) for t, k in shared if t in where]
            if not mine:
                continue
            if len(shared) == 1 or (sharp[shared[0][0]] >> shared[0][1]) & 1:
                expected = np.inf
            else:
                cos = abs(float(normal(shared[0][0]) @ normal(shared[1][0])))
                expected = np.tan(0.5 * np.arccos(min(cos, 1.0)))
            values = sorted(out[r, k] for r, k in mine)
            assert values[-1] == pytest.approx(expected, rel=1e-9, abs=1e-12)
            assert all(v == 0.0 for v in values[:-1])
    assert np.array_equal(counted_folds(neighbour, fold, np.arange(len(tris))), edge_folds(triangles, sharp))


def test_clearance_is_the_exact_surface_gap_to_the_nearest_triangle():
    from solver_core import clearance_to_triangles as clearance

    # a cable along x at height h over a triangle lying in z = 0: gap h - r wherever it is over the
    # triangle; the nearest point is found along the segment, not only at nodes
    r, h = 0.002, 0.01
    tri = np.array([[[0.3, -0.5, 0.0], [0.7, -0.5, 0.0], [0.5, 0.5, 0.0]]])
    line = np.column_stack([np.linspace(0.0, 1.0, 5), np.zeros(5), np.full(5, h)])
    gap, where = clearance(line, r, tri)
    assert gap == pytest.approx(h - r, abs=1e-12)
    # every point of the centre line over the triangle is nearest (a tie): along y = 0 the triangle spans
    # x from 0.4 to 0.6, nodes every 0.25 m, so the answer lies in node positions 1.6 to 2.4
    assert 1.6 - 1e-9 <= where <= 2.4 + 1e-9
    # a triangle only under the middle of a segment (between nodes 1 and 2) still counts
    small = np.array([[[0.36, -0.01, 0.0], [0.39, -0.01, 0.0], [0.375, 0.01, 0.0]]])
    gap, where = clearance(line, r, small)
    # (along y = 0 it spans x from 0.3675 to 0.3825: node positions 1.47 to 1.53)
    assert gap == pytest.approx(h - r, abs=1e-12) and 1.47 - 1e-9 <= where <= 1.53 + 1e-9
    # off to the side: distance to the nearest edge (Pythagoras)
    side = tri + np.array([0.0, 0.5 + 0.03, 0.0])  # the apex edge y >= 0.03 ... nearest vertex/edge
    gap, _ = clearance(line, r, side)
    edge = side[0, 0] + np.linspace(0, 1, 201)[:, None] * (side[0, 1] - side[0, 0])
    brute = min(
        np.linalg.norm(np.column_stack([x, np.zeros_like(x), np.full_like(x, h)])[:, None] - edge[None], axis=2).min()
        for x in np.array_split(np.linspace(0, 1, 20001), 10)
    )
    assert gap == pytest.approx(brute - r, abs=1e-5)
    # a cable passing through the triangle has a negative gap
    through = np.array([[0.5, 0.0, -0.1], [0.5, 0.0, 0.1]])
    assert clearance(through, r, tri)[0] == pytest.approx(-r)
    assert clearance(line, r, np.zeros((0, 3, 3))) == (float("inf"), -1.0)
    with pytest.raises(ValueError, match="positions"):
        clearance(np.zeros((1, 3)), r, tri)


def test_clearance_skips_far_pairs_and_still_finds_the_brute_forces_pair():
    """The pairs whose bounding spheres lie beyond the best distance so far are skipped: on random
    crooked cables over random triangle soups (some crossing the cable, some far), the same gap and
    the same segment and parameter as evaluating every pair in order, to the last bit."""
    from solver_core import clearance_to_triangles as clearance
    from solver_core.geometry.contact_geometry import segment_triangle

    rng = np.random.default_rng(11)
    for _ in range(40):
        nodes = np.cumsum(rng.normal(size=(rng.integers(2, 30), 3)) * 0.02, axis=0)
        triangles = rng.normal(size=(rng.integers(1, 200), 3, 3)) * rng.choice([0.01, 0.1, 1.0])
        triangles += rng.normal(size=(len(triangles), 1, 3)) * 0.2
        best, where = np.inf, -1.0
        cp, cq = np.empty(3), np.empty(3)
        for i in range(len(nodes) - 1):
            for j in range(len(triangles)):
                t, d = segment_triangle(nodes[i], nodes[i + 1], triangles, j, cp, cq)
                if d < best:
                    best, where = d, i + t
        assert clearance(nodes, 0.001, triangles) == (best - 0.001, where)


def test_a_sweeps_clearance_leaves_out_the_mount_zone_of_a_connector_on_a_face():
    # A connector mounted on a face (case format "mounted_on") starts its cable on that face: the
    # solve cuts the face's mount zone out of the obstacle, and a Variation Study's min clearance
    # reported about zero at every such connector before it did the same.
    from helpers.obstacles import box

    from solver_core.io.sweep import min_clearance

    block = box((-0.1, -0.1, -0.1), (0.1, 0.1, 0.0))
    radius = 0.002
    nodes = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.01], [0.0, 0.0, 0.02]])  # up from the top's middle
    assert min_clearance(nodes, radius, [block]) == pytest.approx(-radius)
    zone = 0.006
    mounted = {**block, "mount_zones": [[0.0, 0.0, 0.0, zone]]}
    # the nearest of the face left is the zone's rim, a zone radius from the centre line (the rim is
    # cut in pieces, so somewhat nearer)
    assert 0.5 * zone - radius < min_clearance(nodes, radius, [mounted]) <= zone - radius + 1e-12
