# SPDX-License-Identifier: GPL-3.0-or-later
"""The analytic gradient and Hessian against finite differences of the energy itself."""

import numpy as np
import pytest
from helpers.cases import cable, case, harness
from helpers.kernel_inputs import contact_interactions, pair_buffers
from helpers.matrices import dense_from_band

from solver_core.maths.rotations import quat_retract
from solver_core.rod.rod_energy import rod_energy, rod_gradient_hessian


def _perturbed_model(rng, **cable_overrides):
    h = harness(case(cable(**cable_overrides)))
    session = next(iter(h.cables.values()))
    model, state = session.model, session.state.copy()
    state.positions += rng.normal(scale=0.01, size=state.positions.shape)
    for r in range(state.quats.shape[0]):
        q = state.quats[r].copy()
        quat_retract(q, rng.normal(scale=0.4, size=3), state.quats[r])
    return model, state


def _energy_along(model, state, delta, node_force):
    """E(x + dx, q * exp(dtheta / 2)): the function whose derivatives the kernels claim to compute."""
    pos = state.positions.copy()
    quat = state.quats.copy()
    for n in range(model.n_nodes):
        pos[n] += delta[model.node_dof[n] : model.node_dof[n] + 3]
    for r in range(model.n_rotations):
        quat_retract(state.quats[r], delta[model.rot_dof[r] : model.rot_dof[r] + 3], quat[r])
    return rod_energy(pos, quat, model.arrays()._replace(node_force=node_force), 1.0)


LAYOUTS = {
    "clamped-free": {"segments": 5},
    # pre-formed (rest_shape.py): the energy measured from a rest curvature and twist, or a rest route
    "pre-formed": {"segments": 5, "rest": {"curvature": [3.0, -5.0], "twist": 4.0}},
    "rest-route": {
        "segments": 6,
        "rest": {"route": [[0.0, 0.0, 0.0], [0.1, 0.0, 0.02], [0.2, 0.05, 0.0], [0.25, 0.1, -0.05]]},
        "clips": [
            {
                "s": 0.15,
                "kind": "rotating",
                "length": 0.0,
                "frame": {"position": [0.14, 0.01, 0.0], "tangent": [1, 0, 0]},
            }
        ],
    },
    "clamped-clamped": {
        "segments": 5,
        "end": {"position": [0.2, 0.05, 0.02], "tangent": [0, 1, 0], "normal": [0, 0, 1]},
    },
    "point-clip": {
        "segments": 6,
        "clips": [
            {
                "s": 0.15,
                "kind": "rotating",
                "length": 0.0,
                "frame": {"position": [0.14, 0.01, 0.0], "tangent": [1, 0, 0]},
            }
        ],
    },
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("geometric", [1.0, 0.0])
def test_gradient_and_hessian_match_finite_differences(rng, layout, geometric):
    model, state = _perturbed_model(rng, **LAYOUTS[layout])
    node_force = model.node_force * 50.0  # make the load terms count
    grad = np.zeros(model.n_dof)
    band = np.zeros((model.n_dof, model.bw + 1))
    rod = model.arrays()._replace(node_force=node_force, rot_couple=np.zeros((model.n_rotations, 3)))
    rod_gradient_hessian(state.positions, state.quats, rod, 1.0, grad, band, model.bw, True, geometric)

    h = 1e-6
    fd_grad = np.empty(model.n_dof)
    for i in range(model.n_dof):
        e = np.zeros(model.n_dof)
        e[i] = h
        fd_grad[i] = (_energy_along(model, state, e, node_force) - _energy_along(model, state, -e, node_force)) / (
            2 * h
        )
    assert np.abs(grad - fd_grad).max() <= 1e-7 * np.abs(grad).max()

    H = dense_from_band(band, model.bw)
    h = 1e-4
    fd_H = np.empty_like(H)
    for i in range(model.n_dof):
        for j in range(i, model.n_dof):
            ei = np.zeros(model.n_dof)
            ej = np.zeros(model.n_dof)
            ei[i] = h
            ej[j] = h
            f = [_energy_along(model, state, d, node_force) for d in (ei + ej, ei - ej, -ei + ej, -ei - ej)]
            fd_H[i, j] = fd_H[j, i] = (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
    if geometric == 1.0:
        assert np.abs(H - fd_H).max() <= 1e-6 * np.abs(H).max()
    else:
        # Gauss-Newton: positive semi-definite, and it differs from the exact Hessian
        assert np.linalg.eigvalsh(H).min() >= -1e-9 * np.abs(H).max()
        assert np.abs(H - fd_H).max() > 1e-4 * np.abs(H).max()


def test_hessian_is_banded_as_declared(rng):
    model, state = _perturbed_model(rng, **LAYOUTS["point-clip"])
    # every stretch and bend element's dofs fit in the declared half bandwidth
    for i in range(model.n_segments):
        dofs = [model.node_dof[i], model.rot_dof[i], model.node_dof[i + 1]]
        assert max(dofs) + 2 - min(dofs) <= model.bw
    for a, b in zip(model.joint_a, model.joint_b):
        assert abs(model.rot_dof[a] - model.rot_dof[b]) + 2 <= model.bw


def test_a_groups_gradient_and_hessian_are_its_cables_own_in_their_band_width(rng):
    # Cables solved together (rod_group.py) are one model whose cables are joined by links without
    # stiffness. Reference: each cable's own gradient and Hessian, assembled alone; the group's must
    # be them, block by block, with nothing between the blocks, in the band width of a single cable
    # (8 for cables without point clips: the frames at the ends sit outside the segments' dofs).
    from solver_core.solve.rod_group import join_models

    parts = [
        _perturbed_model(rng, **LAYOUTS[layout]) for layout in ("clamped-clamped", "clamped-free", "clamped-clamped")
    ]
    group = join_models([m for m, _ in parts], [s for _, s in parts])
    joined = group.join_states([s for _, s in parts])
    assert [m.bw for m, _ in parts] == [8, 8, 8] and group.bw == 8

    def assemble(model, state):
        grad, band = np.zeros(model.n_dof), np.zeros((model.n_dof, model.bw + 1))
        rod_gradient_hessian(state.positions, state.quats, model.arrays(), 1.0, grad, band, model.bw, True, 1.0)
        return grad, dense_from_band(band, model.bw)

    grad, H = assemble(group, joined)
    expected_grad, expected_H = np.zeros_like(grad), np.zeros_like(H)
    start = 0
    for model, state in parts:
        own_grad, own_H = assemble(model, state)
        block = slice(start, start + model.n_dof)
        expected_grad[block], expected_H[block, block] = own_grad, own_H
        start += model.n_dof + 3  # the link's rotation follows each cable but the last
    assert start - 3 == group.n_dof
    assert np.allclose(grad, expected_grad, rtol=0.0, atol=1e-12 * np.abs(expected_grad).max())
    assert np.allclose(H, expected_H, rtol=0.0, atol=1e-12 * np.abs(expected_H).max())


def test_strain_jacobian_transpose_of_the_strains_is_the_elastic_gradient(rng):
    # J^T W r with r = the current strains must reproduce dE/dq (without loads): the kernel used for
    # geodesic acceleration and the energy gradient describe the same strains and weights.
    from solver_core.rod.rod_energy import rod_strains, strain_jacobian_transpose

    model, state = _perturbed_model(rng, **LAYOUTS["point-clip"])
    stretch = np.empty((model.n_segments, 3))
    bend = np.empty((len(model.joint_a), 3))
    rod_strains(state.positions, state.quats, model.arrays(), stretch, bend)
    jtwr = np.empty(model.n_dof)
    strain_jacobian_transpose(state.positions, state.quats, model.arrays(), stretch, bend, jtwr)
    grad = np.zeros(model.n_dof)
    zero = np.zeros_like(model.node_force)
    unloaded = model.arrays()._replace(node_force=zero, rot_couple=np.zeros((model.n_rotations, 3)))
    rod_gradient_hessian(state.positions, state.quats, unloaded, 1.0, grad, np.zeros((1, 1)), 0, False, 1.0)
    assert np.allclose(jtwr, grad, rtol=0, atol=1e-12 * np.abs(grad).max())


def test_contact_gradient_and_hessian_match_finite_differences(rng):
    # node against a mesh vertex, edge and face and against another cable's segment; plus segment pairs
    from solver_core.contact.contact_energy import contact_energy
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    model, state = _perturbed_model(rng, **LAYOUTS["clamped-free"])
    x = state.positions

    def tangent_plane(k):
        """Unit normal perpendicular to the segments at node k, and two in-plane directions."""
        a = x[k + 1] - x[k] if k + 1 < len(x) else x[k] - x[k - 1]
        b = x[k] - x[k - 1]
        n = np.cross(a, b if np.linalg.norm(np.cross(a, b)) > 1e-9 else [0.3, 0.5, 0.7])
        n /= np.linalg.norm(n)
        u = np.cross(n, [1.0, 0.0, 0.0])
        u /= np.linalg.norm(u)
        return n, u, np.cross(n, u)

    triangles = []
    # node 1: its projection lies beyond an edge (edge region); node 2: inside a face; node 4: near a vertex
    for k, offsets in (
        (1, [(0.004, -0.01), (0.004, 0.01), (0.02, 0.0)]),
        (2, [(-0.01, -0.01), (0.01, -0.01), (0.0, 0.015)]),
        (4, [(0.003, 0.002), (0.02, 0.01), (0.02, -0.005)]),
    ):
        n, u, v = tangent_plane(k)
        base = x[k] - 0.0015 * n
        triangles.append([base + a * u + b * v for a, b in offsets])
    tri = np.array(triangles)
    n, u, v = tangent_plane(3)
    caps_a = np.array([x[3] - 0.0028 * n - 0.02 * u])  # a cable passing beside node 3
    caps_b = np.array([x[3] - 0.0028 * n + 0.02 * u])
    obstacles = ObstacleSet(triangles=tri, triangle_owner=np.zeros(3, dtype=np.int64)).with_capsules(
        caps_a, caps_b, np.array([0.0015])
    )
    arrays = obstacles.kernel_arrays()
    radius, stiffness = 0.002, 1e6
    radii, parts = np.full(len(x), radius), np.zeros(len(x), dtype=np.int64)
    node_len = np.full(model.n_nodes, 0.05)
    kind, elem, prim = find_pairs(x, radii, parts, 0.01, arrays, 3)
    extra = contact_interactions(arrays, radii, node_len, model.rest_len, stiffness)

    def evaluate(pos, grad, band, bw, mode):
        return contact_energy(pos, pair_buffers(kind, elem, prim), extra, model.node_dof, grad, band, bw, mode)

    def energy(pos):
        return evaluate(pos, np.zeros(1), np.zeros((1, 1)), 0, 0)

    grad = np.zeros(model.n_dof)
    band = np.zeros((model.n_dof, model.bw + 1))
    evaluate(x, grad, band, model.bw, 2)
    assert energy(x) > 0.0  # some pairs really are in contact
    h = 1e-7
    node_dofs = np.concatenate([np.arange(model.node_dof[k], model.node_dof[k] + 3) for k in range(model.n_nodes)])
    H = dense_from_band(band, model.bw)
    for i in node_dofs:
        e = np.zeros_like(x)
        e.flat[list(node_dofs).index(i)] = h
        gp = np.zeros(model.n_dof)
        gm = np.zeros(model.n_dof)
        evaluate(x + e, gp, np.zeros((1, 1)), 0, 1)
        evaluate(x - e, gm, np.zeros((1, 1)), 0, 1)
        assert abs((energy(x + e) - energy(x - e)) / (2 * h) - grad[i]) <= 1e-6 * np.abs(grad).max()
        column = (gp - gm) / (2 * h)
        # node pairs: exact Hessian (with curvature); segment pairs: Gauss-Newton only
        assert np.abs(column[node_dofs] - H[node_dofs, i]).max() <= 0.05 * np.abs(H).max()


def test_self_contact_gradient_moves_both_legs_and_matches_finite_differences():
    # A cable that runs out along x and comes back 3 mm above its own first leg (radius 2 mm): the
    # crossing legs overlap by 1 mm. The energy depends on both legs; so must the gradient.
    from solver_core.contact.contact import SELF_NODE, SELF_SEG
    from solver_core.contact.contact_energy import contact_energy
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    x = np.array(
        [
            [0.00, 0.0, 0.0],
            [0.01, 0.0, 0.0],
            [0.02, 0.0, 0.0],
            [0.03, 0.0, 0.0],
            [0.04, 0.0, 0.0],
            [0.05, 0.012, 0.001],
            [0.035, 0.02, 0.003],
            [0.024, 0.006, 0.003],
            [0.021, -0.007, 0.003],
            [0.018, -0.02, 0.003],
        ]
    )
    n = len(x)
    arrays = ObstacleSet().kernel_arrays()
    radius, stiffness = 0.002, 1e6
    radii, parts = np.full(len(x), radius), np.zeros(len(x), dtype=np.int64)
    node_len, seg_len = np.full(n, 0.01), np.linalg.norm(np.diff(x, axis=0), axis=1)
    kind, elem, prim = find_pairs(x, radii, parts, 0.004, arrays, 3)
    extra = contact_interactions(arrays, radii, node_len, seg_len, stiffness)
    node_dof = np.arange(n) * 3

    def evaluate(pos, grad, mode):
        return contact_energy(pos, pair_buffers(kind, elem, prim), extra, node_dof, grad, np.zeros((1, 1)), 0, mode)

    grad = np.zeros(3 * n)
    assert evaluate(x, grad, 1) > 0.0 and set(kind.tolist()) & {SELF_NODE, SELF_SEG}
    lower, upper = grad[3:12].reshape(3, 3), grad[18:27].reshape(3, 3)
    assert lower[:, 2].sum() > 0.0 > upper[:, 2].sum()  # the energy falls as the legs move apart
    h = 1e-8
    for i in range(3 * n):
        e = np.zeros(3 * n)
        e[i] = h
        fd = evaluate(x + e.reshape(n, 3), np.zeros(3 * n), 0) - evaluate(x - e.reshape(n, 3), np.zeros(3 * n), 0)
        assert abs(fd / (2 * h) - grad[i]) <= 1e-6 * np.abs(grad).max()


def test_band_cholesky_matches_numpy_and_refuses_an_indefinite_matrix(rng):
    # Reference: numpy's dense Cholesky factor of the same matrix; the entries of the storage that
    # would lie before column 0 hold garbage (NaN) and must be neither read nor written.
    from solver_core.maths.banded import band_cholesky, band_cholesky_solve

    n, bw = 40, 6
    band = rng.normal(size=(n, bw + 1)) * 0.3
    band[:, bw] = 3.0 + rng.uniform(size=n)
    for i in range(bw):
        band[i, : bw - i] = np.nan
    dense = dense_from_band(np.nan_to_num(band), bw)
    reference = np.linalg.cholesky(dense)
    factor = band.copy()
    assert band_cholesky(factor, bw)
    for i in range(n):
        for j in range(max(0, i - bw), i + 1):
            assert factor[i, bw - (i - j)] == pytest.approx(reference[i, j], rel=1e-12, abs=1e-14)
        assert np.isnan(factor[i, : max(0, bw - i)]).all()
    rhs = rng.normal(size=n)
    out = np.empty(n)
    band_cholesky_solve(factor, bw, rhs, out)
    assert np.allclose(dense @ out, rhs, rtol=1e-12, atol=1e-12)
    # shifted until its lowest eigenvalue is -0.01, it is refused
    indefinite = band.copy()
    indefinite[:, bw] -= np.linalg.eigvalsh(dense).min() + 0.01
    assert np.linalg.eigvalsh(dense_from_band(np.nan_to_num(indefinite), bw)).min() == pytest.approx(-0.01)
    assert not band_cholesky(indefinite, bw)


@pytest.mark.parametrize("blocks", [(60,), (25, 20, 15)])
def test_low_rank_coupling_solve_matches_a_dense_solve(rng, blocks):
    # The Newton step with self-contact: banded B plus k (a b^T + b a^T) per pair, solved through B's
    # band factor (Woodbury) and checked against numpy's dense solve of the assembled matrix. With
    # several blocks B is block diagonal (cables solved together, nothing in the band couples them)
    # and the pairs couple different blocks, as between two cables of a group.
    from solver_core.maths.banded import band_cholesky, independent_blocks, low_rank_factor, low_rank_solve

    n, bw = sum(blocks), 5
    first = np.repeat(np.cumsum((0,) + blocks[:-1]), blocks)  # each row's block start
    dense = np.zeros((n, n))
    for i in range(n):
        for j in range(max(first[i], i - bw), i + 1):
            dense[i, j] = dense[j, i] = rng.normal() * 0.1
    dense += np.eye(n) * (2.0 + np.abs(dense).sum(axis=1).max())
    band = np.zeros((n, bw + 1))
    for i in range(n):
        for j in range(max(0, i - bw), i + 1):
            band[i, bw - (i - j)] = dense[i, j]
    pairs, singles = 4, 3
    m = 2 * pairs + singles
    Ut = np.zeros((m, n))
    for p in range(pairs - 1):
        Ut[2 * p, 3 * p : 3 * p + 3] = rng.normal(size=3)
        Ut[2 * p + 1, 40 + 3 * p : 43 + 3 * p] = rng.normal(size=3)
    Ut[2 * pairs - 2, 22:28] = rng.normal(size=6)  # across the boundary of the first two blocks
    Ut[2 * pairs - 1, 52:55] = rng.normal(size=3)
    # single terms k v v^T, v in two pieces (two cables): far apart, then within one block
    Ut[2 * pairs, 5:11], Ut[2 * pairs, 45:48] = rng.normal(size=6), rng.normal(size=3)
    Ut[2 * pairs + 1, 50:53], Ut[2 * pairs + 1, 12:15] = rng.normal(size=3), rng.normal(size=3)
    Ut[2 * pairs + 2, 2:5], Ut[2 * pairs + 2, 9:12] = rng.normal(size=3), rng.normal(size=3)
    k = rng.uniform(1.0, 5.0, size=pairs)
    k_s = rng.uniform(-0.5, 1.0, size=singles)
    full = dense.copy()
    for p in range(pairs):
        a, b = Ut[2 * p], Ut[2 * p + 1]
        full += k[p] * (np.outer(a, b) + np.outer(b, a))
    for q in range(singles):
        full += k_s[q] * np.outer(Ut[2 * pairs + q], Ut[2 * pairs + q])
    assert band_cholesky(band, bw)
    start, end = independent_blocks(band, bw)
    assert np.array_equal(start, first)
    assert np.array_equal(end, first + np.repeat(blocks, blocks))
    S, piv = np.empty((m, m)), np.empty(m, dtype=np.int64)
    rhs = rng.normal(size=n)
    reference = np.linalg.solve(full, rhs)
    for pieces in (False, True):
        # each row's nonzero columns as one piece, or as two (in either order: the factor sorts
        # them, and merges two that lie in one block)
        spans = np.zeros((m, 4), dtype=np.int64)
        for a, row in enumerate(Ut):
            nonzero = np.flatnonzero(row)
            spans[a, :2] = nonzero[0], nonzero[-1] + 1
        if pieces:
            spans[2 * pairs :, :4] = [[5, 11, 45, 48], [50, 53, 12, 15], [2, 5, 9, 12]]
        factored, panels = low_rank_factor(band, bw, Ut, k, k_s, S, piv, spans)
        assert factored
        out = np.empty(n)
        low_rank_solve(band, bw, rhs, out, S, piv, panels)
        assert np.allclose(out, reference, rtol=1e-10, atol=1e-12)
        assert np.allclose(full @ out, rhs, rtol=1e-10, atol=1e-12)


def test_contact_with_a_sphere_has_the_exact_hessian():
    # A sphere is smooth, so the penalty's Hessian over segment pairs against it is exact: the
    # Gauss-Newton part k grad(d) grad(d)^T plus the distance's curvature -f grad^2(d), including how
    # the closest point moves along the segment. Without the curvature a cable lying over the top of a
    # sphere looked stable (its top is not) and Newton crept as the cable slid round it.
    from solver_core.contact.contact import SPHERE
    from solver_core.contact.contact_energy import contact_energy
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    rng = np.random.default_rng(7)
    # a cable bent over a sphere of radius 0.1, its nodes 0.5 mm inside the cable's surface distance
    angles = np.linspace(-0.6, 0.6, 9)
    x = np.column_stack((0.1 * np.sin(angles), np.zeros_like(angles), 0.1 * np.cos(angles)))
    x *= (0.1 + 0.002 - 0.0005) / 0.1
    x += 1e-3 * rng.standard_normal(x.shape) * np.array([1.0, 1.0, 0.2])
    arrays = ObstacleSet(sphere_centre=np.zeros((1, 3)), sphere_radius=np.array([0.1])).kernel_arrays()
    radii, parts = np.full(len(x), 0.002), np.zeros(len(x), dtype=np.int64)
    node_dof = np.arange(len(x), dtype=np.int64) * 3
    n_dof, bw = 3 * len(x), 5
    seg_len = np.linalg.norm(np.diff(x, axis=0), axis=1)
    node_len = np.full(len(x), seg_len.mean())
    kind, elem, prim = find_pairs(x, radii, parts, 0.01, arrays, 0)
    assert (kind == SPHERE).any()
    extra = contact_interactions(arrays, radii, node_len, seg_len, 1e5)

    def evaluate(pos, mode):
        grad, band = np.zeros(n_dof), np.zeros((n_dof, bw + 1))
        energy = contact_energy(pos, pair_buffers(kind, elem, prim), extra, node_dof, grad, band, bw, mode)
        return energy, grad, dense_from_band(band, bw)

    energy, _, H = evaluate(x, 2)
    assert energy > 0.0
    h = 1e-8
    fd = np.empty((n_dof, n_dof))
    for i in range(n_dof):
        e = np.zeros(n_dof)
        e[i] = h
        fd[:, i] = (evaluate(x + e.reshape(x.shape), 1)[1] - evaluate(x - e.reshape(x.shape), 1)[1]) / (2 * h)
    assert np.abs(fd - H).max() <= 1e-5 * np.abs(H).max()
    # the curvature is what the Gauss-Newton part lacks: it is a real part of the Hessian here
    assert np.abs(H - evaluate(x, 3)[2]).max() < 1e-12 * np.abs(H).max()
