# SPDX-License-Identifier: GPL-3.0-or-later
"""The mass-spring chain's rest state from a start: damped Newton steps (mass_spring_newton.py), its
points' contacts as their constraints (mass_spring_contact_newton.py), and bursts of Lv 2017's explicit
relaxation (mass_spring.py) where Newton stalls."""

import time
from typing import NamedTuple

import numpy as np

from .mass_spring import MAX_STEPS, NOT_FINITE, MassSpringArrays, arrays_for, relax
from .mass_spring_contact_newton import contact_rest
from .mass_spring_newton import MAX_ITERATIONS, newton_rest, newton_scratch

# explicit steps between two Newton solves that stalled, and how many times (mass_spring_newton.py)
RELAXATION_BURST = 2_000
RELAXATION_ROUNDS = 50
CONTACT_ITERATIONS = 6000  # Newton iterations in all beside obstacles (MAX_ITERATIONS without)


class ChainRest(NamedTuple):
    """What solve_mass_spring came to."""

    positions: np.ndarray  # (n, 3) m
    converged: bool
    steps: int  # explicit steps, or Newton iterations
    largest: float  # N, the largest force left on a free point
    ms: float
    arrays: MassSpringArrays
    minimum: bool  # the stiffness at the rest state is positive definite (without contact; else False)
    newton: bool  # by Newton steps (with explicit bursts where they stalled), not the explicit relaxation


def solve_mass_spring(
    model, start_positions, boundary, tolerance: float, max_steps: int = MAX_STEPS, guess=None, contact=None
) -> ChainRest:
    """The cable's rest from ``start_positions`` (held points where ``boundary`` puts them), or first from
    ``guess`` (a predicted start, held points placed too) and from ``start_positions`` where that does
    not come to rest. The springs are those of ``start_positions``: the ends' twist is measured along
    the cable as it lies (Eq. 11), not along a guess. Without obstacles by damped Newton steps
    (mass_spring_newton.py: the explicit steps to rest grow as the square of the point count), its
    points' contacts with frictionless ``contact`` (as for ``relax``) as their constraints
    (mass_spring_contact_newton.py); with friction by the paper's explicit relaxation and its contact
    (Sec. 3.2). ``max_steps``: the budget of the explicit steps."""
    t0 = time.perf_counter()
    x = np.ascontiguousarray(start_positions, dtype=float).copy()
    arrays = arrays_for(model, boundary, x)
    steps, minimum = 0, False
    newton = contact is None or not (contact[2] > 0.0 or contact[3] > 0.0)
    if guess is not None:
        y = np.ascontiguousarray(guess, dtype=float).copy()
        steps, largest, minimum = _newton_and_relaxation(y, arrays, tolerance, max_steps, contact)
        if largest <= tolerance and np.isfinite(y).all():
            return ChainRest(y, True, int(steps), float(largest), _ms(t0), arrays, minimum, newton)
    more, largest, minimum = _newton_and_relaxation(x, arrays, tolerance, max_steps, contact)
    converged = bool(largest <= tolerance and np.isfinite(x).all())
    return ChainRest(x, converged, int(steps + more), float(largest), _ms(t0), arrays, minimum, newton)


def _newton_and_relaxation(x, arrays: MassSpringArrays, tolerance: float, max_steps: int, contact=None) -> tuple:
    """Newton steps from ``x`` (in place) and, where they stall, bursts of the explicit relaxation from
    where they stopped, then Newton again: (iterations and steps, largest force, at a minimum; an
    infinite force where a link passed through a mesh face). Where a link is nearly straight beside
    a bent one, the torsion spring's plane turns fast with the points (its stiffness there is
    TORSION_BOUND times a bend spring's, mass_spring.py) and its angle is taken modulo a half turn:
    the quadratic model then holds only over steps too small to make progress (a 30-link cable moved
    0.3 mm out of its plane stalled 21 N from rest); the explicit steps, each within that reach,
    carry the points past it."""
    if contact is not None and (contact[2] > 0.0 or contact[3] > 0.0):
        # with friction, the paper's relaxation alone (mass_spring_contact_newton.py says why)
        count, largest = relax(x, arrays, tolerance, max_steps, contact)
        return count, largest, False
    w = newton_scratch(x.shape[0], arrays.held)
    count, explicit, newton, minimum = 0, 0, 0, False
    # a budget of Newton iterations in all, and RELAXATION_ROUNDS bursts: a chain over a sphere at
    # 100 links, whose Newton steps stall round after round, took 54 s with a budget per round. With
    # contact, no point moves more than half a radius a step: a 200-link cable sliding 0.1 m down an
    # incline takes 2,700 of them
    budget = MAX_ITERATIONS if contact is None else CONTACT_ITERATIONS
    explicit_budget = min(max_steps, RELAXATION_ROUNDS * RELAXATION_BURST)
    for _round in range(RELAXATION_ROUNDS):
        if contact is None:
            iterations, largest, why, minimum = newton_rest(x, arrays, w, tolerance, budget - newton)
            passed = why == NOT_FINITE
        else:
            iterations, largest = contact_rest(x, arrays, tolerance, contact, budget - newton)
            passed = not largest < np.inf
        count += iterations
        newton += iterations
        if largest <= tolerance or passed or explicit >= explicit_budget:
            break
        steps, largest = relax(x, arrays, tolerance, min(RELAXATION_BURST, explicit_budget - explicit), contact)
        count += steps
        explicit += steps
        if not largest < np.inf:
            break
    return count, float(largest), bool(minimum)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1e3


def warm_explicit_relaxation() -> None:
    """Compile the explicit relaxation (the warm-up: it runs only where Newton stalls)."""
    n = 4
    arrays = MassSpringArrays(
        np.ones(n),
        np.ones(n - 1),
        np.ones(n - 1),
        np.zeros(n),
        np.zeros(n - 1),
        np.zeros(n - 1),
        np.ones(n - 1),
        np.r_[1, 0, 0, 0].astype(np.uint8),
        np.zeros((2, 3)),
        np.zeros(2),
        np.zeros((n, 3)),
        np.zeros((n - 1, 3)),
    )
    relax(np.c_[np.arange(n, dtype=float), np.zeros((n, 2))], arrays, 1.0, 1)
