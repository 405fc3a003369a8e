# SPDX-License-Identifier: GPL-3.0-or-later
"""A harness in a session: every cable's model and state, solved step after step.

This is the object both the CLI and the Blender layer drive: build it from a case, call
``solve_step`` with changed frames (or none), read ``cable_result`` documents back.
"""

import time
from dataclasses import dataclass, field, replace

import numpy as np

from . import coarse_harness
from .case import (
    DEFAULT_DURATION,
    CableChange,
    CableSpec,
    Case,
    Frame,
    as_float,
    check_dynamics,
    check_reachable,
    check_step_request,
)
from .clearance import clearance_to_triangles
from .contact import PENETRATION_TOLERANCE
from .contact_geometry import nodes_within
from .diagnostics import max_axial_strain
from .dynamics import Motion, solve_dynamic_step
from .equilibrium import (
    MAX_CONTINUATION_DEPTH,
    SNAP_THROUGH_ROUNDS,
    SolveReport,
    held_frames,
    solve_equilibrium,
)
from .errors import CaseError
from .interactions import ContactSettings, Interactions
from .junction_contact import cables_touch
from .junctions import JunctionReport, JunctionSystem
from .model_features import check_model_features
from .model_solves import solve_with_model
from .obstacles import ObstacleSet, obstacles_from_case
from .pbd_dynamics import solve_pbd_dynamic_step
from .predictor import StepMemory, hold_vector, secant_displacement
from .results import cable_result, contact_documents
from .rod_group import GroupBoundary, GroupInteractions, join_models
from .rod_model import Boundary, RodModel, build_rod_model
from .rod_state import (
    RodState,
    initial_centerline,
    initial_state,
    interpolate_boundary,
    prolong_state,
)
from .sessions import restore_sessions, snapshot_sessions


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
# Cables are solved together when they come this close (in reaches, see Interactions.reach, beyond
# their surfaces); groups are formed again after a solve, at most this often per step, when cables
# solved apart have met.
GROUP_MARGIN = 2.0
MAX_REGROUPINGS = 4
# After the n-th joint solve of a group failing in a row, its cables are solved one by one for the next
# min(2^(n-1), this) steps before they are tried together again: a failing joint solve of ten cables
# takes seconds, and Simulate asks for a step on every tick while a connector is dragged.
MAX_JOINT_RETRY_WAIT = 8


@dataclass
class Harness:
    case: Case
    cables: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
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
        route = initial_state(session.model, session.boundary, sag=0.0)
        corners = False  # whether the segments are laid through the route's corners
        depth = check.deepest_penetration(route)
        if depth > 0.0:
            # a coarse cable's segments cut the corners of a route drawn clear round something
            laid = initial_state(session.model, session.boundary, sag=0.0, through_corners=True)
            if check.deepest_penetration(laid) < depth:
                route, corners = laid, True
        if check.deepest_penetration(route) > 0.0:
            # A route resting on a surface (a solved shape exported as a route) touches it within the
            # penetration tolerance, and one drawn clear of the other cables' routes may still meet
            # the sag of a cable placed before it (the power line hanging between its clips onto the
            # signal line drawn below it): neither is a route drawn through something.
            tolerance = PENETRATION_TOLERANCE * check.radius
            static = Interactions(session.model, self.obstacles, ContactSettings())
            what = None
            if static.deepest_penetration(route) > tolerance:
                what = "an obstacle"
            elif self.contact_settings.cable_cable:
                drawn = Interactions(session.model, self.obstacles, self.contact_settings)
                drawn.obstacles = self.obstacles.with_capsules(*self._drawn_routes_except(cable_id))
                if drawn.deepest_penetration(route) > tolerance:
                    what = "another cable"
            if what is not None:
                warning = (
                    f"cable {cable_id!r}: its route passes through {what}; draw the route around it "
                    f"(the result may be on the wrong side)"
                )
                if warning not in self.warnings:
                    self.warnings.append(warning)
            session.state = route
            return
        if not check.uses_contact:
            session.state = initial_state(session.model, session.boundary, sag=1.0)
            return

        def sagged(fraction):  # the centre line only: the checks need no frames
            positions = initial_centerline(session.model, session.boundary, fraction, corners) - session.model.origin
            return RodState(positions, route.quats)

        state, chosen = route, 0.0
        full = sagged(1.0)
        move = float(np.abs(full.positions - route.positions).max())
        steps = int(min(MAX_SAG_STEPS, max(1, np.ceil(move / (0.5 * check.radius)))))
        for k in range(1, steps + 1):
            candidate = full if k == steps else sagged(k / steps)
            if check.deepest_penetration(candidate) > 0.0 or check.passes_through(state, candidate):
                break
            state, chosen = candidate, k / steps
        session.state = route if chosen == 0.0 else initial_state(session.model, session.boundary, chosen, corners)

    # ---------------------------------------------------------------- read-outs for a scene layer

    def has_cable(self, cable_id: str) -> bool:
        return cable_id in self.cables

    def is_solved(self, cable_id: str) -> bool:
        """Whether the cable has an equilibrium (its state is one, not the initial guess)."""
        return self.cables[cable_id].solved

    def cable_radius(self, cable_id: str) -> float:
        """The cable's radius, metres."""
        return 0.5 * self.cables[cable_id].model.cable.diameter

    def world_nodes(self, cable_id: str) -> np.ndarray:
        """The cable's nodes in world coordinates (metres), a new (n, 3) array."""
        session = self.cables[cable_id]
        return session.state.positions + session.model.origin

    def contact_reach(self, cable_id: str) -> float:
        """How far from the cable's nodes a broad phase must look for obstacles (metres): a few
        diameters and a couple of segments around a solved cable; around one not solved yet, as far as
        its first equilibrium may be from its guess (a sag can reach half its length)."""
        session = self.cables[cable_id]
        model = session.model
        return max(
            4.0 * model.cable.diameter,
            2.0 * float(model.rest_len.max()),
            0.0 if session.solved else 0.5 * model.cable.length,
        )

    def step_part(self, cable_id: str, change: CableChange, t: float) -> CableChange:
        """The change of a sub-step: the cable's holders ``t`` of the way (0..1) from where they are
        to where ``change`` moves them (positions linearly, frames along the rotation geodesic)."""
        part = interpolate_boundary(self.cables[cable_id].boundary, self.changed_boundary(cable_id, change), t)
        return CableChange(start=part.start, end=part.end, clips=dict(enumerate(part.clips)))

    def clearance(self, cable_id: str, triangles: np.ndarray, search: float) -> tuple:
        """(gap, arc length) of the cable's surface to the nearest of ``triangles`` (m, world), or
        (None, None) when none comes within ``search`` metres."""
        session = self.cables[cable_id]
        model = session.model
        gap, where = clearance_to_triangles(self.world_nodes(cable_id), self.cable_radius(cable_id), triangles)
        if where < 0.0 or gap > search:
            return None, None
        segment = min(int(where), model.n_segments - 1)
        return gap, float(model.node_s[segment] + (where - segment) * model.rest_len[segment])

    def held_end(self, cable_id: str, side: str) -> Frame | None:
        """The frame the solver holds the cable's ``side`` ("start" or "end") at now (metres), or None
        (a free end)."""
        return getattr(self.cables[cable_id].boundary, side)

    def is_branch(self, cable_id: str) -> bool:
        """Whether an end of the cable is held by a junction."""
        return self.junctions is not None and cable_id in self.junctions.branches

    def junction_documents(self) -> dict:
        """The result's ``junctions`` block ({} without junctions; case order): per junction its
        frame, whether it is fixed and balanced, and what each branch pulls it with."""
        return {} if self.junctions is None else self.junctions.junction_documents()

    def branches_at(self, junction_id: str) -> list:
        """The cables with an end held by the junction."""
        if self.junctions is None:
            return []
        branches = self.junctions.branches.items()
        return [cid for cid, ends in branches if any(end.junction == junction_id for _side, end in ends)]

    def rename_cable(self, old: str, new: str) -> None:
        """Give a cable a new id (its object was renamed), keeping its state and results."""
        if old not in self.cables or new in self.cables:
            raise CaseError(f"cannot rename cable {old!r} to {new!r}")
        session = self.cables.pop(old)
        session.model.cable = replace(session.model.cable, id=new)
        self.cables[new] = session
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
        if dynamics is not None and ids and all(self.cables[cid].solved for cid in ids):
            step = solve_pbd_dynamic_step if self.case.solver.model == "cosserat_pbd" else solve_dynamic_step
            reports = step(self, ids, targets, DEFAULT_DURATION if duration is None else duration)
        else:
            reports = self.solve_boundaries(ids, targets)
            for cid in ids:  # found at rest
                self.cables[cid].motion = None
        failed = not all(report.converged for report in reports.values())
        unchanged = failed and _same_input(snapshot, self._input_snapshot(ids, targets, duration))
        self.unchanged_failure = (snapshot, reports) if unchanged else None
        return reports

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

    def partners_of_branches(self, candidates) -> list:
        """The cables among ``candidates`` that are not branches of the harness but touch one of its
        branches, or nearly."""
        branches = self.junctions.branches
        others = [cid for cid in candidates if cid not in branches]
        out = []
        for b in branches:
            out += [cid for cid in self.cables_near(b, others) if cid not in out]
        return out

    def _branch_touching_another_cable(self) -> tuple | None:
        """(branch, cable) where a branch of the harness touches a cable that is not one of its branches
        (junction_contact.cables_touch) and their states were not solved together: each then carries
        a contact the other does not, which is no equilibrium."""
        branches = self.junctions.branches
        held = {cid: self.cables[cid].model.held_nodes() for cid in self.cables}
        for b in branches:
            for c in self.cables:
                joint = self.cables[b].solved_with
                if c in branches or c not in self.step_ids or (c in joint and self.joint(b)):
                    continue  # (a cable outside the step is met where it lies, by request)
                if cables_touch(
                    (self.world_nodes(b), self.cable_radius(b), held[b]),
                    (self.world_nodes(c), self.cable_radius(c), held[c]),
                ):
                    return b, c
        return None

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

    def _solve_cables(self, ids, targets) -> dict:
        if not self.contact_settings.cable_cable:
            return {cid: self.solve_cable(cid, targets[cid]) for cid in ids}
        # Cable-cable and self contact. Cables that touch (or nearly) are solved together as one system
        # (rod_group.py), so that they share their loads; a cable alone is solved against the others as
        # capsules. No cable ever moves without seeing the others: distances do not tell sides apart,
        # so cables let through each other could not be told apart again. Routes must not cross.
        reports = {}
        solved_together = []
        for _round in range(MAX_REGROUPINGS):
            pending = [
                group
                for group in self.touching_groups(ids)
                if not any(set(group) <= set(done) for done in solved_together)
            ]
            if not pending:
                break
            for group in pending:
                for cid, report in self.solve_together(group, targets).items():
                    if cid in reports:  # the whole step's effort
                        earlier = reports[cid]
                        report.iterations += earlier.iterations
                        report.substeps += earlier.substeps
                        report.solve_ms += earlier.solve_ms
                    reports[cid] = report
                solved_together.append(group)
            if len(pending) == 1 and len(pending[0]) == len(ids):
                break  # all of them in one group: none is left to meet after the solve
        else:
            if any(not any(set(g) <= set(done) for done in solved_together) for g in self.touching_groups(ids)):
                warning = (
                    f"cables kept meeting new cables after {MAX_REGROUPINGS} regroupings in one step; "
                    f"contact between the last ones met is approximate (use smaller steps)"
                )
                if warning not in self.warnings:
                    self.warnings.append(warning)
        segments = self._cable_segments()
        for cid, session in self.cables.items():  # the final states, for contact reports and the next step
            session.interactions.obstacles = self.obstacles.with_capsules(*self.capsules_for((cid,), segments))
        return reports

    def touching_groups(self, ids) -> list:
        """The cables among ``ids`` that touch, or nearly, as groups (connected components; lists
        in harness order). Near means within GROUP_MARGIN reaches beyond both surfaces at some node."""
        ids = list(ids)
        where = {cid: self._whereabouts(cid) for cid in ids}
        parent = {cid: cid for cid in ids}

        def root(c):
            while parent[c] != c:
                c = parent[c]
            return c

        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                if root(a) == root(b):
                    continue  # already in one group (ten crossed cables: 9 tests of 45)
                if _near(where[a], where[b]):
                    parent[root(a)] = root(b)
        groups = {}
        for cid in ids:
            groups.setdefault(root(cid), []).append(cid)
        return list(groups.values())

    def cables_near(self, cable_id: str, candidates) -> list:
        """The cables among ``candidates`` that touch ``cable_id`` or nearly (as in touching_groups), and
        those that touch them in turn: what must be solved together with it."""
        where = {cable_id: self._whereabouts(cable_id)}

        def at(cid):
            if cid not in where:
                where[cid] = self._whereabouts(cid)
            return where[cid]

        # grown outward from the cable (a pairwise grouping of every candidate cost 85 % of a step
        # beside 100 unrelated cables)
        rest = [cid for cid in candidates if cid != cable_id]
        out, frontier = [], [cable_id]
        while frontier and rest:
            cid = frontier.pop()
            met = [other for other in rest if _near(at(cid), at(other))]
            rest = [other for other in rest if other not in met]
            out += met
            frontier += met
        return [cid for cid in candidates if cid in out]

    def joint(self, cable_id: str) -> bool:
        """Whether the cable's state is that of a joint solve whose cables all still hold theirs from it
        (a later solve of one of them alone leaves the others' record stale)."""
        mates = self.cables[cable_id].solved_with
        return len(mates) > 1 and all(cid in self.cables and self.cables[cid].solved_with == mates for cid in mates)

    def _whereabouts(self, cable_id: str) -> tuple:
        """(world nodes, contact reach, radius, lower and upper corner of the nodes' box) of a cable."""
        session = self.cables[cable_id]
        points = session.state.positions + session.model.origin
        return points, session.interactions.reach, session.interactions.radius, points.min(axis=0), points.max(axis=0)

    def solve_together(self, ids, targets, strict: bool = False) -> dict:
        """Solve the cables ``ids`` as one system (one cable: on its own) against the others as
        capsules. A step refused for one cable (ultimate length) is refused for all of them.
        ``strict``: a joint solve that fails is a failure of every cable in it (the junctions' trials,
        which try again otherwise), not followed by the one-by-one approximation."""
        capsules = self.capsules_for(ids)
        for cid in ids:
            self.cables[cid].interactions.obstacles = self.obstacles.with_capsules(*capsules)
        if len(ids) == 1:
            return {ids[0]: self.solve_cable(ids[0], targets.get(ids[0]))}
        # Cables not solved yet first find their own equilibrium against the others (the cold
        # continuation of one cable is the robust one). One that finds none still joins the group from
        # its start: against the others frozen as capsules, a cable lying nearly parallel on another
        # can stall where the joint system settles (two cables 0.3 degrees apart: 6,657 iterations
        # alone without an equilibrium, 15 together). One refused (ultimate length) stays out.
        out = {}
        failed_alone = {}
        fresh = {cid for cid in ids if not self.cables[cid].solved}
        for cid in ids:
            if cid in fresh:
                self.cables[cid].interactions.obstacles = self.obstacles.with_capsules(*self.capsules_for((cid,)))
                alone = self.solve_cable(cid, targets.get(cid))
                if alone.refused:
                    out[cid] = alone
                elif not alone.converged:
                    failed_alone[cid] = alone
        ids = [cid for cid in ids if cid not in out]
        sessions = [self.cables[cid] for cid in ids]
        if len(ids) < 2:
            return {**out, **{cid: self.cables[cid].last_report for cid in ids}}
        branches = self.junctions.branches if self.junctions is not None else {}
        apart = [k for k, cid in enumerate(ids) if cid in branches]  # they meet at their junctions
        group = join_models([s.model for s in sessions], [s.state for s in sessions], apart)
        obstacles = self.obstacles.with_capsules(*capsules)
        interactions = GroupInteractions(
            group, obstacles, self.contact_settings, members=tuple(s.interactions for s in sessions)
        )
        key = tuple(ids)
        self._hand_on_candidates(key, interactions, capsules)
        target = GroupBoundary(tuple(targets.get(cid) or s.boundary for cid, s in zip(ids, sessions)))
        previous = GroupBoundary(tuple(s.boundary for s in sessions))
        # A group whose joint solve failed last time (its cables were then solved one by one) is tried
        # together once, not along a path split 2^7 times: splitting helps where a step is too large,
        # and from a start that is no joint equilibrium it was not the step that failed. Nor is it
        # given the extra rounds of a slow descent: that try is a hope, and Simulate waits for it (a
        # pile of ten crossed cables descended for ten rounds, 11 s, and still failed).
        failures, wait = (0, 0) if strict else self.failed_groups.get(key, (0, 0))
        if wait > 0:
            self.failed_groups[key] = (failures, wait - 1)
            return {**out, **self._solve_one_by_one(ids, targets, failed_alone)}
        depth, rounds = (0, 0) if failures else (MAX_CONTINUATION_DEPTH, SNAP_THROUGH_ROUNDS)
        report = solve_equilibrium(
            group,
            group.join_states([s.state for s in sessions]),
            target,
            previous,
            self.case.solver.max_iterations,
            interactions,
            max_depth=depth,
            snap_through_rounds=rounds,
        )
        self._keep_candidates(key, interactions, capsules)
        if strict:
            pass
        elif report.converged:
            self.failed_groups.pop(key, None)
        else:
            self.failed_groups[key] = (failures + 1, min(2**failures, MAX_JOINT_RETRY_WAIT))
        states = group.split_state(report.state)
        message, refused = report.message, False
        moved = report.converged
        if report.converged and self.strain_checked:
            limit = self.case.solver.ultimate_strain
            strains = [max_axial_strain(s.model, st) for s, st in zip(sessions, states)]
            over = [(cid, strain) for cid, strain in zip(ids, strains) if strain > limit]
            if over:
                # Lv 2017, Sec. 2.4, for cables that share their loads: none of them moves
                refused = True
                moved = False
                message = (
                    "step refused: "
                    + ", ".join(f"cable {cid!r} would stretch {strain * 100:.2f} %" for cid, strain in over)
                    + f" (ultimate {limit * 100:.2f} %); the last valid state is kept"
                )
        if not report.converged and strict:
            message = f"cables {', '.join(map(repr, ids))} found no equilibrium together ({report.message})"
            for cid, s in zip(ids, sessions):
                s.last_report = SolveReport(
                    s.state.copy(), False, report.iterations, report.residual, report.substeps, report.solve_ms, message
                )
                out[cid] = s.last_report
            return out
        if not report.converged:
            return {**out, **self._solve_one_by_one(ids, targets, failed_alone)}
        friction = interactions.split_friction()
        joined = group.join_states([s.state if not moved else st for s, st in zip(sessions, states)])
        # the solved state itself when the cables moved (the deepest-penetration check has just
        # evaluated its pairs; joining the split states again may differ in the last bits)
        contacts = contact_documents(interactions.contacts(report.state if moved else joined), group, ids)
        for cid, s in zip(ids, sessions):
            s.group_contacts = contacts[cid]
        push = interactions.contact_gradient_at(report.state) if moved else None
        for k, (cid, s) in enumerate(zip(ids, sessions)):
            if moved:
                s.state, s.boundary, s.solved = states[k], target.parts[k], True
                s.solved_with = tuple(ids)
                start = group.node_start[k]
                s.group_push = push[start : start + s.model.n_nodes].copy()
                s.group_energy = interactions.contact_energy_at(report.state) if k == 0 else 0.0
                s.interactions.friction_state = friction[k]
            own = SolveReport(
                s.state.copy(),
                moved,
                report.iterations,
                report.residual,
                report.substeps,
                report.solve_ms,
                "converged" if moved else message,
            )
            own.refused = refused
            own.stable = report.stable  # the joint system's verified minimum is each cable's
            s.last_report = own
            out[cid] = own
        return out

    def _candidate_context(self, interactions, capsules) -> tuple:
        """What a group's candidate contact pairs depend on besides positions: the static obstacles (the
        object), the arrays of the other cables' capsules, the group's origin and cable radii, and the
        self-contact gap."""
        arrays = tuple(capsules) + (interactions.model.origin.copy(), interactions.node_radius.copy())
        return self.obstacles, interactions.self_gap, arrays

    def _keep_candidates(self, key, interactions, capsules) -> None:
        if interactions.candidates is not None:
            self.group_candidates[key] = (self._candidate_context(interactions, capsules), interactions.candidates)

    def _hand_on_candidates(self, key, interactions, capsules) -> None:
        """A group's interactions are built afresh for every step, but the candidate contact pairs of its
        last joint solve hold for the next one as a single cable's do from call to call (searched within
        twice the reach, with lower bounds of their gaps carried from where they were evaluated;
        equilibrium._minimise): handed on while the group meets the same obstacles and capsules of the
        other cables and keeps its numbering: a fresh search of a pile's pairs costs a tenth of its step."""
        kept = self.group_candidates.get(key)
        if kept is None:
            return
        (obstacles, self_gap, arrays), now = kept[0], self._candidate_context(interactions, capsules)
        if (
            obstacles is now[0]
            and self_gap == now[1]
            and len(arrays) == len(now[2])
            and all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(arrays, now[2]))
        ):
            interactions.adopt_candidates(kept[1])

    def _solve_one_by_one(self, ids, targets, failed_alone=None) -> dict:
        """The fallback where cables could not be solved together: each against the others where they
        are (block Gauss-Seidel, one sweep), said as such: where one presses another that has to give
        way, the shared loads are then approximate. ``failed_alone``: reports of cables that this step
        already failed to solve so, not tried again."""
        out = dict(failed_alone or {})
        for cid in ids:
            if cid in out:
                continue
            self.cables[cid].interactions.obstacles = self.obstacles.with_capsules(*self.capsules_for((cid,)))
            out[cid] = self.solve_cable(cid, targets.get(cid))
        warning = (
            f"cables {', '.join(ids)} could not be solved together; each was solved against the "
            f"others as they lay, so the loads they share are approximate (they are tried together "
            f"again after 1, 2, 4 ... {MAX_JOINT_RETRY_WAIT} steps)"
        )
        if warning not in self.warnings:
            self.warnings.append(warning)
        return out

    def _cable_segments(self) -> dict:
        """Every cable's segments as capsules, world frame: {id: (starts, ends, radii)}."""
        out = {}
        for cid, session in self.cables.items():
            x = session.state.positions + session.model.origin
            out[cid] = (x[:-1], x[1:], np.full(len(x) - 1, 0.5 * session.model.cable.diameter))
        return out

    def _drawn_routes_except(self, cable_id: str):
        """The drawn routes (initial guesses without sag) of the other cables, as capsules."""
        segments = {}
        for cid, session in self.cables.items():
            if cid != cable_id:
                x = initial_state(session.model, session.boundary, sag=0.0).positions + session.model.origin
                segments[cid] = (x[:-1], x[1:], np.full(len(x) - 1, 0.5 * session.model.cable.diameter))
        return self.capsules_for((cable_id,), segments)

    def capsules_for(self, cable_ids, segments: dict | None = None):
        """Segments of the cables not in ``cable_ids`` as capsules, world frame (from ``segments`` of
        _cable_segments when given: the same states' for every cable after a step)."""
        segments = self._cable_segments() if segments is None else segments
        if self.junctions is not None and any(cid in self.junctions.branches for cid in cable_ids):
            # the branches of a harness meet at its junctions: they are not obstacles to each other
            cable_ids = set(cable_ids) | set(self.junctions.branches)
        a, b, radius = [np.zeros((0, 3))], [np.zeros((0, 3))], [np.zeros(0)]
        for cid, (starts, ends, radii) in segments.items():
            if cid not in cable_ids:
                a.append(starts)
                b.append(ends)
                radius.append(radii)
        return np.concatenate(a), np.concatenate(b), np.concatenate(radius)

    def cable_result(self, cable_id: str) -> dict:
        """The result document of one cable (case format, section Result; built in results.py)."""
        return cable_result(self, cable_id)


def _same_input(a: tuple, b: tuple) -> bool:
    """Whether two ``Harness._input_snapshot``s are the same, bit for bit (NaN equal to NaN)."""
    return (
        a[0] == b[0]
        and len(a[1]) == len(b[1])
        and all(x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a[1], b[1]))
    )


def _near(a: tuple, b: tuple) -> bool:
    """Whether two cables (Harness._whereabouts) come within GROUP_MARGIN reaches beyond both surfaces."""
    points_a, reach_a, radius_a, low_a, high_a = a
    points_b, reach_b, radius_b, low_b, high_b = b
    near = radius_a + radius_b + GROUP_MARGIN * max(reach_a, reach_b)
    if (low_a > high_b + near).any() or (low_b > high_a + near).any():
        return False
    return bool(nodes_within(points_a, points_b, near))
