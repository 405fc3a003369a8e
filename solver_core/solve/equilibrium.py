# SPDX-License-Identifier: GPL-3.0-or-later
"""Quasi-static equilibrium of one cable under moving boundary conditions.

``solve_equilibrium`` runs the compiled Newton minimiser from a warm start. When a step fails
(iteration limit, collapsed trust region) it splits the change into halves, recursively
(automatic continuation, the "sequentially varied boundary conditions" of Linn et al.), and
when even that fails it returns the last good state with ``converged = False`` and the reason.
"""

import time
from dataclasses import dataclass

import numpy as np

from ..contact.contact import ITERATE_PENETRATION, MIN_SEPARATION, PENETRATION_TOLERANCE
from ..contact.interactions import Interactions, PairCandidates
from ..contact.obstacles import ObstacleSet
from ..kernel_arrays import CandidatePairs
from ..rod.rod_model import Boundary, RodModel
from ..rod.rod_state import RodState, apply_boundary, carry_boundary_motion, interpolate_boundary
from .newton import (
    CONVERGED,
    MAX_ITERATIONS,
    PENETRATING,
    STALLED,
    STATUS_TEXT,
    UNSTABLE,
    minimise_rod_energy,
    rod_gradient,
)
from .newton_assembly import constrained_residual
from .rod_group import GroupBoundary, RodGroup

MAX_CONTINUATION_DEPTH = 7  # up to 128 substeps per requested step
SNAP_THROUGH_ROUNDS = 10  # > 0: a piece Newton does not finish is followed in pseudo-time (0: it fails)
# Pseudo-time (settle_in_pseudo_time): at most this many implicit Euler steps, the first of which
# moves a node about PSEUDO_FIRST_MOVE segment lengths under the cable's force scale
MAX_PSEUDO_STEPS = 400
PSEUDO_FIRST_MOVE = 0.1
PSEUDO_STEP_ITERATIONS = 50
PSEUDO_FINISH_ITERATIONS = 20
PSEUDO_BUDGET = 20  # Newton iterations in all, in units of a solve's max_iterations
SETTLE_ROUNDS = 4  # descents in pseudo-time per piece of a path
# Newton iterations of one solve in all (bisections, pseudo-time and saddle escapes included), in units
# of its max_iterations: a solve that has not found an equilibrium by then fails, so that no solve can
# hold an interactive session for minutes
SOLVE_BUDGET = 50
# Pieces of the path per solve in all: a piece that ends on a saddle costs no Newton iteration, and a
# cable held inside a mesh floor bisected 188,599 of them (six minutes) inside SOLVE_BUDGET. A 4-segment
# drape over a sphere, run one iteration per kernel call (the every-iterate tests), takes 3,222.
MAX_SUBSTEPS = 32 * 2**MAX_CONTINUATION_DEPTH
# Where a piece of the path ends on a saddle, the point at which stability was lost is bisected for
# until the piece is this fraction of the path before it (or 2^-30 of the whole path) long.
STABILITY_BISECTION = 0.25
BUDGET_SPENT = -1  # the solve's status once SOLVE_BUDGET is spent (not a kernel status)
CROSSING = -2  # a holder's own motion would carry the cable through a face (not a kernel status)


@dataclass
class SolveReport:
    state: RodState
    converged: bool
    iterations: int
    residual: float  # largest force/moment residual relative to the model's force scale
    substeps: int
    solve_ms: float
    message: str
    refused: bool = False
    # a verified minimum: the Hessian on the free degrees of freedom is positive definite
    # (stability.py); every converged report is stable, except that with a dead couple, which is not
    # conservative, stability is not assessed (None)
    stable: bool | None = False
    # the band factor of the free block of the Hessian of the energy it minimised (+ the stability
    # test's shift) at ``state``, where the solve's last Newton call formed it (NewtonResult.factor),
    # for the next step's tangent predictor (tangent_predictor.py); None where none was
    free_factor: np.ndarray | None = None


def _minimise(
    model: RodModel,
    state: RodState,
    load_factor: float,
    rest_len: np.ndarray,
    max_iterations: int,
    extra: tuple,
    dof_tol: np.ndarray,
    interactions: Interactions | None = None,
    leave_saddles: bool = True,
):
    """Returns (status, iterations, residual ratio, energy at the last iterate, deepest penetration,
    the factor the stability test formed at the final state: NewtonResult.factor, empty where the
    refinement below the floor moved the state on).

    With ``interactions``, the candidate contact pairs of the last call against the same obstacles
    are handed on (a warm step moves a cable less than the search reach, and on a fine mesh the
    search costs a tenth of the step), except where pairs depend on where the search saw them."""
    searched_at, gaps_at, gap_from = np.full_like(state.positions, np.inf), np.zeros((0, 3)), np.zeros(0)
    kind, elem, prim = (np.zeros(0, dtype=np.int64) for _ in range(3))
    if interactions is not None and not interactions.uses_contact:
        interactions = None  # nothing to hand on
    kept = interactions.candidates if interactions is not None else None
    if (
        kept is not None
        and kept.obstacles is extra.obstacles
        and kept.searched_at.shape == state.positions.shape
        and not interactions.pairs_depend_on_search(state, 3.0 * interactions.reach)
    ):
        _, searched_at, kind, elem, prim, gap_from, gaps_at = kept
    rod = model.arrays(rest_len)
    handed = CandidatePairs(searched_at, kind, elem, prim, gap_from, gaps_at)
    result = minimise_rod_energy(
        state.positions, state.quats, rod, dof_tol, load_factor, max_iterations, extra, handed, leave_saddles
    )
    status, iterations, ratio, energy, depth, handed, factor = result
    if status == CONVERGED:
        refined = _refine_below_floor(model, state, load_factor, rod, extra, dof_tol, handed, ratio)
        if refined is not None:
            status, more, ratio, handed = refined
            iterations += more
            if more:
                factor = factor[:0]
    if interactions is not None:
        interactions.keep_candidates(PairCandidates(extra.obstacles, *handed))
    return status, iterations, ratio, energy, depth, factor


# Newton iterations past a residual that met only the round-off floor of a stiff cable, looking for a
# correction below the tolerance (_refine_below_floor)
FLOOR_REFINEMENTS = 6


def _refine_below_floor(model, state, load_factor, rod, extra, dof_tol, handed, ratio):
    """A residual that meets the round-off floor of a stiff cable's stretch and shear, 64 eps EA L / l
    (rod_model.build_rod_model), and not the tolerance asked for, says nothing of the soft bending
    directions: a 45-degree bend with EA = 1e11 N at 200 segments stopped there 1.2 % of its length
    from the Kirchhoff solution. Newton goes on, one iteration at a time against the tolerance without
    the floor, until its correction moves no node by more than tolerance x length and turns no
    rotation by more than the tolerance (the residual is then the floor's noise, 2.6e-6 of the force
    scale in that bend, 8e-6 L from the reference). ``ratio``: the converged residual over ``dof_tol``.
    Returns None where nothing was to do (no floor above the tolerance), else (status, iterations,
    ratio against dof_tol, the candidate pairs without gap bounds): CONVERGED after no iteration where
    the residual is within the tolerance without the floor already (its bound by ``ratio``);
    MAX_ITERATIONS if the corrections stay larger, which says the floor hid a state short of
    equilibrium."""
    strict = getattr(model, "strict_tol", None)
    if strict is None or strict.shape != dof_tol.shape:
        return None
    # the interactions' own floors (Interactions.dof_tolerance) stay: only the rod's is looked past
    strict = np.where(dof_tol == model.dof_tol, strict, dof_tol)
    if not np.any(strict < dof_tol):
        return None
    no_gaps = {"gap_from": np.zeros(0), "gaps_at": np.zeros((0, 3))}
    handed = handed._replace(**no_gaps)
    strict_ratio = ratio * float(np.max(dof_tol / strict))  # each residual over its tolerance, at most
    if strict_ratio <= 1.0:
        # within the tolerance without the floor already: the converged, tested state stands, reported
        # against that tolerance as a refinement would (a warm 1000-segment step spent 0.6 ms of 4.6
        # assembling and testing the same state again)
        return CONVERGED, 0, strict_ratio * float(strict.min() / dof_tol.min()), handed
    tolerance = float(strict.min() / model.force_scale)
    step_limit = tolerance * float(model.rest_len.sum())
    total = 0
    for _round in range(FLOOR_REFINEMENTS):
        before_pos, before_quat = state.positions.copy(), state.quats.copy()
        status, iterations, ratio, _energy, _depth, handed, _factor = minimise_rod_energy(
            state.positions, state.quats, rod, strict, load_factor, 1, extra, handed, False
        )
        handed = handed._replace(**no_gaps)
        total += iterations
        floor_ratio = ratio * float(strict.min() / dof_tol.min())
        if status == CONVERGED:  # the tolerance itself is met (and the state is stable)
            return CONVERGED, total, floor_ratio, handed
        if status != MAX_ITERATIONS or not state.is_finite():
            state.positions[:], state.quats[:] = before_pos, before_quat
            return CONVERGED, total, 1.0, handed  # as the floor had it
        move = float(np.abs(state.positions - before_pos).max())
        # the angle turned, 2 |q - q'| for small turns (an arccos of the dot product loses half the digits)
        chord = np.minimum(
            np.linalg.norm(state.quats - before_quat, axis=1), np.linalg.norm(state.quats + before_quat, axis=1)
        )
        turn = 2.0 * float(chord.max(initial=0.0))
        if move <= step_limit and turn <= tolerance:
            return CONVERGED, total, floor_ratio, handed
    return MAX_ITERATIONS, total, np.inf, handed


def rotations_next_to_nodes(model) -> np.ndarray:
    """Per node, the rotation numbered next to it in the dofs. A proximal spring of pseudo-time holds
    a node only (its rotational stiffness is zero) but, as a compliant clip, names a rotation too:
    this one keeps every Hessian entry it writes inside the band."""
    by_dof = np.argsort(model.rot_dof)
    after = np.searchsorted(model.rot_dof[by_dof], model.node_dof)
    return by_dof[np.minimum(after, by_dof.shape[0] - 1)]


def settle_in_pseudo_time(
    model,
    interactions,
    state: RodState,
    boundary,
    load_factor: float,
    rest_len: np.ndarray,
    max_iterations: int,
    budget: int | None = None,
):
    """Follow the descent from ``state`` (modified in place) by implicit Euler steps in pseudo-time,
    the incremental potential E(x) + sum_i w_i/2 |x_i - x_i^k|^2 (pseudo-transient continuation,
    Kelley & Keyes 1998; the incremental potential of IPC, Li et al. 2020), until plain Newton
    converges from where the cable has got to. Returns (status, iterations).

    The proximal springs enter the kernel as translational compliant clips at every node (their
    energy, gradient and banded Hessian are the mounts'), so each step is a small, well-posed
    minimisation that cannot jump to another valley; w shrinks (the step grows) while steps
    converge, and grows where one does not."""
    base = interactions.kernel_arrays(boundary)
    dof_tol = interactions.dof_tolerance(boundary)
    n = state.positions.shape[0]
    length = float(model.rest_len.sum())
    node_len = np.asarray(interactions.node_lengths, dtype=np.float64)
    weight = model.force_scale / (length * PSEUDO_FIRST_MOVE * float(model.rest_len.mean()))
    own = np.arange(n, dtype=np.int64)
    next_rot = rotations_next_to_nodes(model)
    quats = np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (n, 1))
    total = 0
    budget = PSEUDO_BUDGET * max_iterations if budget is None else min(budget, PSEUDO_BUDGET * max_iterations)
    for _step in range(MAX_PSEUDO_STEPS):
        if total > budget:
            break
        K = np.zeros((n, 6, 6))
        for k in range(3):
            K[:, k, k] = weight * node_len
        if interactions.settings.friction and interactions.uses_contact:
            # friction acts along the descent: a contact that closed during the last step sticks where
            # it closed, and a sliding one's anchor follows it (the lag of a time step's friction)
            interactions.update_friction(state, settle=True)
            base = interactions.kernel_arrays(boundary)
        extra = base._replace(
            cc_node=np.concatenate([base.cc_node, own]),
            cc_rot=np.concatenate([base.cc_rot, next_rot]),
            cc_centre=np.concatenate([base.cc_centre, state.positions]),
            cc_quat=np.concatenate([base.cc_quat, quats]),
            cc_K=np.concatenate([base.cc_K, K]),
        )
        trial = state.copy()
        status, iterations, _ratio, _energy, _depth, _factor = _minimise(
            model,
            trial,
            load_factor,
            rest_len,
            min(PSEUDO_STEP_ITERATIONS, max_iterations),
            extra,
            dof_tol,
            interactions,
        )
        total += iterations
        if not trial.is_finite():
            weight *= 4.0
            continue
        # Every Newton iterate lowers E + proximal springs, which are zero at the start, so it lowers
        # E itself and is free of intersections: a step that did not converge still made progress.
        state.positions[:], state.quats[:] = trial.positions, trial.quats
        if status != CONVERGED:
            weight *= 4.0
            continue
        if iterations > 8:
            continue  # a hard step: the next one as long, and no finish tried from here
        weight *= 0.5
        finish = state.copy()
        status, iterations, _ratio, _energy, _depth, _factor = _minimise(
            model,
            finish,
            load_factor,
            rest_len,
            min(PSEUDO_FINISH_ITERATIONS, max_iterations),
            base,
            dof_tol,
            interactions,
        )
        total += iterations
        if finish.is_finite():
            # converged or not, Newton descended from the state (a cable left on a saddle, over the
            # top of a sphere, is a minimum of the proximal energy at the weight that put it there:
            # the next step would start from that saddle again, and the weight never shrank)
            state.positions[:], state.quats[:] = finish.positions, finish.quats
            if status == CONVERGED:
                return CONVERGED, total
    return MAX_ITERATIONS, total


MAX_STIFFENING = 3  # contact stiffness raised tenfold at most this often per solve
# A solve whose deepest contact still exceeds this many radii after the last stiffening has failed (a
# holder inside an obstacle). Less is tolerated: a cable solved alone, squeezed between a table and
# another cable frozen where that one was solved, cannot be cleared by stiffer contact.
PENETRATION_LIMIT = 0.5
MAX_FRICTION_ROUNDS = 12  # normal force / stick-slip fixed point per solve
# The fixed point between normal and friction forces ends when no node's normal force changes by more
# than this share of the largest. The friction a result reports is mu N at the final normal forces, the
# equilibrium's at the last round's: at 1e-3 a drape over a sphere reported forces 8e-5 of its weight
# out of balance; the rounds contract some tenfold each, at 1-2 Newton iterations a round.
FRICTION_FIXED_POINT = 1e-7


def _minimise_with_interactions(
    model, interactions, state, boundary, load_factor, rest_len, max_iterations, leave_saddles=True
):
    """Minimise, then stiffen contact until penetration is small and settle friction's fixed point.
    Returns (status, iterations, residual ratio, energy, the last call's factor: _minimise's)."""
    total = 0
    status, iterations, ratio, energy = CONVERGED, 0, 0.0, np.inf
    factor = np.empty((0, 0))
    if interactions.needs_normal_forces():
        # anchored nodes without a normal force yet: get one from a frictionless probe of a copy,
        # so that the first friction round already knows what static friction can hold
        probe = state.copy()
        saved = interactions.friction_state
        interactions.friction_state = type(saved).empty(model.n_nodes)
        status, iterations, ratio, energy, _depth, _factor = _minimise(
            model,
            probe,
            load_factor,
            rest_len,
            max_iterations,
            interactions.kernel_arrays(boundary),
            interactions.dof_tolerance(boundary),
            interactions,
        )
        total += iterations
        interactions.friction_state = saved
        interactions.set_normal_forces(probe)
    for _round in range(MAX_FRICTION_ROUNDS):
        for _stiffen in range(MAX_STIFFENING + 1):
            status, iterations, ratio, energy, depth, factor = _minimise(
                model,
                state,
                load_factor,
                rest_len,
                max_iterations,
                interactions.kernel_arrays(boundary),
                interactions.dof_tolerance(boundary),
                interactions,
                leave_saddles,
            )
            total += iterations
            if status != CONVERGED or not interactions.uses_contact:
                break
            if interactions.pairs_depend_on_search(state, interactions.reach):
                depth = interactions.deepest_pair_penetration(state)
            if depth <= PENETRATION_TOLERANCE * interactions.radius:
                break
            interactions.stiffen(10.0)
        else:
            if depth > PENETRATION_LIMIT * interactions.radius:
                status = PENETRATING
        if status != CONVERGED or not (interactions.settings.friction and interactions.uses_contact):
            break
        if interactions.update_friction(state, settle=False) < FRICTION_FIXED_POINT:
            break
    return status, total, ratio, energy, factor


def _carried_into_obstacle(interactions: Interactions, start: RodState, carried: RodState) -> bool:
    """Whether moving the free nodes with the holders from ``start`` to ``carried`` passes a face or
    sinks the cable into an obstacle deeper than a Newton step may (contact.ITERATE_PENETRATION), more
    than it already was."""
    move = float(np.linalg.norm(carried.positions - start.positions, axis=1).max())
    allowed = ITERATE_PENETRATION * interactions.radius
    before = interactions.known_penetration(start)  # the last result's, measured at the end of its solve
    if before is None:
        if interactions.nothing_within(start, move):
            # nothing within reach of the carry: three cables hanging above a 200k-triangle collider
            # spent 4 ms of a 10 ms Simulate tick on the tests below
            return False
        before = interactions.deepest_penetration(start)
    if interactions.crosses_between(start, carried):
        return True
    if interactions.jumps_across_cables(start, carried, max(allowed, before)):
        return True  # a taut cable carried 20 mm up by its connectors jumped across one 8 mm thick
    # a depth grows at most as far as the nodes move: a small carry needs no search
    if before + move <= allowed:
        return False
    depth = interactions.deepest_penetration(carried)
    return depth > allowed and depth > before


def _balanced_start(model: RodModel, state: RodState, boundary: Boundary, dof_tol: np.ndarray):
    """(``state`` held at ``boundary``, its residual / tolerance) where the rod's own energy is balanced
    there as the Newton kernel judges it (constrained_residual, the same tolerances), else None."""
    trial = state.copy()
    apply_boundary(model, trial, boundary)
    ratio = constrained_residual(rod_gradient(model, trial.positions, trial.quats), model.fixed, dof_tol)
    return (trial, ratio) if ratio <= 1.0 else None


def _relative_residual(model: RodModel, ratio: float) -> float:
    # ratio is residual / per-dof tolerance; report it against the force scale instead
    return float(ratio * model.dof_tol.min() / model.force_scale)


# A cold start whose segments are stretched or compressed by more than this is first relaxed
# by paying the cable out gradually from the guess's own segment lengths.
MAX_START_STRAIN = 0.2


def solve_equilibrium(
    model: RodModel,
    state: RodState,
    boundary: Boundary,
    previous: Boundary | None = None,
    max_iterations: int = 200,
    interactions: Interactions | None = None,
    max_depth: int = MAX_CONTINUATION_DEPTH,
    predictor: np.ndarray | None = None,
    snap_through_rounds: int = SNAP_THROUGH_ROUNDS,
    guess: RodState | None = None,
    stable_start: bool = False,
) -> SolveReport:
    """Solve for the equilibrium with ``boundary`` held, starting from ``state``.

    ``state`` must be an equilibrium for ``previous`` (a warm start) or, when ``previous`` is
    None, a guess that already satisfies ``boundary`` (a cold start). The path from start to
    target is parametrised by t in [0, 1]: boundary frames move from ``previous`` to
    ``boundary``; on a cold start the loads ramp up from zero and the rest lengths from those of
    the guess. A failed piece of the path is split in halves, recursively (``max_depth`` times at
    most). The input state is never modified.

    ``predictor``: per-node displacement to start a warm step from (predictor.secant_displacement)
    instead of carrying the free span along with the holders; used for the whole step only, the
    halves of a failed one start as before.

    ``guess``: a predicted state for the whole step (its held dofs are put at ``boundary``), used as
    ``predictor`` is but for frames too: the linear response of a harness's branch to its junctions'
    move (junction_newton.linear_response).

    ``snap_through_rounds``: 0 leaves out the pseudo-time descent (settle_in_pseudo_time) for a
    piece plain Newton does not finish.

    ``stable_start``: the caller has shown that ``state`` would be a strict minimum were it balanced
    (the free block of the exact Hessian of the rod's energy positive definite there:
    end_stiffness.Condensation.proves_stable) and that nothing but the rod's own energy acts on it
    (end_stiffness.exact_for). A solve whose holders stay then checks the balance alone
    (_balanced_start) and does not repeat the stability test.
    """
    t0 = time.perf_counter()
    counters = {"iterations": 0, "substeps": 0, "status": CONVERGED, "ratio": 0.0}
    budget = SOLVE_BUDGET * max_iterations
    if interactions is None:
        interactions = Interactions(model, ObstacleSet())
    friction_before = interactions.friction_state.copy()
    if previous is None:
        interactions.place_anchors(state)
    cold = previous is None
    # A warm solve whose frames do not move has nothing to split: every half of the path is the same
    # problem from the same start, and failing it 2^depth times over only costs time.
    still = not cold and same_hold(previous, boundary)
    if stable_start and still and not interactions.settings.friction and not np.any(model.rot_couple):
        balanced = _balanced_start(model, state, boundary, interactions.dof_tolerance(boundary))
        if balanced is not None:
            trial, ratio = balanced
            elapsed = (time.perf_counter() - t0) * 1e3
            residual = _relative_residual(model, ratio)
            return SolveReport(trial, True, 0, residual, 1, elapsed, "converged", stable=True)
    stiffness_before = interactions.stiffness
    start_strain = 0.0
    if cold:  # the loads ramp up from zero and the rest lengths from the guess's (configure)
        guess_len = np.linalg.norm(np.diff(state.positions, axis=0), axis=1)
        start_strain = float(np.max(np.abs(guess_len / model.rest_len - 1.0)))
        previous = boundary
        guess_len = np.where(guess_len > 1e-6 * model.rest_len, guess_len, model.rest_len)

    def configure(t: float):
        if t >= 1.0:
            b = boundary
        elif t <= 0.0:
            b = previous
        elif isinstance(model, RodGroup):
            b = previous.interpolate(boundary, t)
        else:
            b = interpolate_boundary(previous, boundary, t)
        if not cold:
            return b, 1.0, model.rest_len
        return b, t, (1.0 - t) * guess_len + t * model.rest_len

    def halves(start: RodState, ta: float, tb: float, depth: int):
        # the piece from ta to tb as two pieces, the second from where the first ends
        tm = 0.5 * (ta + tb)
        middle = attempt(start, ta, tm, depth)
        return None if middle is None else attempt(middle, tm, tb, depth)

    def attempt(start: RodState, ta: float, tb: float, depth: int):
        # A cable leaves a branch that turns unstable where it turns unstable, in the mode that turns
        # unstable first, as a slowly loaded cable does: from the end of a long piece (a 1 % step of a
        # rod's end is some 250 Euler loads) the steepest way down is a wrinkle, not the elastica.
        # So a piece ending on a saddle is bisected until it is short, and only then left.
        if counters["iterations"] >= budget or counters["substeps"] >= MAX_SUBSTEPS:
            counters["status"] = BUDGET_SPENT
            return None
        located = still or tb - ta <= max(STABILITY_BISECTION * ta, 2.0**-30)
        # friction's path memory as the piece found it: a failed piece's halves start from it
        frictional = interactions.settings.friction
        friction_at_start = interactions.friction_state.copy() if frictional else interactions.friction_state
        trial = start.copy()
        b_a, _, _ = configure(ta)
        b_b, load_factor, rest_len = configure(tb)
        # the holders move alone (else the free span is carried with them, or by the predictor)
        # (holders that stay put have nothing to carry: the start is put where they hold, as it lies)
        holders_alone = isinstance(model, RodGroup) or previous is boundary or still
        if isinstance(model, RodGroup):
            # Cables solved together rest on each other: blending one cable's holder motion along it
            # pushes its middle into the cables it touches (a 1 mm step of one end of ten crossed
            # cables started 1e8 tolerances off equilibrium and took 50-70 iterations). With the
            # holders moved alone the first Newton step finds the elastic response, with the
            # contacts in its model (21-26 iterations).
            model.apply_boundary(trial, b_b)
        elif holders_alone:
            apply_boundary(model, trial, b_b)
        elif guess is not None and depth == 0 and ta == 0.0 and tb == 1.0:
            trial = guess.copy()
            apply_boundary(model, trial, b_b)
        elif predictor is not None and depth == 0 and ta == 0.0 and tb == 1.0:
            trial.positions += predictor
            apply_boundary(model, trial, b_b)
        else:
            carry_boundary_motion(model, trial, b_a, b_b)
        if interactions.uses_contact and not holders_alone and _carried_into_obstacle(interactions, start, trial):
            # Carried along with its holders (or by the predictor), the free span would pass through a
            # face or sink into an obstacle: a cable resting on a thin plate whose connector moves down
            # went through it before the first iteration, and one over a sphere was pushed in past its
            # centre line and came out underneath. The holders move alone instead.
            trial = start.copy()
            apply_boundary(model, trial, b_b)
            holders_alone = True
        if interactions.uses_contact and holders_alone and interactions.crosses_between(start, trial):
            # where even the holders alone cross a face (a piece too long for the segments next to a
            # holder to sweep clear), the piece is split
            counters["substeps"] += 1
            counters["status"] = CROSSING
            if depth >= max_depth or still:
                return None
            return halves(start, ta, tb, depth + 1)
        first = trial.copy()
        status, iterations, ratio, energy, factor = _minimise_with_interactions(
            model, interactions, trial, b_b, load_factor, rest_len, max_iterations, located
        )
        if status == UNSTABLE and not located and trial.is_finite():
            counters["iterations"] += iterations
            counters["substeps"] += 1
            friction_at_end = interactions.friction_state
            interactions.friction_state = friction_at_start.copy() if frictional else friction_at_start
            found = halves(start, ta, tb, depth)
            if found is not None or counters["substeps"] >= MAX_SUBSTEPS:
                return found
            interactions.friction_state = friction_at_end
            # Just past a bifurcation the new branch can be too flat to converge on (a rod twisted a
            # hair beyond its critical twist): the saddle at this piece's end, deeper in the unstable
            # range, is left instead.
            status, iterations, ratio, energy, factor = _minimise_with_interactions(
                model, interactions, trial, b_b, load_factor, rest_len, max_iterations
            )
        if status in (MAX_ITERATIONS, STALLED) and first.is_finite() and snap_through_rounds > 0 and depth == 0:
            # A snap-through (a cable sliding off an edge or a box) is a long descent that Newton's
            # large steps may leave for another valley: it is followed from this piece's start in
            # pseudo-time instead, as the cable would move
            settled = first.copy()
            for _round in range(SETTLE_ROUNDS):
                status, more = settle_in_pseudo_time(
                    model,
                    interactions,
                    settled,
                    b_b,
                    load_factor,
                    rest_len,
                    max_iterations,
                    budget - counters["iterations"] - iterations,
                )
                iterations += more
                trial = settled.copy()
                if status != CONVERGED:
                    break
                # contact pairs searched afresh can show the settled state a little short of the end
                # of its descent: it goes on from there
                status, more, ratio, energy, factor = _minimise_with_interactions(
                    model, interactions, trial, b_b, load_factor, rest_len, max_iterations
                )
                iterations += more
                if status not in (MAX_ITERATIONS, STALLED):
                    break
        counters["iterations"] += iterations
        counters["substeps"] += 1
        counters["status"], counters["ratio"] = status, ratio
        if status == CONVERGED and trial.is_finite():
            counters["factor"] = (factor, trial)
            return trial
        if depth >= max_depth or still:
            return None
        interactions.friction_state = friction_at_start
        return halves(start, ta, tb, depth + 1)

    pieces = max(1, int(np.ceil(start_strain / MAX_START_STRAIN))) if start_strain > MAX_START_STRAIN else 1
    ts = np.linspace(0.0, 1.0, pieces + 1) if pieces > 1 else np.array([0.0, 1.0])
    result = state
    for ta, tb in zip(ts[:-1], ts[1:]):
        result = attempt(result, float(ta), float(tb), 0)
        if result is None:
            break
    elapsed = (time.perf_counter() - t0) * 1e3
    residual = _relative_residual(model, counters["ratio"])
    if result is not None and interactions.uses_contact:
        # Honest results: the solve's candidate pairs see segments against faces only near sharp edges,
        # so the state is checked against everything once more, segments piercing faces included. A
        # straight segment over gently curved facets may cut them by its chord sagitta (README, Known
        # limits); a centre line nearer a surface than the minimum separation has cut into the obstacle.
        depth = interactions.deepest_penetration(result)
        if depth > (1.0 - MIN_SEPARATION) * interactions.radius:
            interactions.friction_state = friction_before
            interactions.stiffen(stiffness_before / interactions.stiffness)
            return SolveReport(
                state.copy(),
                False,
                counters["iterations"],
                residual,
                counters["substeps"],
                elapsed,
                f"no equilibrium found (the cable would cut into an obstacle by "
                f"{depth / interactions.radius * 100:.0f} % of its radius; use shorter segments); "
                f"the last good state is kept",
            )
    if result is not None:
        if interactions.settings.friction and interactions.uses_contact:
            interactions.update_friction(result, settle=True)
        # with a dead couple the energy's Hessian says nothing about stability (newton.minimise_rod_energy)
        stable = None if np.any(model.rot_couple) else True
        factor, at = counters.get("factor", (None, None))
        return SolveReport(
            result,
            True,
            counters["iterations"],
            residual,
            counters["substeps"],
            elapsed,
            "converged",
            stable=stable,
            free_factor=factor if at is result and factor.shape[0] else None,
        )
    interactions.friction_state = friction_before
    # contact stiffened on the way to a failure stays as it was (stiffer contact only makes the next
    # try harder)
    interactions.stiffen(stiffness_before / interactions.stiffness)
    reason = (
        f"the limit of {MAX_SUBSTEPS} substeps per solve was reached"
        if counters["substeps"] >= MAX_SUBSTEPS
        else f"{counters['iterations']} iterations spent (at most {SOLVE_BUDGET} x solver.max_iterations per solve)"
        if counters["status"] == BUDGET_SPENT or counters["iterations"] >= budget
        else "a holder's motion would carry the cable through an obstacle"
        if counters["status"] == CROSSING
        else STATUS_TEXT[counters["status"]]
    )
    return SolveReport(
        state.copy(),
        False,
        counters["iterations"],
        residual,
        counters["substeps"],
        elapsed,
        f"no equilibrium found ({reason}, {counters['substeps']} substeps); the last good state is kept",
    )


def held_frames(boundary) -> list:
    """The frames a boundary (or a group's) holds its cable(s) at, in order (None: a free end)."""
    if isinstance(boundary, GroupBoundary):
        return [f for part in boundary.parts for f in held_frames(part)]
    return [boundary.start, boundary.end, *boundary.clips]


def same_hold(a, b, atol: float = 0.0) -> bool:
    """Whether two boundaries hold the cable(s) at the same frames: exactly, or within ``atol`` (m, and
    on the unit vectors) in every entry."""
    fa, fb = held_frames(a), held_frames(b)
    if len(fa) != len(fb):
        return False

    def equal(u, v):
        return np.array_equal(u, v) if atol == 0.0 else float(np.abs(np.subtract(u, v)).max()) <= atol

    for x, y in zip(fa, fb):
        if x is y:
            continue
        if x is None or y is None or (x.normal is None) != (y.normal is None):
            return False
        if not (
            equal(x.position, y.position)
            and equal(x.tangent, y.tangent)
            and (x.normal is None or equal(x.normal, y.normal))
        ):
            return False
    return True


def centre_line_length(state: RodState) -> float:
    return float(np.linalg.norm(np.diff(state.positions, axis=0), axis=1).sum())
