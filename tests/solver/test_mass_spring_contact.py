# SPDX-License-Identifier: GPL-3.0-or-later
"""solver.model "mass_spring" with obstacles (Lv 2017, Sec. 3.2; mass_spring_contact.py): a cable on a
table against the rod and the closed form, the obstacles' forces in balance with the weight from the
result alone, a thin plate that no point passes, a link cutting a bar reported as a failure, Coulomb's
cone kept by every contact force, and cable-cable contact refused by name."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, harness, solve

from solver_core import CaseError, ObstacleSet, parse_case

LV = {"preset": "lv2017_harness"}
RADIUS = 0.002
MODEL = {"model": "mass_spring"}


def _table(model, friction=None):
    """A 0.8 m Lv 2017 cable lying on a table (the plane z = 0), its clamped end lifted 20 mm."""
    start = {"position": [0.0, 0.0, RADIUS + 0.02], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.8, segments=80, material=LV, start=start), solver={"model": model})
    doc["obstacles"] = [{"type": "plane", "point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}]
    if friction:
        doc["contact"] = {"friction_static": friction[0], "friction_dynamic": friction[1]}
    return first(solve(doc))


def test_a_cable_lifted_off_a_table_leaves_it_where_the_rod_does_and_the_table_carries_the_rest():
    chain, rod = _table("mass_spring"), _table("cosserat")
    assert chain["converged"] and chain["stable"], chain.get("message")
    nodes = np.asarray(chain["nodes"])
    assert nodes[:, 2].min() >= RADIUS * (1.0 - 1e-3)  # on the table, not in it
    assert np.abs(nodes - np.asarray(rod["nodes"])).max() < 0.01 * 0.8
    # (72 EI h / q)^(1/4), small deflection: where it leaves the table
    section = parse_case(case(cable(material=LV))).cables[0].section
    q = section.linear_density * 9.81
    lift_off = (72.0 * section.bend_stiffness * 0.02 / q) ** 0.25
    s = np.linspace(0.0, 0.8, 81)
    resting = s[nodes[:, 2] <= RADIUS * (1.0 + 1e-3)]
    assert abs(resting.min() - lift_off) < 0.05 * lift_off
    # from the result alone: the table's forces and the connector's hold the cable's weight
    table = sum(np.asarray(c["force"]) for c in chain["contacts"])
    assert len(chain["contacts"]) >= 0.5 * len(resting)
    held = np.asarray(chain["end_forces"]["start"]["force"])
    weight = q * 0.8
    assert abs(table[2] + held[2] - weight) < 1e-6 * weight
    assert all(c["force"][2] > 0.0 and abs(c["gap"]) <= 1e-3 * RADIUS for c in chain["contacts"])


@pytest.mark.parametrize("mu", [0.0, 0.4])
def test_every_contact_force_lies_in_coulombs_cone(mu):
    """A cable dropped across a 20 degree incline from a connector at its top edge: each contact force
    has at most mu times its normal part along the surface (none without friction), and friction holds
    the cable higher up the slope than the frictionless one comes to rest."""
    theta = math.radians(20.0)
    normal = [-math.sin(theta), 0.0, math.cos(theta)]
    start = {"position": [0.0, 0.0, RADIUS + 0.005], "tangent": [0.0, 1.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.3, segments=30, material=LV, start=start), solver=MODEL)
    doc["obstacles"] = [{"type": "plane", "point": [0.0, 0.0, 0.0], "normal": normal}]
    if mu:
        doc["contact"] = {"friction_static": mu, "friction_dynamic": 0.75 * mu}
    result = first(solve(doc))
    assert result["converged"] and result["stable"], result.get("message")
    assert result["contacts"]
    for c in result["contacts"]:
        f, n = np.asarray(c["force"]), np.asarray(c["normal"])
        along = f - (f @ n) * n
        assert f @ n > 0.0
        assert np.linalg.norm(along) <= mu * (f @ n) + 1e-6 * np.linalg.norm(f)
    tip = np.asarray(result["nodes"])[-1]
    if mu:
        doc.pop("contact")
        frictionless = np.asarray(first(solve(doc))["nodes"])[-1]
        assert tip[0] > frictionless[0] + 0.005  # down the slope is -x


def test_a_chain_falling_on_a_thin_plate_rests_on_it():
    """A zero-thickness plate (two triangles) under a cable clamped above it: no point passes it."""
    verts = [[-0.05, -0.1, 0.0], [0.4, -0.1, 0.0], [0.4, 0.1, 0.0], [-0.05, 0.1, 0.0]]
    start = {"position": [0.0, 0.0, 0.03], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.3, segments=15, material=LV, start=start), solver=MODEL)
    doc["obstacles"] = [{"type": "mesh", "vertices": verts, "triangles": [[0, 1, 2], [0, 2, 3]]}]
    result = first(solve(doc))
    assert result["converged"] and result["stable"], result.get("message")
    nodes = np.asarray(result["nodes"])
    assert nodes[:, 2].min() >= RADIUS * (1.0 - 1e-3)
    assert result["contacts"]


def test_a_link_that_cuts_a_bar_between_its_points_is_a_failure_not_a_result():
    """Five links hanging between two connectors, and a thin bar (two triangles, 4 mm wide) across the
    middle link where it rests without the bar: the points fall beside the bar and the link onto it.
    Contact acts at the points (the paper's), so the link comes to cut the bar: reported, not converged."""
    start = {"position": [0.0, 0.0, 0.02], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.3, 0.0, 0.02], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.33, segments=5, material=LV, start=start, end=end), solver=MODEL)
    free = first(solve(doc))
    assert free["converged"]
    x, _y, z = 0.5 * (np.asarray(free["nodes"][2]) + np.asarray(free["nodes"][3]))
    a, b = x - 0.002, x + 0.002
    verts = [[a, -0.1, z], [b, -0.1, z], [b, 0.1, z], [a, 0.1, z]]
    doc["obstacles"] = [{"type": "mesh", "vertices": verts, "triangles": [[0, 1, 2], [0, 2, 3]]}]
    result = first(solve(doc))
    assert not result["converged"]
    # resting across the bar, or swept through it on the way (the straight paths between searches)
    assert "into an obstacle" in result["message"] or "through an obstacle" in result["message"]


def test_obstacles_handed_over_later_are_met():
    """The Blender layer hands the colliders near a cable to the harness after the case was read: the
    chain rests on them (test_kirchhoff_cg: the models without contact refuse them)."""
    doc = case(cable(length=0.3, segments=15, material=LV), solver=MODEL)
    h = harness(doc)
    plate = np.array([[[-1.0, -1.0, -0.01], [1.0, -1.0, -0.01], [0.0, 1.0, -0.01]]])
    h.set_obstacles(ObstacleSet().with_triangles(plate, 0))
    report = h.solve_step()["W1"]
    assert report.converged and report.stable, report.message
    assert h.world_nodes("W1")[:, 2].min() >= -0.01 + RADIUS * (1.0 - 1e-3)


def test_cable_cable_contact_is_refused_by_name():
    doc = case(cable(material=LV), solver=MODEL, contact={"cable_cable": True})
    with pytest.raises(CaseError, match="contact.cable_cable"):
        parse_case(doc)


def test_friction_does_not_make_a_compressed_straight_chain_a_minimum():
    """Both ends clamped on a table 50 mm closer than the cable is long, straight between them: a saddle
    (the rod buckles sideways). Friction, at most mu N along the table, cannot hold a negative
    curvature: the stability test projects on the pressed surfaces' tangent planes only."""
    start = {"position": [0.0, 0.0, RADIUS], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.25, 0.0, RADIUS], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.3, segments=30, material=LV, start=start, end=end), solver=MODEL)
    doc["obstacles"] = [{"type": "plane", "point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}]
    doc["contact"] = {"friction_static": 0.3, "friction_dynamic": 0.2}
    result = first(solve(doc))
    assert not (result["converged"] and result["stable"])


def test_a_dynamic_factor_above_the_static_one_still_comes_to_rest():
    """mu_d > mu_s (no real surface): a point that dynamic friction stops is held, so the chain on an
    incline comes to rest with its contact forces in the cone of the larger factor."""
    theta = math.radians(20.0)
    normal = [-math.sin(theta), 0.0, math.cos(theta)]
    start = {"position": [0.0, 0.0, RADIUS + 0.005], "tangent": [0.0, 1.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.3, segments=30, material=LV, start=start), solver=MODEL)
    doc["obstacles"] = [{"type": "plane", "point": [0.0, 0.0, 0.0], "normal": normal}]
    doc["contact"] = {"friction_static": 0.1, "friction_dynamic": 0.5}
    result = first(solve(doc))
    assert result["converged"] and result["stable"], result.get("message")
    for c in result["contacts"]:
        f, n = np.asarray(c["force"]), np.asarray(c["normal"])
        assert np.linalg.norm(f - (f @ n) * n) <= 0.5 * (f @ n) + 1e-6 * np.linalg.norm(f)
