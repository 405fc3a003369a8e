# SPDX-License-Identifier: GPL-3.0-or-later
"""Quasi-static equilibrium by a trust-region (Levenberg-Marquardt) Newton method.

The whole iteration runs inside one compiled call so that a warm re-solve costs a few
microseconds of overhead. Each iteration assembles the exact gradient and the banded Hessian
(``rod_energy``), solves (H + lambda D) delta = -g by banded Cholesky, and accepts the step when
the actual energy decrease matches enough of the quadratic model's prediction; lambda grows
when the Hessian is indefinite (buckling, compressed starts) or the model was poor, and
shrinks back to a pure Newton step near the solution. Convergence is judged on the force and
moment residual of every free degree of freedom, never on the step size.
"""

import math

import numpy as np

from ._jit import njit
from .banded import band_cholesky, low_rank_factor, low_rank_solve
from .contact import (
    SELF_NODE,
    SELF_SEG,
    approach_fraction,
    contact_energy_of,
    evaluate_reachable,
    find_pairs,
    friction_energy,
    lower_gaps,
    pair_gaps,
    pair_moves,
    pair_nodes,
    pairs_that_may_touch,
    plunge_step_length,
    segment_pair_curvature,
)
from .crossing import step_crosses_triangles
from .mounts import compliant_energy, sliding_crossings, sliding_energy
from .rod_energy import rod_energy, rod_gradient_hessian, rod_strains, strain_jacobian_transpose
from .rotations import quat_retract, quat_to_matrix
from .stability import STABILITY_SHIFT, factor_shifted, negative_curvature_direction

CONVERGED = 0
MAX_ITERATIONS = 1
STALLED = 2
NOT_FINITE = 3
UNSTABLE = 4
PENETRATING = 5  # set by equilibrium once stiffer contact no longer helps

STATUS_TEXT = {
    CONVERGED: "converged",
    MAX_ITERATIONS: "iteration limit reached before the residual met the tolerance",
    STALLED: "no step could reduce the energy (trust region collapsed)",
    NOT_FINITE: "the state became non-finite",
    UNSTABLE: "the equilibrium found is unstable (a saddle) and no descent from it was found",
    PENETRATING: "the cable stays inside an obstacle however stiff the contact (is a holder inside one?)",
}

# Largest rotation increment of one Newton step (rad); beyond it the quadratic model of the
# rotation retraction is poor, so the step is refused and the trust region shrinks.
MAX_ROTATION_STEP = 1.0
# A step cut short by contact (contact.approach_fraction) to less than this fraction is refused and the
# trust region shrinks instead: a direction that runs into an obstacle at once is a poor one.
MIN_STEP_FRACTION = 0.1
# A Gauss-Newton step whose actual gain exceeds this multiple of the predicted one makes the next
# iteration with an indefinite Hessian damp the exact Hessian rather than fall back to Gauss-Newton.
GN_OVERESTIMATE = 1.9
# Leaving a saddle: the first trial along the negative-curvature direction moves the farthest node by
# this fraction of the cable's length (or turns a section by ESCAPE_FIRST_TURN rad), later trials
# double it while the energy keeps falling; at most MAX_ESCAPES saddles are left per call.
ESCAPE_FIRST_MOVE = 1e-3
ESCAPE_FIRST_TURN = 0.01
ESCAPE_LARGEST_MOVE = 0.25
MAX_ESCAPES = 20
# A rejected step whose contact, friction and mount energy rose by more than this multiple of the
# predicted gain failed on contact, not on stretch: no geodesic correction is tried for it.
CONTACT_RISE = 4.0


@njit
def _constrained_residual(grad, fixed, dof_tol):
    worst = 0.0
    for i in range(grad.shape[0]):
        if fixed[i]:
            grad[i] = 0.0
        else:
            r = abs(grad[i]) / dof_tol[i]
            if not (r <= worst):  # also catches NaN
                worst = r
    return worst


@njit
def _couple_work(quat, rot_dof, rot_couple, load_factor, delta, R):
    """Work of the world couples over a body-frame rotation step: sum M . (R dtheta)."""
    work = 0.0
    for r in range(quat.shape[0]):
        if rot_couple[r, 0] == 0.0 and rot_couple[r, 1] == 0.0 and rot_couple[r, 2] == 0.0:
            continue
        quat_to_matrix(quat[r], R)
        g0 = rot_dof[r]
        for k in range(3):
            spatial = R[k, 0] * delta[g0] + R[k, 1] * delta[g0 + 1] + R[k, 2] * delta[g0 + 2]
            work += load_factor * rot_couple[r, k] * spatial
    return work


@njit
def _prepare_system(band, bw, fixed, damping):
    """Dirichlet rows and columns for fixed dofs; Marquardt scaling from the diagonal."""
    n_dof = fixed.shape[0]
    dmax = 0.0
    for i in range(n_dof):
        if fixed[i]:
            for c in range(bw + 1):
                band[i, c] = 0.0
            band[i, bw] = 1.0
        else:
            d = abs(band[i, bw])
            if d > dmax:
                dmax = d
    for i in range(n_dof):
        if fixed[i]:
            damping[i] = 0.0
            continue
        for c in range(bw):
            j = i - (bw - c)
            if j >= 0 and fixed[j]:
                band[i, c] = 0.0
        damping[i] = max(abs(band[i, bw]), 1e-10 * dmax)


@njit
def _retract(pos, quat, node_dof, rot_dof, delta, scale, out_pos, out_quat, rot_step):
    """out = state moved by scale * delta: positions linearly, rotations by q * exp(theta / 2)."""
    for n in range(pos.shape[0]):
        a0 = node_dof[n]
        for k in range(3):
            out_pos[n, k] = pos[n, k] + scale * delta[a0 + k]
    for r in range(quat.shape[0]):
        g0 = rot_dof[r]
        for k in range(3):
            rot_step[k] = scale * delta[g0 + k]
        quat_retract(quat[r], rot_step, out_quat[r])


@njit
def _extra_terms(
    pos,
    quat,
    node_dof,
    rot_dof,
    extra,
    kind,
    elem,
    prim,
    live,
    sl_seg,
    sl_t,
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
    """Energy (and in mode 1/2 gradient and Gauss-Newton Hessian) of contact (the pairs ``live``),
    friction and mounts."""
    (
        obstacles,
        cparams,
        node_len,
        seg_len,
        fr_active,
        fr_normal,
        fr_force,
        fr_anchor,
        fr_mu,
        sl_point,
        sl_axis,
        sl_stiff,
        cc_node,
        cc_rot,
        cc_centre,
        cc_quat,
        cc_K,
        _sl_part,
        node_radius,
        _node_part,
    ) = extra
    energy = 0.0
    if live.shape[0] > 0:
        energy += contact_energy_of(
            live,
            pos,
            kind,
            elem,
            prim,
            obstacles,
            node_radius,
            cparams[1],
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
        )
    if fr_active.shape[0] > 0:
        energy += friction_energy(
            pos, node_dof, fr_active, fr_normal, fr_force, fr_anchor, fr_mu, cparams[4], grad, band, bw, mode
        )
    if sl_point.shape[0] > 0:
        offset = np.empty(sl_point.shape[0])
        energy += sliding_energy(pos, node_dof, sl_point, sl_axis, sl_stiff, sl_seg, sl_t, grad, band, bw, mode, offset)
    if cc_node.shape[0] > 0:
        deflection = np.empty((cc_node.shape[0], 6))
        energy += compliant_energy(
            pos, quat, node_dof, rot_dof, cc_node, cc_rot, cc_centre, cc_quat, cc_K, grad, band, bw, mode, deflection
        )
    return energy


@njit
def _assemble(
    pos,
    quat,
    node_dof,
    rot_dof,
    rest_len,
    stretch_stiff,
    joint_a,
    joint_b,
    joint_len,
    bend_stiff,
    node_force,
    rot_couple,
    load_factor,
    grad,
    band,
    bw,
    geometric,
    extra,
    kind,
    elem,
    prim,
    live,
    sl_seg,
    sl_t,
    pair_gap,
    pair_t,
    pair_normal,
    pair_point,
    pair_u,
    pair_force,
    pair_end_grad,
):
    """Gradient and Hessian of everything; returns the energy of the terms beyond the rod's own."""
    rod_gradient_hessian(
        pos,
        quat,
        node_dof,
        rot_dof,
        rest_len,
        stretch_stiff,
        joint_a,
        joint_b,
        joint_len,
        bend_stiff,
        node_force,
        rot_couple,
        load_factor,
        grad,
        band,
        bw,
        True,
        geometric,
    )
    mode = 2 if geometric > 0.0 else 3  # (a conditional among 30 arguments is more than numba can compile)
    return _extra_terms(
        pos,
        quat,
        node_dof,
        rot_dof,
        extra,
        kind,
        elem,
        prim,
        live,
        sl_seg,
        sl_t,
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
    )


@njit
def _node_moves(delta, node_dof):
    node_move = np.empty(node_dof.shape[0])
    for n in range(node_dof.shape[0]):
        a = node_dof[n]
        node_move[n] = math.sqrt(delta[a] ** 2 + delta[a + 1] ** 2 + delta[a + 2] ** 2)
    return node_move


@njit
def _trial_extra(pos, quat, node_dof, rot_dof, extra, kind, elem, prim, nodes, sl_seg, sl_t, pair_gap, delta):
    """Energy beyond the rod's at a trial state pos = current + delta, over the pairs that can act there.

    A pair whose gap at the current state exceeds the move of its nodes in the step (of both sides'
    nodes for self-contact) is still open at the trial state and adds nothing, so only the others
    are evaluated: near convergence the step is tiny and that is a few pairs per node instead of
    every triangle within the search reach. (``pair_gap`` may hold lower bounds of gaps: see
    minimise_rod_energy.)
    """
    moves = np.empty(kind.shape[0])
    pair_moves(nodes, _node_moves(delta, node_dof), moves)
    acts = np.zeros(kind.shape[0], dtype=np.bool_)
    n_live = 0
    for p in range(kind.shape[0]):
        if not (pair_gap[p] >= moves[p]):
            acts[p] = True
            n_live += 1
    kind_l = np.empty(n_live, dtype=np.int64)
    elem_l = np.empty(n_live, dtype=np.int64)
    prim_l = np.empty(n_live, dtype=np.int64)
    j = 0
    for p in range(kind.shape[0]):
        if acts[p]:
            kind_l[j], elem_l[j], prim_l[j] = kind[p], elem[p], prim[p]
            j += 1
    return _extra_terms(
        pos,
        quat,
        node_dof,
        rot_dof,
        extra,
        kind_l,
        elem_l,
        prim_l,
        np.arange(n_live),
        sl_seg,
        sl_t,
        np.zeros(1),
        np.zeros((1, 1)),
        0,
        0,
        np.empty(n_live),
        np.empty(n_live),
        np.empty((n_live, 3)),
        np.empty((n_live, 3)),
        np.empty(n_live),
        np.empty((n_live, 3)),
        np.empty((0, 12)),
    )


@njit
def _acting_self_pair(kind, pair_force, p):
    return (kind[p] == SELF_NODE or kind[p] == SELF_SEG) and (
        pair_force[p, 0] != 0.0 or pair_force[p, 1] != 0.0 or pair_force[p, 2] != 0.0
    )


@njit
def _self_coupling(
    kind,
    elem,
    prim,
    pair_t,
    pair_u,
    pair_normal,
    pair_force,
    pair_end_grad,
    node_dof,
    fixed,
    stiffness,
    node_len,
    seg_len,
    pos,
    pair_gap,
    exact,
    store,
    last_spans,
):
    """Self-contact couples the two touching legs of a cable (or two cables solved together), far
    apart in the band. Per acting self pair, the Gauss-Newton Hessian k J J^T with J = (a on this
    side, b on the other) has its blocks k a a^T and k b b^T inside the band (contact_energy adds
    them); the rest, k (a b^T + b a^T), is returned as a pair of rows of U^T (a, b, fixed dofs
    zeroed) with the pair stiffness k in k_c. With ``exact`` (the exact Hessian, not Gauss-Newton),
    a segment pair between cables also subtracts the coupling of its ends' power mean,
    -k (a_M b_M^T + b_M a_M^T) (``pair_end_grad``, another pair of rows), and adds its distance's
    curvature (contact.segment_pair_curvature) as whole terms k v v^T, one row each after all the
    pairs, k in k_s: they are small beside the pair's k n n^T, so the band stays as stiff as it
    was, and a row instead of two keeps the capacitance matrix small. Returns Ut, k_c, k_s, the
    rows' spans (low_rank_factor) and ``store``.

    U^T is dense (n_dof columns per row) for the band solves, and allocating and clearing ~100 rows
    of ten cables' dofs per iteration costs page faults: it lives in ``store`` (grown when too small)
    from call to call, and only what the last call wrote (``last_spans``) is cleared."""
    acting = np.empty(kind.shape[0], dtype=np.int64)
    n_act = 0
    for p in range(kind.shape[0]):
        if _acting_self_pair(kind, pair_force, p):
            acting[n_act] = p
            n_act += 1
    # each acting segment pair's curvature terms (up to 4), computed once for counting and filling
    curv_vecs = np.empty((4 * n_act, 12))
    curv_coefs = np.empty(4 * n_act)
    curv_count = np.zeros(n_act, dtype=np.int64)
    n_c, n_s = 0, 0
    for a in range(n_act):
        p = acting[a]
        n_c += 2 if _has_end_grad(pair_end_grad, p) else 1
        if exact and kind[p] == SELF_SEG:
            curv_count[a] = _curvature_terms(
                elem,
                prim,
                pair_t,
                pair_u,
                pair_gap,
                stiffness,
                seg_len,
                pos,
                p,
                curv_vecs[4 * a : 4 * a + 4],
                curv_coefs[4 * a : 4 * a + 4],
            )
            n_s += curv_count[a]
    for r in range(last_spans.shape[0]):
        for piece in range(2):
            for d in range(last_spans[r, 2 * piece], last_spans[r, 2 * piece + 1]):
                store[r, d] = 0.0
    if store.shape[0] < 2 * n_c + n_s:
        store = np.zeros((max(2 * n_c + n_s, 2 * store.shape[0]), fixed.shape[0]))
    Ut = store[: 2 * n_c + n_s]
    k_c = np.empty(n_c)
    k_s = np.empty(n_s)
    spans = np.zeros((2 * n_c + n_s, 4), dtype=np.int64)
    j, q = 0, 0
    for a in range(n_act):
        p = acting[a]
        i, c, t, u = elem[p], prim[p], pair_t[p], pair_u[p]
        node_pair = kind[p] == SELF_NODE
        last = i if node_pair else i + 1
        k_c[j] = stiffness * (node_len[i] if node_pair else seg_len[i])
        for k in range(3):
            nk = pair_normal[p, k]
            if node_pair:
                Ut[2 * j, node_dof[i] + k] = -nk
            else:
                Ut[2 * j, node_dof[i] + k] = -(1.0 - t) * nk
                Ut[2 * j, node_dof[i + 1] + k] = -t * nk
            Ut[2 * j + 1, node_dof[c] + k] = (1.0 - u) * nk
            Ut[2 * j + 1, node_dof[c + 1] + k] = u * nk
        _fix_row(Ut, 2 * j, i, last, -1, -1, node_dof, fixed, spans)
        _fix_row(Ut, 2 * j + 1, c, c + 1, -1, -1, node_dof, fixed, spans)
        j += 1
        if _has_end_grad(pair_end_grad, p):
            k_c[j] = -stiffness * seg_len[i]
            for k in range(3):
                Ut[2 * j, node_dof[i] + k] = pair_end_grad[p, k]
                Ut[2 * j, node_dof[i + 1] + k] = pair_end_grad[p, 3 + k]
                Ut[2 * j + 1, node_dof[c] + k] = pair_end_grad[p, 6 + k]
                Ut[2 * j + 1, node_dof[c + 1] + k] = pair_end_grad[p, 9 + k]
            _fix_row(Ut, 2 * j, i, i + 1, -1, -1, node_dof, fixed, spans)
            _fix_row(Ut, 2 * j + 1, c, c + 1, -1, -1, node_dof, fixed, spans)
            j += 1
        for m in range(4 * a, 4 * a + curv_count[a]):
            r = 2 * n_c + q
            k_s[q] = curv_coefs[m]
            for k in range(3):
                Ut[r, node_dof[i] + k] = curv_vecs[m, k]
                Ut[r, node_dof[i + 1] + k] = curv_vecs[m, 3 + k]
                Ut[r, node_dof[c] + k] = curv_vecs[m, 6 + k]
                Ut[r, node_dof[c + 1] + k] = curv_vecs[m, 9 + k]
            _fix_row(Ut, r, i, i + 1, c, c + 1, node_dof, fixed, spans)
            q += 1
    return Ut, k_c, k_s, spans, store


@njit
def _curvature_terms(elem, prim, pair_t, pair_u, pair_gap, stiffness, seg_len, pos, p, vecs, coefs):
    force = stiffness * seg_len[elem[p]] * max(-pair_gap[p], 0.0)
    return segment_pair_curvature(pos, elem[p], prim[p], pair_t[p], pair_u[p], force, vecs, coefs)


@njit
def _has_end_grad(pair_end_grad, p):
    if pair_end_grad.shape[0] <= p:
        return False
    for k in range(12):
        if pair_end_grad[p, k] != 0.0:
            return True
    return False


@njit
def _fix_row(Ut, row, first, last, first2, last2, node_dof, fixed, spans):
    """Fixed dofs out of a row of U^T (their rows and columns are Dirichlet), and its spans: the
    columns of nodes first..last, and of first2..last2 (-1: none), lower piece first."""
    for piece in range(2):
        a, b = (first, last) if piece == 0 else (first2, last2)
        if a < 0:
            continue
        for n in range(a, b + 1):
            for k in range(3):
                if fixed[node_dof[n] + k]:
                    Ut[row, node_dof[n] + k] = 0.0
    lo, hi = node_dof[first], node_dof[last] + 3
    lo2, hi2 = (node_dof[first2], node_dof[last2] + 3) if first2 >= 0 else (0, 0)
    if first2 >= 0 and lo2 < lo:
        lo, hi, lo2, hi2 = lo2, hi2, lo, hi
    spans[row, 0], spans[row, 1], spans[row, 2], spans[row, 3] = lo, hi, lo2, hi2


@njit
def _largest_move(pos, searched_at):
    move2 = 0.0
    for n in range(pos.shape[0]):
        d2 = (
            (pos[n, 0] - searched_at[n, 0]) ** 2
            + (pos[n, 1] - searched_at[n, 1]) ** 2
            + (pos[n, 2] - searched_at[n, 2]) ** 2
        )
        if not (d2 <= move2):
            move2 = d2
    return math.sqrt(move2)


@njit
def _node_distances(a, b, out):
    for n in range(a.shape[0]):
        out[n] = math.sqrt((a[n, 0] - b[n, 0]) ** 2 + (a[n, 1] - b[n, 1]) ** 2 + (a[n, 2] - b[n, 2]) ** 2)


@njit
def _pair_arrays(n_pairs):
    """Per candidate pair: gap (or a lower bound of it), t, normal, point, u, force, whether it is
    evaluated at the current positions, a work array and the gradient of a crossing's ends
    (contact_energy_of's ``pair_end_grad``). Pairs handed on with a gap bound are
    evaluated once they may touch or a step could reach them; until then the step filter sees a
    zero normal (no approach), which is all it may conclude."""
    return (
        np.zeros(n_pairs),
        np.zeros(n_pairs),
        np.zeros((n_pairs, 3)),
        np.zeros((n_pairs, 3)),
        np.zeros(n_pairs),
        np.zeros((n_pairs, 3)),
        np.ones(n_pairs, dtype=np.bool_),
        np.zeros(n_pairs),
        np.zeros((n_pairs, 12)),
    )


@njit
def _deepest(pair_gap, live):
    depth = 0.0
    for idx in range(live.shape[0]):
        if -pair_gap[live[idx]] > depth:
            depth = -pair_gap[live[idx]]
    return depth


@njit
def _saddle_trial(
    pos,
    quat,
    node_dof,
    rot_dof,
    rest_len,
    stretch_stiff,
    joint_a,
    joint_b,
    joint_len,
    bend_stiff,
    node_force,
    rot_couple,
    load_factor,
    extra,
    kind,
    elem,
    prim,
    nodes,
    sl_seg,
    sl_t,
    pair_gap,
    pair_t,
    pair_normal,
    pair_point,
    pair_u,
    fresh,
    moves,
    approach,
    direction,
    scale,
    use_contact,
    reach,
    obstacles,
    node_radius,
    step,
    trial_pos,
    trial_quat,
):
    """Energy after the step scale * direction, cut where a contact point would pass its gap; returns
    (energy, the fraction of the step kept)."""
    n_dof = step.shape[0]
    for i in range(n_dof):
        step[i] = scale * direction[i]
    fraction = 1.0
    if use_contact and kind.shape[0] > 0:
        pair_moves(nodes, _node_moves(step, node_dof), moves)
        evaluate_reachable(
            pos,
            kind,
            elem,
            prim,
            obstacles,
            node_radius,
            moves,
            pair_gap,
            pair_t,
            pair_normal,
            pair_point,
            pair_u,
            fresh,
        )
        fraction = approach_fraction(
            step, node_dof, kind, elem, prim, pair_gap, pair_t, pair_u, pair_normal, node_radius, reach, approach
        )
        for i in range(n_dof):
            step[i] *= fraction
    rot_step = np.empty(3)
    _retract(pos, quat, node_dof, rot_dof, step, 1.0, trial_pos, trial_quat, rot_step)
    trial = rod_energy(
        trial_pos, trial_quat, rest_len, stretch_stiff, joint_a, joint_b, joint_len, bend_stiff, node_force, load_factor
    )
    trial += _trial_extra(
        trial_pos, trial_quat, node_dof, rot_dof, extra, kind, elem, prim, nodes, sl_seg, sl_t, pair_gap, step
    )
    trial -= _couple_work(quat, rot_dof, rot_couple, load_factor, step, np.empty((3, 3)))
    return trial, fraction


@njit
def _leave_saddle(
    pos,
    quat,
    node_dof,
    rot_dof,
    rest_len,
    stretch_stiff,
    joint_a,
    joint_b,
    joint_len,
    bend_stiff,
    node_force,
    rot_couple,
    load_factor,
    extra,
    kind,
    elem,
    prim,
    nodes,
    sl_seg,
    sl_t,
    pair_gap,
    pair_t,
    pair_normal,
    pair_point,
    pair_u,
    fresh,
    moves,
    approach,
    grad,
    direction,
    energy,
    use_contact,
    reach,
):
    """Move the state (in place) downhill along a direction of negative curvature; returns whether
    the energy fell.

    The direction's sign follows the slope; a symmetric saddle (slope zero) is left the way the
    direction came out of stability.negative_curvature_direction, which does not depend on
    round-off. Trial steps double from a small one while the energy keeps falling; each is cut
    where it would carry a contact point through its gap, as Newton steps are."""
    n_dof = grad.shape[0]
    slope = 0.0
    for i in range(n_dof):
        slope += grad[i] * direction[i]
    if slope > 0.0:
        for i in range(n_dof):
            direction[i] = -direction[i]
    length = 0.0
    for i in range(rest_len.shape[0]):
        length += rest_len[i]
    largest_move = 0.0
    for m in _node_moves(direction, node_dof):
        largest_move = max(largest_move, m)
    largest_turn = 0.0
    for r in range(rot_dof.shape[0]):
        g0 = rot_dof[r]
        largest_turn = max(
            largest_turn, math.sqrt(direction[g0] ** 2 + direction[g0 + 1] ** 2 + direction[g0 + 2] ** 2)
        )
    scale = np.inf
    if largest_move > 0.0:
        scale = ESCAPE_FIRST_MOVE * length / largest_move
    if largest_turn > 0.0:
        scale = min(scale, ESCAPE_FIRST_TURN / largest_turn)
    if not (scale < np.inf):
        return False
    obstacles, node_radius = extra[0], extra[18]
    step = np.empty(n_dof)
    trial_pos = np.empty_like(pos)
    trial_quat = np.empty_like(quat)
    best_scale, best_energy = 0.0, energy
    noise = 1e-13 * abs(energy)
    for sign in (1.0, -1.0):
        # larger steps while the energy keeps falling; if the first does not lower it, the quartic
        # terms (a buckle that must stretch the cable) already dominate there: smaller ones
        first = _saddle_trial(
            pos,
            quat,
            node_dof,
            rot_dof,
            rest_len,
            stretch_stiff,
            joint_a,
            joint_b,
            joint_len,
            bend_stiff,
            node_force,
            rot_couple,
            load_factor,
            extra,
            kind,
            elem,
            prim,
            nodes,
            sl_seg,
            sl_t,
            pair_gap,
            pair_t,
            pair_normal,
            pair_point,
            pair_u,
            fresh,
            moves,
            approach,
            direction,
            sign * scale,
            use_contact,
            reach,
            obstacles,
            node_radius,
            step,
            trial_pos,
            trial_quat,
        )
        growing = first[0] < energy - noise
        trial_scale = scale
        if not growing:
            for _k in range(40):
                trial_scale *= 0.5
                trial_energy, fraction = _saddle_trial(
                    pos,
                    quat,
                    node_dof,
                    rot_dof,
                    rest_len,
                    stretch_stiff,
                    joint_a,
                    joint_b,
                    joint_len,
                    bend_stiff,
                    node_force,
                    rot_couple,
                    load_factor,
                    extra,
                    kind,
                    elem,
                    prim,
                    nodes,
                    sl_seg,
                    sl_t,
                    pair_gap,
                    pair_t,
                    pair_normal,
                    pair_point,
                    pair_u,
                    fresh,
                    moves,
                    approach,
                    direction,
                    sign * trial_scale,
                    use_contact,
                    reach,
                    obstacles,
                    node_radius,
                    step,
                    trial_pos,
                    trial_quat,
                )
                if trial_energy < energy - noise:
                    break
            else:
                continue
        # then as far along the ray as the energy keeps falling (finer once the first trial overshot)
        factor = 2.0 if growing else math.sqrt(2.0)
        for _k in range(40):
            trial_energy, fraction = _saddle_trial(
                pos,
                quat,
                node_dof,
                rot_dof,
                rest_len,
                stretch_stiff,
                joint_a,
                joint_b,
                joint_len,
                bend_stiff,
                node_force,
                rot_couple,
                load_factor,
                extra,
                kind,
                elem,
                prim,
                nodes,
                sl_seg,
                sl_t,
                pair_gap,
                pair_t,
                pair_normal,
                pair_point,
                pair_u,
                fresh,
                moves,
                approach,
                direction,
                sign * trial_scale,
                use_contact,
                reach,
                obstacles,
                node_radius,
                step,
                trial_pos,
                trial_quat,
            )
            if not (trial_energy < best_energy):
                break
            best_scale, best_energy = sign * trial_scale * fraction, trial_energy
            if fraction < 1.0:
                break
            trial_scale *= factor
            if (
                trial_scale * largest_move > ESCAPE_LARGEST_MOVE * length
                or trial_scale * largest_turn > MAX_ROTATION_STEP
            ):
                break
        if best_energy < energy - noise:
            break
    if not (best_energy < energy - noise):
        return False
    rot_step = np.empty(3)
    for i in range(n_dof):
        step[i] = best_scale * direction[i]
    _retract(pos, quat, node_dof, rot_dof, step, 1.0, trial_pos, trial_quat, rot_step)
    if use_contact and step_crosses_triangles(pos, trial_pos, extra[19], obstacles):
        return False
    if use_contact and kind.shape[0] > 0:
        node_move = np.empty(pos.shape[0])
        _node_distances(trial_pos, pos, node_move)
        pair_moves(nodes, node_move, moves)
        lower_gaps(moves, pair_gap, fresh)
    pos[:, :] = trial_pos
    quat[:, :] = trial_quat
    return True


@njit
def minimise_rod_energy(
    pos,
    quat,
    node_dof,
    rot_dof,
    fixed,
    dof_tol,
    bw,
    rest_len,
    stretch_stiff,
    joint_a,
    joint_b,
    joint_len,
    bend_stiff,
    node_force,
    rot_couple,
    load_factor,
    max_iterations,
    extra,
    searched_from,
    kind,
    elem,
    prim,
    gap_from,
    gaps_at,
    leave_saddles,
):
    """Newton-minimise in place. Returns (status, iterations, residual / tolerance, energy, deepest
    penetration of a candidate contact pair, and the candidate pairs with where they were searched
    and lower bounds of their gaps at the final positions).

    ``searched_from``, ``kind``, ``elem``, ``prim``: candidate pairs from an earlier call with the same
    obstacles (find_pairs within twice the reach at ``searched_from``), used until a node has moved a
    reach from there; searched_from = inf searches at once. ``gap_from``: lower bounds of their gaps
    at the positions ``gaps_at`` (empty: none), carried to the start as along the steps.

    The candidates are searched again once a node has moved a reach. Between searches every pair
    within reach of a node or a plain face is among them (also every pair of two cables' segments),
    but a segment pair against a capsule or a facet is found only where its closest point lies inside
    the segment (or on a sharp edge) at the search, and may have got there since: the deepest
    penetration is then not the whole story (see ``Interactions.pairs_depend_on_search``).

    A state whose gradient vanishes converges only if it is a minimum (stability.py); a saddle ends
    the call with UNSTABLE, or with ``leave_saddles`` is left along its direction of most negative
    curvature and the minimisation goes on. A dead couple is not conservative in three dimensions
    (Ziegler): with one, the energy's Hessian says nothing about stability and is not tested."""
    n_dof = fixed.shape[0]
    test_stability = True
    for r in range(rot_couple.shape[0]):
        for k in range(3):
            if rot_couple[r, k] != 0.0:
                test_stability = False
    grad = np.zeros(n_dof)
    grad_stability = np.zeros(n_dof)
    band = np.zeros((n_dof, bw + 1))
    work = np.empty((n_dof, bw + 1))
    delta = np.empty(n_dof)
    rhs = np.empty(n_dof)
    damping = np.empty(n_dof)
    trial_pos = np.empty_like(pos)
    trial_quat = np.empty_like(quat)
    R = np.empty((3, 3))
    rhs_trial = np.empty(n_dof)
    correction = np.empty(n_dof)
    corrected_pos = np.empty_like(pos)
    corrected_quat = np.empty_like(quat)
    rot_step = np.empty(3)
    s_zero = np.empty((rest_len.shape[0], 3))
    s_plus = np.empty_like(s_zero)
    s_minus = np.empty_like(s_zero)
    b_zero = np.empty((joint_a.shape[0], 3))
    b_plus = np.empty_like(b_zero)
    b_minus = np.empty_like(b_zero)
    obstacles, cparams = extra[0], extra[1]
    use_contact = cparams[5] > 0.0
    reach, self_gap = cparams[2], int(cparams[3])
    sl_part, node_radius, node_part = extra[17], extra[18], extra[19]
    searched_at = searched_from.copy()
    n_pairs = kind.shape[0]
    pair_gap, pair_t, pair_normal, pair_point, pair_u, pair_force, fresh, moves, end_grad = _pair_arrays(n_pairs)
    live = np.zeros(0, dtype=np.int64)
    nodes = pair_nodes(kind, elem, prim)
    node_move = np.empty(pos.shape[0])
    if use_contact and _largest_move(pos, searched_at) <= reach:
        if gap_from.shape[0] == n_pairs and gaps_at.shape[0] == pos.shape[0]:
            _node_distances(pos, gaps_at, node_move)
            pair_moves(nodes, node_move, moves)
            for p in range(n_pairs):
                pair_gap[p] = gap_from[p] - moves[p]
                fresh[p] = False
        else:
            pair_gaps(
                np.arange(n_pairs),
                pos,
                kind,
                elem,
                prim,
                obstacles,
                node_radius,
                pair_gap,
                pair_t,
                pair_normal,
                pair_point,
                pair_u,
            )
    sl_point, sl_axis = extra[9], extra[10]
    sl_seg = np.full(sl_point.shape[0], -1, dtype=np.int64)
    sl_t = np.zeros(sl_point.shape[0])
    lam = 0.0
    escapes = 0
    gn_overestimates = False
    ratio = np.inf
    energy = np.inf
    ut_store = np.zeros((0, n_dof))
    Ut = ut_store[:0]
    approach = np.empty(n_pairs)  # per pair, how far a step carries it towards its primitive
    fraction = 1.0
    k_c = np.zeros(0)
    k_s = np.zeros(0)
    S = np.empty((0, 0))
    piv = np.empty(0, dtype=np.int64)
    spans = np.empty((0, 4), dtype=np.int64)
    panels = (np.zeros(0), np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64))  # Z (low_rank_factor)
    for it in range(max_iterations + 1):
        if use_contact and not (_largest_move(pos, searched_at) <= reach):
            # Candidate pairs within twice the reach, searched again once some node has moved a
            # reach since: with steps no longer than a reach, they hold everything a step can touch,
            # and no step may carry a contact point through its gap, so nothing is missed or tunnelled.
            kind, elem, prim = find_pairs(pos, node_radius, node_part, 2.0 * reach, obstacles, self_gap)
            searched_at[:, :] = pos
            n_pairs = kind.shape[0]
            (pair_gap, pair_t, pair_normal, pair_point, pair_u, pair_force, fresh, moves, end_grad) = _pair_arrays(
                n_pairs
            )
            pair_gaps(
                np.arange(n_pairs),
                pos,
                kind,
                elem,
                prim,
                obstacles,
                node_radius,
                pair_gap,
                pair_t,
                pair_normal,
                pair_point,
                pair_u,
            )
            nodes = pair_nodes(kind, elem, prim)
        # Only pairs that may touch are evaluated: every other gap is known to be positive, from a
        # lower bound carried along the steps since it was last evaluated (a gap shrinks at most as
        # fast as its nodes move). A cable resting on a fine mesh has some 50 triangles within the
        # search reach of a node, and a handful touching it.
        live = pairs_that_may_touch(pair_gap)
        for idx in range(live.shape[0]):
            fresh[live[idx]] = True
        if sl_point.shape[0] > 0:
            # held fixed within this iteration
            sliding_crossings(pos, node_part, sl_point, sl_axis, sl_part, sl_seg, sl_t)
        energy = rod_energy(
            pos, quat, rest_len, stretch_stiff, joint_a, joint_b, joint_len, bend_stiff, node_force, load_factor
        )
        extra_energy = _assemble(
            pos,
            quat,
            node_dof,
            rot_dof,
            rest_len,
            stretch_stiff,
            joint_a,
            joint_b,
            joint_len,
            bend_stiff,
            node_force,
            rot_couple,
            load_factor,
            grad,
            band,
            bw,
            1.0,
            extra,
            kind,
            elem,
            prim,
            live,
            sl_seg,
            sl_t,
            pair_gap,
            pair_t,
            pair_normal,
            pair_point,
            pair_u,
            pair_force,
            end_grad,
        )
        energy += extra_energy
        if not math.isfinite(energy):
            return NOT_FINITE, it, ratio, energy, _deepest(pair_gap, live), searched_at, kind, elem, prim, pair_gap
        ratio = _constrained_residual(grad, fixed, dof_tol)
        if not math.isfinite(ratio):
            return NOT_FINITE, it, ratio, energy, _deepest(pair_gap, live), searched_at, kind, elem, prim, pair_gap
        if ratio <= 1.0 and not test_stability:
            return CONVERGED, it, ratio, energy, _deepest(pair_gap, live), searched_at, kind, elem, prim, pair_gap
        if ratio <= 1.0:
            # The exact Hessian (as assembled) decides first. Where it is indefinite, the test is made
            # again with contact's Gauss-Newton part k n n^T instead of the penalty's exact terms,
            # whose distance curvature has saddles the real surfaces lack (a node over the edge
            # between two coplanar facets, two cables crossing at a node): only a state unstable in
            # both is a saddle. A cable balanced on a smooth convex obstacle is therefore not told
            # from a stable one (README, Known limits).
            stable = False
            for contact_model in range(2):
                if contact_model == 1:
                    rod_gradient_hessian(
                        pos,
                        quat,
                        node_dof,
                        rot_dof,
                        rest_len,
                        stretch_stiff,
                        joint_a,
                        joint_b,
                        joint_len,
                        bend_stiff,
                        node_force,
                        rot_couple,
                        load_factor,
                        grad_stability,
                        band,
                        bw,
                        True,
                        1.0,
                    )
                    _extra_terms(
                        pos,
                        quat,
                        node_dof,
                        rot_dof,
                        extra,
                        kind,
                        elem,
                        prim,
                        live,
                        sl_seg,
                        sl_t,
                        grad_stability,
                        band,
                        bw,
                        3,
                        pair_gap,
                        pair_t,
                        pair_normal,
                        pair_point,
                        pair_u,
                        pair_force,
                        end_grad,
                    )
                _prepare_system(band, bw, fixed, damping)
                if self_gap > 0:
                    Ut, k_c, k_s, spans, ut_store = _self_coupling(
                        kind,
                        elem,
                        prim,
                        pair_t,
                        pair_u,
                        pair_normal,
                        pair_force,
                        end_grad,
                        node_dof,
                        fixed,
                        cparams[1],
                        extra[2],
                        extra[3],
                        pos,
                        pair_gap,
                        contact_model == 0,
                        ut_store,
                        spans,
                    )
                if S.shape[0] != Ut.shape[0]:
                    S = np.empty((Ut.shape[0], Ut.shape[0]))
                    piv = np.empty(Ut.shape[0], dtype=np.int64)
                stable, _panels = factor_shifted(band, bw, damping, STABILITY_SHIFT, work, Ut, k_c, k_s, S, piv, spans)
                if stable or not use_contact:
                    break
            if stable:
                return CONVERGED, it, ratio, energy, _deepest(pair_gap, live), searched_at, kind, elem, prim, pair_gap
            left = False
            if leave_saddles and it < max_iterations and escapes < MAX_ESCAPES:
                curvature = negative_curvature_direction(
                    band, bw, damping, fixed, Ut, k_c, k_s, work, S, piv, spans, delta
                )
                if approach.shape[0] != n_pairs:
                    approach = np.empty(n_pairs)
                if curvature < 0.0:
                    left = _leave_saddle(
                        pos,
                        quat,
                        node_dof,
                        rot_dof,
                        rest_len,
                        stretch_stiff,
                        joint_a,
                        joint_b,
                        joint_len,
                        bend_stiff,
                        node_force,
                        rot_couple,
                        load_factor,
                        extra,
                        kind,
                        elem,
                        prim,
                        nodes,
                        sl_seg,
                        sl_t,
                        pair_gap,
                        pair_t,
                        pair_normal,
                        pair_point,
                        pair_u,
                        fresh,
                        moves,
                        approach,
                        grad,
                        delta,
                        energy,
                        use_contact,
                        reach,
                    )
            if not left:
                return UNSTABLE, it, ratio, energy, _deepest(pair_gap, live), searched_at, kind, elem, prim, pair_gap
            escapes += 1
            lam = 0.0
            continue
        if it == max_iterations:
            break
        _prepare_system(band, bw, fixed, damping)
        for i in range(n_dof):
            rhs[i] = -grad[i]
        if self_gap > 0:
            Ut, k_c, k_s, spans, ut_store = _self_coupling(
                kind,
                elem,
                prim,
                pair_t,
                pair_u,
                pair_normal,
                pair_force,
                end_grad,
                node_dof,
                fixed,
                cparams[1],
                extra[2],
                extra[3],
                pos,
                pair_gap,
                True,
                ut_store,
                spans,
            )
        rod_strains(pos, quat, rest_len, joint_a, joint_b, s_zero, b_zero)
        exact = True
        accepted = False
        rebuild = False
        for attempt in range(60):
            if rebuild:
                # the Gauss-Newton matrix
                geometric = 1.0 if exact else 0.0
                _assemble(
                    pos,
                    quat,
                    node_dof,
                    rot_dof,
                    rest_len,
                    stretch_stiff,
                    joint_a,
                    joint_b,
                    joint_len,
                    bend_stiff,
                    node_force,
                    rot_couple,
                    load_factor,
                    grad,
                    band,
                    bw,
                    geometric,
                    extra,
                    kind,
                    elem,
                    prim,
                    live,
                    sl_seg,
                    sl_t,
                    pair_gap,
                    pair_t,
                    pair_normal,
                    pair_point,
                    pair_u,
                    pair_force,
                    end_grad,
                )
                _prepare_system(band, bw, fixed, damping)
                for i in range(n_dof):
                    if fixed[i]:
                        grad[i] = 0.0
                if self_gap > 0:
                    Ut, k_c, k_s, spans, ut_store = _self_coupling(
                        kind,
                        elem,
                        prim,
                        pair_t,
                        pair_u,
                        pair_normal,
                        pair_force,
                        end_grad,
                        node_dof,
                        fixed,
                        cparams[1],
                        extra[2],
                        extra[3],
                        pos,
                        pair_gap,
                        exact,
                        ut_store,
                        spans,
                    )
                rebuild = False
            m_c = Ut.shape[0]
            if S.shape[0] != m_c:
                S = np.empty((m_c, m_c))
                piv = np.empty(m_c, dtype=np.int64)
            for i in range(n_dof):
                for c in range(bw + 1):
                    work[i, c] = band[i, c]
                work[i, bw] += lam * damping[i]
            if not band_cholesky(work, bw):
                if exact and gn_overestimates and lam < 1.0:
                    # the last Gauss-Newton steps were half as long as they could be (rho ~ 2: the
                    # model's curvature twice the true one along them, the cable slowly sliding or
                    # rolling over into a compressed shape): damp the exact Hessian instead
                    lam = max(10.0 * lam, 1e-6)
                elif exact and escapes > 0:
                    # just off a saddle the negative curvature is what carries the state away: the
                    # Gauss-Newton matrix lacks it and creeps back, so the exact one is damped instead
                    lam = max(10.0 * lam, 1e-6)
                elif exact:
                    # Indefinite exact Hessian (compression, buckling): take this iteration's
                    # step from the Gauss-Newton matrix J^T C J instead of damping it away.
                    exact = False
                    rebuild = True
                else:
                    lam = max(10.0 * lam, 1e-8)
                continue
            if m_c > 0:
                factored, panels = low_rank_factor(work, bw, Ut, k_c, k_s, S, piv, spans)
                if not factored:
                    lam = max(10.0 * lam, 1e-8)
                    continue
            low_rank_solve(work, bw, rhs, delta, S, piv, panels)
            for i in range(n_dof):
                if abs(delta[i]) < 1e-150:
                    delta[i] = 0.0  # keep subnormal numbers out of the state (see rotations._flush)
            too_far = False
            for r in range(quat.shape[0]):
                g0 = rot_dof[r]
                step = math.sqrt(delta[g0] ** 2 + delta[g0 + 1] ** 2 + delta[g0 + 2] ** 2)
                if not (step <= MAX_ROTATION_STEP):
                    too_far = True
                    break
            if use_contact and not too_far:
                # the pairs this step could reach must have their true normal for the filter
                pair_moves(nodes, _node_moves(delta, node_dof), moves)
                evaluate_reachable(
                    pos,
                    kind,
                    elem,
                    prim,
                    obstacles,
                    node_radius,
                    moves,
                    pair_gap,
                    pair_t,
                    pair_normal,
                    pair_point,
                    pair_u,
                    fresh,
                )
                if approach.shape[0] != n_pairs:
                    approach = np.empty(n_pairs)
                fraction = approach_fraction(
                    delta,
                    node_dof,
                    kind,
                    elem,
                    prim,
                    pair_gap,
                    pair_t,
                    pair_u,
                    pair_normal,
                    node_radius,
                    reach,
                    approach,
                )
                if fraction < MIN_STEP_FRACTION:
                    too_far = True
                elif fraction < 1.0:
                    for i in range(n_dof):
                        delta[i] *= fraction
            if too_far:
                lam = max(4.0 * lam, 1e-6)
                continue
            # the model's curvature delta^T H delta from the system just solved, (H + lam D) delta = -g
            slope = 0.0
            damped = 0.0
            for i in range(n_dof):
                slope -= grad[i] * delta[i]
                damped += damping[i] * delta[i] * delta[i]
            # (a step cut to a fraction f of delta: f^2 delta^T H delta = f slope - lam D-norm^2)
            curvature = min(fraction, 1.0) * slope - lam * damped
            predicted = slope - 0.5 * curvature
            shortened = False
            for _length in range(2):
                _retract(pos, quat, node_dof, rot_dof, delta, 1.0, trial_pos, trial_quat, rot_step)
                trial_extra_energy = _trial_extra(
                    trial_pos,
                    trial_quat,
                    node_dof,
                    rot_dof,
                    extra,
                    kind,
                    elem,
                    prim,
                    nodes,
                    sl_seg,
                    sl_t,
                    pair_gap,
                    delta,
                )
                trial_energy = trial_extra_energy + rod_energy(
                    trial_pos,
                    trial_quat,
                    rest_len,
                    stretch_stiff,
                    joint_a,
                    joint_b,
                    joint_len,
                    bend_stiff,
                    node_force,
                    load_factor,
                )
                couple = _couple_work(quat, rot_dof, rot_couple, load_factor, delta, R)
                actual = energy - (trial_energy - couple)
                # In the last digits the energy difference is noise; a step whose predicted gain is
                # within that noise is a pure Newton refinement and is taken (the residual decides).
                noise = 1e-13 * (abs(energy) + abs(trial_energy))
                rho = actual / predicted if predicted > 0.0 else -1.0
                # A step that plunged nodes into facets they did not touch (open pairs are not in the
                # model) fails on contact energy: the correction below mends stretch and cannot help it,
                # so it is not paid for (a tenth of a step's time on a faceted mesh) ...
                plunged = trial_extra_energy - extra_energy > CONTACT_RISE * predicted
                if shortened or not (use_contact and plunged and predicted > noise and rho <= 1e-4):
                    break
                # ... and instead of damping and factorising again (several times per iteration on a
                # faceted mesh), the step is shortened to where the facet (or other cables') pairs
                # it closes balance the model (contact.plunge_step_length)
                alpha, penalty = plunge_step_length(
                    approach, fraction, kind, elem, pair_gap, fresh, cparams[1], extra[2], extra[3], slope, curvature
                )
                if not (alpha < 1.0):
                    break
                for i in range(n_dof):
                    delta[i] *= alpha
                predicted = alpha * slope - 0.5 * alpha * alpha * curvature - penalty
                shortened = True
            if not math.isfinite(trial_energy):
                lam = max(10.0 * lam, 1e-6)
                continue
            if predicted > noise and rho < 0.25 and not plunged:
                # Geodesic acceleration (Transtrum & Sethna 2012): a rotation step moves nodes along
                # tangents of circles, which stretches stiff segments by O(step^2) and spoils the
                # quadratic model. The second directional derivative of the strains along the step,
                # r_vv, gives the correction a = -(H + lambda D)^-1 J^T W r_vv with the factor at hand;
                # the step delta + a/2 follows the curved valley of nearly inextensible rods.
                for sgn in range(2):
                    h = 0.1 if sgn == 0 else -0.1
                    _retract(pos, quat, node_dof, rot_dof, delta, h, corrected_pos, corrected_quat, rot_step)
                    if sgn == 0:
                        rod_strains(corrected_pos, corrected_quat, rest_len, joint_a, joint_b, s_plus, b_plus)
                    else:
                        rod_strains(corrected_pos, corrected_quat, rest_len, joint_a, joint_b, s_minus, b_minus)
                for i in range(rest_len.shape[0]):
                    for k in range(3):
                        s_plus[i, k] = (s_plus[i, k] - 2.0 * s_zero[i, k] + s_minus[i, k]) / 0.01
                for j in range(joint_a.shape[0]):
                    for k in range(3):
                        b_plus[j, k] = (b_plus[j, k] - 2.0 * b_zero[j, k] + b_minus[j, k]) / 0.01
                strain_jacobian_transpose(
                    pos,
                    quat,
                    node_dof,
                    rot_dof,
                    rest_len,
                    stretch_stiff,
                    joint_a,
                    joint_b,
                    joint_len,
                    bend_stiff,
                    s_plus,
                    b_plus,
                    rhs_trial,
                )
                for i in range(n_dof):
                    rhs_trial[i] = 0.0 if fixed[i] else -rhs_trial[i]
                low_rank_solve(work, bw, rhs_trial, correction, S, piv, panels)
                for i in range(n_dof):
                    correction[i] = delta[i] + 0.5 * correction[i]
                within = True
                if use_contact:
                    pair_moves(nodes, _node_moves(correction, node_dof), moves)
                    evaluate_reachable(
                        pos,
                        kind,
                        elem,
                        prim,
                        obstacles,
                        node_radius,
                        moves,
                        pair_gap,
                        pair_t,
                        pair_normal,
                        pair_point,
                        pair_u,
                        fresh,
                    )
                    within = (
                        approach_fraction(
                            correction,
                            node_dof,
                            kind,
                            elem,
                            prim,
                            pair_gap,
                            pair_t,
                            pair_u,
                            pair_normal,
                            node_radius,
                            reach,
                            approach,
                        )
                        >= 1.0
                    )
                if within:
                    _retract(pos, quat, node_dof, rot_dof, correction, 1.0, corrected_pos, corrected_quat, rot_step)
                    corrected_energy = rod_energy(
                        corrected_pos,
                        corrected_quat,
                        rest_len,
                        stretch_stiff,
                        joint_a,
                        joint_b,
                        joint_len,
                        bend_stiff,
                        node_force,
                        load_factor,
                    )
                    corrected_energy += _trial_extra(
                        corrected_pos,
                        corrected_quat,
                        node_dof,
                        rot_dof,
                        extra,
                        kind,
                        elem,
                        prim,
                        nodes,
                        sl_seg,
                        sl_t,
                        pair_gap,
                        correction,
                    )
                    corrected_couple = _couple_work(quat, rot_dof, rot_couple, load_factor, correction, R)
                    corrected_rho = (energy - (corrected_energy - corrected_couple)) / predicted
                    if math.isfinite(corrected_energy) and corrected_rho > rho:
                        trial_pos[:, :] = corrected_pos
                        trial_quat[:, :] = corrected_quat
                        trial_energy = corrected_energy
                        rho = corrected_rho
            # A step whose predicted gain is negative beyond the noise goes uphill in the model itself: the
            # band is positive definite, but the low-rank terms (-k grad M grad M^T, the distance
            # curvature) can make the whole matrix indefinite along the step. It is refused like a poor
            # one: taken, it would raise the energy.
            if abs(predicted) <= noise or rho > 1e-4:
                if use_contact and step_crosses_triangles(pos, trial_pos, node_part, obstacles):
                    # through a face between the pairs the filter saw (crossing.py): refused
                    lam = max(4.0 * lam, 1e-6)
                    continue
                if not exact:
                    gn_overestimates = rho > GN_OVERESTIMATE
                if shortened:
                    # the model held for a part of the step only: the trust region shrinks as for a
                    # rejected step, so that the next direction turns away from what it ran into
                    lam = max(4.0 * lam, 1e-8)
                elif abs(predicted) <= noise or rho > 0.75:
                    # a model this good: back towards a pure Newton step at once. On faceted meshes
                    # the model breaks at every facet crossing, and a slow return of lambda after
                    # each break made the re-settling of a cable dozens of damped steps long.
                    lam = lam / 100.0 if lam > 1e-6 else 0.0
                elif rho < 0.25:
                    lam = max(3.0 * lam, 1e-8)
                if use_contact:
                    _node_distances(trial_pos, pos, node_move)
                    pair_moves(nodes, node_move, moves)
                    lower_gaps(moves, pair_gap, fresh)
                pos[:, :] = trial_pos
                quat[:, :] = trial_quat
                accepted = True
                break
            lam = max(4.0 * lam, 1e-8)
        if not accepted:
            return STALLED, it, ratio, energy, _deepest(pair_gap, live), searched_at, kind, elem, prim, pair_gap
    return (
        MAX_ITERATIONS,
        max_iterations,
        ratio,
        energy,
        _deepest(pair_gap, live),
        searched_at,
        kind,
        elem,
        prim,
        pair_gap,
    )


@njit
def gradient_at(
    pos,
    quat,
    node_dof,
    rot_dof,
    n_dof,
    rest_len,
    stretch_stiff,
    joint_a,
    joint_b,
    joint_len,
    bend_stiff,
    node_force,
    rot_couple,
    load_factor,
):
    """Energy gradient including the fixed degrees of freedom (they hold the reactions)."""
    grad = np.zeros(n_dof)
    band = np.zeros((1, 1))
    rod_gradient_hessian(
        pos,
        quat,
        node_dof,
        rot_dof,
        rest_len,
        stretch_stiff,
        joint_a,
        joint_b,
        joint_len,
        bend_stiff,
        node_force,
        rot_couple,
        load_factor,
        grad,
        band,
        0,
        False,
        1.0,
    )
    return grad
