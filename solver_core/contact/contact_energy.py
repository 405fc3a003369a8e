# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact and friction energies with their gradients and banded Hessians (the model: contact.py)."""

import math

import numpy as np

from .._jit import njit
from ..kernel_arrays import PairBuffers
from ..rod.rod_energy import _band_add
from .contact import (
    CAP_NODE,
    CAP_SEG,
    END_POWER,
    PLANE,
    SELF_NODE,
    SELF_SEG,
    SPHERE,
    TRI_NODE,
    TRI_SEG,
)
from .pair_geometry import _curvature_hessian, _sphere_segment_curvature, pair_gaps, pair_geometry


@njit
def contact_energy(pos, pairs, extra, node_dof, grad, band, bw, mode):
    """Penalty energy of every pair (``contact_energy_of`` with all pairs live and no end gradients:
    ``pairs.end_grad`` is left as it is)."""
    every_pair = PairBuffers(
        pairs.kind,
        pairs.elem,
        pairs.prim,
        pairs.nodes,
        pairs.gap,
        pairs.t,
        pairs.normal,
        pairs.point,
        pairs.u,
        pairs.force,
        pairs.fresh,
        pairs.moves,
        pairs.approach,
        np.empty((0, 12)),
    )
    return contact_energy_of(np.arange(pairs.kind.shape[0]), pos, every_pair, extra, node_dof, grad, band, bw, mode)


@njit
def contact_energy_of(live, pos, pairs, extra, node_dof, grad, band, bw, mode):
    """Penalty energy of the pairs ``live`` (indices; the others must be open) of ``pairs``
    (kernel_arrays.PairBuffers), with the obstacles, node radii and lengths, segment rest lengths and
    contact stiffness of ``extra`` (kernel_arrays.InteractionArrays); mode 0: energy only,
    1: + gradient, 2: + gradient and Hessian, 3: + gradient and the Gauss-Newton part of the Hessian
    only (no curvature of the distance, which is negative where a cable presses on an edge and would
    keep the matrix indefinite).

    Per pair, records the gap d - r (negative: penetration), the segment parameter, normal and the
    contact point on the cable. Every pair acts: each term is C1, so the energy stays C1 where a cable
    rests in the folds of a faceted surface (choosing one facet there would put a kink in the gradient
    exactly where the cable lies); near shared edges the contact is locally stiffer, which changes
    only the already tiny penetration. ``pairs.gap`` is the geometric gap of every pair, also of segment
    pairs that do not act (the step filter needs it: a segment must not sweep over an edge its nodes
    hide); ``pairs.force`` is the force a pair exerts on the cable (0 where it is open or does not act).
    ``pairs.end_grad`` (n_pairs, 12, or empty to skip): in mode 2, per acting segment pair between two
    cables, the gradient of the power mean M of its ends over its own two nodes [0:6] and the other
    segment's [6:12]; the newton module couples the two cables by it (its in-band blocks are added here).
    """
    kind, elem, prim = pairs.kind, pairs.elem, pairs.prim
    pair_gap, pair_t, pair_normal, pair_point, pair_u = pairs.gap, pairs.t, pairs.normal, pairs.point, pairs.u
    pair_force, pair_end_grad = pairs.force, pairs.end_grad
    obstacles, node_radius, stiffness = extra.obstacles, extra.node_radius, extra.contact.stiffness
    node_len, seg_len = extra.node_len, extra.seg_len
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
            _sphere_segment_curvature(pos, elem[p], obstacles.sphere_centre[prim[p]], f, node_dof, band, bw)
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
