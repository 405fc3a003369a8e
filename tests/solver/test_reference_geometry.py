# SPDX-License-Identifier: GPL-3.0-or-later
"""The tests' independent clearance measure (helpers.cases.min_clearance) against brute force: exact
segment-segment and segment-triangle-mesh distances, parallel segments and crossings included."""

import numpy as np
import pytest
from helpers.cases import (
    _points_mesh_distance,
    _points_segments_distance,
    _segments_mesh_distance,
    _segments_segments_distance,
    min_clearance,
)
from helpers.obstacles import cylinder


def _sampled(a, b, distance_to, n=20001):
    """Distance of a densely sampled segment to something measured exactly from points."""
    s = np.linspace(0.0, 1.0, n)
    return distance_to(a + s[:, None] * (b - a)).min()


def test_segment_segment_distance_matches_brute_force_also_when_parallel():
    rng = np.random.default_rng(0)
    for k in range(200):
        a, b, c, e = rng.normal(size=(4, 3))
        if k % 3 == 0:
            e = c + (b - a) * rng.uniform(-1.0, 1.0)  # parallel
        exact = _segments_segments_distance(a[None], b[None], c[None], e[None])[0, 0]
        brute = _sampled(a, b, lambda p, c=c, e=e: _points_segments_distance(p, c[None], e[None]))
        assert exact <= brute + 1e-12 and brute - exact < 1e-6


def test_segment_mesh_distance_matches_brute_force_and_sees_crossings():
    mesh = cylinder(0.3, -0.05, 0.05, 0.4, facets=12)
    v, t = np.asarray(mesh["vertices"], float), np.asarray(mesh["triangles"])
    rng = np.random.default_rng(1)
    crossings = 0
    for _ in range(100):
        a, b = rng.uniform(-0.1, 0.5, size=(2, 3)) * [1.0, 1.0, 0.3]
        exact = _segments_mesh_distance(a[None], b[None], v, t)[0]
        brute = _sampled(a, b, lambda p: _points_mesh_distance(p, v, t), n=4001)
        crossings += exact == 0.0
        assert exact <= brute + 1e-12 and (exact == 0.0 or brute - exact < 1e-6)
    assert crossings >= 5
    # between two samples nine to a segment: a long segment over a sphere dips deepest between them
    sphere = {"type": "sphere", "center": [0.0, 0.0, -1.0], "radius": 1.0}
    nodes = np.array([[-0.0625, 0.0, 0.0015], [0.0625, 0.0, 0.0015]])  # 0.5 mm deep at its middle
    assert min_clearance(nodes, 0.002, [sphere]) == pytest.approx(-0.0005, abs=1e-12)
