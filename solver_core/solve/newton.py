# SPDX-License-Identifier: GPL-3.0-or-later
"""Quasi-static equilibrium by a trust-region (Levenberg-Marquardt) Newton method.

The whole iteration runs inside one compiled call so that a warm re-solve costs a few
microseconds of overhead. Each iteration assembles the exact gradient and the banded Hessian
(``rod_energy``), solves (H + lambda D) delta = -g by banded Cholesky, and accepts the step when
the actual energy decrease matches enough of the quadratic model's prediction; lambda grows
when the Hessian is indefinite (buckling, compressed starts) or the model was poor, and
shrinks back to a pure Newton step near the solution. Convergence is judged on the force and
moment residual of every free degree of freedom, never on the step size.

This module is the loop and the trust region's step; the phases between the kernels they call are in
newton_phases.py, each iteration's terms are assembled by newton_assembly.py, contact between cables
enters as low-rank terms (low_rank_coupling.py), steps near contacts are limited by step_limits.py,
and a saddle is left along negative curvature by saddle_escape.py.
"""

import math

import numpy as np

from .._jit import njit, njit_inline
from ..contact.crossing import step_crosses_triangles
from ..contact.low_rank_coupling import self_coupling
from ..contact.mounts import sliding_crossings
from ..contact.step_limits import pair_moves, plunge_step_length
from ..kernel_arrays import CandidatePairs, NewtonResult
from ..rod.rod_energy import rod_energy, rod_gradient_hessian, rod_strains
from .newton_assembly import (
    assemble,
    constrained_residual,
    energy_after_step,
    node_distances,
    pair_buffers,
    prepare_system,
)
from .newton_phases import (
    CONTACT_RISE,
    GN_OVERESTIMATE,
    MAX_DEPTH_HALVINGS,
    REFUSED,
    better_trial,
    carry_gaps,
    cut_by_contact,
    damping_after,
    evaluate_pairs,
    factor_damped,
    geodesic_step,
    indefinite,
    largest_move,
    left_saddle,
    live_pairs,
    model_ratio,
    newton_buffers,
    newton_direction,
    quadratic_model,
    scaled_step,
    searched_pairs,
    stable_at_rest,
    step_verdict,
)
from .saddle_escape import contact_fraction
from .stability import stability_shift

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

# At most this many saddles are left per call (saddle_escape.leave_saddle).
MAX_ESCAPES = 20
# lambda (relative to the Marquardt diagonal) of a refinement step taken again after it raised the forces:
# near 1e-5 the steps across a contact's Hessian jump contract, and each quadrupling costs two iterations
REFINEMENT_DAMPING = 1e-6


@njit
def _result(status, iterations, ratio, energy, depth, searched_at, pairs, pos, factor):
    """The fields of a NewtonResult, as plain tuples (newton_iterations), handing on the pairs with
    lower bounds of their gaps at the positions now."""
    handed = (searched_at, pairs.kind, pairs.elem, pairs.prim, pairs.gap, pos.copy())
    return status, iterations, ratio, energy, depth, handed, factor


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
    status, iterations, ratio, energy, depth, handed, factor = out
    return NewtonResult(status, iterations, ratio, energy, depth, CandidatePairs(*handed), factor)


@njit
def newton_iterations(pos, quat, rod, dof_tol, load_factor, max_iterations, extra, handed, leave_saddles):
    """Newton-minimise the energy of the rod ``rod`` (kernel_arrays.RodArrays) and ``extra``
    (InteractionArrays) in place, to the residual ``dof_tol`` per dof. Returns the fields of a
    NewtonResult (as_newton_result): status, iterations, residual / tolerance, energy, deepest
    penetration of a candidate contact pair, the candidate pairs with where they were searched and
    lower bounds of their gaps at the final positions, and the factor the stability test formed there.

    ``handed`` (CandidatePairs): candidate pairs from an earlier call with the same obstacles
    (find_pairs within twice the reach at ``searched_at``), used until a node has moved a reach from
    there (newton_phases.searched_pairs); searched_at = inf searches at once. ``gap_from``: lower bounds
    of their gaps at the positions ``gaps_at`` (empty: none), carried to the start as along the steps.

    A state whose gradient vanishes converges only if it is a minimum (stability.py); a saddle ends
    the call with UNSTABLE, or with ``leave_saddles`` is left along its direction of most negative
    curvature and the minimisation goes on. A dead couple is not conservative in three dimensions
    (Ziegler): with one, the energy's Hessian says nothing about stability and is not tested.

    One iteration: the contact candidates; energy, gradient and Hessian (assemble); at rest, the
    stability test (and the saddle escape); else a step of the trust region (_newton_step)."""
    buf = newton_buffers(pos, quat, rod, extra.sl_point.shape[0])
    test_stability = _conservative(rod.rot_couple)
    searched_at, pairs = _handed_pairs(pos, extra, handed, buf.node_move)
    ut_store = np.zeros((0, rod.fixed.shape[0]))
    coupling = (ut_store[:0], np.zeros(0), np.zeros(0), np.empty((0, 4), dtype=np.int64), ut_store,
                np.empty((0, 0)), np.empty(0, dtype=np.int64))  # fmt: skip
    no_panels = (np.zeros(0), np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64))  # (factor_damped)
    trust = (0.0, 0, False)  # lambda, saddles escaped so far, Gauss-Newton steps overestimated
    ratio, energy = np.inf, np.inf
    live = np.zeros(0, dtype=np.int64)
    shift = stability_shift(rod.rest_len)  # of the stability test, for this resolution
    contact = extra.contact
    kept_pos, kept_quat = np.empty_like(pos), np.empty_like(quat)  # before the last step
    kept = (np.inf, np.inf, 0.0)  # energy, residual ratio and lambda before the last step
    no_factor = np.empty((0, rod.bw + 1))
    for it in range(max_iterations + 1):
        if contact.uses_contact and not (largest_move(pos, searched_at) <= contact.reach):
            pairs = searched_pairs(pos, searched_at, extra)  # once some node has moved a reach
        live = live_pairs(pairs.gap, pairs.fresh)
        if extra.sl_point.shape[0] > 0:  # held fixed within this iteration
            sliding_crossings(pos, extra.node_part, extra.sl_point, extra.sl_axis, extra.sl_part, buf.sl_seg, buf.sl_t)
        energy = rod_energy(pos, quat, rod, load_factor)
        extra_energy = assemble(
            pos, quat, rod, load_factor, buf.grad, buf.band, 1.0, extra, pairs, live, buf.sl_seg, buf.sl_t
        )
        energy += extra_energy
        if not math.isfinite(energy):
            return _result(NOT_FINITE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos, no_factor)
        ratio = constrained_residual(buf.grad, rod.fixed, dof_tol)
        if not math.isfinite(ratio):
            return _result(NOT_FINITE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos, no_factor)
        undo, trust = _refinement(energy, ratio, kept, trust)
        if undo and it < max_iterations:
            # the pairs' gaps were evaluated here: carried back along the move, they bound those there
            moves, gaps = pairs.moves, pairs.gap
            carry_gaps(contact.uses_contact, pos, kept_pos, buf.node_move, pairs.nodes, moves, gaps, pairs.fresh)
            pos[:, :] = kept_pos
            quat[:, :] = kept_quat
            kept = (kept[0], np.inf, kept[2])
            continue
        if ratio <= 1.0 and not test_stability:
            return _result(CONVERGED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos, no_factor)
        if ratio <= 1.0:
            stable, coupling = stable_at_rest(pos, quat, rod, load_factor, extra, pairs, live, buf, coupling, shift)
            if stable:
                # the factor of the free block tested, kept for the next step's prediction (where no
                # coupling beside the band enters it: tangent_predictor.py)
                factor = buf.work if coupling[0].shape[0] == 0 else no_factor
                return _result(CONVERGED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos, factor)
            may_leave = leave_saddles and it < max_iterations and trust[1] < MAX_ESCAPES
            if not (may_leave and left_saddle(pos, quat, rod, load_factor, extra, pairs, buf, coupling, shift, energy)):
                return _result(
                    UNSTABLE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos, no_factor
                )
            trust = (0.0, trust[1] + 1, trust[2])
            kept = (np.inf, np.inf, 0.0)  # the escape is no refinement to judge
            continue
        if it == max_iterations:
            break
        # a step of the trust region: the system prepared, touching legs coupled, the strains at the state
        prepare_system(buf.band, rod.bw, rod.fixed, buf.damping)
        for i in range(rod.fixed.shape[0]):
            buf.rhs[i] = -buf.grad[i]
        if contact.self_gap > 0:
            Ut, k_c, k_s, spans, ut_store, S, piv = coupling
            Ut, k_c, k_s, spans, ut_store = self_coupling(pos, rod, pairs, extra, np.bool_(True), ut_store, spans)
            coupling = (Ut, k_c, k_s, spans, ut_store, S, piv)
        rod_strains(pos, quat, rod, buf.geodesic.s_zero, buf.geodesic.b_zero)
        kept_pos[:, :] = pos
        kept_quat[:, :] = quat
        kept = (energy, ratio, trust[0])
        accepted, trust, coupling = _newton_step(
            pos, quat, rod, load_factor, extra, pairs, live, buf, (coupling, no_panels), (energy, extra_energy), trust
        )
        if not accepted:
            return _result(STALLED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos, no_factor)
    return _result(
        MAX_ITERATIONS, max_iterations, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos, no_factor
    )


@njit_inline
def _refinement(energy, ratio, kept, trust):
    """(whether to take the last step back, trust after it) from the energy and residual ratio now and
    ``kept`` = (energy, ratio, lambda) before it. A step within the energy's round-off (step_verdict takes
    it as a refinement) that raised the forces is taken back and taken again damped: where a contact's
    Hessian jumps at the rest state (the penalty, and the nearest point of a segment clamped at its end,
    are C1, not C2), undamped steps overshoot across the jump and the residual cycles without end
    (docs/performance.md). A damped one that lowered them keeps its damping while the refinement lasts."""
    kept_energy, kept_ratio, kept_lam = kept
    if not abs(energy - kept_energy) <= 1e-13 * (abs(energy) + abs(kept_energy)):
        return False, trust
    if ratio > kept_ratio:
        return True, (max(4.0 * kept_lam, REFINEMENT_DAMPING), trust[1], trust[2])
    if kept_lam > 0.0:
        return False, (max(trust[0], kept_lam), trust[1], trust[2])
    return False, trust


@njit_inline
def _conservative(rot_couple):
    """Whether the loads are conservative (no dead couple): only then does the Hessian tell stability."""
    for r in range(rot_couple.shape[0]):
        for k in range(3):
            if rot_couple[r, k] != 0.0:
                return False
    return True


@njit_inline
def _handed_pairs(pos, extra, handed, node_move):
    """(searched_at, pairs): the candidate pairs handed on, with their gaps carried to ``pos``."""
    searched_at = handed.searched_at.copy()
    pairs = pair_buffers(handed.kind, handed.elem, handed.prim)
    n_pairs = pairs.kind.shape[0]
    if extra.contact.uses_contact and largest_move(pos, searched_at) <= extra.contact.reach:
        gap_from, gaps_at = handed.gap_from, handed.gaps_at
        if gap_from.shape[0] == n_pairs and gaps_at.shape[0] == pos.shape[0]:
            node_distances(pos, gaps_at, node_move)
            pair_moves(pairs.nodes, node_move, pairs.moves)
            for p in range(n_pairs):
                pairs.gap[p] = gap_from[p] - pairs.moves[p]
                pairs.fresh[p] = False
        else:
            evaluate_pairs(np.arange(n_pairs), pos, pairs, extra)
    return searched_at, pairs


@njit_inline
def _newton_step(pos, quat, rod, load_factor, extra, pairs, live, buf, factor_arrays, energies, trust):
    """One step of the trust region from the system prepared in ``buf``: (whether a step was taken, trust =
    (lambda, saddles left, Gauss-Newton overestimates) after, the coupling). At most 60 damped systems: an
    indefinite exact Hessian falls back to Gauss-Newton, a poor or refused trial raises lambda. The kernels
    that need the rod's and interactions' arrays are called here, the phases between them take the few
    arrays they use (numba counts the references of every array a function is handed, a tuple's all)."""
    energy, extra_energy = energies
    lam, escapes, gn_overestimates = trust
    coupling, no_panels = factor_arrays
    use_contact = extra.contact.uses_contact
    Ut, k_c, k_s, spans, ut_store, S, piv = coupling
    exact, rebuild = True, False
    for _attempt in range(60):
        if rebuild:  # the Gauss-Newton matrix
            Ut, k_c, k_s, spans, ut_store = _reassembled(
                pos, quat, rod, load_factor, extra, pairs, live, buf, exact, (Ut, k_c, k_s, spans, ut_store)
            )
            rebuild = False
        coupling = (Ut, k_c, k_s, spans, ut_store, S, piv)
        banded, low_rank, panels, S, piv = factor_damped(buf.band, buf.damping, buf.work, lam, coupling, no_panels)
        if not banded:
            lam, exact, rebuild = indefinite(lam, exact, gn_overestimates, escapes)
            continue
        too_far = not low_rank or newton_direction(buf.work, buf.rhs, buf.delta, (S, piv, panels), rod.rot_dof)
        fraction = 1.0
        if use_contact and not too_far:  # cut where a contact point would pass its gap
            fraction = contact_fraction(pos, rod, extra, pairs, buf.delta)
            too_far = cut_by_contact(buf.delta, fraction)
        if too_far:
            lam = max(4.0 * lam, 1e-6) if low_rank else max(10.0 * lam, 1e-8)
            continue
        slope, curvature, predicted = quadratic_model(buf.grad, buf.delta, buf.damping, fraction, lam)
        scale, halvings, shortened = 1.0, 0, False  # of the step the model was built for
        while True:  # the trial, halved while too deep, shortened once where it plunges (MAX_DEPTH_HALVINGS)
            trial_energy, couple, trial_extra_energy, too_deep_by = energy_after_step(
                pos, quat, rod, load_factor, extra, pairs, buf.sl_seg, buf.sl_t, buf.delta, buf.trial_pos,
                buf.trial_quat,
            )  # fmt: skip
            rho, noise = model_ratio(energy, trial_energy, couple, predicted)
            plunged = not (too_deep_by > 0.0) and trial_extra_energy - extra_energy > CONTACT_RISE * predicted
            if too_deep_by > 0.0 and halvings < MAX_DEPTH_HALVINGS:  # (step_limits.depth_limit)
                halvings += 1
                scale, predicted = scaled_step(buf.delta, 0.5, (slope, curvature, scale), 0.0)
                shortened = True
                continue
            if too_deep_by > 0.0 or shortened or not (use_contact and plunged and predicted > noise and rho <= 1e-4):
                break
            alpha, penalty = plunge_step_length(pairs, fraction, extra, slope, curvature)
            if not (alpha < 1.0):
                break
            scale, predicted = scaled_step(buf.delta, alpha, (slope, curvature, 1.0), penalty)
            shortened = True
        if too_deep_by > 0.0 or not math.isfinite(trial_energy):
            lam = max(4.0 * lam, 1e-6) if too_deep_by > 0.0 else max(10.0 * lam, 1e-6)
            continue
        if predicted > noise and rho < 0.25 and not plunged:  # the step along the curved valley
            g = buf.geodesic
            geodesic_step(pos, quat, rod, buf.delta, buf.correction, g, buf.work, (S, piv, panels))
            if not use_contact or contact_fraction(pos, rod, extra, pairs, buf.correction) >= 1.0:
                corrected = energy_after_step(
                    pos, quat, rod, load_factor, extra, pairs, buf.sl_seg, buf.sl_t, buf.correction, g.corrected_pos,
                    g.corrected_quat,
                )  # fmt: skip
                trial_energy, rho = better_trial(
                    buf.trial_pos, buf.trial_quat, g, corrected, energy, (trial_energy, rho), predicted
                )
        verdict = step_verdict(predicted, noise, rho)
        if verdict == REFUSED or (
            use_contact and step_crosses_triangles(pos, buf.trial_pos, extra.node_part, extra.obstacles)
        ):
            lam = max(4.0 * lam, 1e-8) if verdict == REFUSED else max(4.0 * lam, 1e-6)  # (or through a face)
            continue
        lam = damping_after(lam, verdict, shortened)
        carry_gaps(use_contact, pos, buf.trial_pos, buf.node_move, pairs.nodes, pairs.moves, pairs.gap, pairs.fresh)
        pos[:, :] = buf.trial_pos
        quat[:, :] = buf.trial_quat
        if not exact:
            gn_overestimates = rho > GN_OVERESTIMATE
        return True, (lam, escapes, gn_overestimates), (Ut, k_c, k_s, spans, ut_store, S, piv)
    return False, (lam, escapes, gn_overestimates), (Ut, k_c, k_s, spans, ut_store, S, piv)


@njit_inline
def _reassembled(pos, quat, rod, load_factor, extra, pairs, live, buf, exact, coupling):
    """The system assembled again into ``buf``, with the rod's geometric stiffness only where
    ``exact`` (else its Gauss-Newton matrix J^T C J); the self-contact coupling as assembled."""
    Ut, k_c, k_s, spans, ut_store = coupling
    geometric = 1.0 if exact else 0.0
    assemble(pos, quat, rod, load_factor, buf.grad, buf.band, geometric, extra, pairs, live, buf.sl_seg, buf.sl_t)
    prepare_system(buf.band, rod.bw, rod.fixed, buf.damping)
    for i in range(rod.fixed.shape[0]):
        if rod.fixed[i]:
            buf.grad[i] = 0.0
    if extra.contact.self_gap > 0:
        Ut, k_c, k_s, spans, ut_store = self_coupling(pos, rod, pairs, extra, np.bool_(exact), ut_store, spans)
    return Ut, k_c, k_s, spans, ut_store


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
