# SPDX-License-Identifier: GPL-3.0-or-later
"""Clearance read-outs and sharp edges (clearance.py, obstacles.sharp_edges) against exact geometry."""

import numpy as np
import pytest


def test_sharp_edges_are_bends_and_open_borders_of_the_whole_mesh():
    from solver_core.obstacles import ObstacleSet, sharp_edges

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


def test_clearance_is_the_exact_surface_gap_to_the_nearest_triangle():
    from solver_core import clearance_to_triangles as clearance

    # a cable along x at height h over a triangle lying in z = 0: gap h - r wherever it is over the
    # triangle; the nearest point is found along the segment, not only at nodes
    r, h = 0.002, 0.01
    tri = np.array([[[0.3, -0.5, 0.0], [0.7, -0.5, 0.0], [0.5, 0.5, 0.0]]])
    line = np.column_stack([np.linspace(0.0, 1.0, 5), np.zeros(5), np.full(5, h)])
    gap, where = clearance(line, r, tri)
    assert gap == pytest.approx(h - r, abs=1e-12)
    assert 1.2 <= where <= 2.8  # on a segment that passes over the triangle
    # a triangle only under the middle of a segment (between nodes 1 and 2) still counts
    small = np.array([[[0.36, -0.01, 0.0], [0.39, -0.01, 0.0], [0.375, 0.01, 0.0]]])
    gap, where = clearance(line, r, small)
    assert gap == pytest.approx(h - r, abs=1e-12) and 1.0 < where < 2.0
    # off to the side: distance to the nearest edge (Pythagoras)
    side = tri + np.array([0.0, 0.5 + 0.03, 0.0])  # the apex edge y >= 0.03 ... nearest vertex/edge
    gap, _ = clearance(line, r, side)
    brute = min(
        np.linalg.norm(np.array([x, 0, h]) - p)
        for x in np.linspace(0, 1, 20001)
        for p in [side[0, 0] + u * (side[0, 1] - side[0, 0]) for u in np.linspace(0, 1, 201)]
    )
    assert gap == pytest.approx(brute - r, abs=1e-5)
    # a cable passing through the triangle has a negative gap
    through = np.array([[0.5, 0.0, -0.1], [0.5, 0.0, 0.1]])
    assert clearance(through, r, tri)[0] == pytest.approx(-r)
    assert clearance(line, r, np.zeros((0, 3, 3))) == (float("inf"), -1.0)
    with pytest.raises(ValueError, match="positions"):
        clearance(np.zeros((1, 3)), r, tri)
