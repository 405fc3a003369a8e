# SPDX-License-Identifier: GPL-3.0-or-later
"""solver.model "cosserat_pbd" (Chen et al. 2023, cosserat_pbd.py): the constraints' Jacobians against
finite differences, their compliance energy against the rod's energy (independently written), one
XPBD step against the implicit step it stands for, rest states against the Newton-solved rod (the same
discrete model, so the same state), the closed forms of test_model_references.py, Linn's twisted
Omega, a pre-formed ring (a column past buckling: test_model_references.py), a budget
too small to reach rest shown as a failure, and case features the model does not express refused by
name."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, harness, solve
from hypothesis import given, settings
from hypothesis import strategies as st
from solver.test_analytic_references import L
from solver.test_kirchhoff_cg import CLIP, PLATE, _omega_steps

from solver_core import CableChange, CaseError, Frame, parse_case
from solver_core.models.cosserat_pbd import _constraints, arrays_for, force_residual, time_step, workspace
from solver_core.rod.rod_state import RodState, apply_boundary
from solver_core.solve.diagnostics import elastic_and_load_energy
from solver_core.solve.newton import rod_gradient

MODEL = {"model": "cosserat_pbd"}


def _random_state(segments=6, seed=3):
    """A clamped-clamped cable's model and a state far from straight (every quaternion turned)."""
    start = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.2, 0.05, 0.0], "tangent": [0.0, 1.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    h = harness(case(cable(length=0.3, segments=segments, start=start, end=end), solver=dict(MODEL)))
    session = h.cables["W1"]
    model = session.model
    state = session.state.copy()
    apply_boundary(model, state, session.boundary)
    rng = np.random.default_rng(seed)
    x = state.positions + 0.01 * rng.normal(size=state.positions.shape)
    q = state.quats + 0.2 * rng.normal(size=state.quats.shape)
    q /= np.linalg.norm(q, axis=1)[:, None]
    return model, x, q


def _turned(q, theta):
    angle = np.linalg.norm(theta)
    e = np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * theta / angle])
    w0, v0 = q[0], q[1:]
    return np.concatenate([[w0 * e[0] - v0 @ e[1:]], w0 * e[1:] + e[0] * v0 + np.cross(v0, e[1:])])


def test_the_constraint_jacobians_are_the_derivatives_of_the_constraints():
    model, x, q = _random_state()
    a = arrays_for(model)
    ws = workspace(a)
    _constraints(x, q, a, ws)
    jac, n = ws.jac.copy(), x.shape[0]
    step = 1e-7
    for c in range(a.slot_dof.shape[0]):
        for s in range(3):
            d = a.slot_dof[c, s]
            if d < 0:
                continue
            for k in range(3):
                values = []
                for sign in (1.0, -1.0):
                    xs, qs = x.copy(), q.copy()
                    if d < n:
                        xs[d, k] += sign * step
                    else:
                        qs[d - n] = _turned(q[d - n], sign * step * np.eye(3)[k])
                    _constraints(xs, qs, a, ws)
                    values.append(ws.value[c].copy())
                fd = (values[0] - values[1]) / (2 * step)
                assert np.abs(jac[c, s][:, k] - fd).max() <= 1e-6, (c, s, k, jac[c, s][:, k], fd)


def test_the_compliance_energy_of_the_constraints_is_the_rods_energy():
    """1/2 C^T alpha^-1 C summed over the constraints, less the loads' work, is rod_energy.py's energy:
    the model's rest states are the rod's."""
    model, x, q = _random_state()
    a = arrays_for(model)
    ws = workspace(a)
    _constraints(x, q, a, ws)
    m = a.rest.shape[0]
    compliance = np.vstack([a.stretch_compliance, a.bend_compliance])
    ours = 0.5 * float(np.sum(ws.value**2 / compliance)) - float(np.sum(a.force * x))
    rod = elastic_and_load_energy(model, RodState(x, q))
    assert m > 0 and ours == pytest.approx(rod, rel=1e-12)


def test_a_converged_step_is_the_implicit_step():
    """The projections of one step converge to the implicit Euler step of XPBD (Macklin et al. 2016):
    M (x - x~) / h^2 + grad E = 0 on every free node, x~ the position predicted from rest."""
    doc = case(cable(length=0.3, segments=12), solver=dict(MODEL))
    h = harness(doc)
    session = h.cables["W1"]
    model = session.model
    state = session.state.copy()
    apply_boundary(model, state, session.boundary)
    a = arrays_for(model)
    ws = workspace(a)
    x, q, v = state.positions.copy(), state.quats.copy(), np.zeros_like(state.positions)
    x_before = x.copy()
    dt = 2e-3
    used, ok = time_step(x, q, v, a, ws, dt, 200, 1e-14, 1e-12)
    assert ok and used > 1
    grad = rod_gradient(model, x, q)
    free = a.node_weight > 0
    mass = 1.0 / a.node_weight[free]
    nodal = grad[model.node_dof[free][:, None] + np.arange(3)]
    inertia = mass[:, None] * (x[free] - x_before[free]) / dt**2
    weight = float(np.abs(a.force).max())
    assert np.abs(inertia + nodal).max() <= 1e-6 * weight
    assert np.abs(inertia).max() > 0.1 * weight  # the step moved: inertia and elastic forces both matter
    assert np.allclose(v, (x - x_before) / dt)


def test_a_cantilever_rest_state_is_the_rods():
    """The same discrete rod solved by Newton's method and by XPBD steps: the same rest state and the
    same holder reactions, to what the force tolerance leaves open (1e-8 of the force scale per free
    node, which XPBD's linear convergence reaches just under, Newton's quadratic one far under)."""
    for segments in (20, 80):
        doc = case(
            cable(length=0.3, diameter=0.004, segments=segments, material={"E": 1e10, "nu": 0.3, "density": 1200})
        )
        rod = first(solve(doc))
        ours = first(solve(dict(doc, solver=dict(MODEL))))
        assert ours["converged"] and ours["stable"], ours["message"]
        sag = abs(rod["nodes"][-1][2])
        assert np.abs(np.subtract(ours["nodes"], rod["nodes"])).max() <= 1e-5 * sag
        for key in ("force", "moment"):
            np.testing.assert_allclose(
                ours["end_forces"]["start"][key], rod["end_forces"]["start"][key], rtol=2e-5, atol=1e-9
            )


def test_warm_steps_of_a_clamped_u_stay_on_the_rods_path():
    """Lv 2017's cable clamped at both ends into a U, one end moved in steps: every step converges
    where the Newton-solved rod does."""
    start = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.25, 0.0, 0.0], "tangent": [-1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.5, segments=40, start=start, end=end))
    doc["steps"] = [
        {"cables": {"W1": {"end": dict(end, position=[0.25 - 0.004 * k, 0.0, 0.002 * k])}}} for k in range(1, 6)
    ]
    rod = solve(doc)
    ours = solve(dict(doc, solver=dict(MODEL)))
    for a, b in zip(ours["steps"], rod["steps"], strict=True):
        mine, theirs = a["cables"]["W1"], b["cables"]["W1"]
        assert mine["converged"] and mine["stable"], mine["message"]
        assert np.abs(np.subtract(mine["nodes"], theirs["nodes"])).max() <= 1e-6 * 0.5


def test_the_tip_loaded_elastica_matches_the_rod():
    from solver.test_model_references import tip_loaded

    rod = first(solve(tip_loaded(20)))
    ours = first(solve(tip_loaded(20, "cosserat_pbd")))
    assert ours["converged"] and ours["stable"]
    assert np.abs(np.subtract(ours["nodes"], rod["nodes"])).max() <= 1e-6 * L


def test_the_omega_twisted_by_two_pi_follows_the_cosserat_rod():
    """Linn et al.'s Omega twisted by 2 pi in 25 steps (test_kirchhoff_cg.py): the bend-twist
    coupling turns it out of its plane, every step where the Newton-solved rod goes."""
    _, ours = _omega_steps("cosserat_pbd", 10)
    _, rod = _omega_steps(None, 10)
    assert max(float(np.abs(s[:, 1]).max()) for s in ours) > 0.002
    assert max(float(np.abs(a - b).max()) for a, b in zip(ours, rod, strict=True)) <= 1e-5


def test_a_pre_formed_ring_without_loads_stays_a_ring():
    """The bend-twist constraint measures the rotation from the rest one (Chen 2023, Eq. 13)."""
    R, segments = 0.1, 40
    length = 1.5 * math.pi * R
    doc = case(
        cable(length=length, segments=segments, rest={"curvature": [0.0, 1.0 / R]}),
        gravity=[0.0, 0.0, 0.0],
        solver=dict(MODEL),
    )
    result = first(solve(doc))
    assert result["converged"] and result["stable"]
    nodes = np.array(result["nodes"])
    chord = length / segments
    rho = chord / (2.0 * math.sin(0.5 * chord / R))
    np.testing.assert_allclose(np.linalg.norm(nodes - [0.0, 0.0, rho], axis=1), rho, atol=1e-7 * R)


@pytest.mark.parametrize("straight", [False, True])
def test_a_heavy_cable_finished_by_implicit_steps_rests_where_xpbd_alone_and_the_rod_do(straight):
    """Chen et al.'s heavy cable (Table 1, 30 segments) from its first guess and from straight: XPBD's
    steps stop growing where their projections miss the geometric stiffness, and implicit Euler steps
    with the rod's Hessian (pbd_implicit.py) finish with a tenth of the linear solves the XPBD steps
    alone take. The rest state is the XPBD steps' own, to what their force tolerance leaves open (the
    cross-check: a scheme without the Hessian); and, as the implicit steps end as Newton's on the same
    energy, the Newton-solved rod's to round-off, after a fall of the whole length."""
    from solver_core.models.cosserat_pbd import solve_pbd

    doc, model, start = _chen_cable(30, straight)
    finished, converged, stable, _steps, systems, *_rest = solve_pbd(model, start, 10**5)
    assert converged and stable
    alone, converged, stable, _steps, projections, *_rest = solve_pbd(model, start, 10**5, implicit=False)
    assert converged and stable
    assert systems <= projections / 10
    assert np.abs(finished.positions - alone.positions).max() <= 1e-5
    rod = np.array(first(solve(dict(doc, solver={})))["nodes"])
    assert np.abs(finished.positions - rod).max() <= 1e-8
    assert rod[-1][2] < -0.99  # hanging: the fall was found, not a state near the start


@pytest.mark.parametrize("segments", [30, 100, 200])
def test_a_falling_heavy_cable_is_laid_out_from_its_clamp_and_rests_where_the_rod_does(segments):
    """Chen et al.'s heavy cable (Table 1) falling from straight, as the paper starts it: the implicit
    steps' linear moves stretch every segment they turn by (theta l)^2 / 2l. Laid out again from the
    clamp (pbd_implicit._laid_out_from_clamp), with Gauss-Newton matrices where the exact one is
    indefinite and shortened along their direction where they still raise the energy, they come to
    rest in at most 300 systems at every resolution (without any one of the three, 300-1,200), where
    the Newton-solved rod rests (its fall of the whole length found)."""
    from solver_core.models.cosserat_pbd import solve_pbd

    doc, model, start = _chen_cable(segments, straight=True)
    finished, converged, stable, _steps, systems, *_rest = solve_pbd(model, start, 10**5)
    assert converged and stable
    assert systems <= 300
    rod = np.array(first(solve(dict(doc, solver={})))["nodes"])
    assert np.abs(finished.positions - rod).max() <= 1e-8
    assert rod[-1][2] < -0.99


def _chen_cable(segments: int, straight: bool) -> tuple:
    """Chen et al.'s heavy 1 m cable (Table 1) clamped at one end, drawn straight out of its clamp as the
    paper starts it or not routed (its first guess hangs): (case document, rod model, start state)."""
    ea = 1e11 * math.pi * 0.025**2
    material = {"EA": ea, "GA": ea, "EI": 0.1, "GJ": 0.5, "linear_density": 50.0}
    doc = case(cable(length=1.0, diameter=0.05, segments=segments, material=material), solver=dict(MODEL))
    if straight:
        doc["cables"][0]["route"] = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    session = harness(doc).cables["W1"]
    start = session.state.copy()
    apply_boundary(session.model, start, session.boundary)
    return doc, session.model, start


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(2, 40),
    turn=st.floats(-1.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
    clamp_at_start=st.booleans(),
)
def test_a_step_laid_out_from_the_clamp_keeps_its_directions_and_first_order_length(nodes, turn, seed, clamp_at_start):
    """pbd_implicit._laid_out_from_clamp on random chains. A linear turn about the clamp changes no
    length to first order (the step itself lengthens every segment by (theta l)^2 / 2l): laid out
    again, every length is what it was and every segment points where the turn took it. A segment the
    step turns round (shortened past nothing to first order) keeps the step's own length. The clamp
    is where it was."""
    from solver_core.models.pbd_implicit import _laid_out_from_clamp

    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.uniform(0.005, 0.05, (nodes, 1)) * _unit_rows(rng, nodes), axis=0) + rng.normal(0, 1, 3)
    clamp = 0 if clamp_at_start else nodes - 1
    axis = _unit_rows(rng, 1)[0]
    turned = x + turn * np.cross(axis, x - x[clamp])  # a linear turn about the clamp
    out = _laid_out_from_clamp(x, turned, clamp)
    assert np.array_equal(out[clamp], x[clamp])
    before, step, laid = np.diff(x, axis=0), np.diff(turned, axis=0), np.diff(out, axis=0)
    np.testing.assert_allclose(np.linalg.norm(laid, axis=1), np.linalg.norm(before, axis=1), rtol=1e-12)
    unit = step / np.linalg.norm(step, axis=1)[:, None]
    np.testing.assert_allclose(laid / np.linalg.norm(laid, axis=1)[:, None], unit, atol=1e-12)
    k = (nodes - 1) // 2  # segment k turned round, the others as they were, the clamp held
    trial = x.copy()
    if clamp_at_start:
        trial[k + 1 :] -= 2.0 * before[k]
    else:
        trial[: k + 1] += 2.0 * before[k]
    laid = np.diff(_laid_out_from_clamp(x, trial, clamp), axis=0)
    np.testing.assert_allclose(laid[k], -before[k], atol=1e-12)
    np.testing.assert_allclose(np.delete(laid, k, axis=0), np.delete(before, k, axis=0), atol=1e-12)


def _unit_rows(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


def test_a_budget_too_small_to_come_to_rest_is_a_failure_that_keeps_the_last_state():
    """Chen et al.'s heavy, soft 1 m cable (Table 1) falling from straight takes thousands of time
    steps to come to rest; a budget of 50 (solver.max_iterations 1) is not enough: a failure, named."""
    ea = 1e11 * math.pi * 0.025**2
    material = {"EA": ea, "GA": ea, "EI": 0.1, "GJ": 0.5, "linear_density": 50.0}
    doc = case(cable(length=1.0, diameter=0.05, segments=20, material=material), solver=dict(MODEL, max_iterations=1))
    doc["cables"][0]["route"] = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]  # as the paper starts it
    h = harness(doc)
    before = h.world_nodes("W1").copy()
    report = h.solve_step()["W1"]
    assert not report.converged and "did not come to rest" in report.message
    assert np.array_equal(h.world_nodes("W1"), before)
    result = solve(doc)["steps"][0]["cables"]["W1"]
    assert result["converged"] is False


def test_a_budget_that_runs_out_on_the_step_that_comes_to_rest_still_tests_the_minimum():
    """The rest state reached by the last step the budget allows is judged (a minimum), not reported as
    an untested saddle."""
    from solver_core.models.cosserat_pbd import solve_pbd

    doc = case(cable(length=0.3, segments=20), solver=dict(MODEL))
    h = harness(doc)
    session = h.cables["W1"]
    start = session.state.copy()
    apply_boundary(session.model, start, session.boundary)
    _state, converged, stable, steps, *_rest = solve_pbd(session.model, start)
    assert converged and stable and steps > 1
    _state, converged, stable, *_rest = solve_pbd(session.model, start, max_steps=steps)
    assert converged and stable


def test_a_rest_state_off_by_more_than_the_tolerance_is_not_converged():
    """The acceptance test is the rod's own force balance: a state a hair off the rest state fails it."""
    doc = case(cable(length=0.3, segments=20), solver=dict(MODEL))
    h = harness(doc)
    assert h.solve_step()["W1"].converged
    session = h.cables["W1"]
    x, q = session.state.positions.copy(), session.state.quats.copy()
    assert force_residual(session.model, x, q) <= 1.0
    x[10, 2] += 1e-6
    assert force_residual(session.model, x, q) > 1.0
    assert isinstance(session.state, RodState)


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda d: d.update(obstacles=[PLATE]), "obstacles"),
        (lambda d: d.update(contact={"cable_cable": True}), "contact.cable_cable"),
        (lambda d: d["cables"][0].update(clips=[CLIP]), "clips"),
        (lambda d: d["cables"][0].update(loads=[{"s": 0.3, "moment": [0.0, 0.1, 0.0]}]), "loads[0].moment"),
    ],
    ids=["obstacles", "cable-contact", "clip", "dead-moment"],
)
def test_features_the_position_based_rod_does_not_express_are_refused_by_name(edit, named):
    doc = case(cable(length=0.3, segments=10), solver=dict(MODEL))
    edit(doc)
    with pytest.raises(CaseError) as refused:
        parse_case(doc)
    assert named in str(refused.value) and "cosserat_pbd" in str(refused.value)


def test_a_cable_moved_step_by_step_keeps_converging_and_follows_the_rod_when_turned():
    """An end frame turned about the cable in steps (the twist carried by the boundary quaternion)."""
    start = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.25, 0.0, -0.05], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    shapes = {}
    for model in ("cosserat", "cosserat_pbd"):
        h = harness(case(cable(length=0.3, segments=20, start=start, end=end), solver={"model": model}))
        assert h.solve_step()["W1"].converged
        for k in range(1, 9):
            angle = 0.5 * math.pi * k / 8
            frame = Frame(
                np.array([0.25, 0.0, -0.05]),
                np.array([1.0, 0.0, 0.0]),
                np.array([0.0, -math.sin(angle), math.cos(angle)]),
            )
            report = h.solve_step({"W1": CableChange(end=frame)})["W1"]
            assert report.converged and report.stable, report.message
        shapes[model] = h.world_nodes("W1")
    assert np.abs(shapes["cosserat"] - shapes["cosserat_pbd"]).max() <= 1e-6


def test_ends_that_leave_the_roll_free_rest_where_the_rods_do():
    """Connectors without a normal hold the cable's direction, not its roll about it (the boundary
    quaternion free about its own axis): a sagging cable between two such ends, moved, rests where the
    Newton-solved rod does, untwisted."""
    from solver.test_dynamics import hanging_case, moved_end

    harnesses = []
    for model in ("cosserat", "cosserat_pbd"):
        doc = hanging_case(None)
        doc["solver"] = {"model": model}
        h = harness(doc)
        assert h.solve_step()["c"].converged
        report = h.solve_step(moved_end(h, [0.0, 0.05, -0.03]))["c"]
        assert report.converged and report.stable, report.message
        harnesses.append(h)
    rod, ours = (h.world_nodes("c") for h in harnesses)
    assert np.abs(rod - ours).max() <= 1e-6 * 0.5
