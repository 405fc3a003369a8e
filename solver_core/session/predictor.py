# SPDX-License-Identifier: GPL-3.0-or-later
"""Predictors for warm steps along a path of holder motions: the secant predictor, and where the
tangent predictor applies (tangent_start; solve/tangent_predictor.py).

A connector dragged or animated moves by much the same amount from one step to the next, and so
does the cable's response. Starting a step from the last equilibrium plus the last step's motion of
every node (scaled to this step's holder motion), instead of blending the holders' displacement
along the cable, is the secant predictor of continuation methods (the "sequentially varied
boundary conditions" of Linn et al. solved as a path). On the contact benchmark's cable sliding
over a faceted mesh it halves the Newton iterations per step.

It is used only where it is a fair guess: the last step converged from the current state, and this
step moves the holders nearly as the last one did (within a quarter of this step's motion, at
between 0 and 2 times its size).
"""

from dataclasses import dataclass

import numpy as np

from ..rod.rod_model import Boundary
from ..solve.end_stiffness import exact_for
from ..solve.equilibrium import same_hold
from ..solve.tangent_predictor import tangent_guess

SIMILAR = 0.25  # largest part of this step's holder motion that the last step's may not explain
MAX_SCALE = 2.0  # a step more than twice the last one's is no continuation of it


@dataclass
class StepMemory:
    """The last converged warm step of a cable: its holders and nodes before and after."""

    hold_before: np.ndarray
    hold_after: np.ndarray
    positions_before: np.ndarray
    positions_after: np.ndarray


def hold_vector(boundary: Boundary, length: float) -> np.ndarray:
    """The held frames as one vector: positions, and tangents and normals times ``length`` (a turn
    of theta then counts like a move of theta * length)."""
    parts = []
    for frame in (boundary.start, boundary.end, *boundary.clips):
        if frame is None:
            continue
        parts.append(np.asarray(frame.position, dtype=np.float64))
        parts.append(length * np.asarray(frame.tangent, dtype=np.float64))
        if frame.normal is not None:
            parts.append(length * np.asarray(frame.normal, dtype=np.float64))
    return np.concatenate(parts) if parts else np.zeros(0)


def secant_displacement(
    memory: StepMemory | None, positions: np.ndarray, hold_now: np.ndarray, hold_next: np.ndarray
) -> np.ndarray | None:
    """Per-node displacement predicted for the step from ``hold_now`` to ``hold_next``, starting at
    ``positions``; None where the last step is no guide (no memory, another start, a different
    motion, or frames held differently)."""
    if memory is None or memory.positions_after.shape != positions.shape:
        return None
    # a step that let an end roll free (or held it again) has no motion to compare with this one's
    if not (memory.hold_before.shape == memory.hold_after.shape == hold_now.shape == hold_next.shape):
        return None
    if not ((memory.positions_after == positions).all() and (memory.hold_after == hold_now).all()):
        return None
    last = memory.hold_after - memory.hold_before
    step = hold_next - hold_now
    last2 = float(last @ last)
    if not (last2 > 0.0):
        return None
    scale = float(step @ last) / last2
    if not (0.0 < scale <= MAX_SCALE):
        return None
    off = step - scale * last
    if float(off @ off) > SIMILAR**2 * float(step @ step):
        return None
    return scale * (memory.positions_after - memory.positions_before)


def tangent_start(session, previous: Boundary, target: Boundary):
    """The tangent predictor's start (tangent_predictor.tangent_guess) for a warm step of the rod model
    of ``session`` (harness.CableSession) from ``previous`` to ``target``, or None where it does not
    apply: the holders stay (nothing to predict); friction acts (its equilibrium depends on the path);
    a time step's inertia springs act (dynamics: they are not the rod's energy); or anything else but
    the rod's own energy acts about the state (end_stiffness.exact_for: contact within a reach,
    compliant or sliding clips). A cable whose last solve kept candidate contact pairs (anything within
    two reaches of it) is taken to be in contact without the search exact_for makes. The factor its
    last solve formed is used where the state is still the one it was formed at, to the bit."""
    interactions = session.interactions
    kept = interactions.candidates
    if interactions.settings.friction or interactions.inertia is not None:
        return None
    if (kept is not None and len(kept.kind)) or same_hold(previous, target) or not exact_for(session):
        return None
    factor = None
    if session.free_factor is not None:
        formed, positions, quats = session.free_factor
        if np.array_equal(positions, session.state.positions) and np.array_equal(quats, session.state.quats):
            factor = formed
    return tangent_guess(session.model, session.state, target, factor)
