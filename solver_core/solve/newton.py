# SPDX-License-Identifier: GPL-3.0-or-later
"""Quasi-static equilibrium by a trust-region (Levenberg-Marquardt) Newton method.

The whole iteration runs inside one compiled call so that a warm re-solve costs a few
microseconds of overhead. Each iteration assembles the exact gradient and the banded Hessian
(``rod_energy``), solves (H + lambda D) delta = -g by banded Cholesky, and accepts the step when
the actual energy decrease matches enough of the quadratic model's prediction; lambda grows
when the Hessian is indefinite (buckling, compressed starts) or the model was poor, and
shrinks back to a pure Newton step near the solution. Convergence is judged on the force and
moment residual of every free degree of freedom, never on the step size.

This module is the loop; each iteration's terms are assembled by newton_assembly.py, contact between
cables enters as low-rank terms (low_rank_coupling.py), steps near contacts are limited by
step_limits.py, and a saddle is left along negative curvature by saddle_escape.py.
"""

import math

import numpy as np

from .._jit import njit
from ..contact.crossing import step_crosses_triangles
from ..contact.low_rank_coupling import self_coupling
from ..contact.mounts import sliding_crossings
from ..contact.pair_geometry import pair_gaps
from ..contact.pair_search import find_pairs
from ..contact.step_limits import (
    approach_fraction,
    evaluate_reachable,
    lower_gaps,
    pair_moves,
    pairs_that_may_touch,
    plunge_step_length,
)
from ..kernel_arrays import CandidatePairs, LowRankCoupling, NewtonResult
from ..maths.banded import band_cholesky, low_rank_factor, low_rank_solve
from ..rod.rod_energy import rod_energy, rod_gradient_hessian, rod_strains, strain_jacobian_transpose
from .newton_assembly import (
    MAX_ROTATION_STEP,
    assemble,
    constrained_residual,
    energy_after_step,
    extra_terms,
    node_distances,
    node_moves,
    pair_buffers,
    prepare_system,
    retract,
)
from .saddle_escape import leave_saddle
from .stability import factor_shifted, negative_curvature_direction, stability_shift

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

# A step cut short by contact (step_limits.approach_fraction) to less than this fraction is refused and the
# trust region shrinks instead: a direction that runs into an obstacle at once is a poor one.
MIN_STEP_FRACTION = 0.1
# A Gauss-Newton step whose actual gain exceeds this multiple of the predicted one makes the next
# iteration with an indefinite Hessian damp the exact Hessian rather than fall back to Gauss-Newton.
GN_OVERESTIMATE = 1.9
# A step that would sink a contact deeper than allowed (step_limits.allowed_depth) is halved at most this
# often before the trust region shrinks instead.
MAX_DEPTH_HALVINGS = 6
# At most this many saddles are left per call (saddle_escape.leave_saddle).
MAX_ESCAPES = 20
# A rejected step whose contact, friction and mount energy rose by more than this multiple of the
# predicted gain failed on contact, not on stretch: no geodesic correction is tried for it.
CONTACT_RISE = 4.0


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
def _evaluate(indices, pos, pairs, extra):
    """The gaps, closest points and normals of the pairs ``indices`` at ``pos``."""
    pair_gaps(
        indices,
        pos,
        pairs.kind,
        pairs.elem,
        pairs.prim,
        extra.obstacles,
        extra.node_radius,
        pairs.gap,
        pairs.t,
        pairs.normal,
        pairs.point,
        pairs.u,
    )


@njit
def _result(status, iterations, ratio, energy, depth, searched_at, pairs, pos):
    """The fields of a NewtonResult, as plain tuples (newton_iterations), handing on the pairs with
    lower bounds of their gaps at the positions now."""
    handed = (searched_at, pairs.kind, pairs.elem, pairs.prim, pairs.gap, pos.copy())
    return status, iterations, ratio, energy, depth, handed


@njit
def _deepest(pair_gap, live):
    depth = 0.0
    for idx in range(live.shape[0]):
        if -pair_gap[live[idx]] > depth:
            depth = -pair_gap[live[idx]]
    return depth


def minimise_rod_energy(pos, quat, rod, dof_tol, load_factor, max_iterations, extra, handed, leave_saddles):
    """Newton-minimise the energy of the rod ``rod`` (kernel_arrays.RodArrays) and ``extra``
    (InteractionArrays) in place, to the residual ``dof_tol`` per dof (newton_iterations). Returns a
    NewtonResult."""
    return as_newton_result(
        newton_iterations(pos, quat, rod, dof_tol, load_factor, max_iterations, extra, handed, leave_saddles)
    )


def as_newton_result(out: tuple) -> NewtonResult:
    """newton_iterations' plain tuples as a NewtonResult. The kernel returns no named tuple: numba boxes
    one by calling its class, Python code in which a signal handler can raise (Blender's Cancel sends
    SIGTERM), and the process then crashed (a segfault, measured with numba 0.68); a plain tuple is
    built in C."""
    status, iterations, ratio, energy, depth, handed = out
    return NewtonResult(status, iterations, ratio, energy, depth, CandidatePairs(*handed))


@njit
def newton_iterations(pos, quat, rod, dof_tol, load_factor, max_iterations, extra, handed, leave_saddles):
    """Newton-minimise the energy of the rod ``rod`` (kernel_arrays.RodArrays) and ``extra``
    (InteractionArrays) in place, to the residual ``dof_tol`` per dof. Returns the fields of a
    NewtonResult (as_newton_result): status,
    iterations, residual / tolerance, energy, deepest penetration of a candidate contact pair, and the
    candidate pairs with where they were searched and lower bounds of their gaps at the final positions.

    ``handed`` (CandidatePairs): candidate pairs from an earlier call with the same obstacles
    (find_pairs within twice the reach at ``searched_at``), used until a node has moved a reach from
    there; searched_at = inf searches at once. ``gap_from``: lower bounds of their gaps at the
    positions ``gaps_at`` (empty: none), carried to the start as along the steps.

    The candidates are searched again once a node has moved a reach. Between searches every pair
    within reach of a node or a plain face is among them (also every pair of two cables' segments),
    but a segment pair against a capsule or a facet is found only where its closest point lies inside
    the segment (or on a sharp edge) at the search, and may have got there since: the deepest
    penetration is then not the whole story (see ``Interactions.pairs_depend_on_search``).

    A state whose gradient vanishes converges only if it is a minimum (stability.py); a saddle ends
    the call with UNSTABLE, or with ``leave_saddles`` is left along its direction of most negative
    curvature and the minimisation goes on. A dead couple is not conservative in three dimensions
    (Ziegler): with one, the energy's Hessian says nothing about stability and is not tested."""
    node_dof, rot_dof, fixed, bw = rod.node_dof, rod.rot_dof, rod.fixed, rod.bw
    rest_len, joint_a, rot_couple = rod.rest_len, rod.joint_a, rod.rot_couple
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
    obstacles, contact = extra.obstacles, extra.contact
    use_contact = contact.uses_contact
    reach, self_gap = contact.reach, contact.self_gap
    sl_part, node_radius, node_part = extra.sl_part, extra.node_radius, extra.node_part
    searched_at = handed.searched_at.copy()
    pairs = pair_buffers(handed.kind, handed.elem, handed.prim)
    n_pairs = pairs.kind.shape[0]
    live = np.zeros(0, dtype=np.int64)
    node_move = np.empty(pos.shape[0])
    if use_contact and _largest_move(pos, searched_at) <= reach:
        gap_from, gaps_at = handed.gap_from, handed.gaps_at
        if gap_from.shape[0] == n_pairs and gaps_at.shape[0] == pos.shape[0]:
            node_distances(pos, gaps_at, node_move)
            pair_moves(pairs.nodes, node_move, pairs.moves)
            for p in range(n_pairs):
                pairs.gap[p] = gap_from[p] - pairs.moves[p]
                pairs.fresh[p] = False
        else:
            _evaluate(np.arange(n_pairs), pos, pairs, extra)
    sl_point, sl_axis = extra.sl_point, extra.sl_axis
    sl_seg = np.full(sl_point.shape[0], -1, dtype=np.int64)
    sl_t = np.zeros(sl_point.shape[0])
    lam = 0.0
    escapes = 0
    gn_overestimates = False
    ratio = np.inf
    energy = np.inf
    ut_store = np.zeros((0, n_dof))
    Ut = ut_store[:0]
    fraction = 1.0
    k_c = np.zeros(0)
    k_s = np.zeros(0)
    S = np.empty((0, 0))
    piv = np.empty(0, dtype=np.int64)
    spans = np.empty((0, 4), dtype=np.int64)
    panels = (np.zeros(0), np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64))  # Z (low_rank_factor)
    shift = stability_shift(rest_len)  # of the stability test, for this resolution
    for it in range(max_iterations + 1):
        if use_contact and not (_largest_move(pos, searched_at) <= reach):
            # Candidate pairs within twice the reach, searched again once some node has moved a
            # reach since: with steps no longer than a reach, they hold everything a step can touch,
            # and no step may carry a contact point through its gap, so nothing is missed or tunnelled.
            kind, elem, prim = find_pairs(pos, node_radius, node_part, 2.0 * reach, obstacles, self_gap)
            searched_at[:, :] = pos
            pairs = pair_buffers(kind, elem, prim)
            n_pairs = kind.shape[0]
            _evaluate(np.arange(n_pairs), pos, pairs, extra)
        # Only pairs that may touch are evaluated: every other gap is known to be positive, from a
        # lower bound carried along the steps since it was last evaluated (a gap shrinks at most as
        # fast as its nodes move). A cable resting on a fine mesh has some 50 triangles within the
        # search reach of a node, and a handful touching it.
        live = pairs_that_may_touch(pairs.gap)
        for idx in range(live.shape[0]):
            pairs.fresh[live[idx]] = True
        if sl_point.shape[0] > 0:
            # held fixed within this iteration
            sliding_crossings(pos, node_part, sl_point, sl_axis, sl_part, sl_seg, sl_t)
        energy = rod_energy(pos, quat, rod, load_factor)
        extra_energy = assemble(pos, quat, rod, load_factor, grad, band, 1.0, extra, pairs, live, sl_seg, sl_t)
        energy += extra_energy
        if not math.isfinite(energy):
            return _result(NOT_FINITE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
        ratio = constrained_residual(grad, fixed, dof_tol)
        if not math.isfinite(ratio):
            return _result(NOT_FINITE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
        if ratio <= 1.0 and not test_stability:
            return _result(CONVERGED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
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
                    rod_gradient_hessian(pos, quat, rod, load_factor, grad_stability, band, bw, np.bool_(True), 1.0)
                    extra_terms(pos, quat, rod, extra, pairs, live, sl_seg, sl_t, grad_stability, band, bw, np.int64(3))
                prepare_system(band, bw, fixed, damping)
                if self_gap > 0:
                    Ut, k_c, k_s, spans, ut_store = self_coupling(
                        pos, rod, pairs, extra, contact_model == 0, ut_store, spans
                    )
                if S.shape[0] != Ut.shape[0]:
                    S = np.empty((Ut.shape[0], Ut.shape[0]))
                    piv = np.empty(Ut.shape[0], dtype=np.int64)
                stable, _panels = factor_shifted(band, bw, damping, shift, work, Ut, k_c, k_s, S, piv, spans)
                if stable or not use_contact:
                    break
            if stable:
                return _result(CONVERGED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
            left = False
            if leave_saddles and it < max_iterations and escapes < MAX_ESCAPES:
                curvature = negative_curvature_direction(
                    band, bw, damping, fixed, LowRankCoupling(Ut, k_c, k_s, S, piv, spans), work, shift, delta
                )
                if curvature < 0.0:
                    left = leave_saddle(pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t, grad, delta, energy)
            if not left:
                return _result(UNSTABLE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
            escapes += 1
            lam = 0.0
            continue
        if it == max_iterations:
            break
        prepare_system(band, bw, fixed, damping)
        for i in range(n_dof):
            rhs[i] = -grad[i]
        if self_gap > 0:
            Ut, k_c, k_s, spans, ut_store = self_coupling(pos, rod, pairs, extra, np.bool_(True), ut_store, spans)
        rod_strains(pos, quat, rod, s_zero, b_zero)
        exact = True
        accepted = False
        rebuild = False
        for attempt in range(60):
            if rebuild:
                # the Gauss-Newton matrix
                geometric = 1.0 if exact else 0.0
                assemble(pos, quat, rod, load_factor, grad, band, geometric, extra, pairs, live, sl_seg, sl_t)
                prepare_system(band, bw, fixed, damping)
                for i in range(n_dof):
                    if fixed[i]:
                        grad[i] = 0.0
                if self_gap > 0:
                    Ut, k_c, k_s, spans, ut_store = self_coupling(
                        pos, rod, pairs, extra, np.bool_(exact), ut_store, spans
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
                pair_moves(pairs.nodes, node_moves(delta, node_dof), pairs.moves)
                evaluate_reachable(pos, pairs, extra)
                fraction = approach_fraction(delta, node_dof, pairs, extra)
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
            too_deep = False
            scale = 1.0  # of the step the model was built for
            halvings = 0
            while True:
                trial_energy, couple, trial_extra_energy, too_deep_by = energy_after_step(
                    pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t, delta, trial_pos, trial_quat
                )
                actual = energy - (trial_energy - couple)
                # In the last digits the energy difference is noise; a step whose predicted gain is
                # within that noise is a pure Newton refinement and is taken (the residual decides).
                noise = 1e-13 * (abs(energy) + abs(trial_energy))
                rho = actual / predicted if predicted > 0.0 else -1.0
                # A step that plunged nodes into facets they did not touch (open pairs are not in the
                # model) fails on contact energy: the correction below mends stretch and cannot help it,
                # so it is not paid for (a tenth of a step's time on a faceted mesh) ...
                if too_deep_by > 0.0:
                    # No step sinks an obstacle pair beyond step_limits.depth_limit. The
                    # filter's bound is first order in the contact point, which slides along a segment
                    # as it turns: a step it passed sank a segment 28 % of a radius into a sphere.
                    # Halving keeps the direction; the trust region shrinks after.
                    if halvings == MAX_DEPTH_HALVINGS:
                        too_deep = True
                        break
                    halvings += 1
                    scale *= 0.5
                    for i in range(n_dof):
                        delta[i] *= 0.5
                    predicted = scale * slope - 0.5 * scale * scale * curvature
                    shortened = True
                    continue
                plunged = trial_extra_energy - extra_energy > CONTACT_RISE * predicted
                if shortened or not (use_contact and plunged and predicted > noise and rho <= 1e-4):
                    break
                # ... and instead of damping and factorising again (several times per iteration on a
                # faceted mesh), the step is shortened to where the facet (or other cables') pairs
                # it closes balance the model (step_limits.plunge_step_length)
                alpha, penalty = plunge_step_length(pairs, fraction, extra, slope, curvature)
                if not (alpha < 1.0):
                    break
                for i in range(n_dof):
                    delta[i] *= alpha
                scale = alpha
                predicted = alpha * slope - 0.5 * alpha * alpha * curvature - penalty
                shortened = True
            if too_deep:
                lam = max(4.0 * lam, 1e-6)
                continue
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
                    retract(pos, quat, node_dof, rot_dof, delta, h, corrected_pos, corrected_quat, rot_step)
                    if sgn == 0:
                        rod_strains(corrected_pos, corrected_quat, rod, s_plus, b_plus)
                    else:
                        rod_strains(corrected_pos, corrected_quat, rod, s_minus, b_minus)
                for i in range(rest_len.shape[0]):
                    for k in range(3):
                        s_plus[i, k] = (s_plus[i, k] - 2.0 * s_zero[i, k] + s_minus[i, k]) / 0.01
                for j in range(joint_a.shape[0]):
                    for k in range(3):
                        b_plus[j, k] = (b_plus[j, k] - 2.0 * b_zero[j, k] + b_minus[j, k]) / 0.01
                strain_jacobian_transpose(pos, quat, rod, s_plus, b_plus, rhs_trial)
                for i in range(n_dof):
                    rhs_trial[i] = 0.0 if fixed[i] else -rhs_trial[i]
                low_rank_solve(work, bw, rhs_trial, correction, S, piv, panels)
                for i in range(n_dof):
                    correction[i] = delta[i] + 0.5 * correction[i]
                within = True
                if use_contact:
                    pair_moves(pairs.nodes, node_moves(correction, node_dof), pairs.moves)
                    evaluate_reachable(pos, pairs, extra)
                    within = approach_fraction(correction, node_dof, pairs, extra) >= 1.0
                if within:
                    corrected_energy, corrected_couple, _extra, corrected_too_deep = energy_after_step(
                        pos,
                        quat,
                        rod,
                        load_factor,
                        extra,
                        pairs,
                        sl_seg,
                        sl_t,
                        correction,
                        corrected_pos,
                        corrected_quat,
                    )
                    corrected_rho = (energy - (corrected_energy - corrected_couple)) / predicted
                    if math.isfinite(corrected_energy) and corrected_rho > rho and not corrected_too_deep > 0.0:
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
                    node_distances(trial_pos, pos, node_move)
                    pair_moves(pairs.nodes, node_move, pairs.moves)
                    lower_gaps(pairs.moves, pairs.gap, pairs.fresh)
                pos[:, :] = trial_pos
                quat[:, :] = trial_quat
                accepted = True
                break
            lam = max(4.0 * lam, 1e-8)
        if not accepted:
            return _result(STALLED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
    return _result(MAX_ITERATIONS, max_iterations, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)


@njit
def gradient_at(pos, quat, rod, n_dof, load_factor):
    """Energy gradient including the fixed degrees of freedom (they hold the reactions)."""
    grad = np.zeros(n_dof)
    band = np.zeros((1, 1))
    rod_gradient_hessian(pos, quat, rod, load_factor, grad, band, np.int64(0), np.bool_(False), 1.0)
    return grad


def rod_gradient(model, positions: np.ndarray, quats: np.ndarray) -> np.ndarray:
    """The rod's energy gradient at (positions, quats) over every dof, the fixed ones included (there:
    what the holders supply)."""
    return gradient_at(positions, quats, model.arrays(), model.n_dof, 1.0)
