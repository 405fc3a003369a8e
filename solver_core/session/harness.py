# SPDX-License-Identifier: GPL-3.0-or-later
"""A harness in a session: every cable's model and state, solved step after step.

This is the object both the CLI and the Blender layer drive: build it from a case, call
``solve_step`` with changed frames (or none), read ``cable_result`` documents back. This module is
the session (cables added, solved step after step, checkpointed and restored); the step policy for
cables that touch is ``cable_groups.CableGroups``, what a scene layer reads off is
``read_outs.HarnessReadOuts``: ``Harness`` takes both as its bases.
"""

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..contact.contact import PENETRATION_TOLERANCE
from ..contact.drawn_routes import NODE_CLEARANCE, lifted_points, lifted_route
from ..contact.interactions import ContactSettings, Interactions
from ..contact.obstacles import ObstacleSet, obstacles_from_case
from ..errors import CaseError
from ..junctions import coarse_harness
from ..junctions.junctions import JunctionReport, JunctionSystem
from ..models.model_solves import solve_with_model
from ..models.pbd_dynamics import solve_pbd_dynamic_step
from ..rod.rod_model import Boundary, RodModel, build_rod_model
from ..rod.rod_state import (
    RodState,
    framed_state,
    initial_centerlines,
    initial_state,
    interpolate_boundary,
    prolong_state,
)
from ..solve.diagnostics import max_axial_strain
from ..solve.dynamics import Motion, solve_dynamic_step
from ..solve.equilibrium import (
    SolveReport,
    held_frames,
    solve_equilibrium,
)
from ..solve.sessions import restore_sessions, snapshot_sessions
from ..specs.case import (
    DEFAULT_DURATION,
    CableChange,
    CableSpec,
    Case,
    as_float,
    check_dynamics,
    check_reachable,
    check_step_request,
)
from ..specs.model_features import check_model_features
from .cable_groups import CableGroups
from .predictor import StepMemory, hold_vector, secant_displacement, tangent_start
from .read_outs import HarnessReadOuts


@dataclass
class CableSession:
    model: RodModel
    boundary: Boundary
    state: RodState  # last good (converged) state, or the initial guess before the first solve
    interactions: Interactions
    solved: bool = False
    last_report: SolveReport | None = None
    group_contacts: list | None = None  # contact documents of its last solve together with others
    last_step: StepMemory | None = None  # its last converged warm step alone, for the secant predictor
    # (SolveReport.free_factor, positions, quaternions) of its last solve alone, for the tangent predictor
    free_factor: tuple | None = None
    held: tuple = (None, 0.0, None)  # (boundary, length, predictor.hold_vector of them), its last one
    solved_with: tuple = ()  # the cables its state was solved together with, itself included
    # per node, what its last solve together with others pushes it with in contact (None: solved alone,
    # its own interactions know): a junction holding an end takes the end node's share
    group_push: np.ndarray | None = None
    group_energy: float = 0.0  # the contact energy of that joint solve (J), held by its first cable only
    readings: tuple = ()  # ((state, what another model than the rod reports of it), ...): mass_spring
    motion: Motion | None = None  # velocities and accelerations of a dynamic case (None: at rest)
    twist: float | None = None  # kirchhoff_cg: the end twist of its state, followed through whole turns
    # its state before the first solve is a coarse harness's equilibrium carried onto its segments
    # (coarse_harness.py): the first solve starts there, not from a coarse solve of its own
    refines_coarse: bool = False

    def contact_push(self, state: RodState | None = None) -> np.ndarray:
        """Per node (n_nodes, 3), the gradient of the contact energy at ``state`` (its own): at a held
        node, what its holder supplies against a contact on the segments there, beyond the elastic
        reaction (a cable pressed onto an end segment pushes the connector or junction too)."""
        if state is None or state is self.state:
            if self.group_push is not None:
                return self.group_push
            state = self.state
        return self.interactions.contact_gradient_at(state)


@dataclass(frozen=True)
class HarnessCheckpoint:
    """Harness.checkpoint: cables' sessions (sessions.SessionCheckpoint by id), the junctions'
    (junctions.JunctionCheckpoint or None) and the harness's time."""

    sessions: dict
    junctions: object
    time: float


def held_vector(session: CableSession, boundary: Boundary, length: float) -> np.ndarray:
    """predictor.hold_vector of ``boundary``, kept for the next step (whose start it is)."""
    if session.held[0] is not boundary or session.held[1] != length:
        session.held = (boundary, length, hold_vector(boundary, length))
    return session.held[2]


MAX_SAG_STEPS = 64  # the initial sag is lowered onto obstacles in at most this many steps
# The first solve of a cable on at least NESTED_MIN_SEGMENTS segments starts from its solution on
# COARSE_SEGMENTS (Harness._solve_from_coarse)
COARSE_SEGMENTS = 100
NESTED_MIN_SEGMENTS = 300


def _drawn_through_warning(cable_id: str, what: str) -> str:
    return (
        f"cable {cable_id!r}: its route passes through {what}; draw the route around it "
        f"(the result may be on the wrong side)"
    )


@dataclass
class Harness(CableGroups, HarnessReadOuts):
    case: Case
    cables: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    # cable id -> what its route passes through ("an obstacle", "another cable"), as warned
    drawn_through: dict = field(default_factory=dict)
    obstacles: ObstacleSet = field(default_factory=ObstacleSet)
    # (digest of a step's input, its reports) of the last step that failed and changed nothing
    unchanged_failure: tuple | None = field(default=None, repr=False)
    # cables (tuples) whose last joint solve failed: (failures in a row, steps still to solve one by one)
    failed_groups: dict = field(default_factory=dict)
    # cables (tuples) solved together: what their last joint solve's candidate contact pairs were found
    # against, and the pairs (see _hand_on_candidates)
    group_candidates: dict = field(default_factory=dict, repr=False)
    # the junctions of branched harnesses and the cables that end at them (None: no junctions)
    junctions: JunctionSystem | None = None
    # whether a converged solve is refused where a cable would stretch past its ultimate strain (the
    # junctions' trials are not states of the step: junctions.py judges the balanced one)
    strain_checked: bool = True
    step_ids: set = field(default_factory=set, repr=False)  # the cables the step in progress solves
    time: float = 0.0  # the end time of the last step of a dynamic case [s] (solver.dynamics)
    _junction_moves: dict = field(default_factory=dict, repr=False)  # those of the step being solved

    @classmethod
    def from_case(cls, case: Case, extra_triangles=None) -> "Harness":
        """A harness for a case; ``extra_triangles`` (n, 3, 3) are added as one more mesh obstacle
        (the Blender layer passes the collider triangles near the cables this way)."""
        obstacles = obstacles_from_case(case.obstacles)
        if extra_triangles is not None and len(extra_triangles):
            obstacles = obstacles.with_triangles(extra_triangles, len(case.obstacles))
        harness = cls(case, obstacles=obstacles, junctions=JunctionSystem.from_case(case))
        harness.warnings.extend(case.warnings)
        for cable in case.cables:
            harness.add_cable(cable)
        return harness

    @property
    def contact_settings(self) -> ContactSettings:
        c = self.case.contact
        return ContactSettings(
            c.get("friction_static", 0.0),
            c.get("friction_dynamic", c.get("friction_static", 0.0)),
            bool(c.get("cable_cable", False)),
        )

    def add_cable(self, cable: CableSpec) -> None:
        """Add (or rebuild) a cable; CaseError where the case's model does not express it."""
        check_model_features(self.case.solver.model, (cable,), self.case.obstacles, self.case.contact, {})
        model = build_rod_model(cable, self.case.gravity, self.case.solver.tolerance)
        boundary = Boundary.of(cable)
        interactions = Interactions(model, self.obstacles, self.contact_settings)
        session = CableSession(model, boundary, None, interactions)  # the state is chosen next
        self._choose_initial_state(cable.id, session)
        self.cables[cable.id] = session
        # the case is what steps are checked against (clip counts): it must describe the rebuilt cable
        others = tuple(c for c in self.case.cables if c.id != cable.id)
        if len(others) == len(self.case.cables):
            self.case = replace(self.case, cables=others + (cable,))
        else:
            self.case = replace(self.case, cables=tuple(cable if c.id == cable.id else c for c in self.case.cables))

    def _choose_initial_state(self, cable_id: str, session: CableSession) -> None:
        # Distances do not tell sides apart: a start inside an obstacle, or on the far side of one the
        # route passes, cannot be mended by contact. The route is lowered towards its full sag in
        # steps of at most half a radius per node and stops before the first step that enters an
        # obstacle (a sweep, so the sag cannot jump over a bar or a cable either); the solver pays
        # out the rest onto whatever is below. Paying out a lot of length from a short route
        # compresses the cable and is the hard way to an equilibrium.
        check = Interactions(session.model, self.obstacles, self.contact_settings)
        if self.contact_settings.cable_cable:
            # nor through, or past, the cables placed before it
            check.obstacles = self.obstacles.with_capsules(*self.capsules_for((cable_id,)))
        # a route drawn with a mistake before is drawn anew: its warning goes with it
        old = self.drawn_through.pop(cable_id, None)
        if old is not None:
            self.warnings[:] = [w for w in self.warnings if w != _drawn_through_warning(cable_id, old)]
        route = initial_state(session.model, session.boundary, sag=0.0)
        depth = check.deepest_penetration(route)
        drawn = None  # the route the guesses follow: the cable's own, or one lifted off a surface
        static = Interactions(session.model, self.obstacles, ContactSettings())
        # (a solved shape given back rests on the obstacles within the tolerance)
        if static.deepest_penetration(route) > PENETRATION_TOLERANCE * check.radius:
            drawn, route, depth = self._lifted_off_surfaces(session, check, route, depth)
        corners = False  # whether the segments are laid through the route's corners
        if depth > 0.0:
            # a coarse cable's segments cut the corners of a route drawn clear round something
            laid = initial_state(session.model, session.boundary, sag=0.0, through_corners=True, route=drawn)
            if check.deepest_penetration(laid) < depth:
                route, corners = laid, True
        if check.deepest_penetration(route) > 0.0:
            self._warn_drawn_through(cable_id, session, route)
            session.state = route
            return
        if not check.uses_contact:
            session.state = initial_state(session.model, session.boundary, sag=1.0, route=drawn)
            return

        centerline = initial_centerlines(session.model, session.boundary, corners, drawn)

        def sagged(fraction):  # the centre line only: the checks need no frames
            return RodState(centerline(fraction) - session.model.origin, route.quats)

        state, chosen = route, 0.0
        full = sagged(1.0)
        move = float(np.abs(full.positions - route.positions).max())
        steps = int(min(MAX_SAG_STEPS, max(1, np.ceil(move / (0.5 * check.radius)))))
        for k in range(1, steps + 1):
            candidate = full if k == steps else sagged(k / steps)
            if check.deepest_penetration(candidate) > 0.0 or check.passes_through(state, candidate):
                break
            state, chosen = candidate, k / steps
        if chosen > 0.0:
            route = initial_state(session.model, session.boundary, chosen, corners, drawn)
        session.state = route

    def _warn_drawn_through(self, cable_id: str, session: CableSession, route: RodState) -> None:
        # A route resting on a surface (a solved shape exported as a route) touches it within the
        # penetration tolerance, and one drawn clear of the other cables' routes may still meet the
        # sag of a cable placed before it (the power line hanging between its clips onto the signal
        # line drawn below it): neither is a route drawn through something.
        static = Interactions(session.model, self.obstacles, ContactSettings())
        tolerance = PENETRATION_TOLERANCE * static.radius
        what = None
        if static.deepest_penetration(route) > tolerance:
            what = "an obstacle"
        elif self.contact_settings.cable_cable:
            drawn = Interactions(session.model, self.obstacles, self.contact_settings)
            drawn.obstacles = self.obstacles.with_capsules(*self._drawn_routes_except(cable_id))
            if drawn.deepest_penetration(route) > tolerance:
                what = "another cable"
        if what is not None:
            self.drawn_through[cable_id] = what
            warning = _drawn_through_warning(cable_id, what)
            if warning not in self.warnings:
                self.warnings.append(warning)

    def _lifted_off_surfaces(self, session: CableSession, check: Interactions, route: RodState, depth: float):
        """(the cable's route lifted off the surfaces it was drawn onto, the state laid along it, that
        state's penetration), or (None, ``route``, ``depth``) where lifting does not clear it further
        (drawn_routes.lifted_route: a route snapped onto a part starts the cable in it by up to its
        radius; one drawn through a part is not lifted)."""
        cable, boundary = session.model.cable, session.boundary
        if cable.route is None:
            return None, route, depth
        held = [boundary.start.position, *(frame.position for frame in boundary.clips)]
        if boundary.end is not None:
            held.append(boundary.end.position)
        lifted = lifted_route(cable.route, check.radius, self.obstacles, held)
        if lifted is None:
            return None, route, depth
        state = initial_state(session.model, boundary, sag=0.0, route=lifted)
        if check.deepest_penetration(state) > 0.0:
            # the segments of a coarse cable cut the lifted route's corners: lay them through the
            # corners, and lift its nodes too
            laid = initial_state(session.model, boundary, sag=0.0, through_corners=True, route=lifted)
            if check.deepest_penetration(laid) < check.deepest_penetration(state):
                state = laid
            origin = session.model.origin
            nodes = lifted_points(state.positions + origin, check.radius, self.obstacles, held, NODE_CLEARANCE)
            if nodes is not None:
                state = framed_state(session.model, boundary, nodes - origin)[0]
        lifted_depth = check.deepest_penetration(state)
        # (a route drawn through a face is not lifted: no side is crossed) nor lifted into the cables
        # placed before it
        if lifted_depth < depth and not self._lifted_into_cables(session, route, state):
            return lifted, state, lifted_depth
        return None, route, depth

    def _lifted_into_cables(self, session: CableSession, route: RodState, lifted: RodState) -> bool:
        """Whether ``lifted`` meets the cables placed before this one deeper than ``route`` did."""
        if not self.contact_settings.cable_cable:
            return False
        cables = Interactions(session.model, ObstacleSet(), self.contact_settings)
        cables.obstacles = ObstacleSet().with_capsules(*self.capsules_for((session.model.cable.id,)))
        if cables.obstacles.empty:
            return False
        before = cables.deepest_penetration(route)
        return cables.deepest_penetration(lifted) > max(before, PENETRATION_TOLERANCE * cables.radius)

    # ---------------------------------------------------------------- read-outs for a scene layer

    def step_part(self, cable_id: str, change: CableChange, t: float) -> CableChange:
        """The change of a sub-step: the cable's holders ``t`` of the way (0..1) from where they are
        to where ``change`` moves them (positions linearly, frames along the rotation geodesic)."""
        part = interpolate_boundary(self.cables[cable_id].boundary, self.changed_boundary(cable_id, change), t)
        return CableChange(start=part.start, end=part.end, clips=dict(enumerate(part.clips)))

    def rename_cable(self, old: str, new: str) -> None:
        """Give a cable a new id (its object was renamed), keeping its state and results."""
        if old not in self.cables or new in self.cables:
            raise CaseError(f"cannot rename cable {old!r} to {new!r}")
        session = self.cables.pop(old)
        session.model.cable = replace(session.model.cable, id=new)
        self.cables[new] = session
        if old in self.drawn_through:  # its warning names it too
            what = self.drawn_through[new] = self.drawn_through.pop(old)
            was, now = _drawn_through_warning(old, what), _drawn_through_warning(new, what)
            self.warnings[:] = [now if w == was else w for w in self.warnings]
        if self.junctions is not None and old in self.junctions.branches:
            self.junctions.rename_branch(old, new)
        for other in self.cables.values():  # the cables it was solved with know it by its new name
            other.solved_with = tuple(new if cid == old else cid for cid in other.solved_with)
        self.failed_groups = {tuple(new if c == old else c for c in k): v for k, v in self.failed_groups.items()}
        self.group_candidates = {tuple(new if c == old else c for c in k): v for k, v in self.group_candidates.items()}
        self.case = replace(self.case, cables=tuple(replace(c, id=new) if c.id == old else c for c in self.case.cables))

    def set_contact(self, contact: dict) -> None:
        """Change the contact settings (friction, cable-cable) of every cable; states are kept,
        sticking contacts start afresh."""
        if contact == self.case.contact:
            return
        self.case = replace(self.case, contact=dict(contact))
        for session in self.cables.values():
            session.interactions = Interactions(session.model, self.obstacles, self.contact_settings)

    def set_obstacles(self, obstacles: ObstacleSet) -> None:
        """Replace the static obstacles (e.g. colliders moved); solved cables keep their states, cables
        not solved yet choose their initial guess again against the new obstacles."""
        self.obstacles = obstacles
        for cable_id, session in self.cables.items():
            session.interactions.obstacles = obstacles
            if not session.solved:
                self._choose_initial_state(cable_id, session)

    def checkpoint(self, cable_ids) -> "HarnessCheckpoint":
        """What solving these cables changes, copied, to undo a solve (e.g. one made with too few
        obstacles): their sessions (motion included), the junctions' and the time."""
        junctions = self.junctions.checkpoint() if self.junctions is not None else None
        return HarnessCheckpoint(snapshot_sessions(self, cable_ids), junctions, self.time)

    def restore(self, checkpoint: "HarnessCheckpoint") -> None:
        self.time = checkpoint.time
        if checkpoint.junctions is not None:
            self.junctions.restore(checkpoint.junctions)
        restore_sessions(self, checkpoint.sessions)

    def check_reach(self, cable_id: str, change: CableChange) -> None:
        """CaseError when ``change`` holds the cable further apart than its length allows (its ends, or
        two holders along it, further apart than the cable between them): no equilibrium exists."""
        change = check_step_request(self.case, {cable_id: change})[0][cable_id]
        spec = self.cables[cable_id].model.cable
        b = self.changed_boundary(cable_id, change)
        clips = [replace(c, frame=frame) for c, frame in zip(spec.clips, b.clips)]
        check_reachable(cable_id, "step", b.start, b.end, clips, spec.length)

    def changed_boundary(self, cable_id: str, change: CableChange) -> Boundary:
        b = self.cables[cable_id].boundary
        clips = list(b.clips)
        for k, frame in change.clips.items():
            clips[k] = frame
        return Boundary(change.start or b.start, change.end or b.end, tuple(clips))

    def solve_cable(
        self, cable_id: str, boundary: Boundary | None = None, guess=None, stable_start: bool = False
    ) -> SolveReport:
        """Solve one cable against everything else as it lies. The report's ``solve_ms`` is the time of
        the whole solve: the predictor, the continuation's Newton solves and the checks that accept
        its result (penetration, ultimate strain), not the results built from it afterwards.
        ``guess``: a predicted state to start from (solve_equilibrium's; the rod model only, and not
        with friction, whose equilibrium depends on the path), in place of the secant predictor; a
        solve from one leaves no step for the secant predictor (a junction's trial is not a step).
        ``stable_start``: solve_equilibrium's (the rod model only)."""
        t0 = time.perf_counter()
        session = self.cables[cable_id]
        target = session.boundary if boundary is None else boundary
        previous = session.boundary if session.solved else None
        friction_before = session.interactions.friction_state.copy()
        predictor = hold_now = hold_next = None
        if previous is None or session.interactions.settings.friction:
            guess = None  # a first solve has no step to guess; with friction the path decides (below)
        if previous is not None and guess is None:
            # Friction makes the equilibrium depend on the path: there the cable starts as before.
            length = float(session.model.rest_len.min())
            hold_now = held_vector(session, previous, length)
            hold_next = held_vector(session, target, length)
            if not session.interactions.settings.friction:
                predictor = secant_displacement(session.last_step, session.state.positions, hold_now, hold_next)
        model_name = self.case.solver.model
        if model_name == "cosserat" and guess is None and previous is not None:
            guess = tangent_start(session, previous, target)
        if model_name != "cosserat":
            max_iterations = self.case.solver.max_iterations
            report, spent = solve_with_model(model_name, session, target, max_iterations, predictor), 0
        else:
            nested = previous is None and not session.refines_coarse
            report, spent = self._solve_from_coarse(cable_id, session, target) if nested else (None, 0)
        if report is None:
            report = solve_equilibrium(
                session.model,
                session.state,
                target,
                previous,
                self.case.solver.max_iterations,
                session.interactions,
                predictor=predictor,
                guess=guess,
                stable_start=stable_start,
            )
        report.iterations += spent
        session.group_contacts = None
        session.group_push, session.group_energy = None, 0.0
        if report.converged and self.strain_checked:
            strain = max_axial_strain(session.model, report.state)
            limit = self.case.solver.ultimate_strain
            if strain > limit:
                # Lv 2017, Sec. 2.4: a cable cannot be stretched beyond its ultimate length, on the
                # first solve (the initial guess is then kept) as on every step
                session.interactions.friction_state = friction_before
                report = SolveReport(
                    session.state.copy(),
                    False,
                    report.iterations,
                    report.residual,
                    report.substeps,
                    report.solve_ms,
                    f"step refused: the cable would stretch {strain * 100:.2f} % "
                    f"(ultimate {limit * 100:.2f} %); the last valid state is kept",
                )
                report.refused = True
        session.last_report = report
        session.last_step = None
        if report.converged:
            if hold_now is not None and not np.array_equal(hold_now, hold_next):
                session.last_step = StepMemory(
                    hold_now, hold_next, session.state.positions.copy(), report.state.positions.copy()
                )
            session.state = report.state
            session.free_factor = None
            if report.free_factor is not None:
                session.free_factor = (report.free_factor, report.state.positions.copy(), report.state.quats.copy())
            session.boundary = target
            session.solved, session.refines_coarse = True, False
            session.solved_with = (cable_id,)
            # the twist a model followed through whole turns (kirchhoff_cg) goes with the state kept
            session.twist = next((r.get("twist") for kept, r in session.readings or () if kept is report.state), None)
        report.solve_ms = (time.perf_counter() - t0) * 1e3
        return report

    def _solve_from_coarse(self, cable_id: str, session: CableSession, target: Boundary) -> tuple:
        """Nested iteration for the first solve of a finely divided cable: the same cable on
        COARSE_SEGMENTS segments is solved first (its initial guess chosen as for any cable), and the
        fine solve starts from it (rod_state.prolong_state), so that the cold solve's long way from
        the guess is walked on the coarse model and the fine one only refines it: the iterations
        stop growing with the resolution. Returns (report or None, iterations spent on the way);
        None where the coarse or the refining solve fails (the fine cable is then solved as usual)."""
        model = session.model
        if model.n_segments < NESTED_MIN_SEGMENTS:
            return None, 0
        coarse_model = build_rod_model(
            replace(model.cable, segments=COARSE_SEGMENTS), self.case.gravity, self.case.solver.tolerance
        )
        interactions = Interactions(coarse_model, session.interactions.obstacles, session.interactions.settings)
        coarse = CableSession(coarse_model, target, None, interactions)
        self._choose_initial_state(cable_id, coarse)
        max_iterations = self.case.solver.max_iterations
        first = solve_equilibrium(coarse_model, coarse.state, target, None, max_iterations, interactions)
        if not first.converged:
            return None, first.iterations
        start = prolong_state(coarse_model, first.state, model, target)
        friction_before = session.interactions.friction_state.copy()
        report = solve_equilibrium(model, start, target, None, max_iterations, session.interactions)
        if not report.converged:
            session.interactions.friction_state = friction_before
            return None, first.iterations + report.iterations
        report.iterations += first.iterations
        report.solve_ms += first.solve_ms
        return report, 0

    def solve_step(
        self, changes: dict | None = None, cable_ids=None, junction_moves: dict | None = None, duration=None
    ) -> dict:
        """Solve every cable, or those in ``cable_ids`` (the others stay as they are and are met as
        obstacles), with the frames in ``changes`` moved and the fixed junctions moved by
        ``junction_moves`` (id -> junction_spec.JunctionMove); returns {id: SolveReport}. The branches of
        a harness with junctions are solved together with its junctions whenever one of them is.

        In a dynamic case (``solver.dynamics``) a step after the cables' first solve (which finds them at
        rest) is a motion of ``duration`` seconds (default DEFAULT_DURATION) while the holders move
        uniformly to their new frames (dynamics.py); ``self.time`` is its end time."""
        changes, moves = check_step_request(
            self.case, {} if changes is None else changes, cable_ids, {} if junction_moves is None else junction_moves
        )
        dynamics = self.case.solver.dynamics
        if duration is not None:
            if dynamics is None:
                raise CaseError("duration: a step has a duration only when the case gives solver.dynamics")
            duration = as_float(duration, "duration")
            if not 0.0 < duration <= 1e6:
                raise CaseError(f"duration must be a positive number of seconds, got {duration!r}")
        self._junction_moves = moves
        ids = list(self.cables) if cable_ids is None else [cid for cid in self.cables if cid in set(cable_ids)]
        if dynamics is not None:
            # the first solve finds the cables at rest and integrates no time: only a motion's duration
            # is bounded by the time steps it takes (as the case parser bounds the steps' durations)
            moving = bool(ids) and all(self.cables[cid].solved for cid in ids)
            check_dynamics(self.case, (DEFAULT_DURATION if duration is None else duration) if moving else 0.0)
        targets = {cid: (self.changed_boundary(cid, changes[cid]) if cid in changes else None) for cid in ids}
        # The solver is deterministic: a step that failed and left everything as it was fails again
        # from the same input, and an interactive session asks for the same step on every tick while
        # nothing moves. Such a step is answered from the last try until something changes.
        snapshot = self._input_snapshot(ids, targets, duration)
        if self.unchanged_failure is not None and _same_input(self.unchanged_failure[0], snapshot):
            return {
                cid: replace(
                    report,
                    iterations=0,
                    substeps=0,
                    solve_ms=0.0,
                    message=f"{report.message} (nothing has changed since; not tried again)",
                )
                for cid, report in self.unchanged_failure[1].items()
            }
        unsolved = [cid for cid in ids if not self.cables[cid].solved]
        if dynamics is not None and ids and all(self.cables[cid].solved for cid in ids):
            step = solve_pbd_dynamic_step if self.case.solver.model == "cosserat_pbd" else solve_dynamic_step
            reports = step(self, ids, targets, DEFAULT_DURATION if duration is None else duration)
        else:
            reports = self.solve_boundaries(ids, targets)
            for cid in ids:  # found at rest
                self.cables[cid].motion = None
        reports = self._with_drawn_through(reports, unsolved)
        failed = not all(report.converged for report in reports.values())
        unchanged = failed and _same_input(snapshot, self._input_snapshot(ids, targets, duration))
        self.unchanged_failure = (snapshot, reports) if unchanged else None
        return reports

    def _with_drawn_through(self, reports: dict, unsolved) -> dict:
        """The reports, a first solve that failed from a route drawn through something saying so: the
        likeliest reason, and the user's to mend (its warning alone is easy to miss)."""
        out = dict(reports)
        for cid in unsolved:
            report = out.get(cid)
            if report is None or report.converged or report.refused:
                continue
            drawn = self.drawn_through.get(cid)
            if drawn is not None:
                message = f"{report.message}; its route passes through {drawn}: draw it around"
                out[cid] = replace(report, message=message)
        return out

    def _input_snapshot(self, ids, targets, duration=None) -> tuple:
        """Everything a step's outcome depends on, copied: (a text of the settings, the arrays). A
        copy compared afterwards (``_same_input``) costs about half a hash of the same bytes."""
        text = [repr((ids, self.case.solver, self.contact_settings)), self.obstacles.fingerprint().hex()]
        arrays = []
        if self.junctions is not None:
            arrays += [self.junctions.frames.position, self.junctions.frames.rotation]
            for jid, move in sorted(self._junction_moves.items()):
                text.append(jid)
                arrays += [a for a in (move.position, move.rotation) if a is not None]
        if self.case.solver.dynamics is not None:
            text.append(repr((self.time, duration)))
        for cid, session in self.cables.items():
            friction = session.interactions.friction_state
            text.append(repr((cid, session.solved, session.interactions.stiffness)))
            if session.motion is not None:
                arrays += (session.motion.velocity, session.motion.acceleration)
            arrays += (
                session.state.positions,
                session.state.quats,
                session.model.node_force,
                friction.active,
                friction.normal,
                friction.force,
                friction.anchor,
                friction.sliding,
            )
            for frame in held_frames(targets.get(cid) or session.boundary):
                text.append("-" if frame is None else "3" if frame.normal is None else "4")
                if frame is not None:
                    arrays += [a for a in (frame.position, frame.tangent, frame.normal) if a is not None]
        return "|".join(text), [np.array(a) for a in arrays]

    def solve_boundaries(self, ids, targets) -> dict:
        if self.junctions is None:
            return self._solve_cables(ids, targets)
        branches = self.junctions.branches
        moves = self._junction_moves
        # The other cables are solved first, against the branches as they lie; those that come near a
        # branch are solved again together with it in every trial of the junctions (junctions.py), so
        # that both carry their contact. A branch and another cable that end up touching without having
        # been solved together (their last joint solve failed, or came apart) refuse the step, and all
        # is put back.
        watch = self.contact_settings.cable_cable and len(branches) < len(self.cables)
        self.step_ids = set(ids)
        kept = self.checkpoint(set(self.cables)) if watch else None
        others = [cid for cid in ids if cid not in branches]
        reports = self._solve_cables(others, targets) if others else {}
        # (a cable touching a branch that was solved this step is solved again with it)
        partners = self.partners_of_branches(ids) if watch else []
        if moves or partners or any(cid in branches for cid in ids):
            if self.contact_settings.cable_cable:
                capsules = self.capsules_for(tuple(branches))
                for cid in branches:
                    self.cables[cid].interactions.obstacles = self.obstacles.with_capsules(*capsules)
            # cables outside the step stay where they are (met as obstacles), as they do without junctions
            partner_targets = {cid: targets.get(cid) for cid in ids if cid not in branches}
            start = coarse_harness.start_from_coarse(self) if coarse_harness.applies(self, targets, moves) else None
            branch_targets = {cid: targets.get(cid) for cid in branches}
            solved = self.junctions.solve(self, branch_targets, moves, partner_targets)
            if start is not None:
                if start.kept is not None and not self.junctions.last.converged:
                    # refined from the coarse start it failed: solved from the drawn routes instead, as
                    # without one (a failure then keeps the case's state, not the coarse one)
                    self.restore(start.kept)
                    solved = self.junctions.solve(self, branch_targets, moves, partner_targets)
                self.junctions.last.coarse = start.report
            reports.update({cid: report for cid, report in solved.items() if cid in ids or moves or partners})
            for cid in self.cables:
                joint = self.cables[cid].solved_with
                if cid not in branches and self.joint(cid) and any(b in joint for b in branches):
                    reports[cid] = self.cables[cid].last_report  # solved again with a branch
        if watch and any(report.converged for report in reports.values()):
            touching = self._branch_touching_another_cable()
            if touching is not None:
                reports = self._refuse_step(kept, reports, touching)
        return reports

    def _refuse_step(self, kept: HarnessCheckpoint, reports: dict, touching: tuple) -> dict:
        """The cables and junctions of the step put back as before it, every report a failure."""
        self.restore(kept)
        message = (
            f"branch {touching[0]!r} and cable {touching[1]!r} would touch without having been solved "
            f"together, so only one of them would carry that contact; the last valid state is kept"
        )
        self.junctions.last = JunctionReport(False, message)
        out = {}
        for cid, report in reports.items():
            session = self.cables[cid]
            out[cid] = replace(report, state=session.state.copy(), converged=False, stable=False, message=message)
            session.last_report = out[cid]
        return out


def _same_input(a: tuple, b: tuple) -> bool:
    """Whether two ``Harness._input_snapshot``s are the same, bit for bit (NaN equal to NaN)."""
    return (
        a[0] == b[0]
        and len(a[1]) == len(b[1])
        and all(x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a[1], b[1]))
    )
