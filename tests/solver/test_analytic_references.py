# SPDX-License-Identifier: GPL-3.0-or-later
"""Equilibria against solutions computed independently of the solver (closed forms, an elastica BVP)."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, solve
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

L = 1.0
EI = 1.0
# Near-inextensible and unshearable, as the closed forms assume; EA/(EI/L^2) = 1e7.
STIFF = {"EI": EI, "GJ": EI / 1.3, "EA": 1e7, "GA": 1e7, "linear_density": 1.0}


def _beam(segments, **extra):
    return cable(length=L, diameter=0.01, segments=segments, material=dict(STIFF), **extra)


def elastica_tip(load_ratio):
    """Tip (x, z) of an inextensible cantilever, clamped along +x, under a dead tip load -z.

    EI theta'' = -P cos(theta), theta(0) = 0, theta'(L) = 0 (no tip moment); solved by shooting
    on theta'(0) with scipy, independently of the rod discretisation.
    """
    P = load_ratio * EI / L**2

    def rhs(s, y):
        theta, kappa, x, z = y
        return [kappa, -P * math.cos(theta) / EI, math.cos(theta), -math.sin(theta)]

    def end_moment(k0):
        sol = solve_ivp(rhs, (0.0, L), [0.0, k0, 0.0, 0.0], rtol=1e-12, atol=1e-14)
        return sol.y[1, -1]

    k0 = brentq(end_moment, 1e-9, P * L / EI, xtol=1e-14)
    sol = solve_ivp(rhs, (0.0, L), [0.0, k0, 0.0, 0.0], rtol=1e-12, atol=1e-14)
    return np.array([sol.y[2, -1], sol.y[3, -1]])


def _tip_load_case(segments, load_ratio):
    load = {"s": L, "force": [0.0, 0.0, -load_ratio * EI / L**2]}
    return case(_beam(segments, loads=[load]), gravity=[0.0, 0.0, 0.0])


def test_small_deflection_cantilever_under_gravity_matches_beam_theory():
    # q L^4 / (8 EI) for a clamped-free beam under its weight q per length; deflection < 1% of L
    E, d, rho, length = 1.0e10, 0.004, 1200.0, 0.3
    doc = case(cable(length=length, diameter=d, segments=50, material={"E": E, "nu": 0.3, "density": rho}))
    tip = np.array(first(solve(doc))["nodes"][-1])
    q = rho * math.pi * d**2 / 4 * 9.81
    reference = q * length**4 / (8 * E * math.pi * d**4 / 64)
    assert reference < 0.01 * length
    assert abs(-tip[2] - reference) <= 0.005 * reference


def test_large_deflection_cantilever_with_tip_load_matches_elastica():
    result = first(solve(_tip_load_case(100, 3.0)))
    assert result["converged"]
    tip = np.array(result["nodes"][-1])
    reference = elastica_tip(3.0)
    assert reference[1] < -0.5 * L  # really a large deflection
    assert np.linalg.norm(tip[[0, 2]] - reference) <= 1e-3 * L
    assert abs(tip[1]) < 1e-12


def test_tip_error_converges_at_second_order():
    reference = elastica_tip(3.0)
    errors = []
    for n in (10, 20, 40):
        tip = np.array(first(solve(_tip_load_case(n, 3.0)))["nodes"][-1])
        errors.append(np.linalg.norm(tip[[0, 2]] - reference))
    orders = [math.log2(errors[i] / errors[i + 1]) for i in range(2)]
    assert all(1.8 <= p <= 2.2 for p in orders), (errors, orders)


def test_end_moment_rolls_cantilever_into_full_circle():
    # M = 2 pi EI / L bends a cantilever into one closed circle: the tip returns to the root
    moment = 2.0 * math.pi * EI / L
    doc = case(_beam(50, loads=[{"s": L, "moment": [0.0, -moment, 0.0]}]), gravity=[0.0, 0.0, 0.0])
    result = first(solve(doc))
    assert result["converged"]
    nodes = np.array(result["nodes"])
    assert np.linalg.norm(nodes[-1] - nodes[0]) <= 0.005 * L
    # and it is a circle of radius L / 2 pi: every node at that distance from the centre
    centre = np.array([0.0, 0.0, L / (2 * math.pi)])
    radii = np.linalg.norm(nodes - centre, axis=1)
    assert np.abs(radii - L / (2 * math.pi)).max() <= 0.005 * L
    # the reported bend radius is that radius at every joint, and the joints run along the cable
    bend = np.array(result["bend_radii"], dtype=float)
    assert np.abs(bend / (L / (2 * math.pi)) - 1.0).max() <= 0.005
    assert result["min_bend_radius"] == pytest.approx(bend.min())
    s = np.array(result["bend_radius_s"])
    # the clamped root has a joint (its frame against the first segment) at s = 0
    assert len(s) == len(bend) and np.all(np.diff(s) > 0) and s[0] == 0.0 and s[-1] < L


def _roll_up(segments: int, fraction: float) -> dict:
    moment = fraction * 2.0 * math.pi * EI / L
    doc = case(_beam(segments, loads=[{"s": L, "moment": [0.0, -moment, 0.0]}]), gravity=[0.0, 0.0, 0.0])
    return first(solve(doc))


@pytest.mark.parametrize("fraction", [0.75, 1.0])
def test_rolling_up_takes_no_more_iterations_at_twice_the_segments(fraction):
    # An end moment M rolls the cantilever into an arc of radius EI / M (a closed circle at 2 pi EI / L).
    # At 200 segments the roll-up once failed after 12,293 iterations where 100 took 766.
    results = {n: _roll_up(n, fraction) for n in (50, 100, 200)}
    for n, result in results.items():
        assert result["converged"], (n, result["message"])
        radius = L / (2.0 * math.pi * fraction)
        nodes = np.array(result["nodes"])
        centre = np.array([0.0, 0.0, radius])  # clamped along +x at the origin, bending towards +z
        assert np.abs(np.linalg.norm(nodes - centre, axis=1) - radius).max() <= 0.005 * L, n
    assert results[200]["iterations"] < 2 * results[100]["iterations"], {n: r["iterations"] for n, r in results.items()}


@pytest.mark.parametrize("torque", [0.3, -0.8])
def test_pure_torsion_twist_angle_is_TL_over_GJ(torque):
    GJ = STIFF["GJ"]
    n = 50
    doc = case(_beam(n, loads=[{"s": L, "moment": [torque, 0.0, 0.0]}]), gravity=[0.0, 0.0, 0.0])
    result = first(solve(doc))
    assert result["converged"]
    directors = np.array(result["directors"])
    d1_first, d1_last = directors[0][0], directors[-1][0]
    d2_first = directors[0][1]
    # twist between the first and last segment centres, a distance L - l apart
    twist = math.atan2(np.dot(d1_last, d2_first), np.dot(d1_last, d1_first))
    l_seg = L / n
    expected = torque * (L - l_seg) / GJ
    assert abs(twist - expected) <= 2e-3 * abs(expected)
    # the centre line stays straight, to what the tolerance asked for can tell: a force of 1e-8 N left
    # at the tip (the residual a converged solve may leave) moves it L^3 / (3 EI) x 1e-8 = 3e-9 m
    # sideways; a twisted rod that had buckled would be off by centimetres
    nodes = np.array(result["nodes"])
    assert np.abs(nodes[:, 1:]).max() < 1e-7
    assert result["max_twist_rate"] == pytest.approx(abs(torque) / GJ, rel=2e-3)


def test_a_hanging_cable_carries_the_weight_below_each_segment():
    # Clamped at the top, hanging straight down under its own weight: the axial force in a segment is
    # the weight of the cable below its centre, mu g (L - s), independent of the discretisation.
    n, mu, g = 40, STIFF["linear_density"], 9.81
    doc = case(
        _beam(n, start={"position": [0.0, 0.0, 0.0], "tangent": [0.0, 0.0, -1.0], "normal": [1.0, 0.0, 0.0]}),
        gravity=[0.0, 0.0, -g],
    )
    result = first(solve(doc))
    assert result["converged"]
    s = np.array(result["arc_lengths"])
    centres = 0.5 * (s[:-1] + s[1:])
    assert np.allclose(result["tensions"], mu * g * (L - centres), rtol=1e-6, atol=1e-9)


def test_every_joint_of_a_rod_in_pure_torsion_twists_at_T_over_GJ():
    torque = 0.4
    doc = case(_beam(30, loads=[{"s": L, "moment": [torque, 0.0, 0.0]}]), gravity=[0.0, 0.0, 0.0])
    result = first(solve(doc))
    rates = np.array(result["twist_rates"])
    assert len(rates) == len(result["bend_radius_s"])
    assert np.allclose(rates, torque / STIFF["GJ"], rtol=2e-3)
    assert np.allclose(result["tensions"], 0.0, atol=1e-13 * STIFF["EA"])  # no pull: round-off of EA only


def _heavy_cable(nodes, route=None):
    # Chen et al. 2023's cable (1 m, 50 kg/m, EI 0.1 N m^2, EA 2e8 N), held at one end
    ea = 1e11 * math.pi * 0.025**2
    material = {"EA": ea, "GA": ea, "EI": 0.1, "GJ": 0.5, "linear_density": 50.0}
    clamp = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    extra = {} if route is None else {"route": route}
    result = first(
        solve(case(cable(length=1.0, diameter=0.05, segments=nodes - 1, material=material, start=clamp, **extra)))
    )
    assert result["converged"], result["message"]
    nodes = np.array(result["nodes"])
    assert nodes[-1, 2] < -0.99  # hanging: its bending length (EI / w)^(1/3) is 6 cm
    weight = np.array([0.0, 0.0, -50.0 * 9.81])
    clamp_force = sum(np.array(e["force"]) for e in result["end_forces"].values())
    assert np.linalg.norm(clamp_force + weight) <= 1e-6 * np.linalg.norm(weight)  # the clamp carries it
    return result


@pytest.mark.parametrize("nodes", [50, 299])
def test_a_free_end_is_first_guessed_hanging_where_its_weight_bends_it_far(nodes):
    # Without a route, a free end whose tip its weight would deflect more than its length (w L^4 / 8 EI
    # > L) starts turned down towards hanging: the heavy cable rests after a few iterations. Drawn
    # straight out of its clamp (the paper's start) its Newton solve finds the whole fall, 595 and
    # 1771 iterations at 50 and 299 nodes (docs/performance.md); both reach the same equilibrium.
    hanging = _heavy_cable(nodes)
    assert hanging["iterations"] <= 30, hanging["iterations"]
    straight = _heavy_cable(nodes, route=[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    assert np.abs(np.array(hanging["nodes"]) - np.array(straight["nodes"])).max() <= 1e-6
