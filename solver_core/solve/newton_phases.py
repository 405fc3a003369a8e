# SPDX-License-Identifier: GPL-3.0-or-later
"""The phases of one Newton iteration (newton.py runs them in order): the contact candidates, the
stability test at rest, the damped factorisation, the step and its contact limits, the quadratic
model, the trial of the step, the geodesic correction and the acceptance.

Each phase is inlined into the Newton kernel (``njit_inline``): a phase called as a function of its
own would count up and down the references of every array it is passed (some 22 ns each), which cost
a 20-segment solve 14 %, and would be compiled again with the kernels it calls. The work arrays one
solve allocates are passed together as ``NewtonBuffers``; the low-rank coupling of touching legs,
reallocated as contacts come and go, as the tuple ``coupling`` = (Ut, k_c, k_s, spans, ut_store, S, piv).
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit, njit_inline
from ..contact.crossing import step_crosses_triangles
from ..contact.low_rank_coupling import self_coupling
from ..contact.pair_geometry import pair_gaps
from ..contact.pair_search import find_pairs
from ..contact.step_limits import (
    lower_gaps,
    pair_moves,
    pairs_that_may_touch,
    plunge_step_length,
)
from ..kernel_arrays import LowRankCoupling
from ..maths.banded import band_cholesky, low_rank_factor, low_rank_solve
from ..rod.rod_energy import rod_gradient_hessian, rod_strains, strain_jacobian_transpose
from .newton_assembly import (
    MAX_ROTATION_STEP,
    energy_after_step,
    extra_terms,
    node_distances,
    pair_buffers,
    prepare_system,
    retract,
)
from .saddle_escape import contact_fraction, leave_saddle
from .stability import factor_shifted, negative_curvature_direction

# A step cut short by contact (step_limits.approach_fraction) to less than this fraction is refused and the
# trust region shrinks instead: a direction that runs into an obstacle at once is a poor one.
MIN_STEP_FRACTION = 0.1
# A Gauss-Newton step whose actual gain exceeds this multiple of the predicted one makes the next
# iteration with an indefinite Hessian damp the exact Hessian rather than fall back to Gauss-Newton.
GN_OVERESTIMATE = 1.9
# A step that would sink a contact deeper than allowed (step_limits.allowed_depth) is halved at most this
# often before the trust region shrinks instead.
MAX_DEPTH_HALVINGS = 6
# A rejected step whose contact, friction and mount energy rose by more than this multiple of the
# predicted gain failed on contact, not on stretch: no geodesic correction is tried for it.
CONTACT_RISE = 4.0


class NewtonBuffers(NamedTuple):
    """The arrays one Newton solve works in, allocated once (newton_buffers)."""

    grad: np.ndarray  # the gradient (n_dof)
    grad_stability: np.ndarray  # the gradient of the stability test's second assembly
    band: np.ndarray  # the Hessian's band (n_dof, bw + 1)
    work: np.ndarray  # its damped factor
    delta: np.ndarray  # the step
    rhs: np.ndarray  # -gradient
    damping: np.ndarray  # the diagonal D of (H + lambda D)
    trial_pos: np.ndarray  # the state after the step
    trial_quat: np.ndarray
    rhs_trial: np.ndarray  # the geodesic correction's right-hand side
    correction: np.ndarray  # the step with its geodesic correction
    corrected_pos: np.ndarray
    corrected_quat: np.ndarray
    rot_step: np.ndarray  # (3), retract's
    s_zero: np.ndarray  # segment strains at the state, +h and -h along the step
    s_plus: np.ndarray
    s_minus: np.ndarray
    b_zero: np.ndarray  # joint strains likewise
    b_plus: np.ndarray
    b_minus: np.ndarray
    node_move: np.ndarray  # how far each node moved
    sl_seg: np.ndarray  # the segment each sliding clip's axis crosses (-1: none), held within an iteration
    sl_t: np.ndarray  # and where along it


@njit_inline
def newton_buffers(pos, quat, rod, n_sliding):
    n_dof = rod.fixed.shape[0]
    n_seg, n_joint = rod.rest_len.shape[0], rod.joint_a.shape[0]
    return NewtonBuffers(
        np.zeros(n_dof),
        np.zeros(n_dof),
        np.zeros((n_dof, rod.bw + 1)),
        np.empty((n_dof, rod.bw + 1)),
        np.empty(n_dof),
        np.empty(n_dof),
        np.empty(n_dof),
        np.empty_like(pos),
        np.empty_like(quat),
        np.empty(n_dof),
        np.empty(n_dof),
        np.empty_like(pos),
        np.empty_like(quat),
        np.empty(3),
        np.empty((n_seg, 3)),
        np.empty((n_seg, 3)),
        np.empty((n_seg, 3)),
        np.empty((n_joint, 3)),
        np.empty((n_joint, 3)),
        np.empty((n_joint, 3)),
        np.empty(pos.shape[0]),
        np.full(n_sliding, -1, dtype=np.int64),
        np.zeros(n_sliding),
    )


@njit
def largest_move(pos, searched_at):
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
def evaluate_pairs(indices, pos, pairs, extra):
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


@njit_inline
def candidate_pairs(pos, searched_at, pairs, extra):
    """(pairs, the live ones). Candidate pairs within twice the reach, searched again once some node has
    moved a reach since: with steps no longer than a reach, they hold everything a step can touch, and
    no step may carry a contact point through its gap, so nothing is missed or tunnelled. Only pairs
    that may touch are evaluated: every other gap is known to be positive, from a lower bound carried
    along the steps since it was last evaluated (a gap shrinks at most as fast as its nodes move). A
    cable resting on a fine mesh has some 50 triangles within the search reach of a node, and a handful
    touching it."""
    contact = extra.contact
    if contact.uses_contact and not (largest_move(pos, searched_at) <= contact.reach):
        kind, elem, prim = find_pairs(
            pos, extra.node_radius, extra.node_part, 2.0 * contact.reach, extra.obstacles, contact.self_gap
        )
        searched_at[:, :] = pos
        pairs = pair_buffers(kind, elem, prim)
        evaluate_pairs(np.arange(kind.shape[0]), pos, pairs, extra)
    live = pairs_that_may_touch(pairs.gap)
    for idx in range(live.shape[0]):
        pairs.fresh[live[idx]] = True
    return pairs, live


@njit_inline
def stable_at_rest(pos, quat, rod, load_factor, extra, pairs, live, buf, coupling, shift):
    """Whether the state at rest is a minimum, and the coupling as updated. The exact Hessian (as
    assembled) decides first. Where it is indefinite, the test is made again with contact's
    Gauss-Newton part k n n^T instead of the penalty's exact terms, whose distance curvature has
    saddles the real surfaces lack (a node over the edge between two coplanar facets, two cables
    crossing at a node): only a state unstable in both is a saddle. A cable balanced on a smooth
    convex obstacle is therefore not told from a stable one (README, Known limits)."""
    bw, fixed = rod.bw, rod.fixed
    Ut, k_c, k_s, spans, ut_store, S, piv = coupling
    stable = False
    for contact_model in range(2):
        if contact_model == 1:
            rod_gradient_hessian(pos, quat, rod, load_factor, buf.grad_stability, buf.band, bw, np.bool_(True), 1.0)
            extra_terms(
                pos, quat, rod, extra, pairs, live, buf.sl_seg, buf.sl_t, buf.grad_stability, buf.band, bw,
                np.int64(3),
            )  # fmt: skip
        prepare_system(buf.band, bw, fixed, buf.damping)
        if extra.contact.self_gap > 0:
            Ut, k_c, k_s, spans, ut_store = self_coupling(pos, rod, pairs, extra, contact_model == 0, ut_store, spans)
        if S.shape[0] != Ut.shape[0]:
            S = np.empty((Ut.shape[0], Ut.shape[0]))
            piv = np.empty(Ut.shape[0], dtype=np.int64)
        stable, _panels = factor_shifted(buf.band, bw, buf.damping, shift, buf.work, Ut, k_c, k_s, S, piv, spans)
        if stable or not extra.contact.uses_contact:
            break
    return stable, (Ut, k_c, k_s, spans, ut_store, S, piv)


@njit_inline
def left_saddle(pos, quat, rod, load_factor, extra, pairs, buf, coupling, shift, energy):
    """Move the state off the saddle just found along its direction of most negative curvature
    (saddle_escape.leave_saddle); whether it went."""
    Ut, k_c, k_s, spans, _ut_store, S, piv = coupling
    low_rank = LowRankCoupling(Ut, k_c, k_s, S, piv, spans)
    curvature = negative_curvature_direction(
        buf.band, rod.bw, buf.damping, rod.fixed, low_rank, buf.work, shift, buf.delta
    )
    if not curvature < 0.0:
        return False
    return leave_saddle(pos, quat, rod, load_factor, extra, pairs, buf.sl_seg, buf.sl_t, buf.grad, buf.delta, energy)


@njit_inline
def factor_damped(buf, bw, lam, coupling):
    """(H + lam D) factored into buf.work, then the low-rank coupling: (whether the band factored,
    whether the low-rank part did, the factor's panels, S and piv as sized)."""
    Ut, k_c, k_s, spans, _ut_store, S, piv = coupling
    m_c = Ut.shape[0]
    if S.shape[0] != m_c:
        S = np.empty((m_c, m_c))
        piv = np.empty(m_c, dtype=np.int64)
    band, work, damping = buf.band, buf.work, buf.damping
    for i in range(band.shape[0]):
        for c in range(bw + 1):
            work[i, c] = band[i, c]
        work[i, bw] += lam * damping[i]
    panels = (np.zeros(0), np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64))  # none without coupling
    if not band_cholesky(work, bw):
        return False, False, panels, S, piv
    if m_c > 0:
        factored, panels = low_rank_factor(work, bw, Ut, k_c, k_s, S, piv, spans)
        if not factored:
            return True, False, panels, S, piv
    return True, True, panels, S, piv


@njit_inline
def indefinite(lam, exact, gn_overestimates, escapes):
    """(lam, exact, rebuild) after (H + lam D) failed to factor."""
    if exact and gn_overestimates and lam < 1.0:
        # the last Gauss-Newton steps were half as long as they could be (rho ~ 2: the model's
        # curvature twice the true one along them, the cable slowly sliding or rolling over into a
        # compressed shape): damp the exact Hessian instead
        return max(10.0 * lam, 1e-6), exact, False
    if exact and escapes > 0:
        # just off a saddle the negative curvature is what carries the state away: the Gauss-Newton
        # matrix lacks it and creeps back, so the exact one is damped instead
        return max(10.0 * lam, 1e-6), exact, False
    if exact:
        # Indefinite exact Hessian (compression, buckling): take this iteration's step from the
        # Gauss-Newton matrix J^T C J instead of damping it away.
        return lam, False, True
    return max(10.0 * lam, 1e-8), exact, False


@njit_inline
def limited_step(pos, quat, rod, extra, pairs, buf, S, piv, panels):
    """The step delta = -(H + lam D)^-1 g into buf.delta, cut by contact (step_limits) where it would
    carry a contact point through its gap; (whether it is refused, the fraction kept)."""
    delta = buf.delta
    low_rank_solve(buf.work, rod.bw, buf.rhs, delta, S, piv, panels)
    for i in range(delta.shape[0]):
        if abs(delta[i]) < 1e-150:
            delta[i] = 0.0  # keep subnormal numbers out of the state (see rotations._flush)
    for r in range(quat.shape[0]):
        g0 = rod.rot_dof[r]
        step = math.sqrt(delta[g0] ** 2 + delta[g0 + 1] ** 2 + delta[g0 + 2] ** 2)
        if not (step <= MAX_ROTATION_STEP):
            return True, 1.0
    if not extra.contact.uses_contact:
        return False, 1.0
    # the pairs this step could reach must have their true normal for the filter
    fraction = contact_fraction(pos, rod, extra, pairs, delta)
    if fraction < MIN_STEP_FRACTION:
        return True, fraction
    if fraction < 1.0:
        for i in range(delta.shape[0]):
            delta[i] *= fraction
    return False, fraction


@njit_inline
def quadratic_model(grad, delta, damping, fraction, lam):
    """(slope -g.delta, curvature delta^T H delta, predicted gain) of the model, from the system just
    solved, (H + lam D) delta = -g (a step cut to a fraction f of delta: f^2 delta^T H delta = f slope -
    lam D-norm^2)."""
    slope = 0.0
    damped = 0.0
    for i in range(grad.shape[0]):
        slope -= grad[i] * delta[i]
        damped += damping[i] * delta[i] * delta[i]
    curvature = min(fraction, 1.0) * slope - lam * damped
    return slope, curvature, slope - 0.5 * curvature


@njit_inline
def trial(pos, quat, rod, load_factor, extra, pairs, buf, model, energy, extra_energy, fraction):
    """The state after the step (buf.trial_pos/quat) and how it did: (trial energy, its rho against the
    model, the noise of the energies, whether the step was shortened, whether it plunged into contact,
    whether it stayed too deep after every halving, the predicted gain of what was taken)."""
    slope, curvature, predicted = model
    delta = buf.delta
    use_contact = extra.contact.uses_contact
    shortened = False
    scale = 1.0  # of the step the model was built for
    halvings = 0
    while True:
        trial_energy, couple, trial_extra_energy, too_deep_by = energy_after_step(
            pos, quat, rod, load_factor, extra, pairs, buf.sl_seg, buf.sl_t, delta, buf.trial_pos, buf.trial_quat
        )
        actual = energy - (trial_energy - couple)
        # In the last digits the energy difference is noise; a step whose predicted gain is within that
        # noise is a pure Newton refinement and is taken (the residual decides).
        noise = 1e-13 * (abs(energy) + abs(trial_energy))
        rho = actual / predicted if predicted > 0.0 else -1.0
        # A step that plunged nodes into facets they did not touch (open pairs are not in the model)
        # fails on contact energy: the correction mends stretch and cannot help it, so it is not paid
        # for (a tenth of a step's time on a faceted mesh) ...
        if too_deep_by > 0.0:
            # No step sinks an obstacle pair beyond step_limits.depth_limit. The filter's bound is first
            # order in the contact point, which slides along a segment as it turns: a step it passed
            # sank a segment 28 % of a radius into a sphere. Halving keeps the direction; the trust
            # region shrinks after.
            if halvings == MAX_DEPTH_HALVINGS:
                return trial_energy, rho, noise, shortened, False, True, predicted
            halvings += 1
            scale *= 0.5
            for i in range(delta.shape[0]):
                delta[i] *= 0.5
            predicted = scale * slope - 0.5 * scale * scale * curvature
            shortened = True
            continue
        plunged = trial_extra_energy - extra_energy > CONTACT_RISE * predicted
        if shortened or not (use_contact and plunged and predicted > noise and rho <= 1e-4):
            return trial_energy, rho, noise, shortened, plunged, False, predicted
        # ... and instead of damping and factorising again (several times per iteration on a faceted
        # mesh), the step is shortened to where the facet (or other cables') pairs it closes balance
        # the model (step_limits.plunge_step_length)
        alpha, penalty = plunge_step_length(pairs, fraction, extra, slope, curvature)
        if not (alpha < 1.0):
            return trial_energy, rho, noise, shortened, plunged, False, predicted
        for i in range(delta.shape[0]):
            delta[i] *= alpha
        scale = alpha
        predicted = alpha * slope - 0.5 * alpha * alpha * curvature - penalty
        shortened = True


@njit_inline
def geodesic_correction(pos, quat, rod, load_factor, extra, pairs, buf, factor, energy, tried, predicted):
    """(trial energy, rho): those of the corrected step, copied into buf.trial_pos/quat, where the
    correction does better than the step as tried (``tried``, from ``energy``). Geodesic
    acceleration (Transtrum & Sethna 2012): a rotation step moves nodes along tangents of circles,
    which stretches stiff segments by O(step^2) and spoils the quadratic model. The second directional
    derivative of the strains along the step, r_vv, gives the correction a = -(H + lambda D)^-1 J^T W
    r_vv with the factor at hand (``factor`` = (S, piv, panels)); the step delta + a/2 follows the curved
    valley of nearly inextensible rods."""
    corrected_energy, corrected_rho = _corrected(
        pos, quat, rod, load_factor, extra, pairs, buf, factor, energy, predicted
    )
    if corrected_rho > tried[1]:
        buf.trial_pos[:, :] = buf.corrected_pos
        buf.trial_quat[:, :] = buf.corrected_quat
        return corrected_energy, corrected_rho
    return tried


@njit_inline
def _corrected(pos, quat, rod, load_factor, extra, pairs, buf, factor, energy, predicted):
    """(energy, rho) of the step with its geodesic correction (buf.corrected_pos/quat), or (inf, -inf)
    where the correction would carry a contact through its gap or sink one too deep."""
    S, piv, panels = factor
    delta, correction = buf.delta, buf.correction
    for sgn in range(2):
        h = 0.1 if sgn == 0 else -0.1
        retract(pos, quat, rod.node_dof, rod.rot_dof, delta, h, buf.corrected_pos, buf.corrected_quat, buf.rot_step)
        if sgn == 0:
            rod_strains(buf.corrected_pos, buf.corrected_quat, rod, buf.s_plus, buf.b_plus)
        else:
            rod_strains(buf.corrected_pos, buf.corrected_quat, rod, buf.s_minus, buf.b_minus)
    s_plus, b_plus = buf.s_plus, buf.b_plus
    for i in range(s_plus.shape[0]):
        for k in range(3):
            s_plus[i, k] = (s_plus[i, k] - 2.0 * buf.s_zero[i, k] + buf.s_minus[i, k]) / 0.01
    for j in range(b_plus.shape[0]):
        for k in range(3):
            b_plus[j, k] = (b_plus[j, k] - 2.0 * buf.b_zero[j, k] + buf.b_minus[j, k]) / 0.01
    strain_jacobian_transpose(pos, quat, rod, s_plus, b_plus, buf.rhs_trial)
    for i in range(delta.shape[0]):
        buf.rhs_trial[i] = 0.0 if rod.fixed[i] else -buf.rhs_trial[i]
    low_rank_solve(buf.work, rod.bw, buf.rhs_trial, correction, S, piv, panels)
    for i in range(delta.shape[0]):
        correction[i] = delta[i] + 0.5 * correction[i]
    if extra.contact.uses_contact and not contact_fraction(pos, rod, extra, pairs, correction) >= 1.0:
        return np.inf, -np.inf
    corrected_energy, corrected_couple, _extra, corrected_too_deep = energy_after_step(
        pos, quat, rod, load_factor, extra, pairs, buf.sl_seg, buf.sl_t, correction, buf.corrected_pos,
        buf.corrected_quat,
    )  # fmt: skip
    if not (math.isfinite(corrected_energy) and not corrected_too_deep > 0.0):
        return np.inf, -np.inf
    return corrected_energy, (energy - (corrected_energy - corrected_couple)) / predicted


@njit_inline
def accept(pos, quat, extra, pairs, buf, lam, good, shortened):
    """Take the trial state, unless it passes through a face (crossing.py); (whether taken, lam after).
    ``good``: rho > 0.75 or a gain within the noise, -1 for rho < 0.25, else 0."""
    use_contact = extra.contact.uses_contact
    if use_contact and step_crosses_triangles(pos, buf.trial_pos, extra.node_part, extra.obstacles):
        # through a face between the pairs the filter saw: refused
        return False, max(4.0 * lam, 1e-6)
    if shortened:
        # the model held for a part of the step only: the trust region shrinks as for a rejected step,
        # so that the next direction turns away from what it ran into
        lam = max(4.0 * lam, 1e-8)
    elif good > 0:
        # a model this good: back towards a pure Newton step at once. On faceted meshes the model breaks
        # at every facet crossing, and a slow return of lambda after each break made the re-settling of a
        # cable dozens of damped steps long.
        lam = lam / 100.0 if lam > 1e-6 else 0.0
    elif good < 0:
        lam = max(3.0 * lam, 1e-8)
    if use_contact:
        node_distances(buf.trial_pos, pos, buf.node_move)
        pair_moves(pairs.nodes, buf.node_move, pairs.moves)
        lower_gaps(pairs.moves, pairs.gap, pairs.fresh)
    pos[:, :] = buf.trial_pos
    quat[:, :] = buf.trial_quat
    return True, lam
