# SPDX-License-Identifier: GPL-3.0-or-later
"""The mass-spring chain brought to rest by damped Newton steps (mass_spring_newton.py): its banded
difference stiffness against a brute-force difference Hessian, its rest state against the paper's
explicit relaxation run to the same tolerance, without and with frictionless contact, and a cable
sliding down an incline at 50 to 200 links (where the explicit relaxation stalled short of rest).
Against the rod at 25 to 200 links: test_model_references.py."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, harness, solve
from solver.test_mass_spring import _arrays

from solver_core.models import mass_spring
from solver_core.models.mass_spring_newton import (
    BAND,
    _stiffness,
    newton_rest,
    newton_scratch,
)
from solver_core.rod.rod_state import apply_boundary


def test_the_banded_difference_stiffness_is_the_whole_difference_hessian():
    """Every spring at once on a random crooked chain, two points held: the band built from 21 pairs of
    gradients (points 7 apart moved together) equals the Hessian built one coordinate at a time, and
    nothing of that Hessian lies outside the band."""
    rng = np.random.default_rng(3)
    n = 17
    a = _arrays(n, rng, stretch=50.0, bend=2.0, twist=1.5, outlet=1.0)
    a = a._replace(held=np.r_[1, np.zeros(n - 3, np.uint8), 1, 1].astype(np.uint8))
    x = np.cumsum(rng.normal(size=(n, 3)) * 0.3 + [1.0, 0.0, 0.0], axis=0)
    w = newton_scratch(n, a.held)
    step = 1e-6
    x0 = x.copy()
    _stiffness(x, a, w.dof, step, w.full, w.plus, w.minus)
    assert np.array_equal(x, x0)  # put back exactly
    free = np.flatnonzero(a.held == 0)
    m = 3 * len(free)
    dense = np.zeros((m, m))
    plus, minus = np.zeros_like(x), np.zeros_like(x)
    for col in range(m):
        i, k = free[col // 3], col % 3
        up, down = x.copy(), x.copy()
        up[i, k] += step
        down[i, k] -= step
        mass_spring.mass_spring_energy(up, a, plus)
        mass_spring.mass_spring_energy(down, a, minus)
        dense[:, col] = (plus[free] - minus[free]).reshape(-1) / (2 * step)
    rows, cols = np.indices((m, m))
    assert np.abs(dense[np.abs(rows - cols) > BAND]).max() == 0.0
    banded = np.zeros((m, m))
    for r in range(m):
        for c in range(max(0, r - BAND), min(m, r + BAND + 1)):
            banded[r, c] = w.full[r, BAND + c - r]
    assert np.abs(banded - dense).max() <= 1e-6 * np.abs(dense).max()


def _lv_u(segments):
    start = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.25, 0.0, 0.04], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    return case(cable(length=0.3, segments=segments, start=start, end=end), solver={"model": "mass_spring"})


def test_newton_steps_rest_where_the_papers_explicit_relaxation_rests():
    """Lv 2017's cable clamped at both ends, from its initial guess: Newton's rest state and the one the
    explicit relaxation (their Eq. 28) reaches to the same force tolerance agree to the tolerance's
    share of a position, and Newton stops at a positive definite stiffness (a minimum)."""
    session = harness(_lv_u(20)).cables["W1"]
    model, start = session.model, session.state.copy()
    apply_boundary(model, start, session.boundary)
    arrays = mass_spring.arrays_for(model, session.boundary, start.positions)
    free = ~model.held_nodes()
    tolerance = float(model.dof_tol[model.node_dof[free]].min())
    explicit = start.positions.copy()
    steps, largest = mass_spring.relax(explicit, arrays, tolerance, mass_spring.MAX_STEPS)
    assert largest <= tolerance
    x = start.positions.copy()
    iterations, largest, why, minimum = newton_rest(x, arrays, newton_scratch(len(x), arrays.held), tolerance, 200)
    assert why == mass_spring.AT_REST and largest <= tolerance and minimum
    assert iterations < 60 < steps / 100
    assert np.abs(x - explicit).max() < 1e-6 * 0.3


RADIUS = 0.002
SLOPE = math.radians(20.0)


def _incline(segments):
    """A cable dropped onto a frictionless 20 degree incline from a connector just above its top edge."""
    start = {"position": [0.0, 0.0, RADIUS + 0.005], "tangent": [0.0, 1.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.3, segments=segments, material={"preset": "lv2017_harness"}, start=start))
    doc["solver"] = {"model": "mass_spring"}
    doc["obstacles"] = [{"type": "plane", "point": [0.0, 0.0, 0.0], "normal": [-math.sin(SLOPE), 0.0, math.cos(SLOPE)]}]
    return doc


def test_frictionless_contact_newton_rests_where_the_explicit_relaxation_rests():
    """At 25 links, where the paper's relaxation still comes to rest on the incline: the same rest state
    (frictionless, the minimum of the energy over the points outside the plane) to the tolerance's
    share of a position, and in under a hundredth of the iterations."""
    from solver_core.models.mass_spring_contact_newton import contact_rest

    session = harness(_incline(25)).cables["W1"]
    model, start = session.model, session.state.copy()
    apply_boundary(model, start, session.boundary)
    arrays = mass_spring.arrays_for(model, session.boundary, start.positions)
    contact = (session.interactions.obstacle_arrays(), session.interactions.radius, 0.0, 0.0)
    free = ~model.held_nodes()
    tolerance = float(model.dof_tol[model.node_dof[free]].min())
    explicit = start.positions.copy()
    steps, largest = mass_spring.relax(explicit, arrays, tolerance, mass_spring.MAX_STEPS, contact)
    assert largest <= tolerance
    x = start.positions.copy()
    iterations, largest = contact_rest(x, arrays, tolerance, contact, 5000)
    assert largest <= tolerance
    assert iterations < steps / 100
    assert np.abs(x - explicit).max() < 1e-5 * 0.3


@pytest.mark.parametrize("segments", [50, 100, 200])
def test_a_cable_sliding_down_a_frictionless_incline_comes_to_rest_at_50_to_200_links(segments):
    """Where the explicit relaxation stalled 1e-3 N short of rest: converged at a minimum along the plane,
    no point inside it, every contact force along its normal, and the plane's forces and the
    connector's carrying the weight (from the result alone, 1e-6)."""
    doc = _incline(segments)
    result = first(solve(doc))
    assert result["converged"] and result["stable"], result.get("message")
    nodes = np.asarray(result["nodes"])
    n = np.array([-math.sin(SLOPE), 0.0, math.cos(SLOPE)])
    assert (nodes @ n).min() >= RADIUS * (1.0 - 1e-3)
    assert nodes[-1, 0] < -0.05  # slid down the slope (down is -x)
    assert len(result["contacts"]) >= segments // 4
    for contact in result["contacts"]:
        f = np.asarray(contact["force"])
        assert np.linalg.norm(f - (f @ n) * n) <= 1e-6 * np.linalg.norm(f) + 1e-8
    plane = sum(np.asarray(c["force"]) for c in result["contacts"])
    held = np.asarray(result["end_forces"]["start"]["force"])
    weight = np.array([0.0, 0.0, -9.81 * 0.03])  # Lv 2017's cable: 30 g over 300 mm
    assert np.abs(plane + held + weight).max() < 1e-6 * np.linalg.norm(weight)
