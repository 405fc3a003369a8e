# SPDX-License-Identifier: GPL-3.0-or-later
"""Pre-formed cables (case format ``rest``): a cable springs back to its unstressed shape. Against
closed forms: a ring stays a discrete ring (its nodes on the circumcircle of its chords), a helix keeps
the curvature and twist of the discrete helix at every joint, a pre-curved cantilever under an end
moment M becomes an arc of curvature k0 + M/EI, and a rest route is taken up again. The energy's
derivatives with a rest shape are checked against finite differences in test_derivatives.py."""

import json
import math

import numpy as np
import pytest
from helpers.cases import WIRE, cable, case

from solver_core import CaseError, case_to_dict, parse_case, section_stiffness, solve_case

R = 0.1  # m


def solve_last(doc):
    result = solve_case(parse_case(doc))["steps"][-1]["cables"]["W1"]
    assert result["converged"], result.get("message")
    return result


def circle_radius(chord, curvature):
    """The circumradius of a discrete ring: chords of length l turning by l * k each."""
    return chord / (2.0 * math.sin(0.5 * chord * curvature))


def test_a_ring_without_loads_stays_a_ring():
    segments, length = 60, 1.5 * math.pi * R
    doc = case(
        cable(length=length, segments=segments, rest={"curvature": [0.0, 1.0 / R]}),
        gravity=[0.0, 0.0, 0.0],
    )
    result = solve_last(doc)
    nodes = np.array(result["nodes"])
    # k2 about d2 turns the tangent d3 towards d1, the start frame's normal (+z): the centre is there
    rho = circle_radius(length / segments, 1.0 / R)
    centre = np.array([0.0, 0.0, rho])
    np.testing.assert_allclose(np.linalg.norm(nodes - centre, axis=1), rho, rtol=0, atol=1e-7 * R)
    np.testing.assert_allclose(nodes[:, 1], 0.0, atol=1e-9 * R)
    assert rho == pytest.approx(R, rel=1e-3)
    start = result["end_forces"]["start"]
    assert np.linalg.norm(start["force"]) < 1e-9 and np.linalg.norm(start["moment"]) < 1e-10
    assert abs(result["energy"]) < 1e-14


def test_the_same_ring_held_straight_pushes_back_with_ei_k():
    # both ends clamped on a straight line: the rest curvature is resisted everywhere by M = EI k0
    doc = case(
        cable(
            length=0.2,
            segments=40,
            rest={"curvature": [0.0, 1.0 / R]},
            end={"position": [0.2, 0.0, 0.0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        ),
        gravity=[0.0, 0.0, 0.0],
    )
    result = solve_last(doc)
    EI = section_stiffness(WIRE, 0.004, "material").bend_stiffness
    moment = np.array(result["end_forces"]["start"]["moment"])
    # Straight, the internal moment (of the part beyond on the part before) is m = EI (k - k0) d2 =
    # -EI k0 d2, and the connector supplies -m = EI k0 d2, with d2 = d3 x d1 = -y. A discrete joint of
    # length l resists with (2 EI / l) sin(l k0 / 2): EI k0 within (l k0)^2 / 24 = 1e-4 here.
    chord = 0.2 / 40
    held = EI / R
    np.testing.assert_allclose(moment, [0.0, -held, 0.0], rtol=(chord / R) ** 2 / 12, atol=1e-12 * held)
    # straight but for the shear by which the half joints at the ends (which resist a little more)
    # are balanced: nanometres
    np.testing.assert_allclose(np.array(result["nodes"])[:, 1:], 0.0, atol=1e-6)


def test_a_helix_keeps_the_curvature_and_twist_of_the_discrete_helix():
    k, t, segments, length = 12.0, 5.0, 50, 0.4
    doc = case(cable(length=length, segments=segments, rest={"curvature": [0.0, k], "twist": t}), gravity=[0, 0, 0])
    result = solve_last(doc)
    chord = length / segments
    theta = chord * math.hypot(k, t)
    # one segment's frame is the last one's turned by theta about Omega = (0, k, t) in its own frame:
    # the tangents then meet at the angle below, and the twist rate is 2 atan2(sin(theta/2) t/|Omega|, cos(theta/2)) / l
    sin2 = k * k / (k * k + t * t)
    bend = math.acos(1.0 - (1.0 - math.cos(theta)) * sin2) / chord
    twist = 2.0 * math.atan2(math.sin(0.5 * theta) * t / math.hypot(k, t), math.cos(0.5 * theta)) / chord
    radii = np.array(result["bend_radii"], dtype=float)[1:-1]  # the interior joints (whole Voronoi lengths)
    np.testing.assert_allclose(1.0 / radii, bend, rtol=1e-7)
    np.testing.assert_allclose(np.array(result["twist_rates"])[1:-1], twist, rtol=1e-7)
    assert bend == pytest.approx(k, rel=1e-3)  # the continuous helix's curvature: the part of Omega across d3
    assert abs(result["energy"]) < 1e-14


@pytest.mark.parametrize("moment", [0.002, -0.004])
def test_a_precurved_cantilever_under_an_end_moment_is_an_arc_of_k0_plus_m_over_ei(moment):
    k0, segments, length = 1.0 / R, 80, 0.25
    EI = section_stiffness(WIRE, 0.004, "material").bend_stiffness
    # a couple about d2 = -y at the free end (planar, so the dead couple keeps its axis)
    doc = case(
        cable(
            length=length,
            segments=segments,
            rest={"curvature": [0.0, k0]},
            loads=[{"s": length, "moment": [0.0, -moment, 0.0]}],
        ),
        gravity=[0.0, 0.0, 0.0],
    )
    result = solve_last(doc)
    k = k0 + moment / EI
    rho = circle_radius(length / segments, k)
    nodes = np.array(result["nodes"])
    centre = np.array([0.0, 0.0, rho])
    # the discrete joints bend by a sine of their angle: O((l k)^2) from the continuous arc
    np.testing.assert_allclose(np.linalg.norm(nodes - centre, axis=1), abs(rho), atol=1e-3 * length)
    # and the moment changed the shape far more than that: the unloaded arc is not this one
    unloaded = circle_radius(length / segments, k0)
    assert np.abs(np.linalg.norm(nodes - [0.0, 0.0, unloaded], axis=1) - unloaded).max() > 0.02 * length


def test_a_rest_route_is_taken_up_again():
    # a quarter circle of radius R in the x-z plane, starting along +x and curving towards +z
    angles = np.linspace(0.0, 0.5 * math.pi, 400)
    route = np.column_stack([R * np.sin(angles), np.zeros_like(angles), R * (1.0 - np.cos(angles))])
    length = float(np.linalg.norm(np.diff(route, axis=0), axis=1).sum())
    doc = case(cable(length=length, segments=40, rest={"route": route.tolist()}), gravity=[0.0, 0.0, 0.0])
    nodes = np.array(solve_last(doc)["nodes"])
    np.testing.assert_allclose(np.linalg.norm(nodes - [0.0, 0.0, R], axis=1), R, atol=2e-3 * R)
    assert nodes[-1] == pytest.approx([R, 0.0, R], abs=5e-3 * R)


def test_a_straight_rest_shape_changes_nothing():
    plain = case(cable())
    straight = case(cable(rest={"curvature": [0.0, 0.0], "twist": 0.0}))
    a, b = (np.array(solve_last(d)["nodes"]) for d in (plain, straight))
    np.testing.assert_array_equal(a, b)


def test_the_rest_shape_survives_a_round_trip():
    doc = case(cable(rest={"curvature": [1.5, -2.0], "twist": 0.5}))
    parsed = parse_case(doc)
    again = parse_case(json.loads(json.dumps(case_to_dict(parsed))))
    assert again.cables[0].rest == parsed.cables[0].rest
    route = case(cable(rest={"route": [[0, 0, 0], [0.1, 0, 0], [0.2, 0.1, 0]]}))
    back = case_to_dict(parse_case(route))["cables"][0]["rest"]
    assert back == {"route": [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.2, 0.1, 0.0]]}


@pytest.mark.parametrize(
    "rest,message",
    [
        ([1, 2], "cables[0].rest must be an object"),
        ({"curvature": [1.0]}, "cables[0].rest.curvature must be [k1, k2]"),
        ({"curvature": [1.0, "x"]}, "cables[0].rest.curvature[1]"),
        ({"curvature": [1.0, float("nan")]}, "cables[0].rest.curvature[1]"),
        ({"twist": 1e9}, "cables[0].rest.twist"),
        ({"radius": 0.1}, "cables[0].rest.radius is not a known key"),
        ({"route": [[0, 0, 0]]}, "cables[0].rest.route must be a list of at least 2 points"),
        ({"route": [[0, 0, 0], [0, 0, 0]]}, "cables[0].rest.route[1] repeats the point before it"),
        ({"route": [[0, 0, 0], [0, 0]]}, "cables[0].rest.route[1]"),
        ({"route": [[0, 0, 0], [1, 0, 0]], "twist": 1.0}, "gives a route and a curvature or twist"),
        # 40 segments of 7.5 mm cannot resolve a bend of 1 mm radius
        (
            {"curvature": [0.0, 1000.0]},
            "cables[0].rest turns each of the 40 segments by 7.5 rad; give the cable at least 300",
        ),
    ],
)
def test_a_bad_rest_shape_is_refused_by_name(rest, message):
    doc = case(cable(rest=rest))
    with pytest.raises(CaseError) as info:
        parse_case(doc)
    assert message in str(info.value) and "\n" not in str(info.value)
