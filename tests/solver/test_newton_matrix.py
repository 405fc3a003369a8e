# SPDX-License-Identifier: GPL-3.0-or-later
"""The contact part of Newton's matrix and step (newton.py) against dense assembly and the step rules."""

import numpy as np
import pytest
from helpers.contact_scenes import R, crumpled_mesh_crossing_cable_and_loop, dense_newton_matrix
from helpers.kernel_inputs import contact_interactions, dof_layout, pair_buffers

from solver_core.contact.obstacles import ObstacleSet


def test_the_newton_matrix_counts_a_crossing_at_a_node_once():
    # Cable B crosses cable A just beside a node of A, pressed into it. The node pair carries the
    # contact, and each of A's two segment pairs there only the little its crossing reaches beyond
    # the power mean of its ends: k/2 (D_s^2 - M^2). The Newton matrix (band of mode 2 plus the
    # low-rank coupling of the two cables) must give the energy's second derivative along moves
    # that press the cables together (B lowered; A's node lifted), where the distances' own
    # curvature is negligible: the reference is central differences of the energy. Counting the
    # segment pairs' k grad(D_s) grad(D_s)^T alone made it 2.6-2.7 times too stiff there.
    from solver_core.contact.contact import SELF_NODE, SELF_SEG
    from solver_core.contact.contact_energy import contact_energy_of
    from solver_core.contact.low_rank_coupling import self_coupling
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    s, k = 0.01, 1.26e8
    obstacles = ObstacleSet().kernel_arrays()
    ts = np.array([-1.5, -0.5, 0.5, 1.5]) * s
    angle, x0, depth = 1.2, 0.55 * s, 3e-5
    along = np.array([np.cos(angle), np.sin(angle), 0.0])
    a = np.column_stack((ts, np.zeros(4), np.zeros(4)))
    b = np.array([x0, 0.0, 2 * R - depth]) + ts[:, None] * along
    pos = np.vstack((a, b))
    n, bw = 8, 23  # a full band: every block of the 24 x 24 matrix in one place
    radii, node_len, seg_len, node_dof = np.full(n, R), np.full(n, s), np.full(n - 1, s), np.arange(n) * 3
    kind, elem, prim = find_pairs(pos, radii, np.repeat([0, 1], 4), 2 * R, obstacles, 2)
    m = len(kind)
    interactions = contact_interactions(obstacles, radii, node_len, seg_len, k)
    pairs = pair_buffers(kind, elem, prim)  # every evaluation writes into these buffers
    no_end_grad = pairs._replace(end_grad=np.empty((0, 12)))

    def energy(x):
        return contact_energy_of(
            np.arange(m), x, no_end_grad, interactions, node_dof, np.zeros(3 * n), np.zeros((1, 1)), 0, 0
        )

    def newton_matrix(end_grad):
        band = np.zeros((3 * n, bw + 1))
        with_end_grad = pairs._replace(end_grad=end_grad)
        contact_energy_of(np.arange(m), pos, with_end_grad, interactions, node_dof, np.zeros(3 * n), band, bw, 2)
        Ut, k_c, k_s, _spans, _store = self_coupling(
            pos,
            dof_layout(node_dof, np.zeros(3 * n, dtype=np.bool_)),
            with_end_grad,
            interactions,
            True,
            np.zeros((0, 3 * n)),
            np.zeros((0, 4), dtype=np.int64),
        )
        return dense_newton_matrix(band, bw, Ut, k_c, k_s)

    H = newton_matrix(np.zeros((m, 12)))
    gap, force = pairs.gap, pairs.force
    acting_segment_pairs = (kind == SELF_SEG) & (np.abs(force).sum(axis=1) > 0.0)
    assert ((kind == SELF_NODE) & (gap < 0.0)).sum() == 1 and acting_segment_pairs.sum() == 2
    lower_b, lift_node = np.zeros((n, 3)), np.zeros((n, 3))
    lower_b[4:, 2] = -1.0
    lift_node[2, 2] = 1.0
    h = 2e-7
    # lifting the node tilts A's segments under the crossing: the segment distance's own curvature
    # (segment_pair_curvature) is then ~0.1 % of the matrix, the power mean's (left out) far less
    for v, tolerance in ((lower_b, 1e-5), (lift_node, 1e-4)):
        fd = (energy(pos + h * v) - 2 * energy(pos) + energy(pos - h * v)) / h**2
        assert v.ravel() @ H @ v.ravel() == pytest.approx(fd, rel=tolerance)


def test_a_step_closing_open_pairs_stops_at_the_minimum_of_model_plus_their_penalty():
    # plunge_step_length minimises, along a Newton step, the quadratic model -G a + C a^2 / 2 plus the
    # penalty k/2 (a s_p - g_p)_+^2 of each open node-facet pair, segment pair against a mesh edge or
    # a sphere, or cable-cable node or segment pair the step closes (s_p: its approach over the whole
    # step; k per node length for node pairs, per segment length for segment pairs). Reference: the
    # same function minimised numerically by scipy; touching pairs, pairs not evaluated at the
    # current state and other kinds of pair (planes, capsules, segments piercing a face) must not
    # count, and a step that closes no open pair is left whole.
    from scipy.optimize import minimize_scalar

    from solver_core.contact.contact import (
        CAP_NODE,
        CAP_SEG,
        PLANE,
        SELF_NODE,
        SELF_SEG,
        SPHERE,
        TRI_EDGE,
        TRI_NODE,
        TRI_SEG,
    )
    from solver_core.contact.step_limits import plunge_step_length

    rng = np.random.default_rng(5)
    stiffness, seg = 1.26e8, 0.005
    closes = 0
    for trial in range(20):
        m = 30
        kinds = [TRI_NODE, TRI_NODE, TRI_SEG, CAP_SEG, PLANE, SPHERE, CAP_NODE, TRI_EDGE, SELF_NODE, SELF_SEG]
        kind = rng.choice(kinds, m)
        elem = rng.integers(0, 10, m)
        node_len = rng.uniform(0.5, 1.0, 10) * seg
        seg_len = rng.uniform(0.8, 1.2, 10) * seg
        gap = rng.uniform(-0.2, 1.0, m) * 1e-5
        fresh = rng.random(m) < 0.9
        approach = rng.uniform(-1.0, 1.0, m) * 4e-5
        scale = 1.0 if trial % 2 else 0.6  # the step was cut by the filter to this much of its length
        slope, curvature = rng.uniform(0.2, 2.0) * 1e-4, rng.uniform(0.1, 2.0) * 1e-4
        counts = np.isin(kind, [TRI_NODE, TRI_EDGE, SPHERE, SELF_NODE, SELF_SEG]) & fresh & (gap > 0.0)
        node_pair = np.isin(kind, [PLANE, TRI_NODE, CAP_NODE, SELF_NODE])
        k = stiffness * np.where(node_pair, node_len[elem], seg_len[elem])

        def phi(a):
            closing = np.maximum(0.0, a * scale * approach - gap)[counts]
            return -slope * a + 0.5 * curvature * a * a + 0.5 * (k[counts] * closing**2).sum()

        pairs = pair_buffers(kind, elem, gap=gap, fresh=fresh, approach=approach)
        interactions = contact_interactions(ObstacleSet().kernel_arrays(), np.ones(10), node_len, seg_len, stiffness)
        alpha, penalty = plunge_step_length(pairs, scale, interactions, slope, curvature)
        if not np.any((scale * approach > gap)[counts]):
            assert (alpha, penalty) == (1.0, 0.0)
            continue
        closes += 1
        best = minimize_scalar(phi, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-13})
        assert alpha == pytest.approx(best.x, rel=1e-6, abs=1e-9)
        closing = np.maximum(0.0, alpha * scale * approach - gap)[counts]
        assert penalty == pytest.approx(0.5 * (k[counts] * closing**2).sum(), rel=1e-9, abs=1e-30)
    assert closes >= 10
    # nothing closed: the whole step
    pairs = pair_buffers(np.full(3, TRI_NODE), np.zeros(3), gap=np.ones(3))
    interactions = contact_interactions(ObstacleSet().kernel_arrays(), np.ones(1), [seg], [seg], stiffness)
    assert plunge_step_length(pairs, 1.0, interactions, 1e-4, 1e-4) == (1.0, 0.0)


def test_gap_bounds_carried_along_steps_stay_below_the_true_gaps_and_leave_out_only_open_pairs():
    # Between evaluations the minimiser keeps, per pair, a lower bound of its gap: the last evaluated
    # gap less the moves of the pair's nodes since (both sides' for a cable's own segments), and
    # evaluates only the pairs whose bound is not positive. Over a chain of random steps of every node,
    # against a crumpled mesh, a crossing cable and a loop onto itself, the bounds must never exceed
    # the true gaps, and the pairs kept must give the energy and gradient of all candidate pairs.
    from solver_core.contact.contact_energy import contact_energy, contact_energy_of
    from solver_core.contact.pair_geometry import pair_gaps, pair_nodes
    from solver_core.contact.step_limits import lower_gaps, pair_moves, pairs_that_may_touch

    rng = np.random.default_rng(7)
    obstacles, pos, radius, reach, self_gap, kind, elem, prim = crumpled_mesh_crossing_cable_and_loop(rng)
    n, m, k = len(pos), len(kind), 1e8
    seg = float(np.linalg.norm(np.diff(pos, axis=0), axis=1).max())

    def arrays():
        return np.empty(m), np.empty(m), np.empty((m, 3)), np.empty((m, 3)), np.zeros(m)

    bound = arrays()
    pair_gaps(np.arange(m), pos, kind, elem, prim, obstacles, radius, *bound)
    node_len, seg_len, node_dof = np.full(n, seg), np.full(n - 1, seg), np.arange(n) * 3
    extra = contact_interactions(obstacles, radius, node_len, seg_len, k)
    kept, touching = [], 0
    for _ in range(12):
        step = rng.normal(size=(n, 3))
        step *= rng.uniform(0.0, 0.1 * R, (n, 1)) / np.linalg.norm(step, axis=1, keepdims=True)
        pos = pos + step
        moves = np.empty(m)
        pair_moves(pair_nodes(kind, elem, prim), np.linalg.norm(step, axis=1), moves)
        lower_gaps(moves, bound[0], np.zeros(m, dtype=np.bool_))
        true = arrays()
        pair_gaps(np.arange(m), pos, kind, elem, prim, obstacles, radius, *true)
        assert np.all(bound[0] <= true[0] + 1e-15)
        live = pairs_that_may_touch(bound[0])
        grad_all, grad_live = np.zeros(3 * n), np.zeros(3 * n)
        all_pairs = pair_buffers(kind, elem, prim)
        energy_all = contact_energy(pos, all_pairs, extra, node_dof, grad_all, np.zeros((1, 1)), 0, 1)
        # the live pairs' gaps evaluated into the bounds themselves, as the minimiser does
        gap, t, normal, point, u = bound
        bounded = pair_buffers(
            kind, elem, prim, gap=gap, t=t, normal=normal, point=point, u=u, end_grad=np.empty((0, 12))
        )
        energy_live = contact_energy_of(live, pos, bounded, extra, node_dof, grad_live, np.zeros((1, 1)), 0, 1)
        assert energy_live == pytest.approx(energy_all, rel=1e-12) and np.allclose(grad_live, grad_all, rtol=1e-12)
        kept.append(len(live))
        touching += int((true[0] < 0.0).sum())
    assert touching > 0 and min(kept) < m  # some pairs touch, and some are left out


def test_the_step_filter_is_the_documented_rule_over_every_pair():
    # approach_fraction passes over pairs whose gap is at least twice the largest node move of the
    # step (they cannot be approached beyond their gap). The fraction must still be the rule written
    # out over every pair and node: min(1, reach / |step of a node|, allowed / approach of a pair),
    # with allowed = max(gap, half a radius; a tenth for segments crossing cables), but no nearer the
    # surface than MIN_SEPARATION radii, and the approach
    # the step of the pair's contact point (both sides' for a cable's own segments) against its normal.
    from solver_core.contact.contact import CAP_NODE, CAP_SEG, MIN_SEPARATION, PLANE, SELF_NODE, SELF_SEG, TRI_NODE
    from solver_core.contact.pair_geometry import pair_gaps
    from solver_core.contact.step_limits import approach_fraction

    rng = np.random.default_rng(11)
    obstacles, pos, radius, reach, _self_gap, kind, elem, prim = crumpled_mesh_crossing_cable_and_loop(rng)
    n, m = len(pos), len(kind)
    gap, t, normal, _point, u = np.empty(m), np.empty(m), np.empty((m, 3)), np.empty((m, 3)), np.zeros(m)
    pair_gaps(np.arange(m), pos, kind, elem, prim, obstacles, radius, gap, t, normal, _point, u)
    node_dof = np.arange(n) * 3
    node_kind = np.isin(kind, [PLANE, TRI_NODE, CAP_NODE, SELF_NODE])
    cut_by_pairs = 0
    for size in (1e-3 * R, 1e-2 * R, 0.1 * R, 0.5 * R, 2.0 * R, 20.0 * R):
        for trial in range(6):
            step = rng.normal(size=(n, 3))
            if trial % 2:
                # every node the whole size, mostly down (at the mesh, and the upper leg at the lower
                # one): pairs whose gaps are a good part of the step decide the fraction
                step = 0.1 * step / np.linalg.norm(step, axis=1, keepdims=True) - [0.0, 0.0, 1.0]
                step *= size / np.linalg.norm(step, axis=1, keepdims=True)
            else:
                step *= rng.uniform(0.0, size, (n, 1)) / np.linalg.norm(step, axis=1, keepdims=True)
            expected = min(1.0, float(np.min(reach / np.maximum(np.linalg.norm(step, axis=1), 1e-300))))
            by_pairs = 1.0
            approaches = np.empty(m)
            for p in range(m):
                i = elem[p]
                w = 0.0 if node_kind[p] else t[p]
                approach = -((1.0 - w) * step[i] + w * step[min(i + 1, n - 1)]) @ normal[p]
                if kind[p] in (SELF_NODE, SELF_SEG):
                    approach += ((1.0 - u[p]) * step[prim[p]] + u[p] * step[prim[p] + 1]) @ normal[p]
                approaches[p] = approach
                slack = 0.1 if kind[p] in (CAP_SEG, SELF_SEG) else 0.5
                # never nearer a surface than MIN_SEPARATION radii
                allowed = max(0.0, min(max(gap[p], slack * R), gap[p] + (1.0 - MIN_SEPARATION) * R))
                if approach > allowed:
                    by_pairs = min(by_pairs, allowed / approach)
            cut_by_pairs += by_pairs < expected
            expected = min(expected, by_pairs)
            pairs = pair_buffers(kind, elem, prim, gap=gap, t=t, u=u, normal=normal, approach=np.empty(m))
            interactions = contact_interactions(obstacles, radius, np.zeros(n), np.zeros(n - 1), 0.0, reach)
            fraction = approach_fraction(step.ravel(), node_dof, pairs, interactions)
            approach = pairs.approach
            assert fraction == pytest.approx(expected, rel=1e-12, abs=1e-300)
            # the approaches handed on: each pair's own, or 0 where it cannot reach its gap
            assert np.all((np.abs(approach - approaches) <= 1e-12 * R) | ((approach == 0.0) & (approaches <= gap)))
    assert cut_by_pairs > 0  # the pairs, not only the reach, decided some of the steps


def test_the_newton_matrix_follows_a_pressed_crossing_as_the_cables_slide():
    # Cable B crosses cable A between nodes, pressed into it; the crossing's segment pair alone acts.
    # Sliding B along A or along itself, or turning it about a node, leaves the crossing as
    # deep as it was but moves where it lies on both segments, and so how its load is shared by
    # their nodes: the band plus low-rank matrix times such a move must be the change of the contact
    # forces (central differences of the gradient), as for pressing the cables together. With
    # k n n^T alone it was zero along the slides.
    from solver_core.contact.contact import SELF_SEG
    from solver_core.contact.contact_energy import contact_energy_of
    from solver_core.contact.low_rank_coupling import self_coupling
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    s, k = 0.01, 1.26e8
    obstacles = ObstacleSet().kernel_arrays()
    ts = np.array([-1.5, -0.5, 0.5, 1.5]) * s
    angle, depth = 0.6, 3e-5
    along = np.array([np.cos(angle), np.sin(angle), 0.0])
    a = np.column_stack((ts, np.zeros(4), np.zeros(4)))
    b = np.array([0.3 * s, 0.0, 2 * R - depth]) + (ts[:, None] + 0.2 * s) * along
    pos = np.vstack((a, b))
    n, bw = 8, 23
    radii, node_len, seg_len, node_dof = np.full(n, R), np.full(n, s), np.full(n - 1, s), np.arange(n) * 3
    kind, elem, prim = find_pairs(pos, radii, np.repeat([0, 1], 4), 2 * R, obstacles, 2)
    m = len(kind)
    interactions = contact_interactions(obstacles, radii, node_len, seg_len, k)
    pairs = pair_buffers(kind, elem, prim)  # every evaluation writes into these buffers
    no_end_grad = pairs._replace(end_grad=np.empty((0, 12)))

    def gradient(x):
        g = np.zeros(3 * n)
        contact_energy_of(np.arange(m), x, no_end_grad, interactions, node_dof, g, np.zeros((1, 1)), 0, 1)
        return g

    band = np.zeros((3 * n, bw + 1))
    contact_energy_of(np.arange(m), pos, pairs, interactions, node_dof, np.zeros(3 * n), band, bw, 2)
    layout = dof_layout(node_dof, np.zeros(3 * n, dtype=np.bool_))

    def coupling(exact, store, last_spans):
        return self_coupling(pos, layout, pairs, interactions, exact, store, last_spans)

    Ut, k_c, k_s, spans, store = coupling(True, np.zeros((0, 3 * n)), np.zeros((0, 4), dtype=np.int64))
    for row, (lo, hi, lo2, hi2) in zip(Ut, spans):  # the Woodbury products look only there
        outside = np.ones(3 * n, dtype=bool)
        outside[lo:hi] = outside[lo2:hi2] = False
        assert not row[outside].any()
    # U^T lives in a store kept from call to call: a call with fewer rows (Gauss-Newton, no curvature)
    # leaves nothing of the last call's behind, and builds what a call with a new store builds
    gauss_newton = coupling(False, np.zeros((0, 3 * n)), np.zeros((0, 4), dtype=np.int64))
    again = coupling(False, store.copy(), spans)
    assert len(again[0]) == len(gauss_newton[0]) < len(Ut)
    assert np.array_equal(again[0], gauss_newton[0]) and not again[4][len(again[0]) :].any()
    assert len(k_c) == 1 and len(k_s) == 4  # the pair's coupling, and its curvature as whole terms
    H = dense_newton_matrix(band, bw, Ut, k_c, k_s)
    acting = np.abs(pairs.force).sum(axis=1) > 0.0
    assert acting.sum() == 1 and kind[acting][0] == SELF_SEG
    slide_along_a, slide_along_b, turn_b, press = (np.zeros((n, 3)) for _ in range(4))
    slide_along_a[4:, 0] = 1.0
    slide_along_b[4:] = along
    pivot = b[1]  # a turn about the crossing itself would move nothing
    turn_b[4:, :2] = np.column_stack((-(b[:, 1] - pivot[1]), b[:, 0] - pivot[0])) / s
    press[4:, 2] = -1.0
    h = 2e-7
    for v in (slide_along_a, slide_along_b, turn_b, press):
        fd = (gradient(pos + h * v) - gradient(pos - h * v)) / (2 * h)
        assert np.linalg.norm(fd) > 1e-3 * k * depth  # the forces do move
        assert np.linalg.norm(H @ v.ravel() - fd) < 2e-3 * np.linalg.norm(fd)
