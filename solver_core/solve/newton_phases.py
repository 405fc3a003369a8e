# SPDX-License-Identifier: GPL-3.0-or-later
"""The phases of one Newton iteration (newton.py runs them in order): the contact candidates, the
stability test at rest and the saddle escape, the damped factorisation, the step and its contact
limits, the quadratic model and the trial's ratio, the geodesic correction and the acceptance.

Each phase takes only the arrays it uses. numba raises and lowers the reference count of every array a
function is handed, a named tuple's every array, and where the function calls a compiled kernel in
between it cannot leave them out: handed the rod's, the interactions' and the work arrays (some 100)
the phases cost a 20-segment iteration 4 us (10 %). So the kernels that need those tuples whole
(assemble, energy_after_step, contact_fraction, the crossing test) are called from newton.py's two
loops, and the phases are the arithmetic between them. Exceptions: the phases that run once per solve
(the stability test, the saddle escape) take the tuples, ``searched_pairs`` takes the interactions'
(only when a search is due) and ``geodesic_step`` the rod's (its strains need them). Hot phases are
inlined into the kernel (``njit_inline``). The work arrays one solve allocates are ``NewtonBuffers``
(those of the geodesic correction ``GeodesicBuffers``); the low-rank coupling of touching legs,
reallocated as contacts come and go, is the tuple ``coupling`` = (Ut, k_c, k_s, spans, ut_store, S, piv).
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit, njit_inline
from ..contact.low_rank_coupling import self_coupling
from ..contact.pair_geometry import pair_gaps
from ..contact.pair_search import find_pairs
from ..contact.step_limits import (
    lower_gaps,
    pair_moves,
    pairs_that_may_touch,
)
from ..kernel_arrays import LowRankCoupling
from ..maths.banded import band_cholesky, low_rank_factor, low_rank_solve
from ..rod.rod_energy import rod_gradient_hessian, rod_strains, strain_jacobian_transpose
from .newton_assembly import (
    MAX_ROTATION_STEP,
    extra_terms,
    node_distances,
    pair_buffers,
    prepare_system,
    retract,
)
from .saddle_escape import leave_saddle
from .stability import factor_shifted, negative_curvature_direction

# A step cut short by contact (step_limits.approach_fraction) to less than this fraction is refused and the
# trust region shrinks instead: a direction that runs into an obstacle at once is a poor one.
MIN_STEP_FRACTION = 0.1
# A Gauss-Newton step whose actual gain exceeds this multiple of the predicted one makes the next
# iteration with an indefinite Hessian damp the exact Hessian rather than fall back to Gauss-Newton.
GN_OVERESTIMATE = 1.9
# A step that would sink a contact deeper than allowed (step_limits.allowed_depth) is halved at most this
# often before the trust region shrinks instead. The contact filter's bound is first order in the contact
# point, which slides along a segment as it turns: a step it passed sank a segment 28 % of a radius into a
# sphere. Halving keeps the direction.
MAX_DEPTH_HALVINGS = 6
# A rejected step whose contact, friction and mount energy rose by more than this multiple of the
# predicted gain failed on contact, not on stretch: it plunged nodes into facets they did not touch. No
# geodesic correction is tried for it; instead of damping and factorising again, it is shortened once to
# where the pairs it closes balance the model (step_limits.plunge_step_length).
CONTACT_RISE = 4.0
# How a trial step did (step_verdict)
GOOD, FAIR, POOR, REFUSED = 1, 0, -1, -2


class GeodesicBuffers(NamedTuple):
    """The arrays of a step's geodesic correction (geodesic_step)."""

    rot_step: np.ndarray  # (3), retract's
    corrected_pos: np.ndarray  # the state after the corrected step
    corrected_quat: np.ndarray
    s_zero: np.ndarray  # segment strains at the state, +h and -h along the step
    s_plus: np.ndarray
    s_minus: np.ndarray
    b_zero: np.ndarray  # joint strains likewise
    b_plus: np.ndarray
    b_minus: np.ndarray
    rhs: np.ndarray  # J^T W r_vv


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
    correction: np.ndarray  # the step with its geodesic correction
    node_move: np.ndarray  # how far each node moved
    sl_seg: np.ndarray  # the segment each sliding clip's axis crosses (-1: none), held within an iteration
    sl_t: np.ndarray  # and where along it
    geodesic: GeodesicBuffers


@njit_inline
def newton_buffers(pos, quat, rod, n_sliding):
    n_dof = rod.fixed.shape[0]
    n_seg, n_joint = rod.rest_len.shape[0], rod.joint_a.shape[0]
    geodesic = GeodesicBuffers(
        np.empty(3),
        np.empty_like(pos),
        np.empty_like(quat),
        np.empty((n_seg, 3)),
        np.empty((n_seg, 3)),
        np.empty((n_seg, 3)),
        np.empty((n_joint, 3)),
        np.empty((n_joint, 3)),
        np.empty((n_joint, 3)),
        np.empty(n_dof),
    )
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
        np.empty(pos.shape[0]),
        np.full(n_sliding, -1, dtype=np.int64),
        np.zeros(n_sliding),
        geodesic,
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
def searched_pairs(pos, searched_at, extra):
    """Candidate pairs within twice the reach of ``pos``, searched now (``searched_at`` set to ``pos``)
    and evaluated: with steps no longer than a reach, they hold everything a step can touch, and no
    step may carry a contact point through its gap, so nothing is missed or tunnelled. Between searches
    every pair within reach of a node or a plain face is among them (also every pair of two cables'
    segments), but a segment pair against a capsule or a facet is found only where its closest point
    lies inside the segment (or on a sharp edge) at the search, and may have got there since: the
    deepest penetration is then not the whole story (``Interactions.pairs_depend_on_search``)."""
    contact = extra.contact
    kind, elem, prim = find_pairs(
        pos, extra.node_radius, extra.node_part, 2.0 * contact.reach, extra.obstacles, contact.self_gap
    )
    searched_at[:, :] = pos
    pairs = pair_buffers(kind, elem, prim)
    evaluate_pairs(np.arange(kind.shape[0]), pos, pairs, extra)
    return pairs


@njit_inline
def live_pairs(pair_gap, fresh):
    """The pairs that may touch, marked fresh (evaluated at this iteration). Only they are evaluated:
    every other gap is known to be positive, from a lower bound carried along the steps since it was
    last evaluated (a gap shrinks at most as fast as its nodes move). A cable resting on a fine mesh
    has some 50 triangles within the search reach of a node, and a handful touching it."""
    live = pairs_that_may_touch(pair_gap)
    for idx in range(live.shape[0]):
        fresh[live[idx]] = True
    return live


@njit
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


@njit
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
def factor_damped(band, damping, work, lam, coupling, no_panels):
    """(H + lam D) factored into ``work``, then the low-rank coupling: (whether the band factored,
    whether the low-rank part did, the factor's panels, S and piv as sized)."""
    Ut, k_c, k_s, spans, _ut_store, S, piv = coupling
    m_c = Ut.shape[0]
    if S.shape[0] != m_c:
        S = np.empty((m_c, m_c))
        piv = np.empty(m_c, dtype=np.int64)
    bw = band.shape[1] - 1
    for i in range(band.shape[0]):
        for c in range(bw + 1):
            work[i, c] = band[i, c]
        work[i, bw] += lam * damping[i]
    panels = no_panels  # none without coupling
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
def newton_direction(work, rhs, delta, factor, rot_dof):
    """The step delta = -(H + lam D)^-1 g into ``delta`` from the factor in ``work`` (``factor`` = (S,
    piv, panels)); whether it turns a frame further than a step may (it is then refused)."""
    S, piv, panels = factor
    low_rank_solve(work, work.shape[1] - 1, rhs, delta, S, piv, panels)
    for i in range(delta.shape[0]):
        if abs(delta[i]) < 1e-150:
            delta[i] = 0.0  # keep subnormal numbers out of the state (see rotations._flush)
    for r in range(rot_dof.shape[0]):
        g0 = rot_dof[r]
        step = math.sqrt(delta[g0] ** 2 + delta[g0 + 1] ** 2 + delta[g0 + 2] ** 2)
        if not (step <= MAX_ROTATION_STEP):
            return True
    return False


@njit_inline
def cut_by_contact(delta, fraction):
    """Whether a step the contact filter cut to ``fraction`` (step_limits) is refused; else ``delta`` is
    cut to it."""
    if fraction < MIN_STEP_FRACTION:
        return True
    if fraction < 1.0:
        for i in range(delta.shape[0]):
            delta[i] *= fraction
    return False


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
def model_ratio(energy, trial_energy, couple, predicted):
    """(rho, the actual gain over the predicted one; the noise of the energies). In the last digits the
    energy difference is noise; a step whose predicted gain is within that noise is a pure Newton
    refinement and is taken (the residual decides)."""
    actual = energy - (trial_energy - couple)
    noise = 1e-13 * (abs(energy) + abs(trial_energy))
    rho = actual / predicted if predicted > 0.0 else -1.0
    return rho, noise


@njit_inline
def scaled_step(delta, factor, model, penalty):
    """``delta`` scaled by ``factor`` (in place) and the model's predicted gain for what is left of the
    step the model was built for (``model`` = (slope, curvature, scale before))."""
    slope, curvature, scale = model
    for i in range(delta.shape[0]):
        delta[i] *= factor
    scale *= factor
    return scale, scale * slope - 0.5 * scale * scale * curvature - penalty


@njit_inline
def step_verdict(predicted, noise, rho):
    """GOOD for a step whose model was good (rho > 0.75, or a gain within the noise), FAIR, POOR for one
    still taken (rho < 0.25), REFUSED. A step whose predicted gain is negative beyond the noise goes
    uphill in the model itself: the band is positive definite, but the low-rank terms (-k grad M grad M^T,
    the distance curvature) can make the whole matrix indefinite along the step. It is refused like a
    poor one: taken, it would raise the energy."""
    if not (abs(predicted) <= noise or rho > 1e-4):
        return REFUSED
    return GOOD if abs(predicted) <= noise or rho > 0.75 else POOR if rho < 0.25 else FAIR


@njit_inline
def geodesic_step(pos, quat, rod, delta, correction, g, work, factor):
    """The step ``delta`` with its geodesic correction, into ``correction``. Geodesic acceleration
    (Transtrum & Sethna 2012): a rotation step moves nodes along tangents of circles, which stretches
    stiff segments by O(step^2) and spoils the quadratic model. The second directional derivative of the
    strains along the step, r_vv, gives the correction a = -(H + lambda D)^-1 J^T W r_vv with the factor
    at hand (``work`` and ``factor`` = (S, piv, panels)); the step delta + a/2 follows the curved valley of
    nearly inextensible rods. ``g``: GeodesicBuffers, s_zero and b_zero the strains at ``pos``."""
    S, piv, panels = factor
    for sgn in range(2):
        h = 0.1 if sgn == 0 else -0.1
        retract(pos, quat, rod.node_dof, rod.rot_dof, delta, h, g.corrected_pos, g.corrected_quat, g.rot_step)
        if sgn == 0:
            rod_strains(g.corrected_pos, g.corrected_quat, rod, g.s_plus, g.b_plus)
        else:
            rod_strains(g.corrected_pos, g.corrected_quat, rod, g.s_minus, g.b_minus)
    s_plus, b_plus = g.s_plus, g.b_plus
    for i in range(s_plus.shape[0]):
        for k in range(3):
            s_plus[i, k] = (s_plus[i, k] - 2.0 * g.s_zero[i, k] + g.s_minus[i, k]) / 0.01
    for j in range(b_plus.shape[0]):
        for k in range(3):
            b_plus[j, k] = (b_plus[j, k] - 2.0 * g.b_zero[j, k] + g.b_minus[j, k]) / 0.01
    strain_jacobian_transpose(pos, quat, rod, s_plus, b_plus, g.rhs)
    for i in range(delta.shape[0]):
        g.rhs[i] = 0.0 if rod.fixed[i] else -g.rhs[i]
    low_rank_solve(work, rod.bw, g.rhs, correction, S, piv, panels)
    for i in range(delta.shape[0]):
        correction[i] = delta[i] + 0.5 * correction[i]


@njit_inline
def better_trial(trial_pos, trial_quat, g, corrected, energy, tried, predicted):
    """(trial energy, rho): those of the step with its geodesic correction (``corrected``: its
    energy_after_step, state in ``g``), copied over the trial state, where it is finite, sinks no contact
    too deep and does better than the step as tried (``tried``, from ``energy``)."""
    corrected_energy, couple, _extra, too_deep = corrected
    if not (math.isfinite(corrected_energy) and not too_deep > 0.0):
        return tried
    rho = (energy - (corrected_energy - couple)) / predicted
    if rho > tried[1]:
        trial_pos[:, :] = g.corrected_pos
        trial_quat[:, :] = g.corrected_quat
        return corrected_energy, rho
    return tried


@njit_inline
def damping_after(lam, verdict, shortened):
    """lambda after a step taken (``verdict``: step_verdict's)."""
    if shortened:
        # the model held for a part of the step only: the trust region shrinks as for a rejected step,
        # so that the next direction turns away from what it ran into
        return max(4.0 * lam, 1e-8)
    if verdict == GOOD:
        # a model this good: back towards a pure Newton step at once. On faceted meshes the model breaks
        # at every facet crossing, and a slow return of lambda after each break made the re-settling of a
        # cable dozens of damped steps long.
        return lam / 100.0 if lam > 1e-6 else 0.0
    if verdict == POOR:
        return max(3.0 * lam, 1e-8)
    return lam


@njit_inline
def carry_gaps(use_contact, pos, trial_pos, node_move, pair_nodes, pair_move, pair_gap, fresh):
    """The pairs' gap bounds carried along the step from ``pos`` to ``trial_pos`` (step_limits), with
    contact."""
    if not use_contact:
        return
    node_distances(trial_pos, pos, node_move)
    pair_moves(pair_nodes, node_move, pair_move)
    lower_gaps(pair_move, pair_gap, fresh)
