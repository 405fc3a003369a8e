# SPDX-License-Identifier: GPL-3.0-or-later
"""Newton's method on the branches and free junctions together: the predictor of a harness step.

The junctions' Newton method (junctions.py) re-solves every branch for each trial of the junction
frames. Where no branch touches anything, that nested solve is one minimisation of the rods' energy
over all their free dofs and the junction frames, whose Hessian is an arrow-head matrix: a banded
block per branch, bordered by the 6 dofs of each free junction, which moves only its branches' held
ends. Eliminating each branch's free dofs (end_stiffness.condense) leaves a small dense system on the
junctions; its solution and the branches' responses to it are one Newton step of the whole harness,
at the cost of one banded factorisation per branch.

The result is a prediction, not an answer: it knows nothing of contact, friction or clips held by
energies, so it is offered only where none acts and none can within the move, and the harness then
solves every branch from it with all its checks (JunctionSystem._solve_piece), which confirms it in
a Newton iteration or two per branch.

A step's first Newton step is the harness's linear response to the holders' move, wrong to second
order in the move. A drag repeats its moves: the last step's second-order term (Curvature, its
equilibrium against its linear response) is added to the first step where the move continues the
last one along its line, which leaves an error of third order: a 1 mm step of bench_harness then
takes two Newton steps instead of three (a predictor of higher order along the path of equilibria,
as in continuation methods: Allgower & Georg, Numerical Continuation Methods, 1990).
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit
from ..maths.rotations import axis_angle_matrix, matrix_to_quat, quat_conj_mul, quat_to_matrix, world_turn
from ..rod.rod_state import apply_boundary
from ..solve.diagnostics import elastic_and_load_energy
from ..solve.end_stiffness import Condensation, end_dofs, end_rotations, exact_for
from ..solve.newton import rod_gradient
from ..solve.newton_assembly import retracted
from ..solve.stability import band_matvec

MAX_ITERATIONS = 10  # from the last equilibrium
# Stop once every free dof's residual is this fraction of its tolerance: the solve that confirms the
# prediction then has nothing left to do, with a margin of 2 for the round-off of its own sums.
RESIDUAL_FRACTION = 0.5
MAX_CROSSING_SAMPLES = 16  # straight paths of the branches tested for crossing each other at most this often
LINE_SEARCH = tuple(0.5**j for j in range(8))


class Curvature(NamedTuple):
    """What the first step of a harness step missed: the equilibrium minus the linear response, per
    branch (state_change, zero on held dofs) and per free junction (shift and world rotation vector,
    6 each), with the move of the held dofs (_held_motion, rotations times the length scale) that
    caused it. It is the second-order term of the response, which a next move along the same line
    repeats in proportion to the square of its length."""

    move: dict  # cable id -> the held dofs' move
    branches: dict  # cable id -> the change of its dofs
    junctions: np.ndarray


# A next move repeats the last one's second-order term where it lies along it within this fraction
# of its length (a drag); any other leaves the first step linear.
ALONG_LAST = 0.25
MAX_REPEAT = 2.0  # the longest next move, in last moves, that the term is carried to


class BranchEnds(NamedTuple):
    """A branch's ends at free junctions, as the Newton step reads them."""

    sides: list  # "start" / "end"
    places: list  # the junctions' places among the free ones, per side
    held: np.ndarray  # the ends' held dofs (end_stiffness.end_dofs), side after side
    free: np.ndarray  # the branch's free dofs
    free_tolerance: np.ndarray  # their force tolerances (model.dof_tol)
    rotations: np.ndarray  # the rotation indices of the ends' frames (end_stiffness.end_rotations)


def _turn(frames, dy, free, alpha):
    out = frames.copy()
    for i, k in enumerate(free):
        out.position[k] = frames.position[k] + alpha * dy[6 * i : 6 * i + 3]
        w = alpha * dy[6 * i + 3 : 6 * i + 6]
        angle = float(np.linalg.norm(w))
        if angle > 0.0:
            out.rotation[k] = axis_angle_matrix(w / angle, angle) @ frames.rotation[k]
    return out


@njit
def _end_residual(grad, held, quats, end_rots, free, free_tolerance, G_b) -> float:
    """The largest force out of balance on the free dofs in their tolerances; and G_b = J^T g_h, the
    force and moment the held ends pass on in world terms (end_stiffness.end_map's J: the identity for
    the shift, R_f^T for the rotation)."""
    R = np.empty((3, 3))
    for e in range(end_rots.shape[0]):
        quat_to_matrix(quats[end_rots[e]], R)
        for i in range(3):
            G_b[6 * e + i] = grad[held[6 * e + i]]
            total = 0.0
            for j in range(3):
                total += R[i, j] * grad[held[6 * e + 3 + j]]
            G_b[6 * e + 3 + i] = total
    worst = 0.0
    for k in range(free.shape[0]):
        worst = max(worst, abs(grad[free[k]]) / free_tolerance[k])
    return worst


def _band_times(band, bw, x) -> np.ndarray:
    out = np.empty_like(x)
    band_matvec(band, bw, x, out)
    return out


@njit
def dof_change(pos_a, quat_a, pos_b, quat_b, node_dof, rot_dof, out):
    """The change from one state to another in the dofs' own terms: positions by their difference,
    frames by the body rotation vector theta with q_b = q_a exp(theta / 2) (rotations.py's
    increments), the shorter way round."""
    for k in range(pos_a.shape[0]):
        for c in range(3):
            out[node_dof[k] + c] = pos_b[k, c] - pos_a[k, c]
    rel = np.empty(4)
    for r in range(quat_a.shape[0]):
        quat_conj_mul(quat_a[r], quat_b[r], rel)
        sign = -1.0 if rel[0] < 0.0 else 1.0
        norm = math.sqrt(rel[1] * rel[1] + rel[2] * rel[2] + rel[3] * rel[3])
        scale = 2.0 * sign * math.atan2(norm, sign * rel[0]) / norm if norm > 0.0 else 0.0
        for c in range(3):
            out[rot_dof[r] + c] = scale * rel[1 + c]


def state_change(model, a, b) -> np.ndarray:
    """dof_change from state ``a`` to ``b``."""
    out = np.empty(model.n_dof)
    dof_change(a.positions, a.quats, b.positions, b.quats, model.node_dof, model.rot_dof, out)
    return out


def _held_motion(model, state, boundary) -> np.ndarray:
    """The move of the held dofs of ``state`` to ``boundary`` (state_change; zero on free dofs)."""
    target = state.copy()
    apply_boundary(model, target, boundary)
    out = state_change(model, state, target)
    out[~model.fixed.astype(bool)] = 0.0
    return out


def _descent(K, G, L: float):
    """The Newton step -K^-1 G, with K's negative eigenvalues turned positive where it is not positive
    definite (in variables scaled to energy units, p / L and w, as junctions.py's): then a descent
    direction, which the line search shortens (Nocedal & Wright, Sec. 3.4)."""
    d = np.tile(np.concatenate([np.full(3, L), np.ones(3)]), K.shape[0] // 6)
    K_hat = d[:, None] * (0.5 * (K + K.T)) * d[None, :]
    values, vectors = np.linalg.eigh(K_hat)
    if not np.isfinite(values).all() or values[-1] <= 0.0:
        return None
    values = np.maximum(np.abs(values), 1e-8 * values[-1])
    return -d * (vectors @ ((vectors.T @ (d * G)) / values))


def linear_response(model, state, condensation, moved):
    """``state`` moved by Newton's step of its free dofs (end_stiffness.free_step) for a world move
    ``moved`` of its ends at free junctions (shift and rotation vector per end, in ``condensation``'s
    order of sides), from ``condensation`` formed at ``state``; None where the step turns a frame
    further than a Newton step may (newton_assembly.MAX_ROTATION_STEP). The held dofs stay: the
    caller puts them where they are held."""
    grad = rod_gradient(model, state.positions, state.quats)
    _K, _r, free_step = condensation.reduced(state, grad)
    delta = free_step(moved)
    delta[model.fixed.astype(bool)] = 0.0
    return retracted(model, state, delta, 1.0) if np.isfinite(delta).all() else None


class HarnessNewton:
    """One Newton solve of ``system``'s branches and free junctions for the branch holders ``targets``
    (cable id -> Boundary) with the fixed junctions at ``frames``; ``predict`` returns the predicted
    (frames, {cable id: (state, boundary)}) or None where the prediction may not be used."""

    def __init__(self, system, harness, targets: dict, max_move: float, max_turn: float, resolution: float):
        """``max_move``, ``max_turn``: the junctions' step limits (junctions.MAX_MOVE, MAX_TURN);
        ``resolution``: energy changes below this fraction of the energy scale are round-off."""
        self.system, self.harness, self.targets = system, harness, targets
        self.max_move, self.max_turn, self.resolution = max_move, max_turn, resolution
        # of a prediction: the factor of the last step's Curvature its first step carried, that step's
        # result and its length without it (predict), whether a Newton step was cut to the step limits
        self.carried, self.first, self.first_size, self.capped, self.curvature_in = 0.0, None, None, False, None
        self.weights = {}  # cable id -> _weights
        self.free = system.free
        self.place = {k: i for i, k in enumerate(self.free)}
        self.length = system._length_scale(harness)
        self.shortest = {
            k: min(harness.cables[cid].model.cable.length for cid in system.adjacent(k)) for k in self.free
        }
        # per branch, its ends at free junctions: (junction, node, frame rotation, the end's frame in the
        # junction's), to hold them where a trial puts the junctions (as branch_boundary and apply_boundary)
        self.junction_ends = {}
        self.ends = {}  # per branch: BranchEnds of its ends at free junctions
        for cid, ends in system.branches.items():
            model = harness.cables[cid].model
            at_free = system.ends_at_free(cid)
            self.junction_ends[cid] = [
                (
                    k,
                    0 if side == "start" else model.n_nodes - 1,
                    model.start_frame if side == "start" else model.end_frame,
                    system.end_frame(cid, side),
                )
                for side, k in at_free
            ]
            sides = [side for side, _k in at_free]
            free = ~model.fixed.astype(bool)
            self.ends[cid] = BranchEnds(
                sides,
                [self.place[k] for _side, k in at_free],
                np.concatenate([end_dofs(model, side) for side in sides]) if sides else np.zeros(0, np.int64),
                np.flatnonzero(free),
                model.dof_tol[free],
                end_rotations(model, tuple(sides)),
            )

    def usable(self) -> bool:
        """Every branch solved, touching nothing, held by no energy, loaded by no couple; no free
        junction touching an obstacle."""
        h, s = self.harness, self.system
        for cid in s.branches:
            session = h.cables[cid]
            if not session.solved or not exact_for(session) or session.model.rot_couple.any():
                return False
        return not any(s.contact[k].touching(h.obstacles, s.frames.position[k]) for k in self.free)

    def _boundaries(self, frames) -> dict:
        return {cid: self.system.branch_boundary(cid, self.targets[cid], frames) for cid in self.system.branches}

    def _energy(self, states, frames) -> float:
        total = sum(elastic_and_load_energy(self.harness.cables[cid].model, st) for cid, st in states.items())
        g = self.harness.case.gravity
        specs = self.system.specs  # the junctions' weight from where they were drawn (JunctionSystem.energy)
        return total - sum(specs[k].mass * float(g @ (frames.position[k] - specs[k].position)) for k in self.free)

    def predict(self, frames, max_iterations: int = MAX_ITERATIONS, curvature: Curvature | None = None):
        """``curvature``: the last step's (Curvature), added to the first step in proportion to the
        square of the move along it (a quadratic extrapolation of the response: the first step's
        error falls from second to third order in the move)."""
        h, s = self.harness, self.system
        if not self.free or not self.usable():
            return None
        start_states = {cid: h.cables[cid].state for cid in s.branches}
        # from the last equilibrium, where every Hessian is positive definite: the first step moves the
        # held dofs to the new holders as part of the Newton step (the linear response of the whole
        # harness), which carrying the branches along with them would spoil with spurious strains
        boundaries = self._boundaries(frames)
        states = {cid: st.copy() for cid, st in start_states.items()}
        prescribed = {cid: _held_motion(h.cables[cid].model, st, boundaries[cid]) for cid, st in states.items()}
        prescribed_move = {cid: move * self._weights(cid) for cid, move in prescribed.items()}
        self.move, self.curvature_in = prescribed_move, curvature
        self.tolerance = s._tolerance(h)
        scale = s._energy_scale(h)
        energy = self._energy(states, frames)
        # the first step's factors: those of the branches' Hessians at the last equilibrium, which its
        # stability test formed (kept by the system); every later step forms its own (kept for later
        # steps as chord steps, they took twice the steps: the move to the new holders changes them)
        self.kept = {
            cid: c
            for cid, c in ((cid, s.condensations.get(cid)) for cid in s.branches)
            if c is not None and c.formed_at(h.cables[cid].model, states[cid], self.ends[cid].sides)
        }
        for _it in range(max_iterations):
            step = self._newton_step(states, prescribed)
            # the first step moves the holders too: its energy is not comparable with the one before it,
            # and its held dofs are put where the holders are whatever the length of the step, so it is
            # taken whole (the linear response of the whole harness to the holders' move)
            first, prescribed = prescribed is not None, None
            if step is None:
                return None
            dy, deltas, done = step
            if done:
                break
            if first:
                self.first_size = None if self.capped else self._size(dy, deltas)
                carried = self._carried(curvature, prescribed_move)
                if carried > 0.0 and self._step_cap(dy + carried * curvature.junctions) >= 1.0:
                    self.carried = carried  # (a term that would carry a junction past its step limits is not)
                    dy = dy + carried * curvature.junctions
                    for cid in deltas:
                        deltas[cid] = deltas[cid] + carried * curvature.branches[cid]
            self.kept = {}
            for alpha in (1.0,) if first else LINE_SEARCH:
                trial_frames = _turn(frames, dy, self.free, alpha)
                trial = {
                    cid: self._moved(cid, states[cid], deltas[cid], alpha, trial_frames, first and boundaries[cid])
                    for cid in states
                }
                if any(st is None for st in trial.values()):
                    continue
                e_trial = self._energy(trial, trial_frames)
                if first or e_trial <= energy + self.resolution * scale:
                    frames, states, energy = trial_frames, trial, e_trial
                    if first:
                        self.first = (frames, states)
                    break
            else:
                return None
        else:
            return None
        if not self._stays_clear(start_states, states, frames) or s._crosses(h, s.frames, frames) is not None:
            return None
        if any(s.contact[k].touching(h.obstacles, frames.position[k]) for k in self.free):
            return None
        boundaries = self._boundaries(frames)
        return frames, {cid: (states[cid], boundaries[cid]) for cid in states}

    def _weights(self, cid) -> np.ndarray:
        """Per dof of branch ``cid``, what a step of it counts: 1 for a position, the length scale for
        a rotation (formed once per prediction)."""
        if cid not in self.weights:
            model = self.harness.cables[cid].model
            out = np.ones(model.n_dof)
            out[model.rot_dof[:, None] + np.arange(3)] = self.length
            self.weights[cid] = out
        return self.weights[cid]

    def _carried(self, curvature, move) -> float:
        """The factor of ``curvature`` the first step adds for the held dofs' ``move``: the square of
        its length along the last move, where it lies along it (ALONG_LAST) and is at most MAX_REPEAT
        of it; else 0."""
        if curvature is None or set(curvature.move) != set(move):
            return 0.0
        if any(curvature.move[cid].shape != m.shape for cid, m in move.items()):
            return 0.0
        last = sum(float(curvature.move[cid] @ curvature.move[cid]) for cid in move)
        if not last > 0.0:
            return 0.0
        ratio = sum(float(m @ curvature.move[cid]) for cid, m in move.items()) / last
        if not 0.0 < ratio <= MAX_REPEAT:
            return 0.0
        off = sum(float(np.sum((m - ratio * curvature.move[cid]) ** 2)) for cid, m in move.items())
        if off > ALONG_LAST**2 * ratio**2 * last:
            return 0.0
        return ratio**2

    def _size(self, dy, deltas) -> float:
        """The length of a step of the junctions (``dy``) and the branches (``deltas``: cable id -> dofs),
        rotations counted times the length scale."""
        L = self.length
        total = sum(float(np.sum((d * self._weights(cid)) ** 2)) for cid, d in deltas.items())
        turns = dy.reshape(-1, 6)
        return float(np.sqrt(total + np.sum(turns[:, :3] ** 2) + L * L * np.sum(turns[:, 3:] ** 2)))

    def step_curvature(self, frames, states: dict) -> Curvature | None:
        """The Curvature of this step: its equilibrium (``frames``, ``states``: cable id -> RodState)
        against the first step's linear response (without the term it carried); None where the
        prediction took no first step, where that step was cut to the step limits (the difference then
        holds first-order terms too), or where the difference is longer than the step itself (the step
        left the linear response's reach: a snap, a jump to another equilibrium, not to be repeated)."""
        if self.first is None or self.first_size is None:
            return None
        first_frames, first_states = self.first
        branches = {}
        for cid, st in states.items():
            model = self.harness.cables[cid].model
            change = state_change(model, first_states[cid], st)
            change[model.fixed.astype(bool)] = 0.0
            branches[cid] = change
        junctions = np.zeros(6 * len(self.free))
        for i, k in enumerate(self.free):
            junctions[6 * i : 6 * i + 3] = frames.position[k] - first_frames.position[k]
            junctions[6 * i + 3 : 6 * i + 6] = world_turn(first_frames.rotation[k], frames.rotation[k])
        if self.carried > 0.0:
            junctions += self.carried * self.curvature_in.junctions
            for cid in branches:
                branches[cid] += self.carried * self.curvature_in.branches[cid]
        if self._size(junctions, branches) > self.first_size:
            return None
        return Curvature(self.move, branches, junctions)

    def _moved(self, cid, state, delta, alpha, frames, boundary):
        """``state`` moved by ``alpha`` ``delta``, its ends at free junctions held by ``frames``; with a
        ``boundary`` (the first step, whose holders move too), every held dof put where it holds."""
        model = self.harness.cables[cid].model
        out = retracted(model, state, delta, alpha)
        if out is None:
            return None
        if boundary:
            apply_boundary(model, out, boundary)
        for k, node, rot, frame in self.junction_ends[cid]:
            out.positions[node] = frames.position[k] - model.origin
            out.quats[rot] = matrix_to_quat(frames.rotation[k] @ frame)
        return out

    def _condensation(self, cid, state):
        """The branch's condensation for this step: the one kept from the last equilibrium, or one
        formed at ``state`` (from the exact Hessian; where that is not positive definite off the
        equilibrium, from the Gauss-Newton matrix), or None."""
        if cid not in self.kept:
            model, sides = self.harness.cables[cid].model, self.ends[cid].sides
            out = Condensation.at(model, state, sides)
            if out is None:
                out = Condensation.at(model, state, sides, geometric=0.0)
                if out is None:
                    return None
            return out
        return self.kept[cid]

    def _newton_step(self, states, prescribed=None):
        """(junction step, {cable id: step of its dofs}, converged) of the arrow-head system, or None
        where no branch's free block is positive definite even in Gauss-Newton form (the nested solve
        decides). ``prescribed``: per branch, the move of its held dofs to their holders (_held_motion),
        which enters the step as inhomogeneous boundary values: g <- g + H dc, H the Hessian at the
        states the step starts from (the last equilibrium)."""
        h, s = self.harness, self.system
        n = 6 * len(self.free)
        gradients = {}
        worst = 0.0 if prescribed is None else np.inf
        G = np.zeros(n)  # the junctions' gradient while the branches balance (u = 0 in condense)
        for cid, ends in self.ends.items():
            model, st = h.cables[cid].model, states[cid]
            grad = rod_gradient(model, st.positions, st.quats)
            G_b = np.empty(ends.held.shape[0])
            worst = max(
                worst, _end_residual(grad, ends.held, st.quats, ends.rotations, ends.free, ends.free_tolerance, G_b)
            )
            for a, i in enumerate(ends.places):
                G[6 * i : 6 * i + 6] += G_b[6 * a : 6 * a + 6]
            gradients[cid] = grad
        weights = np.zeros(n)  # the junctions' own weight, in their gradient
        for i, k in enumerate(self.free):
            weights[6 * i : 6 * i + 3] = -s.specs[k].mass * h.case.gravity
        G += weights
        for i, k in enumerate(self.free):
            worst = max(worst, float(np.max(np.abs(G[6 * i : 6 * i + 6]) / self.tolerance[k])))
        if worst <= RESIDUAL_FRACTION:
            # where the prediction ends, the stability test of the solve that confirms it needs each
            # branch's condensation (junction_stiffness.py): formed here, it is that test's to round-off
            for cid, ends in self.ends.items():
                condensation = Condensation.at(h.cables[cid].model, states[cid], ends.sides)
                if condensation is not None:
                    s.condensations[cid] = condensation
            return np.zeros(n), {}, True
        K, G = np.zeros((n, n)), np.zeros(n)
        pieces = {}
        for cid, ends in self.ends.items():
            model, st, grad = h.cables[cid].model, states[cid], gradients[cid]
            condensation = self._condensation(cid, st)
            if condensation is None:
                return None
            if prescribed is not None:
                grad = grad + _band_times(condensation.band, model.bw, prescribed[cid])
            Kb, rb, free_step = condensation.reduced(st, grad)
            places = ends.places
            for a, i in enumerate(places):
                G[6 * i : 6 * i + 6] += rb[6 * a : 6 * a + 6]
                for b, j in enumerate(places):
                    K[6 * i : 6 * i + 6, 6 * j : 6 * j + 6] += Kb[6 * a : 6 * a + 6, 6 * b : 6 * b + 6]
            pieces[cid] = (places, free_step, model.fixed.astype(bool))
        G += weights
        dy = _descent(K, G, self.length)
        if dy is None:
            return None
        cap = self._step_cap(dy)
        self.capped = cap < 1.0
        dy *= cap
        deltas = {}
        for cid, (places, free_step, fixed) in pieces.items():
            dh = np.concatenate([dy[6 * i : 6 * i + 6] for i in places]) if places else np.zeros(0)
            delta = free_step(dh)
            delta[fixed] = 0.0 if prescribed is None else prescribed[cid][fixed]
            deltas[cid] = delta
        return dy, deltas, False

    def _step_cap(self, dy) -> float:
        """The largest fraction (<= 1) of ``dy`` within the junctions' step limits (junctions.MAX_MOVE of
        their shortest branch, MAX_TURN radians)."""
        cap = 1.0
        for i, k in enumerate(self.free):
            move = float(np.linalg.norm(dy[6 * i : 6 * i + 3]))
            turn = float(np.linalg.norm(dy[6 * i + 3 : 6 * i + 6]))
            if move > 0.0:
                cap = min(cap, self.max_move * self.shortest[k] / move)
            if turn > 0.0:
                cap = min(cap, self.max_turn / turn)
        return cap

    def _stays_clear(self, before: dict, after: dict, frames) -> bool:
        """Whether no branch touched anything on its way: every node moved at most one reach
        (Interactions.reach) with nothing within two of the branch at the end, or no straight node path
        enters or crosses an obstacle (Interactions.passes_through) and none ends in one; and no two
        branches pass through each other on the way (they are no obstacles to each other), tested at
        every half of the thinnest branch's radius that the farthest node moves (the outlets' angles
        at the junctions' ``frames`` at the end, at their last ones before)."""
        moves = []
        for cid, st in after.items():
            check = self.harness.cables[cid].interactions
            move = float(np.linalg.norm(st.positions - before[cid].positions, axis=1).max())
            moves.append(move)
            if move <= check.reach and check.nothing_within(st, 2.0 * check.reach):
                continue
            if check.deepest_penetration(st) > 0.0 or check.passes_through(before[cid], st):
                return False
        thinnest = min(self.harness.cable_radius(cid) for cid in after)
        samples = int(np.ceil(max(moves) / (0.5 * thinnest)))
        if samples > MAX_CROSSING_SAMPLES:
            return False  # a jump that far is left to the nested solve's smaller steps
        for j in range(1, samples + 1):
            t = j / samples
            nodes = {
                cid: (1.0 - t) * before[cid].positions + t * st.positions + self.harness.cables[cid].model.origin
                for cid, st in after.items()
            }
            rotations = frames.rotation if j == samples else None
            if self.system._branches_crossing(self.harness, nodes, rotations) is not None:
                return False
        return True
