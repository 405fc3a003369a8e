# SPDX-License-Identifier: GPL-3.0-or-later
"""Dynamic steps (``solver.dynamics``): cables with inertia and damping, stepped in time.

Each time step h is Bathe's composite rule (Bathe & Baig 2005; Bathe 2007): the trapezoidal rule
(Newmark's average acceleration) over its first half, then the three-point backward difference (BDF2)
over the points t, t + h/2, t + h. The trapezoidal rule alone keeps a linear system's energy exactly,
but in a cable, whose axial and shear modes are far too fast to resolve, it lets energy flow into
them and grow (Simo & Tarnow 1992): a cable dropped onto a floor gained ten times its kinetic energy
in a second. The composite rule damps unresolved modes (its amplification tends to 0 as omega h grows)
and hardly the resolved ones: over 100 periods of an oscillator it keeps 99.89 % of the energy at
h = T/100 and 98.3 % at T/40; its period error is 0.016 % and 0.10 % there (linear oscillator).

Each stage is the minimum over the new positions x' of an incremental potential: with mass-
proportional damping C = c M, M a' + c M v' + grad E(x') = 0 becomes

    E(x') + 1/2 sum_i k_i |x'_i - p_i|^2

with, for the trapezoidal half step g = h/2 (x^ = x + g v + g^2/4 a, a' = 4 (x' - x^) / g^2,
v' = v + g/2 (a + a')):  k_i = (1 + c g/2) 4 m_i / g^2,  p = x^ - c g^2 (v + g/2 a) / (4 (1 + c g/2));
and for the backward step (v' = (3 x' - 4 x_m + x) / h, a' = (3 v' - 4 v_m + v) / h, so a' =
9 (x' - x^) / h^2 with x^ = (4 x_m - x) / 3 + h (4 v_m - v) / 9):  k_i = (9 / h^2 + 3 c / h) m_i,
p = (9 x^ / h^2 + c (4 x_m - x) / h) / (9 / h^2 + 3 c / h).

The springs enter the Newton solve as translational compliant clips on every free node
(interactions.InertiaSprings), so each stage is a quasi-static solve with all its machinery: contact
stays intersection-free (every Newton step is filtered against crossing, as in a quasi-static step),
clips, friction, cable-cable contact and groups are as they are, and "converged" means a verified
minimum of the incremental potential. Node masses are lumped (half of each segment's mass at either
end); the segments' rotary inertia is left out (a thin rod's is (d/L)^2 of its bending inertia), so
the material frames follow the centre line quasi-statically.
"""

from dataclasses import dataclass, replace

import numpy as np

from ..contact.interactions import InertiaSprings
from ..rod.rod_state import interpolate_boundary
from .equilibrium import rotations_next_to_nodes
from .sessions import restore_sessions, snapshot_sessions


@dataclass
class Motion:
    """A cable's velocity and acceleration per node (n_nodes, 3), at the end of its last time step. A
    cable starts from rest (zero velocity and acceleration): exact where it starts from an equilibrium
    (every case's first solve), a first-order start error in the acceleration where it does not."""

    velocity: np.ndarray
    acceleration: np.ndarray

    @staticmethod
    def at_rest(n_nodes: int) -> "Motion":
        return Motion(np.zeros((n_nodes, 3)), np.zeros((n_nodes, 3)))

    def copy(self) -> "Motion":
        return Motion(self.velocity.copy(), self.acceleration.copy())


def node_masses(session) -> np.ndarray:
    """Lumped node masses [kg]: half of each segment's mass at either end."""
    return session.model.cable.section.linear_density * session.interactions.node_lengths


def kinetic_energy(session) -> float:
    """1/2 sum m v^2 of a cable's nodes [J] (zero before its first dynamic step)."""
    motion = session.motion
    if motion is None:
        return 0.0
    return 0.5 * float(np.sum(node_masses(session) * np.sum(motion.velocity**2, axis=1)))


def _springs(session, centre: np.ndarray, stiffness: np.ndarray) -> InertiaSprings:
    """Springs of per-node ``stiffness`` [N/m] from every free node to ``centre`` (n_nodes, 3)."""
    model = session.model
    # which nodes are free and the rotation numbered next to each depend on the model alone: found once
    # per model, not at each of a step's stages
    nodes = model.derived.get("inertia_nodes")
    if nodes is None:
        free = np.flatnonzero(~model.held_nodes()).astype(np.int64)
        nodes = model.derived["inertia_nodes"] = (free, rotations_next_to_nodes(model)[free].astype(np.int64))
    free, rot = nodes
    K = np.zeros((free.shape[0], 6, 6))
    for axis in range(3):
        K[:, axis, axis] = stiffness[free]
    return InertiaSprings(free, rot, centre[free].copy(), K)


def trapezoid_springs(session, g: float, damping: float) -> tuple:
    """(springs, x^) of the trapezoidal half step g from the cable's state and motion (module docstring)."""
    x, v, a = session.state.positions, session.motion.velocity, session.motion.acceleration
    predicted = x + g * v + 0.25 * g * g * a
    factor = 1.0 + 0.5 * damping * g
    centre = predicted - damping * g * g * (v + 0.5 * g * a) / (4.0 * factor)
    return _springs(session, centre, factor * 4.0 * node_masses(session) / (g * g)), predicted


def trapezoid_motion(session, before: Motion, x_before: np.ndarray, predicted: np.ndarray, g: float) -> Motion:
    """The motion after the trapezoidal half step: free nodes by its rule, held nodes as their holders
    move them (differences over the step: their motion is given, not integrated)."""
    x = session.state.positions
    acceleration = 4.0 * (x - predicted) / (g * g)
    velocity = before.velocity + 0.5 * g * (before.acceleration + acceleration)
    held = session.model.held_nodes()
    given = (x[held] - x_before[held]) / g
    acceleration[held] = (given - before.velocity[held]) / g
    velocity[held] = given
    return Motion(velocity, acceleration)


def backward_springs(session, start: tuple, middle: tuple, h: float, damping: float) -> InertiaSprings:
    """The springs of the backward (BDF2) stage over t, t + h/2, t + h; ``start`` and ``middle`` are
    (positions, Motion) at t and t + h/2."""
    (x0, m0), (xm, mm) = start, middle
    predicted = (4.0 * xm - x0) / 3.0 + h * (4.0 * mm.velocity - m0.velocity) / 9.0
    k = 9.0 / (h * h) + 3.0 * damping / h
    centre = (9.0 * predicted / (h * h) + damping * (4.0 * xm - x0) / h) / k
    return _springs(session, centre, k * node_masses(session))


def backward_motion(session, start: tuple, middle: tuple, h: float) -> Motion:
    """The motion at t + h by the backward differences (held nodes too: exact for uniform motion)."""
    (x0, m0), (xm, mm) = start, middle
    velocity = (3.0 * session.state.positions - 4.0 * xm + x0) / h
    acceleration = (3.0 * velocity - 4.0 * mm.velocity + m0.velocity) / h
    return Motion(velocity, acceleration)


def time_steps(duration: float, time_step: float) -> int:
    """Equal time steps of at most ``time_step`` that make up ``duration``."""
    return max(1, int(np.ceil(duration / time_step * (1.0 - 1e-12))))


def solve_dynamic_step(harness, ids, targets: dict, duration: float) -> dict:
    """Advance the cables ``ids`` by ``duration`` seconds while their holders move uniformly from where
    they are to ``targets`` (id -> Boundary or None); returns {id: SolveReport} of the step's end.
    A time step that fails puts every cable back where the step started (its motion too), and the
    reports say at what time it failed: no state of a failed motion is shown as a result."""
    if not ids:
        return {}
    settings = harness.case.solver.dynamics
    n = time_steps(duration, settings.time_step)
    h = duration / n
    # every cable: those outside the step are held where they are (at rest when they move again), and
    # a joint solve hands every cable new capsules of the others
    kept = snapshot_sessions(harness, list(harness.cables))
    for cid, session in harness.cables.items():
        if cid not in ids:
            session.motion = None
    starts = {cid: harness.cables[cid].boundary for cid in ids}
    for cid in ids:
        if harness.cables[cid].motion is None:
            harness.cables[cid].motion = Motion.at_rest(harness.cables[cid].model.n_nodes)
    totals = {cid: [0, 0.0] for cid in ids}
    reports, start, middle, predicted = {}, {}, {}, {}
    c = settings.damping
    try:
        for k in range(1, 2 * n + 1):  # the stages: trapezoidal (k odd), backward (k even)
            for cid in ids:
                session = harness.cables[cid]
                if k % 2:
                    start[cid] = (session.state.positions.copy(), session.motion)
                    session.interactions.inertia, predicted[cid] = trapezoid_springs(session, 0.5 * h, c)
                else:
                    middle[cid] = (session.state.positions.copy(), session.motion)
                    session.interactions.inertia = backward_springs(session, start[cid], middle[cid], h, c)
            part = {
                cid: interpolate_boundary(starts[cid], targets[cid], k / (2 * n))
                if targets.get(cid) is not None
                else None
                for cid in ids
            }
            reports = harness.solve_boundaries(ids, part)
            for cid, report in reports.items():
                totals[cid][0] += report.iterations
                totals[cid][1] += report.solve_ms
            failed = [cid for cid in ids if not reports[cid].converged]
            if failed:
                restore_sessions(harness, kept)
                when = f"t = {harness.time + 0.5 * k * h:.6g} s, time step {(k + 1) // 2} of {n}"
                return _kept_as_reports(
                    harness,
                    {
                        cid: replace(
                            report,
                            state=harness.cables[cid].state.copy(),
                            converged=False,
                            message=(
                                f"{when}: {report.message}; the step is undone"
                                if not report.converged
                                else f"{when}: {', '.join(failed)} failed; the step is undone"
                            ),
                        )
                        for cid, report in reports.items()
                    },
                )
            for cid in ids:
                session = harness.cables[cid]
                if k % 2:
                    before = start[cid]
                    session.motion = trapezoid_motion(session, before[1], before[0], predicted[cid], 0.5 * h)
                else:
                    session.motion = backward_motion(session, start[cid], middle[cid], h)
    except BaseException:
        restore_sessions(harness, kept)  # no cable is left part of the way through a step
        raise
    finally:
        for cid in ids:
            harness.cables[cid].interactions.inertia = None
    harness.time += duration
    return _kept_as_reports(
        harness,
        {
            cid: replace(report, iterations=totals[cid][0], solve_ms=totals[cid][1], substeps=n)
            for cid, report in reports.items()
        },
    )


def _kept_as_reports(harness, reports: dict) -> dict:
    """The step's reports, also as the cables' last reports (what their results show)."""
    for cid, report in reports.items():
        harness.cables[cid].last_report = report
    return reports
