# SPDX-License-Identifier: GPL-3.0-or-later
"""The equilibrium of junctions: the rigid bodies where the branches of a harness meet.

A free junction has a position p and a rotation R (6 unknowns); each branch ending there is held by
the junction's frame as by a connector with a normal. The total energy is minimised over the branches
and the junctions by static condensation: for given junction frames every branch is solved to its own
equilibrium (Harness.solve_cable: contact, clips, continuation and all its checks), which leaves the
reduced energy E(p, R). Its gradient is what the branches' ends carry (the envelope theorem): with the
force f_b and couple m_b that the junction exerts on branch b (diagnostics.reactions),

    dE/dp = sum_b f_b - m g,        dE/dw = sum_b m_b      (w: a rotation increment in the world frame)

so the junction is in equilibrium, forces and moments balanced, where that gradient vanishes. Its
Hessian, the stiffness of the junctions against the branches (the Schur complement of the branches'
own stiffness), comes from the branches' Hessians where nothing is within reach of a branch
(end_stiffness.py, exact), else from finite differences of branch re-solves, kept between steps with
Broyden's update; Newton steps on the junctions use it, shifted positive definite where it is not.
Where nothing is within reach, a step is first predicted by Newton's method on the branches and
junctions together (junction_newton.py), which the branch solves then confirm. The stiffness and the
tests built on it are in junction_stiffness.py, the refusals of a step (through an obstacle or a
cable, branches crossing, overstretched) in junction_checks.py.
A state is accepted as converged only when every branch converged stably and the condensed stiffness
has no negative eigenvalue beyond its finite-difference noise (formed afresh, or kept from a state
nearby under nearly the same loads while clearly positive definite): with the branches at
minima, that makes the whole harness a minimum (the Schur complement of a matrix with a positive
definite block is positive definite exactly when the matrix is). A saddle is left along the direction
of negative stiffness.

Variables are scaled to energy units: y = (p / L, w), g_hat = (L dE/dp, dE/dw), L the longest branch.
"""

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..contact.contact import PENETRATION_TOLERANCE
from ..maths.rotations import axis_angle_matrix, frame_from_tangent, slerp_matrix, world_turn
from ..rod.rod_state import apply_boundary, interpolate_boundary
from ..solve.end_stiffness import exact_for
from ..solve.equilibrium import SolveReport
from ..solve.sessions import restore_sessions, snapshot_sessions
from ..specs.junction_spec import end_frame_at
from .branch_partners import any_partner, group_of, other_cables, solve_group
from .condensed_energy import CondensedEnergy
from .junction_checks import JunctionChecks
from .junction_contact import JunctionContact
from .junction_newton import Curvature, HarnessNewton, linear_response
from .junction_steps import MAX_MOVE, MAX_TURN, JunctionFrames, JunctionSteps
from .junction_stiffness import (
    ENERGY_RESOLUTION,
    JunctionStiffness,
    broyden_update,
    merit,
    negative_direction,
    newton_step,
    stiffness_noise,
)

# Newton iterations on the junctions for a step taken whole (a junction rolling off the top of a sphere
# its branches touch slides round it in 100-150: bench_junction_contact), and per piece of a step split
# after that failed (up to 14 pieces: a step that cannot be made is not made 4 times slower)
MAX_OUTER = 400
MAX_OUTER_SPLIT = 100
MAX_REJECTS = 8  # rejected trial steps in a row before the piece fails
MAX_ESCAPES = 3  # saddles left per piece
# Accepted steps in a row that do not halve the force out of balance before a state is tested for
# balance to the energy's resolution (junction_stiffness._balanced_to_resolution), as after MAX_REJECTS
# rejected ones
STAGNANT_STEPS = 4
# Broyden updates within one piece of a step after which the stiffness is formed afresh (far from the
# balance a secant model soon misleads; junction_stiffness.STALE_AFTER counts them for the stability test)
REFRESH_AFTER = 6
SADDLE_STEPS = (1.0, 0.25, 0.0625)  # fractions of the step cap tried off a saddle
MAX_SPLITS = 3  # a failing step is split into 2, 4, 8 pieces


@dataclass(frozen=True)
class JunctionCheckpoint:
    """What a solve changes in a JunctionSystem, copied (JunctionSystem.checkpoint)."""

    frames: JunctionFrames
    stiffness: np.ndarray | None  # the junctions' condensed stiffness, as formed or updated
    broyden_updates: int
    residual: object
    loads: dict
    last: object  # the last converged step, for the predictor
    last_motion: object
    formed_at: object  # the state the stiffness was formed at
    curvature: object
    contact: list | None  # per junction contact: (stiffness, stiffenings, contacts)


@dataclass
class JunctionReport:
    converged: bool
    message: str
    iterations: int = 0  # Newton iterations on the junctions
    branch_solves: int = 0
    stable: bool | None = False
    escapes: int = 0  # saddles left on the way
    # the first solve's start on coarse branches (coarse_harness.py), its own report, or None
    coarse: "JunctionReport | None" = None


@dataclass
class JunctionSystem(JunctionStiffness, JunctionChecks, CondensedEnergy, JunctionSteps):
    specs: tuple  # JunctionSpec, case order
    branches: dict  # cable id -> ((side, JunctionEnd), ...)
    # the last converged (before the first solve: the case's, or a coarse start's: coarse_harness.py)
    frames: JunctionFrames
    free: tuple  # indices of the free junctions
    stiffness: np.ndarray | None = None  # condensed, scaled, of the free junctions (6 n_free square)
    broyden_updates: int = 0
    residual: np.ndarray | None = None  # per junction (6,) force and moment out of balance, last solve
    loads: dict = field(default_factory=dict)  # junction id -> [(cable, side, force, moment)] on the junction
    last: JunctionReport | None = None
    energy_scale: float = 0.0
    # (how far the holders moved, per junction (shift (n, 3), turn (n, 3) as rotation vectors)) of the
    # last converged step, for the predictor
    last_motion: tuple | None = None
    # the last step's second-order response (junction_newton.Curvature), where it was one piece that
    # the whole harness's Newton method predicted
    curvature: Curvature | None = None
    formed_at: tuple | None = (
        None  # (frames, _end_loads: junction_stiffness.py) where the stiffness was last formed by differences
    )
    contact: list | None = None  # per junction, its ball against the obstacles (junction_contact.py)
    _load_cache: dict = field(default_factory=dict, repr=False)  # cable id -> (its state, _branch_loads)
    # cable id -> its Hessian's condensation at the last stability test (a cache: used only at that state)
    condensations: dict = field(default_factory=dict, repr=False)
    _end_frames: dict = field(default_factory=dict, repr=False)  # (cable id, side) -> end_frame
    # during a solve: the cables that may touch a branch (branch_partners.py) and where they are held
    _others: list = field(default_factory=list, repr=False)
    _partner_targets: dict = field(default_factory=dict, repr=False)
    _others_energy: float = 0.0  # theirs when the solve began
    # (world nodes, frames' rotations, (model, radius) per branch, branch ids) where
    # _branches_crossing (junction_checks.py) last found none
    _found_clear: tuple | None = field(default=None, repr=False)
    _whole_step: HarnessNewton | None = field(default=None, repr=False)  # during a solve: _solve_split's
    # (key, models, arrays) of the branches' layout for branch_crossing.first_crossing (junction_checks.py)
    _crossing_layout: tuple | None = field(default=None, repr=False)

    @classmethod
    def from_case(cls, case) -> "JunctionSystem | None":
        if not case.junctions:
            return None
        specs = tuple(case.junctions.values())
        branches = {c.id: c.junction_ends() for c in case.cables if c.junction_ends()}
        frames = JunctionFrames(np.array([s.position for s in specs]), np.array([np.eye(3) for _ in specs]))
        free = tuple(k for k, s in enumerate(specs) if not s.fixed)
        return cls(specs, branches, frames, free)

    def checkpoint(self) -> "JunctionCheckpoint":
        """What a solve changes here, copied, to undo it (Harness.checkpoint)."""
        return JunctionCheckpoint(
            frames=self.frames.copy(),
            stiffness=None if self.stiffness is None else self.stiffness.copy(),
            broyden_updates=self.broyden_updates,
            residual=self.residual,
            loads=dict(self.loads),
            last=self.last,
            last_motion=self.last_motion,
            formed_at=self.formed_at,
            curvature=self.curvature,
            contact=self._contact_state(),
        )

    def restore(self, kept: "JunctionCheckpoint") -> None:
        self.broyden_updates, self.residual, self.last = kept.broyden_updates, kept.residual, kept.last
        self.last_motion, self.formed_at, self.curvature = kept.last_motion, kept.formed_at, kept.curvature
        self.frames, self.loads = kept.frames.copy(), dict(kept.loads)
        self.stiffness = None if kept.stiffness is None else kept.stiffness.copy()
        self._restore_contact(kept.contact)

    def _contact_state(self):
        if self.contact is None:
            return None
        return [(c.stiffness, c.stiffenings, list(c.contacts)) for c in self.contact]

    def _restore_contact(self, state) -> None:
        if state is None or self.contact is None:
            return
        for c, (stiffness, stiffenings, contacts) in zip(self.contact, state):
            c.stiffness, c.stiffenings, c.contacts = stiffness, stiffenings, list(contacts)

    def _ensure_contact(self, harness) -> None:
        """Each junction's ball: the radius of its widest branch, the stiffness of a node of its stiffest
        branch as long as the ball is wide (junction_contact.py)."""
        if self.contact is not None:
            return
        self.contact = []
        for k in range(len(self.specs)):
            ids = self.adjacent(k)
            radius = max((harness.cable_radius(cid) for cid in ids), default=0.0)
            narrowest = min((harness.cable_radius(cid) for cid in ids), default=0.0)
            per_length = max((harness.cables[cid].interactions.base_stiffness for cid in ids), default=0.0)
            stiffness = per_length * 2.0 * radius
            self.contact.append(JunctionContact(radius, stiffness, 0.5 * PENETRATION_TOLERANCE * narrowest))

    def _leave_saddle(self, harness, targets, frames, energy, direction, L, counters):
        """(frames, energy) a step along the direction of negative stiffness, to the side where the
        energy falls: the longest the step limits allow, shortened where the terms beyond the quadratic
        already raise the energy there; or None (the branches are put back)."""
        ids = list(self.branches)
        step = direction * self._step_cap(harness, direction, L)
        for fraction in SADDLE_STEPS:
            for sign in (1.0, -1.0):
                saved = self._snapshot(harness, ids)
                trial = self._moved(frames, sign * fraction * step, L)
                ok, _message = self._evaluate_unless_crossing(harness, targets, frames, trial, ids, counters)
                e_trial = self.energy(harness, trial) if ok else np.inf
                if ok and e_trial < energy:
                    return trial, e_trial
                restore_sessions(harness, saved)
        return None

    def end_frame(self, cid: str, side: str) -> np.ndarray:
        """The frame (3x3, outlet as d3) of branch ``cid``'s end ``side`` in its junction's frame."""
        key = (cid, side)
        if key not in self._end_frames:
            held = dict(self.branches[cid])[side]
            self._end_frames[key] = frame_from_tangent(held.outlet, held.normal)
        return self._end_frames[key]

    def ends_at_free(self, cid: str) -> list:
        """(side, junction index) of each end of branch ``cid`` held by a free junction, in its order."""
        ends = ((side, self.index(held.junction)) for side, held in self.branches[cid])
        return [(side, k) for side, k in ends if not self.specs[k].fixed]

    def rename_branch(self, old: str, new: str) -> None:
        """Know branch ``old`` as ``new`` (its cable was renamed), with what is kept of it."""
        self.branches[new] = self.branches.pop(old)
        for kept in (self.condensations, self._load_cache):
            if old in kept:
                kept[new] = kept.pop(old)
        self._end_frames = {(new if cid == old else cid, side): f for (cid, side), f in self._end_frames.items()}
        self._found_clear = None
        if self.curvature is not None:
            self.curvature = Curvature(
                *(
                    {new if cid == old else cid: v for cid, v in part.items()}
                    for part in (self.curvature.move, self.curvature.branches)
                ),
                self.curvature.junctions,
            )

    def index(self, jid: str) -> int:
        for k, spec in enumerate(self.specs):
            if spec.id == jid:
                return k
        raise KeyError(jid)

    # ------------------------------------------------------------------ boundaries of the branches
    def branch_boundary(self, cid, boundary, frames: JunctionFrames):
        """``boundary`` of branch ``cid`` with its junction ends held by the junctions' ``frames``."""
        start, end = boundary.start, boundary.end
        for side, held in self.branches[cid]:
            k = self.index(held.junction)
            position, tangent, normal = end_frame_at(frames.position[k], frames.rotation[k], held)
            frame = replace(start if side == "start" else end, position=position, tangent=tangent, normal=normal)
            if side == "start":
                start = frame
            else:
                end = frame
        return replace(boundary, start=start, end=end)

    def adjacent(self, k: int) -> list:
        jid = self.specs[k].id
        return [cid for cid, ends in self.branches.items() if any(e.junction == jid for _s, e in ends)]

    # ------------------------------------------------------------------ solving
    def solve(self, harness, targets: dict, moves: dict, partner_targets: dict | None = None) -> dict:
        """Solve every branch and free junction for the branches' ``targets`` (cable id -> Boundary or
        None) and the fixed junctions' ``moves`` (id -> JunctionMove), with the other cables that touch
        a branch held at ``partner_targets`` (cable id -> Boundary or None); returns {cable id:
        SolveReport} of the branches (the partners' reports are their sessions' last ones)."""
        t0 = time.perf_counter()
        self._ensure_contact(harness)
        self._others = other_cables(harness, self.branches)
        self._others_energy = self._cables_energy(harness, self._others)
        self._partner_targets = dict(partner_targets or {})
        ids = list(self.branches)
        start_frames = self.frames.copy()
        start_contact = self._contact_state()
        start_sessions = self._snapshot(harness, ids)
        base = {cid: targets.get(cid) or harness.cables[cid].boundary for cid in ids}
        # the starting boundaries: where the branches are held now (before the first solve: the case's)
        before = {cid: harness.cables[cid].boundary for cid in ids}
        end_frames = self.frames.copy()
        for jid, move in moves.items():
            k = self.index(jid)
            if move.position is not None:
                end_frames.position[k] = move.position
            if move.rotation is not None:
                end_frames.rotation[k] = move.rotation
        counters = {"iterations": 0, "solves": 0}
        report = None
        holders_move = _holders_move(before, base, start_frames, end_frames)
        predicted = self._predicted(start_frames, holders_move)
        if predicted is not None and self._crosses(harness, start_frames, predicted) is not None:
            predicted = None
        # the ultimate strain is judged at the balanced state, not at the trials on the way (a junction
        # held where it was while a cable presses its branch stretches what the balance relieves)
        harness.strain_checked = False
        start = (start_frames, start_contact, start_sessions)
        try:
            report = self._solve_split(harness, start, end_frames, before, base, predicted, counters)
        finally:
            harness.strain_checked = True
        if report.converged:
            self.last_motion = (holders_move, _motion(start_frames, self.frames))
        newton, self._whole_step = self._whole_step, None
        if report.converged and newton is not None:
            self.curvature = newton.step_curvature(self.frames, {cid: harness.cables[cid].state for cid in ids})
        else:
            self.curvature = None
        elapsed = (time.perf_counter() - t0) * 1e3
        report.iterations, report.branch_solves = counters["iterations"], counters["solves"]
        self.last = report
        out = {}
        for cid in ids:
            session = harness.cables[cid]
            session.last_step = None  # the secant predictor's memory holds a junction's trial, not a step
            own = session.last_report
            if report.converged:
                # a branch whose stability cannot be judged (a dead couple) leaves the harness's unjudged
                stable = None if own.stable is None else report.stable
                out[cid] = replace(own, iterations=counters["iterations"], solve_ms=elapsed, stable=stable)
            else:
                out[cid] = SolveReport(
                    session.state.copy(),
                    False,
                    counters["iterations"],
                    own.residual if own is not None else 0.0,
                    0,
                    elapsed,
                    report.message,
                    refused=bool(counters.get("refused")),
                )
            session.last_report = out[cid]
        return out

    def _solve_split(self, harness, start, end_frames, before, base, predicted, counters) -> JunctionReport:
        """The step from ``start`` (frames, junction contact, branch sessions) to the fixed junctions at
        ``end_frames`` and the branches' holders from ``before`` to ``base``, whole or, where it fails,
        in 2, 4, 8 pieces; everything put back where it fails."""
        start_frames, start_contact, start_sessions = start
        ids = list(self.branches)
        report = None
        self._whole_step = None  # the prediction of the step made whole, where there was one
        for split in range(MAX_SPLITS + 1):
            pieces = 2**split
            counters["refused"] = False
            for j in range(1, pieces + 1):
                t = j / pieces
                fixed_t = _blend(start_frames, end_frames, t)
                targets_t = {cid: _interpolate(before[cid], base[cid], t) for cid in ids}
                first = j == 1 and split == 0
                newton = self._predict(harness, targets_t, fixed_t, self.curvature if first else None)
                if newton is None and first and predicted is not None:
                    self.frames = predicted  # the secant of the last step (a miss falls back to the split path)
                self._whole_step = newton if pieces == 1 else None
                budget = MAX_OUTER if pieces == 1 else MAX_OUTER_SPLIT
                report = self._solve_piece(harness, targets_t, fixed_t, counters, budget)
                if not report.converged:
                    break
            final = report.converged
            if final:
                cut = self._branches_crossing(harness)
                stretched = None if cut is not None else self._overstretched(harness)
                if cut is None and stretched is None:
                    return report
                # where the equilibrium itself crosses or stretches, smaller pieces of the step end there
                # again
                report = JunctionReport(False, cut or stretched)
                counters["refused"] = stretched is not None
            restore_sessions(harness, start_sessions)
            self.frames = start_frames.copy()
            self._restore_contact(start_contact)
            if final or (counters.get("refused") and not self.free):
                # (a branch refused for stretch where no junction can give way: so will smaller pieces)
                return report
        return report

    def _predict(self, harness, targets: dict, fixed: JunctionFrames, curvature=None) -> HarnessNewton | None:
        """Where nothing is within reach of the branches, predict the piece of a step to ``targets`` and
        the fixed junctions at ``fixed`` by Newton's method on the whole harness (junction_newton.py),
        its first step carrying the last step's ``curvature``: the branches' states and the frames put
        there. The HarnessNewton that did, or None."""
        if any_partner(harness, self.branches, self._others):
            return None  # the branches alone are not the system: a cable touches one of them
        start = _with_fixed(self.frames, fixed, self.free)
        newton = HarnessNewton(self, harness, targets, MAX_MOVE, MAX_TURN, ENERGY_RESOLUTION)
        predicted = newton.predict(start, curvature=curvature)
        if predicted is None and newton.carried > 0.0:  # a term carried astray: the linear start may do
            newton = HarnessNewton(self, harness, targets, MAX_MOVE, MAX_TURN, ENERGY_RESOLUTION)
            predicted = newton.predict(start)
        if predicted is None:
            return None
        frames, branch_states = predicted
        for cid, (state, boundary) in branch_states.items():
            harness.cables[cid].state, harness.cables[cid].boundary = state, boundary
        self.frames = frames
        return newton

    def _stable_starts(self, harness, ids) -> frozenset:
        """The branches among ``ids`` whose state a kept condensation (the harness's Newton prediction's
        or the stability test's) shows a strict minimum of their own energy were they balanced, with nothing else
        acting on them (end_stiffness.exact_for): their solve, held where they are, checks the balance
        alone (equilibrium.solve_equilibrium's ``stable_start``), not the stability again."""
        out = []
        for cid in ids:
            condensation, session = self.condensations.get(cid), harness.cables[cid]
            if condensation is not None and condensation.proves_stable(session.model, session.state):
                if exact_for(session):
                    out.append(cid)
        return frozenset(out)

    def _predicted(self, frames: JunctionFrames, holders_move: float) -> JunctionFrames | None:
        """The free junctions moved as in the last step, in proportion to how far the holders move now
        against then (the secant predictor of a drag, as predictor.py is for a cable), or None."""
        if self.last_motion is None or not self.free or not holders_move > 0.0:
            return None
        then, (shift, turn) = self.last_motion
        if not then > 0.0:
            return None
        ratio = min(holders_move / then, 2.0)
        out = frames.copy()
        for k in self.free:
            out.position[k] = frames.position[k] + ratio * shift[k]
            angle = ratio * float(np.linalg.norm(turn[k]))
            if angle > 0.0:
                out.rotation[k] = axis_angle_matrix(turn[k] / np.linalg.norm(turn[k]), angle) @ frames.rotation[k]
        return out

    def _solve_piece(
        self, harness, targets: dict, fixed: JunctionFrames, counters: dict, budget: int = MAX_OUTER
    ) -> JunctionReport:
        """Trust-region Newton on the free junctions with the fixed ones at ``fixed`` and the branches'
        other holders at ``targets``, from the current frames of the free junctions. A step is taken
        when the energy falls by a fair part of what the quadratic model predicts (Nocedal & Wright,
        Alg. 4.1), or, on a positive definite model, when the force out of balance falls."""
        frames = self.frames.copy()
        for k, spec in enumerate(self.specs):
            if spec.fixed:
                frames.position[k], frames.rotation[k] = fixed.position[k], fixed.rotation[k]
        ids = list(self.branches)
        # the branches start where a coarse harness balanced (coarse_harness.py): once they are solved
        # there, the whole harness's Newton method refines it
        from_coarse = any(harness.cables[cid].refines_coarse for cid in ids)
        stable = self._stable_starts(harness, ids)
        ok, message = self._evaluate(harness, targets, frames, ids, counters, note_refusal=True, stable=stable)
        if not ok:
            return JunctionReport(False, message)
        if from_coarse and self.free:
            frames = self._refined(harness, targets, fixed, frames, counters)
        g = self._gradient(harness, frames)
        if not self.free:
            return self._accept(harness, frames, g, JunctionReport(True, "converged", stable=True))
        tolerance = self._tolerance(harness)
        L = self._length_scale(harness)
        noise = stiffness_noise(tolerance, L)
        energy = self.energy(harness, frames)
        self.energy_scale = self._energy_scale(harness)
        escapes = rejects = stagnant = 0
        radius = 1.0  # trust region, as a fraction of the step cap (MAX_MOVE, MAX_TURN)
        fresh = False  # the stiffness was formed by differences at the current frames
        updates_before = self.broyden_updates
        poor = False  # the last step's energy change was far from the quadratic model's (ratio < 0.5)
        for _it in range(budget):
            counters["iterations"] += 1
            scaled = self._scaled(g, L)
            if _within(g, tolerance):
                if not fresh:  # the stability test: exact where it can be, else kept or differenced
                    fresh = self._exact_stiffness(harness, frames, L)
                if not fresh and not self._kept_stiffness_holds(harness, frames, noise):
                    self.stiffness = self._fd_stiffness(harness, targets, frames, L, counters)
                    fresh = True
                deep = [k for k in self.free if self.contact[k].too_deep(harness.obstacles, frames.position[k])]
                if deep:  # balanced on a penalty too soft for the load: stiffen it and balance again
                    if not all(self.contact[k].stiffen() for k in deep):
                        depth = self.contact[deep[0]].depth(harness.obstacles, frames.position[deep[0]])
                        contact_allowed = self.contact[deep[0]].allowed_depth
                        return JunctionReport(
                            False,
                            f"junction {self.specs[deep[0]].id!r} is pressed {depth * 1e3:.3g} mm into an obstacle "
                            f"by its branches (more than {contact_allowed * 1e3:.3g} mm at the stiffest contact)",
                        )
                    g, energy = self._gradient(harness, frames), self.energy(harness, frames)
                    tolerance = self._tolerance(harness)
                    noise = stiffness_noise(tolerance, L)
                    continue
                negative, direction = negative_direction(self._total_stiffness(harness, frames, L), noise)
                if not negative:
                    done = JunctionReport(True, "converged", stable=True, escapes=escapes)
                    return self._accept(harness, frames, g, done)
                if escapes >= MAX_ESCAPES:
                    return JunctionReport(
                        False, "the junctions are in an unstable equilibrium (a saddle) and no descent was found"
                    )
                escapes += 1
                left = self._leave_saddle(harness, targets, frames, energy, direction, L, counters)
                if left is None:
                    return JunctionReport(False, "the junctions sit on a saddle and no move off it lowers the energy")
                frames, energy = left
                g, fresh = self._gradient(harness, frames), False
                continue
            if not fresh:  # exact and cheap where the branches' Hessians give it: Newton proper
                fresh = self._exact_stiffness(harness, frames, L)
            stale = self.broyden_updates - updates_before > REFRESH_AFTER
            if self.stiffness is None or (not fresh and (rejects >= 1 or poor or stale)):
                self.stiffness = self._fd_stiffness(harness, targets, frames, L, counters)
                fresh, updates_before = True, 0
            total = self._total_stiffness(harness, frames, L)
            K = 0.5 * (total + total.T)
            negative, direction = negative_direction(total, noise)
            if negative and fresh and rejects >= 2 and escapes < MAX_ESCAPES:
                # near a saddle, short of the tolerance: steps whose energy change the round-off hides
                # are judged by the force out of balance, which grows off a saddle; leave it as at one
                left = self._leave_saddle(harness, targets, frames, energy, direction, L, counters)
                if left is not None:
                    escapes += 1
                    frames, energy = left
                    g, fresh, rejects, radius = self._gradient(harness, frames), False, 0, 1.0
                    continue
            if (
                stagnant >= STAGNANT_STEPS
                and fresh
                and self._balanced_to_resolution(harness, frames, scaled, total, energy, noise)
            ):  # accepted steps that no longer lower the force out of balance: its noise floor
                done = JunctionReport(True, "converged", stable=True, escapes=escapes)
                return self._accept(harness, frames, g, done)
            step = newton_step(total, scaled, noise)
            cap = self._step_cap(harness, step, L)
            taken = min(1.0, radius * cap)
            taken *= self._approach_cap(harness, frames, taken * step, L)
            step *= taken
            predicted = float(scaled @ step + 0.5 * step @ K @ step)
            positive = bool(np.linalg.eigvalsh(K)[0] > noise)
            saved = self._snapshot(harness, ids)
            trial = self._moved(frames, step, L)
            guesses = self._linear_guesses(harness, targets, trial, step, L)
            ok, message = self._evaluate_unless_crossing(harness, targets, frames, trial, ids, counters, guesses)
            if ok:
                g_trial = self._gradient(harness, trial)
                e_trial = self.energy(harness, trial)
                s_trial = self._scaled(g_trial, L)
                resolution = ENERGY_RESOLUTION * max(abs(energy), abs(e_trial), self.energy_scale)
                if -predicted > resolution:
                    ratio = (e_trial - energy) / predicted if predicted < 0.0 else -1.0
                else:
                    # a change within the energy's resolution: the force out of balance judges the step,
                    # and the energy falling as the model says, where it does. Near a kink of the
                    # branches' contact the model's curvature is off: its steps lower the energy (by
                    # their prediction to 1 %, far below the resolution) while the force grows, so the
                    # force alone would shrink the trust region to nothing thousands of tolerances out
                    # of balance
                    ratio = (
                        1.0
                        if merit(s_trial) < 0.25 * merit(scaled)
                        else 0.3
                        if merit(s_trial) < merit(scaled)
                        else -1.0
                    )
                    if e_trial < energy and predicted < 0.0:
                        ratio = max(ratio, (e_trial - energy) / predicted)
                # a smaller force out of balance takes a step only where the energy does not rise beyond
                # its resolution: else the two tests take turns, and a junction over a kink of its
                # branches' contact steps back and forth across it for good, the energy falling by one
                # test and rising measurably by the other
                lower = positive and merit(s_trial) < merit(scaled) and e_trial <= energy + resolution
                if ratio > 0.1 or lower or _within(g_trial, tolerance):
                    poor = ratio < 0.5
                    stagnant = stagnant + 1 if merit(s_trial) > 0.5 * merit(scaled) else 0
                    # the secant of the branches' part alone: the contact's is exact (_total_stiffness)
                    change = s_trial - scaled
                    change -= self._scaled(self._contact_gradient(harness, trial), L)
                    change += self._scaled(self._contact_gradient(harness, frames), L)
                    broyden_update(self.stiffness, step, change)
                    self.broyden_updates += 1
                    frames, g, energy, fresh = trial, g_trial, e_trial, False
                    radius = min(1.0, 2.0 * radius) if ratio > 0.75 else radius
                    rejects = 0
                    continue
            restore_sessions(harness, saved)
            rejects += 1
            # shrunk from the step taken, however it was cut
            radius = 0.25 * (min(radius, taken / cap) if np.isfinite(cap) else radius)
            if rejects > MAX_REJECTS:
                if fresh and self._balanced_to_resolution(harness, frames, scaled, total, energy, noise):
                    done = JunctionReport(True, "converged", stable=True, escapes=escapes)
                    return self._accept(harness, frames, g, done)
                why = message if not ok else "no step lowered the energy"
                return JunctionReport(False, f"the junctions found no equilibrium ({why})")
        return JunctionReport(False, f"the junctions did not balance within {budget} iterations")

    def _refined(
        self, harness, targets: dict, fixed: JunctionFrames, frames: JunctionFrames, counters
    ) -> JunctionFrames:
        """From a coarse start (coarse_harness.py), its branches solved there: the frames Newton's method
        on the whole harness predicts (as for a warm step), the branches solved again there; or, where
        it predicts none or a branch fails there, ``frames`` with the branches as they were. (The
        prediction starts from the system's frames, which stand for the solve's start meanwhile.)"""
        saved = self._snapshot(harness, list(self.branches))
        kept = self.frames
        self.frames = frames
        try:
            if self._predict(harness, targets, fixed) is None:
                return frames
            predicted = self.frames
        finally:
            self.frames = kept
        ok, _message = self._evaluate(harness, targets, predicted, list(self.branches), counters)
        if ok:
            return predicted
        restore_sessions(harness, saved)
        return frames

    def _accept(self, harness, frames, g, report) -> JunctionReport:
        for k in self.free:
            self.contact[k].record(harness.obstacles, frames.position[k])
        self.frames = frames
        self.residual = g.copy()
        self.loads = self._loads(harness)
        return report

    def _evaluate(
        self, harness, targets, frames, ids, counters, note_refusal=False, guesses=None, stable=frozenset()
    ) -> tuple:
        """Solve the branches ``ids`` with the junctions at ``frames`` (each with the cables that touch
        it and the branches those touch, branch_partners.py): (all converged, message).
        ``note_refusal``: a branch refused for stretch marks ``counters`` (the step cannot be made);
        ``guesses``: states to start branches from (cable id -> RodState, _linear_guesses); ``stable``:
        branches shown a strict minimum where they lie, were they balanced (_stable_starts)."""
        done = set()
        for cid in ids:
            if cid in done:
                continue
            members, partners = group_of(harness, cid, self.branches, self._others)
            done.update(members)
            counters["solves"] += len(members)
            ok, message, refused = solve_group(
                harness,
                members,
                partners,
                lambda b: self.branch_boundary(b, targets[b], frames),
                self._partner_targets,
                self.branches,
                guesses,
                stable,
            )
            if not ok:
                if refused and note_refusal:
                    counters["refused"] = True
                return False, message
            # the branches a partner reached on its way were taken into the group (solve_group): solved
            # with it, they are not solved again alone, which would leave the partner's record stale
            done.update(b for b in harness.cables[cid].solved_with if b in self.branches)
        for p in self._others:
            # a cable pushed by a branch in an earlier trial that has since moved off it: on its own again
            mates = harness.cables[p].solved_with
            if any(b in mates for b in self.branches) and not harness.joint(p):
                counters["solves"] += 1
                ok, message, _refused = solve_group(harness, [p], [], self._partner_targets.get, {}, self.branches)
                if not ok:
                    return False, message
        return True, ""

    def _snapshot(self, harness, ids) -> dict:
        """snapshot_sessions of the branches ``ids``; where other cables may touch the branches, of all
        branches and those cables (a trial re-solves the groups they form)."""
        return snapshot_sessions(harness, [*self.branches, *self._others] if self._others else ids)

    def _evaluate_unless_crossing(self, harness, targets, frames, trial, ids, counters, guesses=None) -> tuple:
        """``_evaluate`` at ``trial``, unless a junction's centre would pass through an obstacle on the way
        from ``frames`` (a thin plate stepped over) or into another cable."""
        why = self._crosses(harness, frames, trial)
        if why is not None:
            return False, why
        return self._evaluate(harness, targets, trial, ids, counters, guesses=guesses)

    def _linear_guesses(self, harness, targets: dict, trial: JunctionFrames, step: np.ndarray, L: float) -> dict:
        """Per branch, its linear response to the free junctions' scaled ``step`` (_moved): Newton's step
        of its free dofs with its ends moved, from the condensation _analytic_stiffness
        (junction_stiffness.py) formed at its state (junction_newton.linear_response), held where
        ``targets`` and the junctions at ``trial`` (``step`` taken) hold it; none for a branch without
        one. Started there, bench_harness's branches take a median of 3 Newton iterations to balance in
        its cold solve, where carried along with their ends (rod_state.carry_boundary_motion) they
        took 5."""
        place = {k: i for i, k in enumerate(self.free)}
        world = step.reshape(-1, 6) * np.concatenate([np.full(3, L), np.ones(3)])
        out = {}
        for cid in self.branches:
            condensation = self.condensations.get(cid)
            session = harness.cables[cid]
            at_free = [(side, place[k]) for side, k in self.ends_at_free(cid)]
            sides = [side for side, _i in at_free]
            if condensation is None or not condensation.formed_at(session.model, session.state, sides):
                continue
            moved = np.concatenate([world[i] for _side, i in at_free]) if at_free else np.zeros(0)
            guess = linear_response(session.model, session.state, condensation, moved)
            if guess is not None:
                apply_boundary(session.model, guess, self.branch_boundary(cid, targets[cid], trial))
                out[cid] = guess
        return out


def _with_fixed(frames: JunctionFrames, fixed: JunctionFrames, free) -> JunctionFrames:
    """``frames`` with the junctions not in ``free`` taken from ``fixed``."""
    out = fixed.copy()
    for k in free:
        out.position[k], out.rotation[k] = frames.position[k], frames.rotation[k]
    return out


def _blend(a: JunctionFrames, b: JunctionFrames, t: float) -> JunctionFrames:
    """Fixed junctions a fraction t of the way from ``a`` to ``b`` (rotations about one axis)."""
    out = a.copy()
    for k in range(a.position.shape[0]):
        out.position[k] = (1.0 - t) * a.position[k] + t * b.position[k]
        out.rotation[k] = slerp_matrix(a.rotation[k], b.rotation[k], t)
    return out


def _holders_move(before: dict, after: dict, start: JunctionFrames, end: JunctionFrames) -> float:
    """How far the holders of the branches move in a step (m, summed): connectors, clips, fixed junctions."""
    total = float(np.abs(end.position - start.position).sum())
    for cid, a in before.items():
        b = after[cid]
        if a is b:
            continue
        for fa, fb in zip((a.start, a.end, *a.clips), (b.start, b.end, *b.clips)):
            if fa is not None and fb is not None:
                total += float(np.abs(fb.position - fa.position).sum())
    return total


def _motion(a: JunctionFrames, b: JunctionFrames) -> tuple:
    """Per junction, the shift and the turn (rotation vector, world) from frames ``a`` to ``b``."""
    turn = np.array([world_turn(a.rotation[k], b.rotation[k]) for k in range(a.position.shape[0])])
    return b.position - a.position, turn.reshape(a.position.shape)


def _interpolate(a, b, t: float):
    return b if t >= 1.0 or a is b else interpolate_boundary(a, b, t)


def _within(g: np.ndarray, tolerance: np.ndarray) -> bool:
    return bool((np.abs(g) <= tolerance).all())
