# SPDX-License-Identifier: GPL-3.0-or-later
"""A branched harness touching another cable (branch_partners.py): the branch and the cable solved as one
system inside the junctions' Newton method. Checked against one continuous cable pressed by the same
cable (a collinear junction is one cable), against the balance of everything from the result alone,
against brute-force clearances, and on its failure paths: refusals for stretch keep both where they
were, and neither passes through the other."""

import numpy as np
import pytest
from helpers.cases import case, harness, min_clearance, solve
from helpers.harnesses import (
    AT_ORIGIN,
    V_MASS,
    V_RADIUS,
    G,
    at,
    balance,
    branch,
    connector,
    force_scale,
    node_masses,
    v_on,
    v_weight,
)

from solver_core import CableChange, Frame
from solver_core.contact.contact import PENETRATION_TOLERANCE

FAR = {"position": [0.5, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
SPAN = 0.5
BAR_RADIUS = 0.002


def _v_over_a_bar(cable_cable, bar_length):
    """The heavy V harness (it sags about 90 mm) with a bar of another cable clamped 50 mm below its
    junction's drawn place, across the junction's way down: taut (0.4 m between ends 0.4 m apart) or
    slack (0.42 m: it sags below where the junction comes to rest)."""
    doc = v_on([])
    ends = connector([0.25, -0.2, -0.05], [0, 1, 0]), connector([0.25, 0.2, -0.05], [0, 1, 0])
    doc["cables"].append(branch("bar", bar_length, *ends, segments=40))
    doc["contact"] = {"cable_cable": True} if cable_cable else {"cable_cable": False}
    return doc


def bar_height_below(result, point):
    """The bar's centre line height under ``point`` (where it passes the junction's x and y)."""
    nodes = np.asarray(result["cables"]["bar"]["nodes"])
    i = int(np.argmin(np.linalg.norm(nodes[:, :2] - np.asarray(point)[:2], axis=1)))
    return nodes[i, 2]


def test_a_branched_harness_rests_on_another_cable_in_balance_with_it():
    """The taut bar is in the junction's way down and the trunk comes to rest on it: trunk and bar are
    solved together, both carry the contact (equal and opposite forces), the whole scene (harness, its
    junction and the bar) is in balance with the connectors from the result alone, and the trunk lies
    on the bar, not in it. Without cable-cable contact cables pass through each other by design."""
    through = solve(_v_over_a_bar(False, 0.4))["steps"][0]
    j = through["junctions"]["J"]
    assert j["converged"] and j["position"][2] < bar_height_below(through, j["position"]) - 0.02

    r = solve(_v_over_a_bar(True, 0.4))["steps"][0]
    j = r["junctions"]["J"]
    assert j["converged"] and all(c["converged"] and c["stable"] for c in r["cables"].values())
    assert j["position"][2] > bar_height_below(r, j["position"])  # held up by the bar, never through
    cables = r["cables"]
    trunk_push = np.sum([c["force"] for c in cables["trunk"]["contacts"]], axis=0)
    bar_push = np.sum([c["force"] for c in cables["bar"]["contacts"]], axis=0)
    assert trunk_push[2] > 0.1 * v_weight(r)  # the bar carries a good part of the harness
    assert np.abs(trunk_push + bar_push).max() < 1e-9 * np.abs(trunk_push).max()
    force, moment = balance(r, {"J": V_MASS}, {"trunk": 2 * V_RADIUS})
    scale = force_scale(r, v_weight(r))
    assert np.abs(force).max() < 1e-6 * scale
    assert np.abs(moment).max() < 1e-6 * scale * 0.5
    bar = (cables["bar"]["nodes"], BAR_RADIUS)
    for cid, radius in (("trunk", V_RADIUS), ("left", 0.002), ("right", 0.002)):
        assert min_clearance(cables[cid]["nodes"], radius, others=[bar]) >= -PENETRATION_TOLERANCE * BAR_RADIUS


def test_a_branched_harness_clear_of_another_cable_converges_with_cable_contact_on():
    """The slack bar sags below where the junction comes to rest: nothing touches, and the harness
    balances as it does alone."""
    alone = solve(v_on([]))["steps"][0]["junctions"]["J"]
    r = solve(_v_over_a_bar(True, 0.42))["steps"][0]
    j = r["junctions"]["J"]
    assert j["converged"] and all(c["converged"] for c in r["cables"].values())
    assert j["position"][2] > bar_height_below(r, j["position"]) + 0.002 + V_RADIUS
    assert np.allclose(j["position"], alone["position"], atol=1e-6)


def _bar(x, z):
    return branch("bar", 0.2, connector([x, -0.1, z], [0, 1, 0]), connector([x, 0.1, z], [0, 1, 0]), 40)


def _lower(h, x, z):
    ends = [Frame(np.array([x, y, z]), np.array([0.0, 1.0, 0.0])) for y in (-0.1, 0.1)]
    return h.solve_step({"bar": CableChange(start=ends[0], end=ends[1])})


def _bar_side(h, cable_ids, x):
    """Height of the bar's middle over the (first of) ``cable_ids`` where it crosses them: the side."""
    nodes = np.concatenate([h.world_nodes(cid) for cid in cable_ids])
    bar = h.world_nodes("bar")
    return float(bar[len(bar) // 2, 2] - np.interp(x, nodes[:, 0], nodes[:, 2]))


@pytest.mark.parametrize("x", [0.15, 0.3, 0.24], ids=["on-the-near-branch", "on-the-far-branch", "beside-the-junction"])
def test_a_collinear_harness_pressed_by_a_cable_is_one_continuous_cable_pressed_by_it(x):
    """A taut bar lowered in 10 mm steps across a sagging cable: that cable split at a free collinear
    junction (two branches) ends where the same cable in one piece ends, step by step, and the bar with
    it; the step that would stretch the bar past its ultimate strain is refused for both alike, and
    the bar stays above. Beside the junction the bar touches both branches (one system of three) and
    presses the end segment of one: the junction takes that segment's share of the push."""
    split = case(
        branch("a", 0.2525, AT_ORIGIN, at("J", [1, 0, 0]), 20),
        branch("b", 0.2525, at("J", [1, 0, 0]), FAR, 20),
        _bar(x, 0.03),
        junctions=[{"id": "J", "position": [0.25, 0.0, 0.0]}],
        contact={"cable_cable": True},
    )
    whole = case(branch("c", 0.505, AT_ORIGIN, FAR, 40), _bar(x, 0.03), contact={"cable_cable": True})
    hs, hw = harness(split), harness(whole)
    assert all(r.converged for r in hs.solve_step().values())
    assert all(r.converged for r in hw.solve_step().values())
    pressed = refused = 0
    for z in np.arange(0.02, -0.0701, -0.01):
        rs, rw = _lower(hs, x, z), _lower(hw, x, z)
        converged = all(r.converged for r in rs.values())
        assert converged == all(r.converged for r in rw.values()), (z, rs, rw)
        c = hw.world_nodes("c")
        ref = np.concatenate([c[:21], c[20:]])
        got = np.concatenate([hs.world_nodes("a"), hs.world_nodes("b")])
        assert np.abs(got - ref).max() < 1e-6 * SPAN
        assert np.abs(hs.world_nodes("bar") - hw.world_nodes("bar")).max() < 1e-6 * SPAN
        assert _bar_side(hs, ("a", "b"), x) > 0.0  # above, never through
        if converged:
            pressed += bool(hs.cables["bar"].last_report.converged and hs.cables["bar"].group_contacts)
        else:
            refused += 1
            assert all("stretch" in r.message for r in rs.values())
    assert pressed >= 1 and refused >= 1


def test_a_cable_pressed_into_two_branches_at_once_is_solved_with_both():
    """The bar lowered beside the junction ends with one system of both branches and itself, the
    branches never meeting each other in contact (they meet at their junction)."""
    doc = case(
        branch("a", 0.2525, AT_ORIGIN, at("J", [1, 0, 0]), 20),
        branch("b", 0.2525, at("J", [1, 0, 0]), FAR, 20),
        _bar(0.24, 0.03),
        junctions=[{"id": "J", "position": [0.25, 0.0, 0.0]}],
        contact={"cable_cable": True},
    )
    h = harness(doc)
    h.solve_step()
    for z in (0.0, -0.02, -0.03):
        reports = _lower(h, 0.24, z)
        assert all(r.converged for r in reports.values())
    assert set(h.cables["bar"].solved_with) == {"a", "b", "bar"}
    assert h.cables["a"].solved_with == h.cables["bar"].solved_with


@pytest.mark.parametrize("shift", [-1e-6, 0.0, 3e-6], ids=["1um-nearer", "as-drawn", "3um-further"])
@pytest.mark.parametrize(
    "place", [0.245, 0.255, 0.27], ids=["reached-on-the-way", "on-the-trunk-end-segment", "on-the-branches-near-it"]
)
def test_a_cable_under_the_junction_pushes_the_junction_through_the_end_segments_it_presses(place, shift):
    """The taut bar right under where the junction comes to rest: it presses the trunk's end segment
    (the one the junction holds, 8 mm from it), or the two branches a segment further out; or, 5 mm
    short of the junction's drawn place, it is solved with the trunk and reaches the two other branches
    on its way (solved again with all three, which must then not be solved alone again: the step had
    been refused as "touching without having been solved together"). Each cable's free
    body closes from the result alone (weight, contacts, end forces: a contact on an end segment
    pushes the holder too), and so does the whole scene with the junction's weight and what each
    branch pulls it with. Each place also a micrometre nearer and three further: the junction's Newton
    method balances it wherever round-off takes its path (such shifts once made it step back and forth
    across its branches' contact for good, or stop 5000 tolerances out of balance)."""
    bar_x = place + shift
    doc = v_on([])
    ends = connector([bar_x, -0.2, -0.05], [0, 1, 0]), connector([bar_x, 0.2, -0.05], [0, 1, 0])
    doc["cables"].append(branch("bar", 0.4, *ends, segments=40))
    doc["contact"] = {"cable_cable": True}
    h = harness(doc)
    h.solve_step()
    if place == 0.255:  # the push on the trunk's held end node is really there
        assert np.abs(h.cables["trunk"].contact_push()[-1]).max() > 0.01 * v_weight_of(h)
    r = solve(doc)["steps"][0]
    assert r["junctions"]["J"]["converged"] and all(c["converged"] for c in r["cables"].values())
    assert sum(len(c["contacts"]) for cid, c in r["cables"].items() if cid != "bar") >= 1
    scale = force_scale(r, v_weight(r))
    for cid, c in r["cables"].items():
        weight = node_masses(c, 2 * V_RADIUS if cid == "trunk" else 0.004).sum() * G * np.array([0.0, 0.0, -1.0])
        free_body = weight + sum((np.asarray(x["force"]) for x in c["contacts"]), np.zeros(3))
        free_body += sum((np.asarray(fm["force"]) for fm in c["end_forces"].values()), np.zeros(3))
        assert np.abs(free_body).max() < 1e-6 * scale, cid
    force, _moment = balance(r, {"J": V_MASS}, {"trunk": 2 * V_RADIUS})
    assert np.abs(force).max() < 1e-6 * scale


def v_weight_of(h):
    """The V harness's weight (N) from its sessions: the junction's and every branch's."""
    branches = sum(s.model.cable.section.linear_density * s.model.cable.length for s in h.cables.values())
    return (V_MASS + branches) * G


def test_renaming_a_cable_that_rests_on_a_branch_keeps_the_pair_solved_together():
    """The bar resting on the trunk renamed (its Blender object was), then another cable far away
    solved alone: the harness and the bar stay as they were, still known as solved together."""
    doc = _v_over_a_bar(True, 0.4)
    far = [connector([2.0, -0.2, 0.0], [0, 1, 0]), connector([2.0, 0.2, 0.0], [0, 1, 0])]
    doc["cables"].append(branch("far", 0.45, *far, segments=20))
    h = harness(doc)
    assert all(r.converged for r in h.solve_step().values())
    before = h.world_nodes("bar")
    h.rename_cable("bar", "bar2")
    assert all(r.converged for r in h.solve_step(cable_ids=["far"]).values())
    assert "bar2" in h.cables["trunk"].solved_with and h.joint("bar2")
    assert np.array_equal(h.world_nodes("bar2"), before)
