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

from .._jit import njit, njit_inline
from ..contact.low_rank_coupling import self_coupling
from ..contact.mounts import sliding_crossings
from ..contact.step_limits import pair_moves
from ..kernel_arrays import CandidatePairs, NewtonResult
from ..rod.rod_energy import rod_energy, rod_gradient_hessian, rod_strains
from .newton_assembly import assemble, constrained_residual, node_distances, pair_buffers, prepare_system
from .newton_phases import (
    GN_OVERESTIMATE,
    accept,
    candidate_pairs,
    evaluate_pairs,
    factor_damped,
    geodesic_correction,
    indefinite,
    largest_move,
    left_saddle,
    limited_step,
    newton_buffers,
    quadratic_model,
    stable_at_rest,
    trial,
)
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
    (Ziegler): with one, the energy's Hessian says nothing about stability and is not tested.

    One iteration: the contact candidates; energy, gradient and Hessian (assemble); at rest, the
    stability test (and the saddle escape); else a step of the trust region (_newton_step)."""
    buf = newton_buffers(pos, quat, rod, extra.sl_point.shape[0])
    test_stability = _conservative(rod.rot_couple)
    searched_at, pairs = _handed_pairs(pos, extra, handed, buf.node_move)
    ut_store = np.zeros((0, rod.fixed.shape[0]))
    coupling = (ut_store[:0], np.zeros(0), np.zeros(0), np.empty((0, 4), dtype=np.int64), ut_store,
                np.empty((0, 0)), np.empty(0, dtype=np.int64))  # fmt: skip
    trust = (0.0, 0, False)  # lambda, saddles left, Gauss-Newton steps overestimated
    ratio, energy = np.inf, np.inf
    live = np.zeros(0, dtype=np.int64)
    shift = stability_shift(rod.rest_len)  # of the stability test, for this resolution
    for it in range(max_iterations + 1):
        pairs, live = candidate_pairs(pos, searched_at, pairs, extra)
        if extra.sl_point.shape[0] > 0:  # held fixed within this iteration
            sliding_crossings(pos, extra.node_part, extra.sl_point, extra.sl_axis, extra.sl_part, buf.sl_seg, buf.sl_t)
        energy = rod_energy(pos, quat, rod, load_factor)
        extra_energy = assemble(
            pos, quat, rod, load_factor, buf.grad, buf.band, 1.0, extra, pairs, live, buf.sl_seg, buf.sl_t
        )
        energy += extra_energy
        if not math.isfinite(energy):
            return _result(NOT_FINITE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
        ratio = constrained_residual(buf.grad, rod.fixed, dof_tol)
        if not math.isfinite(ratio):
            return _result(NOT_FINITE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
        if ratio <= 1.0 and not test_stability:
            return _result(CONVERGED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
        if ratio <= 1.0:
            stable, coupling = stable_at_rest(pos, quat, rod, load_factor, extra, pairs, live, buf, coupling, shift)
            if stable:
                return _result(CONVERGED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
            may_leave = leave_saddles and it < max_iterations and trust[1] < MAX_ESCAPES
            if not (may_leave and left_saddle(pos, quat, rod, load_factor, extra, pairs, buf, coupling, shift, energy)):
                return _result(UNSTABLE, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
            trust = (0.0, trust[1] + 1, trust[2])
            continue
        if it == max_iterations:
            break
        accepted, trust, coupling = _newton_step(
            pos, quat, rod, load_factor, extra, pairs, live, buf, coupling, (energy, extra_energy), trust
        )
        if not accepted:
            return _result(STALLED, it, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)
    return _result(MAX_ITERATIONS, max_iterations, ratio, energy, _deepest(pairs.gap, live), searched_at, pairs, pos)


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
def _newton_step(pos, quat, rod, load_factor, extra, pairs, live, buf, coupling, energies, trust):
    """One step of the trust region from the state assembled in ``buf``: (whether a step was taken,
    trust = (lambda, saddles left, Gauss-Newton overestimates) after, the coupling). Tries at most 60
    damped systems: an indefinite exact Hessian falls back to Gauss-Newton, a poor or refused trial
    raises lambda."""
    energy, extra_energy = energies
    lam, escapes, gn_overestimates = trust
    bw, fixed, self_gap = rod.bw, rod.fixed, extra.contact.self_gap
    prepare_system(buf.band, bw, fixed, buf.damping)
    for i in range(fixed.shape[0]):
        buf.rhs[i] = -buf.grad[i]
    Ut, k_c, k_s, spans, ut_store, S, piv = coupling
    if self_gap > 0:
        Ut, k_c, k_s, spans, ut_store = self_coupling(pos, rod, pairs, extra, np.bool_(True), ut_store, spans)
    rod_strains(pos, quat, rod, buf.s_zero, buf.b_zero)
    exact, rebuild = True, False
    for _attempt in range(60):
        if rebuild:  # the Gauss-Newton matrix
            Ut, k_c, k_s, spans, ut_store = _reassembled(
                pos, quat, rod, load_factor, extra, pairs, live, buf, exact, (Ut, k_c, k_s, spans, ut_store)
            )
            rebuild = False
        banded, low_rank, panels, S, piv = factor_damped(buf, bw, lam, (Ut, k_c, k_s, spans, ut_store, S, piv))
        if not banded:
            lam, exact, rebuild = indefinite(lam, exact, gn_overestimates, escapes)
            continue
        if not low_rank:
            lam = max(10.0 * lam, 1e-8)
            continue
        too_far, fraction = limited_step(pos, quat, rod, extra, pairs, buf, S, piv, panels)
        if too_far:
            lam = max(4.0 * lam, 1e-6)
            continue
        model = quadratic_model(buf.grad, buf.delta, buf.damping, fraction, lam)
        trial_energy, rho, noise, shortened, plunged, too_deep, predicted = trial(
            pos, quat, rod, load_factor, extra, pairs, buf, model, energy, extra_energy, fraction
        )
        if too_deep:
            lam = max(4.0 * lam, 1e-6)
            continue
        if not math.isfinite(trial_energy):
            lam = max(10.0 * lam, 1e-6)
            continue
        if predicted > noise and rho < 0.25 and not plunged:
            trial_energy, rho = geodesic_correction(
                pos, quat, rod, load_factor, extra, pairs, buf, (S, piv, panels), energy, (trial_energy, rho), predicted
            )
        # A step whose predicted gain is negative beyond the noise goes uphill in the model itself: the
        # band is positive definite, but the low-rank terms (-k grad M grad M^T, the distance
        # curvature) can make the whole matrix indefinite along the step. It is refused like a poor
        # one: taken, it would raise the energy.
        if abs(predicted) <= noise or rho > 1e-4:
            good = 1 if abs(predicted) <= noise or rho > 0.75 else -1 if rho < 0.25 else 0
            taken, lam_after = accept(pos, quat, extra, pairs, buf, lam, good, shortened)
            if taken:
                if not exact:
                    gn_overestimates = rho > GN_OVERESTIMATE
                return True, (lam_after, escapes, gn_overestimates), (Ut, k_c, k_s, spans, ut_store, S, piv)
            lam = lam_after
            continue
        lam = max(4.0 * lam, 1e-8)
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
