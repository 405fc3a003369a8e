# SPDX-License-Identifier: GPL-3.0-or-later
"""solver.model "mass_spring" (Lv 2017, mass_spring.py): the springs' forces against finite differences of
their energy, rest states against closed forms and the elastica BVP (test_analytic_references.py) and
against the Cosserat rod as segments double, warm steps against a cold solve, a symmetric column shown
as the saddle it is, and case features the model does not express refused by name."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, harness, solve
from solver.test_analytic_references import EI, L, elastica_tip

from solver_core import CableChange, CaseError, Frame, parse_case
from solver_core.mass_spring import MassSpringArrays, mass_spring_energy

MODEL = {"model": "mass_spring"}
# inextensible enough for the closed forms (EA / (EI / L^2) = 1e5: an axial strain of 3e-5 under the
# loads below) and quick to relax (the explicit steps grow with the square root of that ratio)
BEAM = {"EI": EI, "GJ": EI / 1.3, "EA": 1e5, "GA": 1e5, "linear_density": 1.0}


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


def _beam(segments, **extra):
    return cable(length=L, diameter=0.01, segments=segments, material=dict(BEAM), **extra)


def _tip_loaded(segments, model=None):
    load = {"s": L, "force": [0.0, 0.0, -3.0 * EI / L**2]}
    doc = case(_beam(segments, loads=[load]), gravity=[0.0, 0.0, 0.0])
    if model:
        doc["solver"] = model
    return doc


def test_a_cantilever_under_its_weight_sags_q_l4_over_8_ei():
    E, d, rho, length = 1.0e10, 0.004, 1200.0, 0.3
    doc = case(cable(length=length, diameter=d, segments=20, material={"E": E, "nu": 0.3, "density": rho}))
    doc["solver"] = MODEL
    result = first(solve(doc))
    assert result["converged"] and result["stable"]
    q = rho * math.pi * d**2 / 4 * 9.81
    reference = q * length**4 / (8 * E * math.pi * d**4 / 64)
    assert abs(-result["nodes"][-1][2] - reference) <= 0.01 * reference
    # the clamp carries the weight and its moment q L^2 / 2, read from the springs
    clamp = result["end_forces"]["start"]
    assert clamp["force"][2] == pytest.approx(q * length, rel=1e-4)
    assert abs(clamp["moment"][1]) == pytest.approx(q * length**2 / 2, rel=2e-3)


def test_the_tip_loaded_elastica_to_within_a_percent_converging_at_second_order():
    reference = elastica_tip(3.0)
    errors = []
    for n in (10, 20):
        result = first(solve(_tip_loaded(n, MODEL)))
        assert result["converged"] and result["stable"]
        tip = np.asarray(result["nodes"][-1])
        errors.append(float(np.linalg.norm(tip[[0, 2]] - reference)))
        assert abs(tip[1]) < 1e-12
    assert errors[-1] <= 0.01 * L
    assert errors[0] / errors[1] >= 3.0, errors


def test_the_chain_converges_to_the_cosserat_rod_as_segments_double():
    gaps = []
    for n in (10, 20):
        springs = np.asarray(first(solve(_tip_loaded(n, MODEL)))["nodes"][-1])
        rod = np.asarray(first(solve(_tip_loaded(n)))["nodes"][-1])
        gaps.append(float(np.linalg.norm(springs - rod)))
    assert gaps[1] < 0.4 * gaps[0], gaps


def test_an_end_moment_of_2_pi_ei_over_l_rolls_the_chain_into_a_circle():
    moment = 2.0 * math.pi * EI / L
    doc = case(_beam(20, loads=[{"s": L, "moment": [0.0, -moment, 0.0]}]), gravity=[0.0, 0.0, 0.0], solver=MODEL)
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
    doc = case(_beam(10, loads=[force]), gravity=[0.0, 0.0, 0.0], solver=MODEL)
    result = first(solve(doc))
    assert result["converged"] is stands and result["stable"] is stands
    if not stands:
        assert "saddle" in result["message"]


def test_warm_steps_end_where_a_cold_solve_of_the_last_step_ends():
    """Both ends clamped, one moved in five steps: every step converges and the last ends where the
    case solved at once with that end ends (no friction: the rest state does not depend on the way)."""
    start = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.25, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.3, segments=20, start=start, end=end), solver=MODEL)
    h = harness(doc)
    assert all(r.converged for r in h.solve_step().values())
    for z in np.linspace(0.01, 0.05, 5):
        frame = Frame(np.array([0.25, 0.0, z]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]))
        assert all(r.converged and r.stable for r in h.solve_step({"W1": CableChange(end=frame)}).values())
    moved = dict(end, position=[0.25, 0.0, 0.05])
    cold = harness(case(cable(length=0.3, segments=20, start=start, end=moved), solver=MODEL))
    cold.solve_step()
    assert np.abs(h.world_nodes("W1") - cold.world_nodes("W1")).max() < 1e-5 * 0.3


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
