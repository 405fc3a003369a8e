# SPDX-License-Identifier: GPL-3.0-or-later
"""Pair geometry (contact_geometry.py): closest points and distance curvature against brute force and differences."""

import math

import numpy as np
import pytest
from helpers.contact_scenes import (
    R,
)
from helpers.kernel_inputs import contact_interactions, pair_buffers


def test_contact_energy_is_continuous_as_a_crossing_slides_past_a_node():
    # A straight cable pressed 0.5 mm into a crossing capsule, slid along its own axis over two
    # segments: the crossing passes from a segment's interior over a node into the next segment. The
    # depth never changes, so neither may the penalty energy k l d^2 / 2: no jump where the node pair
    # takes over from the segment pair, and no dip that would pull crossings to particular spots.
    from solver_core.contact.contact_energy import contact_energy
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    radius, seg = 0.002, 0.01
    base = np.column_stack((np.arange(-5, 6) * seg, np.zeros(11), np.zeros(11)))
    obstacles = ObstacleSet().with_capsules([[0.0, -0.05, 0.0035]], [[0.0, 0.05, 0.0035]], [0.002]).kernel_arrays()
    n = len(base)
    node_len = np.full(n, seg)
    extra = contact_interactions(obstacles, np.full(n, radius), node_len, np.full(n - 1, seg), 1e6)
    energies = []
    for shift in np.linspace(0.0, 2 * seg, 801):
        pos = base + [shift, 0.0, 0.0]
        kind, elem, prim = find_pairs(pos, np.full(n, radius), np.zeros(n, dtype=np.int64), 0.005, obstacles, 0)
        pairs = pair_buffers(kind, elem, prim)
        energies.append(contact_energy(pos, pairs, extra, np.arange(n) * 3, np.zeros(1), np.zeros((1, 1)), 0, 0))
    assert np.allclose(energies, 0.5 * 1e6 * seg * 0.0005**2, rtol=1e-9)


def test_closest_points_against_brute_force(rng):
    from solver_core.geometry.contact_geometry import segment_segment, segment_triangle

    cp, cq = np.empty(3), np.empty(3)
    u = np.linspace(0, 1, 201)
    for _ in range(30):
        p0, p1, a, b, c, q0, q1 = rng.normal(size=(7, 3))
        _t, d = segment_triangle(p0, p1, np.array([[a, b, c]]), 0, cp, cq)
        seg = p0 + u[:, None] * (p1 - p0)
        w = rng.dirichlet([1, 1, 1], size=20000)
        tri = w @ np.array([a, b, c])
        brute = np.linalg.norm(seg[::4, None, :] - tri[None, :, :], axis=2).min()
        assert d <= brute + 1e-12 and d >= brute - 0.05 * max(brute, 0.1)
        _s, _t, d = segment_segment(p0, p1, q0, q1, cp, cq)
        other = q0 + u[:, None] * (q1 - q0)
        brute = np.linalg.norm(seg[:, None, :] - other[None, :, :], axis=2).min()
        assert brute - 1e-2 <= d <= brute + 1e-12


def _segment_distance(x):
    from solver_core.geometry.contact_geometry import segment_segment

    return segment_segment(x[0:3], x[3:6], x[6:9], x[9:12], np.empty(3), np.empty(3))


@pytest.mark.parametrize("t0, u0", [(0.4, 0.6), (0.15, 0.8), (0.5, 1.03), (-0.03, 0.5)])
def test_the_curvature_of_a_segment_distance_matches_second_differences(t0, u0):
    # E = k/2 (r - d)^2 of two crossing segments (d: their centre lines' distance): its Hessian is
    # k grad(d) grad(d)^T plus segment_pair_curvature's terms. Reference: central differences of
    # the energy, closest points inside both segments or held at an end of one (parameters 1.03 and
    # -0.03 put the crossing just beyond an end).
    from solver_core.contact.pair_geometry import segment_pair_curvature

    rng = np.random.default_rng(3)
    k, r, s = 1e6, 2 * R, 0.005
    angle = 0.7
    a = np.array([[0.0, 0.0, 0.0], [s, 0.0, 0.0]])
    along = np.array([math.cos(angle), math.sin(angle), 0.0])
    crossing = np.array([t0 * s, 0.0, r - 5e-5])
    b = np.array([crossing - u0 * s * along, crossing + (1 - u0) * s * along])
    x = np.concatenate((a.ravel(), b.ravel())) + rng.normal(0.0, 2e-6, 12)

    def energy(y):
        depth = r - _segment_distance(y)[2]
        return 0.5 * k * depth * depth if depth > 0 else 0.0

    t, u, d = _segment_distance(x)
    assert d < r
    vecs, coefs = np.zeros((4, 12)), np.zeros(4)
    m = segment_pair_curvature(x.reshape(4, 3), 0, 2, t, u, k * (r - d), vecs, coefs)
    assert m == (4 if 0 < t0 < 1 and 0 < u0 < 1 else 3)
    w = (1 - t) * x[0:3] + t * x[3:6] - (1 - u) * x[6:9] - u * x[9:12]
    grad_d = np.concatenate(((1 - t) * w, t * w, -(1 - u) * w, -u * w)) / d
    H = k * np.outer(grad_d, grad_d) + sum(coefs[j] * np.outer(vecs[j], vecs[j]) for j in range(m))
    h = 1e-7
    fd = np.zeros((12, 12))
    for i in range(12):
        for j in range(12):
            ei, ej = np.eye(12)[i] * h, np.eye(12)[j] * h
            fd[i, j] = (energy(x + ei + ej) - energy(x + ei - ej) - energy(x - ei + ej) + energy(x - ei - ej)) / (
                4 * h * h
            )
    curvature = fd - k * np.outer(grad_d, grad_d)
    assert np.abs(curvature).max() > 1e-4 * k  # what is tested is there
    assert np.abs(H - fd).max() < 2e-3 * np.abs(curvature).max()
