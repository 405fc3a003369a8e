# SPDX-License-Identifier: GPL-3.0-or-later
"""solver.model "mass_spring" (Lv 2017, mass_spring.py): the springs' forces against finite differences of
their energy, rest states against closed forms and the elastica BVP (test_analytic_references.py) and
against the Cosserat rod as segments double, warm steps against a cold solve, a symmetric column shown
as the saddle it is, and case features the model does not express refused by name."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, harness, solve
from solver.test_analytic_references import EI, L
from solver.test_model_references import beam

import solver_core.harness as harness_module
from solver_core import CableChange, CaseError, Frame, parse_case
from solver_core.mass_spring import MassSpringArrays, mass_spring_energy

MODEL = {"model": "mass_spring"}


def _arrays(n, rng, stretch=0.0, bend=0.0, twist=0.0, outlet=0.0):
    return MassSpringArrays(
        np.ones(n),
        np.full(n - 1, 1.0),
        np.full(n - 1, stretch),
        np.r_[0.0, np.full(n - 2, bend), 0.0],
        np.full(n - 1, twist),
        rng.normal(size=n - 1) * 0.3,
        np.full(n - 1, math.sin(0.05) ** 2),
        np.zeros(n, np.uint8),
        np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
        np.array([outlet, outlet]),
        rng.normal(size=(n, 3)) * 0.1,
        np.zeros((n - 1, 3)),
    )


@pytest.mark.parametrize("term", ["stretch", "bend", "twist", "outlet"])
def test_every_spring_force_is_the_gradient_of_its_energy(term):
    rng = np.random.default_rng(3)
    n = 9
    for _trial in range(5):
        x = np.cumsum(rng.normal(size=(n, 3)) * 0.4 + [1.0, 0.0, 0.0], axis=0)
        a = _arrays(n, rng, **{term: 1.0 + rng.random()})
        grad = np.zeros_like(x)
        mass_spring_energy(x, a, grad)
        h = 1e-6
        scratch = np.zeros_like(x)
        for i in range(n):
            for k in range(3):
                up, down = x.copy(), x.copy()
                up[i, k] += h
                down[i, k] -= h
                fd = (mass_spring_energy(up, a, scratch) - mass_spring_energy(down, a, scratch)) / (2 * h)
                assert abs(grad[i, k] - fd) <= 1e-6 * (1.0 + abs(fd))


def test_an_end_moment_of_2_pi_ei_over_l_rolls_the_chain_into_a_circle():
    moment = 2.0 * math.pi * EI / L
    doc = case(beam(20, loads=[{"s": L, "moment": [0.0, -moment, 0.0]}]), gravity=[0.0, 0.0, 0.0], solver=MODEL)
    result = first(solve(doc))
    assert result["converged"]
    assert result["stable"] is None  # a dead moment: not judged, as for the rod
    nodes = np.asarray(result["nodes"])
    assert np.linalg.norm(nodes[-1] - nodes[0]) <= 0.01 * L
    centre = np.array([0.0, 0.0, L / (2 * math.pi)])
    assert np.abs(np.linalg.norm(nodes - centre, axis=1) - L / (2 * math.pi)).max() <= 0.01 * L


@pytest.mark.parametrize("load, stands", [(0.5, True), (2.0, False)])
def test_a_column_compressed_past_buckling_from_a_straight_start_is_a_saddle_not_a_result(load, stands):
    """Half and twice the cantilever's Euler load (pi^2 EI / 4 L^2) straight along the cable: the
    relaxation from the straight route stays straight (nothing breaks the symmetry) and stops there.
    Below the Euler load that is a minimum; above it the energy's Hessian has a negative eigenvalue
    there: shown as a failure, never as an equilibrium."""
    force = {"s": L, "force": [-load * math.pi**2 * EI / (4 * L**2), 0.0, 0.0]}
    doc = case(beam(10, loads=[force]), gravity=[0.0, 0.0, 0.0], solver=MODEL)
    result = first(solve(doc))
    assert result["converged"] is stands and result["stable"] is stands
    if not stands:
        assert "saddle" in result["message"]


PLATE = {"type": "plane", "point": [0, 0, -1], "normal": [0, 0, 1]}


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda d: d.update(obstacles=[PLATE]), "obstacles"),
        (lambda d: d.update(contact={"cable_cable": True}), "contact.cable_cable"),
        (lambda d: d["cables"][0].update(clips=[{"s": 0.1, "frame": _clip_frame(), "kind": "sliding"}]), "clips[0]"),
        (lambda d: d["cables"][0].update(rest={"curvature": [1.0, 0.0], "twist": 0.0}), "rest"),
    ],
    ids=["obstacles", "cable-contact", "sliding-clip", "pre-formed"],
)
def test_features_the_mass_spring_chain_does_not_express_are_refused_by_name(edit, named):
    doc = case(cable(length=0.3, segments=10), solver=MODEL)
    edit(doc)
    with pytest.raises(CaseError) as refused:
        parse_case(doc)
    assert named in str(refused.value) and "mass_spring" in str(refused.value)


def _clip_frame():
    return {"position": [0.1, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}


def test_ends_asking_for_half_a_turn_of_twist_fail_fast_and_say_why():
    """Both connectors' normals along x while the cable turns over between them (a U hanging from two
    ceiling connectors, as Blender draws it): half a turn of twist, which the torsion springs' angle,
    taken modulo a half turn, cannot tell from none. The relaxation rings without coming to rest: it
    stops once it has made no progress for STALL_STEPS (it ran all 2e6 steps, 42 s, before) and the
    message says why."""
    from solver_core.mass_spring import STALL_STEPS

    down = {"position": [0.0, 0.0, 0.0], "tangent": [0.0, 0.0, -1.0], "normal": [1.0, 0.0, 0.0]}
    up = {"position": [0.3, 0.0, 0.0], "tangent": [0.0, 0.0, 1.0], "normal": [1.0, 0.0, 0.0]}
    doc = case(cable(length=0.414, segments=20, start=down, end=up, material={"preset": "lv2017_harness"}))
    doc["solver"] = MODEL
    result = first(solve(doc))
    assert not result["converged"]
    assert result["iterations"] <= 2 * STALL_STEPS
    assert "half a turn of twist" in result["message"]
    up["normal"] = [-1.0, 0.0, 0.0]  # no twist asked: it comes to rest
    assert first(solve(doc | {"cables": [dict(doc["cables"][0], end=up)]}))["converged"]


def _drag(monkeypatch, predict):
    """Both ends clamped, one end lifted 2 mm a step: (steps of the last step's relaxation, nodes)."""
    if not predict:
        monkeypatch.setattr(harness_module, "secant_displacement", lambda *args: None)
    start = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.25, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    h = harness(case(cable(length=0.3, segments=30, start=start, end=end), solver=MODEL))
    h.solve_step()
    for k in range(1, 5):
        frame = Frame(np.array([0.25, 0.0, 0.002 * k]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]))
        report = h.solve_step({"W1": CableChange(end=frame)})["W1"]
        assert report.converged and report.stable, report.message
    return report.iterations, h.world_nodes("W1")


def test_a_drag_starts_each_step_from_the_secant_prediction_and_rests_where_it_would_without(monkeypatch):
    """The secant predictor is a start, not a result: the rest state is the one reached without it
    (to the force tolerance's share of a position), in fewer relaxation steps."""
    steps, nodes = _drag(monkeypatch, predict=True)
    steps_plain, nodes_plain = _drag(monkeypatch, predict=False)
    assert np.abs(nodes - nodes_plain).max() < 1e-6 * 0.3
    assert steps < 0.8 * steps_plain, (steps, steps_plain)
