# SPDX-License-Identifier: GPL-3.0-or-later
"""Dynamic steps of the position-based Cosserat rod (solver.model "cosserat_pbd" with solver.dynamics):
the paper's own loop (Chen 2023, Eqs. 14-20), one XPBD step per time step while the holders move
uniformly to their targets, each step's projections converged (cosserat_pbd.time_step), so a step is
the implicit Euler step of the rod with lumped masses.

Implicit Euler dissipates: a mode of angular frequency w loses a fraction of about w h of its
amplitude per step (w h small), on top of the damping set, which is applied to the velocities after
each step as exp(-c h) (the mass-proportional damping force -c m v). A time step whose projections
do not converge, or whose end stretches the cable past its ultimate strain, undoes the whole step
(every cable, its motion and the clock), as dynamics.py does for the rod.
"""

import math
import time

from ..rod.rod_state import RodState, apply_boundary, interpolate_boundary
from ..solve.diagnostics import max_axial_strain
from ..solve.dynamics import Motion, time_steps
from ..solve.equilibrium import SolveReport
from ..solve.sessions import restore_sessions, snapshot_sessions
from .cosserat_pbd import MOVE_TOLERANCE, incremental_minimum, pieces_for, time_step

DYNAMIC_PROJECTIONS = 400  # projections a time step may take before it counts as failed
DYNAMIC_REDUCTION = 1e-6  # a time step's projections cut its first move by this (cosserat_pbd.time_step)
# A time step whose projections do not converge (the motion too fast for its length: their
# linearisation fails) is taken again as 2, 4, ... shorter ones, at most this many, before it fails
MAX_SPLIT = 64


def _failure(harness, kept, ids, reports, message):
    """Every cable back where the step started (state, motion; the clock has not moved) and each one's
    report the failure."""
    restore_sessions(harness, kept)
    out = {}
    for cid in ids:
        session = harness.cables[cid]
        report = SolveReport(session.state.copy(), False, reports.get(cid, 0), math.inf, 0, 0.0, message)
        session.last_report = report
        out[cid] = report
    return out


def _advance(session, arrays, ws, start, target, h, parts, decay):
    """One time step of length h from the session's state and motion, its holders moving uniformly from
    ``start`` to ``target``, taken as ``parts`` XPBD steps of h / parts; the session is not changed.
    Returns (state, velocity, projections used, converged)."""
    model = session.model
    state = session.state.copy()
    velocity = session.motion.velocity.copy()
    held = arrays.node_weight == 0.0
    short = h / parts
    used = 0
    for j in range(1, parts + 1):
        before = state.positions.copy()
        apply_boundary(model, state, interpolate_boundary(start, target, j / parts) if parts > 1 else target)
        more, ok = time_step(
            state.positions,
            state.quats,
            velocity,
            arrays,
            ws,
            short,
            DYNAMIC_PROJECTIONS,
            MOVE_TOLERANCE,
            DYNAMIC_REDUCTION,
        )
        used += more
        if not ok:
            return state, velocity, used, False
        velocity[held] = (state.positions[held] - before[held]) / short
        # the damping over the whole step, shared between its parts
        velocity[~held] *= decay ** (1.0 / parts)
    return state, velocity, used, True


def solve_pbd_dynamic_step(harness, ids, targets: dict, duration: float) -> dict:
    """Advance the cables ``ids`` by ``duration`` seconds in XPBD steps while their holders move
    uniformly from where they are to ``targets`` (id -> Boundary or None); {id: SolveReport}."""
    if not ids:
        return {}
    t0 = time.perf_counter()
    settings = harness.case.solver.dynamics
    n = time_steps(duration, settings.time_step)
    h = duration / n
    decay = math.exp(-settings.damping * h)
    kept = snapshot_sessions(harness, list(harness.cables))
    for cid, session in harness.cables.items():
        if cid not in ids:
            session.motion = None
    starts = {cid: harness.cables[cid].boundary for cid in ids}
    projections = dict.fromkeys(ids, 0)
    try:
        for cid in ids:
            session = harness.cables[cid]
            if session.interactions.uses_contact:
                return _failure(
                    harness,
                    kept,
                    ids,
                    projections,
                    'solver.model "cosserat_pbd" has no contact, and there are obstacles (colliders) near the '
                    "cable: not solved, so that it cannot pass through them; use the cosserat model",
                )
            if session.motion is None:
                session.motion = Motion.at_rest(session.model.n_nodes)
        for k in range(1, n + 1):
            for cid in ids:
                session = harness.cables[cid]
                model = session.model
                arrays, ws = pieces_for(model)
                target = session.boundary
                if targets.get(cid) is not None:
                    target = interpolate_boundary(starts[cid], targets[cid], k / n)
                previous = session.boundary
                ok = False
                parts = 1
                while not ok and parts <= MAX_SPLIT:
                    state, velocity, used, ok = _advance(session, arrays, ws, previous, target, h, parts, decay)
                    projections[cid] += used
                    parts *= 2
                when = f"t = {harness.time + k * h:.6g} s, time step {k} of {n}"
                if not ok:
                    return _failure(
                        harness,
                        kept,
                        ids,
                        projections,
                        f"{when}: the projections did not converge within {DYNAMIC_PROJECTIONS}, even in "
                        f"{MAX_SPLIT} shorter time steps (a motion too fast for time step {h:.3g} s); the step "
                        f"is undone; take a shorter time step",
                    )
                strain = max_axial_strain(model, state)
                if harness.strain_checked and strain > harness.case.solver.ultimate_strain:
                    return _failure(
                        harness,
                        kept,
                        ids,
                        projections,
                        f"{when}: the cable would stretch {strain * 100:.2f} % (ultimate "
                        f"{harness.case.solver.ultimate_strain * 100:.2f} %); the step is undone",
                    )
                # every time step's end minimises the rod's energy plus the inertia term: a saddle of
                # it (a straight column pushed past buckling) is no motion to keep
                if not incremental_minimum(model, state.positions, state.quats, arrays, h):
                    return _failure(
                        harness,
                        kept,
                        ids,
                        projections,
                        f"{when}: the time step ended on a saddle of its incremental energy (a perfectly "
                        f"balanced state past buckling); the step is undone; the cosserat model leaves it",
                    )
                acceleration = (velocity - session.motion.velocity) / h
                session.motion = Motion(velocity, acceleration)
                session.state = RodState(state.positions, state.quats)
                session.boundary = target
    except BaseException:
        restore_sessions(harness, kept)  # no cable is left part of the way through a step
        raise
    harness.time += duration  # only a motion every time step of which was kept moves the clock
    elapsed = (time.perf_counter() - t0) * 1e3
    reports = {}
    for cid in ids:
        session = harness.cables[cid]
        report = SolveReport(session.state.copy(), True, projections[cid], 0.0, n, elapsed / len(ids), "converged")
        report.stable = True
        session.last_report = report
        session.last_step = None
        reports[cid] = report
    return reports
