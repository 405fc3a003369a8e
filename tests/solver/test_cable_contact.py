# SPDX-License-Identifier: GPL-3.0-or-later
"""Cable-cable and self contact (interactions.py): loads shared, no crossing, no penetration."""

import math

import numpy as np
import pytest
from helpers.cases import WIRE, cable, case, first, harness, min_clearance, minimise_argument, solve
from helpers.contact_scenes import (
    TABLE,
    R,
    contact_force,
    crossed_pair,
    fan,
    no_penetration,
)
from helpers.kernel_inputs import contact_interactions, pair_buffers
from hypothesis import given, settings
from hypothesis import strategies as st

from solver_core import CableChange, Frame, Harness, parse_case
from solver_core.contact.obstacles import ObstacleSet
from solver_core.kernel_arrays import CandidatePairs

MAX_ITERATIONS, HANDED = minimise_argument("max_iterations"), minimise_argument("handed")


def test_two_crossed_cables_pressed_together_touch_without_penetrating():
    # two taut cables crossing 5 mm apart, the upper one pressed down at its middle (no gravity)
    a = cable(
        id="A",
        length=0.3,
        segments=60,
        start={"position": [-0.15, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        end={"position": [0.15, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
    )
    b = cable(
        id="B",
        length=0.3,
        segments=60,
        loads=[{"s": 0.15, "force": [0, 0, -3.0]}],
        start={"position": [0.0025, -0.15, 0.005], "tangent": [0, 1, 0], "normal": [0, 0, 1]},
        end={"position": [0.0025, 0.15, 0.005], "tangent": [0, 1, 0], "normal": [0, 0, 1]},
    )
    # taut cables pressed this hard stretch 0.7 %, beyond the default ultimate strain
    stretchy = {"ultimate_strain": 0.02}
    apart = solve(case(a, b, gravity=[0, 0, 0], solver=stretchy))["steps"][0]["cables"]
    assert apart["B"]["nodes"][30][2] < -R  # without contact B would be pushed right through A
    result = solve(case(a, b, gravity=[0, 0, 0], contact={"cable_cable": True}, solver=stretchy))["steps"][0]["cables"]
    assert result["A"]["converged"] and result["B"]["converged"]
    clearance = min_clearance(result["B"]["nodes"], R, others=[(result["A"]["nodes"], R)])
    assert -0.01 * R <= clearance < 0.01 * R  # touching
    fa = sum(np.array(c["force"]) for c in result["A"]["contacts"])
    fb = sum(np.array(c["force"]) for c in result["B"]["contacts"])
    assert np.allclose(fa, -fb, atol=1e-3 * np.linalg.norm(fa))
    assert fa[2] < 0 < fb[2]  # B presses A down, A holds B up
    # B's contact force and its connectors' reactions carry the load
    b_ends = sum(np.array(result["B"]["end_forces"][k]["force"]) for k in ("start", "end"))
    assert np.allclose(fb + b_ends, [0, 0, 3.0], atol=1e-5)


def test_initial_guesses_do_not_pass_through_cables_placed_before():
    # B's route crosses 10 mm above a taut A; its full sag would take it through A to the other side,
    # where distances alone could never bring it back. With cable-cable contact its guess stays above.
    a = cable(
        id="A",
        length=0.3,
        segments=30,
        start={"position": [-0.15, 0, 0], "tangent": [1, 0, 0]},
        end={"position": [0.15, 0, 0], "tangent": [1, 0, 0]},
    )
    b = cable(
        id="B",
        length=0.4,
        segments=40,
        start={"position": [0.0, -0.15, 0.01], "tangent": [0, 1, 0]},
        end={"position": [0.0, 0.15, 0.01], "tangent": [0, 1, 0]},
    )
    for contact, above in (({}, False), ({"cable_cable": True}, True)):
        harness = Harness.from_case(parse_case(case(a, b, contact=contact)))
        nodes = harness.cables["B"].state.positions + harness.cables["B"].model.origin
        middle = nodes[np.abs(nodes[:, 1]).argmin()]
        assert (middle[2] > 2 * R) == above
        if above:
            assert (
                min_clearance(
                    nodes, R, others=[(harness.cables["A"].state.positions + harness.cables["A"].model.origin, R)]
                )
                >= 0.0
            )
    result = solve(case(a, b, contact={"cable_cable": True}))["steps"][0]["cables"]
    assert result["A"]["converged"] and result["B"]["converged"]
    assert np.array(result["B"]["nodes"])[20, 2] > np.array(result["A"]["nodes"])[15, 2]  # B rests on A
    # a route drawn right through the other cable is reported as such
    through = cable(
        id="B",
        length=0.4,
        segments=40,
        start={"position": [0.0, -0.15, 0.0], "tangent": [0, 1, 0]},
        end={"position": [0.0, 0.15, 0.0], "tangent": [0, 1, 0]},
    )
    warnings = Harness.from_case(parse_case(case(a, through, contact={"cable_cable": True}))).warnings
    assert any("'B'" in w and "another cable" in w for w in warnings)


def _self_clearance(nodes, skip=4):
    """Smallest surface gap between segments of one cable at least ``skip`` segments apart (sampled)."""
    x = np.asarray(nodes, float)
    u = np.linspace(0.0, 1.0, 9)[:, None]
    best = np.inf
    for i in range(len(x) - 1):
        a = x[i] + u * (x[i + 1] - x[i])
        for j in range(i + skip, len(x) - 1):
            b = x[j] + u * (x[j + 1] - x[j])
            best = min(best, float(np.linalg.norm(a[:, None] - b[None], axis=2).min()))
    return best - 2 * R


def test_a_cable_looped_over_itself_rests_on_its_own_lower_leg():
    # An alpha loop on a table: the route runs out along x, turns and comes back over its own first
    # leg 12 mm up. Under gravity the upper leg sinks onto the lower one. Without cable-cable contact
    # it sinks through it; with it (self-contact) the legs touch, nothing penetrates, the two legs
    # take equal and opposite forces and the table and connectors carry exactly the weight.
    route = [
        [-0.15, 0, R],
        [0.05, 0, R],
        [0.1, 0.05, R],
        [0.05, 0.1, R],
        [0.0, 0.05, 6 * R],
        [0.0, 0.0, 6 * R],
        [0.0, -0.05, 6 * R],
        [0.0, -0.15, R],
    ]
    length = 1.02 * float(np.linalg.norm(np.diff(np.array(route), axis=0), axis=1).sum())
    looped = cable(
        length=round(length, 4),
        segments=80,
        start={"position": route[0], "tangent": [1, 0, 0]},
        end={"position": route[-1], "tangent": [0, -1, 0]},
        route=route,
    )
    through = first(solve(case(looped, obstacles=[TABLE])))
    assert through["converged"] and _self_clearance(through["nodes"]) < -R
    doc = case(looped, obstacles=[TABLE], contact={"cable_cable": True})
    result = first(solve(doc))
    assert result["converged"], result.get("message")
    assert -0.01 * 2 * R <= _self_clearance(result["nodes"]) < 0.01 * 2 * R  # touching
    no_penetration(result, doc)
    own = [c for c in result["contacts"] if "other_s" in c]
    assert own and all(c["force"][2] != 0.0 for c in own)
    lower = [c for c in own if c["s"] < c["other_s"]]
    assert lower and all(c["force"][2] < 0.0 for c in lower)  # the upper leg presses the lower one down
    assert np.allclose(sum(np.array(c["force"]) for c in own), 0.0, atol=1e-12)
    weight = WIRE["density"] * math.pi * 0.004**2 / 4 * looped["length"] * 9.81
    vertical = (
        sum(c["force"][2] for c in result["contacts"])
        + result["end_forces"]["start"]["force"][2]
        + result["end_forces"]["end"]["force"][2]
    )
    assert vertical == pytest.approx(weight, rel=1e-6)


@pytest.mark.parametrize("load", [0.002, 0.2])
def test_two_crossed_cables_pressed_together_share_the_load(load):
    # B rests on A (touching) and is pushed down at the crossing. Equal cables deflect equally under
    # equal forces and stay in touch, so the contact carries exactly half the load, whatever the
    # nonlinearity (at 0.2 N the clamped ends stretch the cables: the sag is half the linear one).
    # At the small load A sags as a clamped-clamped beam under a central force, F L^3 / (192 EI).
    # (Solved one after the other against each other's frozen copies, A hardly moved and the
    # contact carried nearly all of the load.)
    doc = crossed_pair(load, 2 * R)
    result = solve(doc)["steps"][0]["cables"]
    a, b = result["A"], result["B"]
    assert a["converged"] and b["converged"]
    assert contact_force(a) == pytest.approx([0, 0, -load / 2], rel=1e-3, abs=1e-6 * load)
    assert contact_force(b) == pytest.approx([0, 0, load / 2], rel=1e-3, abs=1e-6 * load)
    assert all(c.get("other_cable") in ("A", "B") for c in a["contacts"] + b["contacts"])
    sag_a, sag_b = -a["nodes"][15][2], 2 * R - b["nodes"][15][2]
    assert sag_a > 0.0 and sag_b == pytest.approx(sag_a, rel=0.01)
    others = [(b["nodes"], R)]
    assert min_clearance(a["nodes"], R, (), others) >= -0.01 * R
    if load < 0.01:
        EI = WIRE["E"] * math.pi * (2 * R) ** 4 / 64
        assert sag_a == pytest.approx((load / 2) * 0.3**3 / (192 * EI), rel=0.03)


@pytest.mark.parametrize("kind_name, allowed", [("CAP_NODE", 0.5), ("CAP_SEG", 0.1), ("SELF_SEG", 0.1)])
def test_a_step_is_cut_where_it_would_carry_a_segment_across_another_cable(kind_name, allowed):
    # A step moving a free segment 0.8 radii straight at something it does not touch yet (gap
    # 0.01 radii): a node may go half a radius in before the step is cut, a segment crossing another
    # cable's segment between nodes only a tenth (Newton could not lift it out again).
    from solver_core.contact import contact, step_limits

    kind = np.array([getattr(contact, kind_name)])
    move, gap = 0.8 * R, 0.01 * R
    delta = np.array([0.0, 0.0, -move, 0.0, 0.0, -move, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    node_dof = np.array([0, 3, 6, 9])  # the other side (self pairs: nodes 2 and 3) stays put
    pairs = pair_buffers(kind, [0], [2], gap=[gap], t=[0.5], u=[0.5], normal=[[0.0, 0.0, 1.0]])
    interactions = contact_interactions(
        ObstacleSet().kernel_arrays(), np.full(4, R), np.zeros(4), np.zeros(3), 0.0, 10 * R
    )
    fraction = step_limits.approach_fraction(delta, node_dof, pairs, interactions)
    assert fraction == pytest.approx(allowed * R / move, rel=1e-12)


def test_a_cable_pressed_from_below_and_crossed_from_above_carries_both_contacts_in_full():
    # A segment pair (a crossing between nodes) carries only the depth beyond the ends of its two
    # segments against each other. Here the middle cable M rests with its node on cable B below
    # (depth d1) and is crossed between its nodes by cable T above (depth d2 > d1): two different
    # contacts, so the energy is k l (d1^2 + d2^2) / 2, plus what the two segment pairs of M against
    # B keep beyond their one touching end, whose depth d1 enters as the power mean of four ends,
    # d1 4^(-1/p): k l d1^2 (1 - 4^(-2/p)) / 2 each. (The node's deepest pair against anything was
    # subtracted before: the crossing above carried k l (d2^2 - d1^2) / 2, a pile's contacts cancelled.)
    from solver_core.contact.contact import END_POWER
    from solver_core.contact.contact_energy import contact_energy
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    s, d1, d2, k = 0.01, 0.02 * R, 0.05 * R, 1.26e8
    ys = np.array([-1.5, -0.5, 0.5, 1.5]) * s
    middle = [[-s, 0, 0], [0, 0, 0], [s, 0, 0]]
    top = [[0.5 * s, y, 2 * R - d2] for y in ys]  # along y over the middle of M's second segment
    bottom = [[0.0, y, -(2 * R - d1)] for y in ys]  # along y under M's middle node
    pos = np.array(middle + top + bottom, dtype=float)
    part = np.repeat([0, 1, 2], [3, 4, 4])
    n = len(pos)
    obstacles = ObstacleSet().kernel_arrays()
    kind, elem, prim = find_pairs(pos, np.full(n, R), part, 2 * R, obstacles, 2)
    grad = np.zeros(3 * n)
    extra = contact_interactions(obstacles, np.full(n, R), np.full(n, s), np.full(n - 1, s), k)
    energy = contact_energy(pos, pair_buffers(kind, elem, prim), extra, np.arange(n) * 3, grad, np.zeros((1, 1)), 0, 1)
    at_node = 2 * d1**2 * (1 - 4 ** (-2 / END_POWER))
    assert energy == pytest.approx(0.5 * k * s * (d1**2 + d2**2 + at_node), rel=1e-9)
    # only forces between the cables: they sum to zero
    assert np.allclose(grad.reshape(n, 3).sum(axis=0), 0.0, atol=1e-12 * np.abs(grad).max())


def test_crossing_cables_contact_gradient_matches_finite_differences():
    # Two cables pressed together at shallow to steep random angles, the crossing anywhere near a
    # node: the segment pairs then carry their depth beyond the power mean of their four ends, whose
    # gradient spreads over the ends by their weights. Central differences of the energy are the
    # reference for every coordinate.
    from solver_core.contact.contact import SELF_SEG
    from solver_core.contact.contact_energy import contact_energy
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    rng = np.random.default_rng(3)
    s, k, seg_pairs = 0.01, 1.26e8, 0
    obstacles = ObstacleSet().kernel_arrays()
    ts = np.array([-1.5, -0.5, 0.5, 1.5]) * s
    for _ in range(20):
        angle, offset = rng.uniform(0.05, 1.5), rng.uniform(-0.5, 0.5) * s
        along = np.array([np.cos(angle), np.sin(angle), 0.0])
        a = np.column_stack((ts, np.zeros(4), np.zeros(4)))
        b = [offset, 0.0, 2 * R - rng.uniform(1e-6, 5e-5)] + ts[:, None] * along
        pos = np.vstack((a, b)) + rng.normal(scale=1e-5, size=(8, 3))
        kind, elem, prim = find_pairs(pos, np.full(8, R), np.repeat([0, 1], 4), 2 * R, obstacles, 2)
        seg_pairs += int((kind == SELF_SEG).sum())
        extra = contact_interactions(obstacles, np.full(8, R), np.full(8, s), np.full(7, s), k)

        def energy(x, grad, mode):
            pairs = pair_buffers(kind, elem, prim)
            return contact_energy(x, pairs, extra, np.arange(8) * 3, grad, np.zeros((1, 1)), 0, mode)

        grad = np.zeros(24)
        energy(pos, grad, 1)
        h = 1e-9
        for i in range(24):
            e = np.zeros(24)
            e[i] = h
            fd = energy(pos + e.reshape(8, 3), np.zeros(24), 0) - energy(pos - e.reshape(8, 3), np.zeros(24), 0)
            assert fd / (2 * h) == pytest.approx(grad[i], abs=1e-7 * np.abs(grad).max())
    assert seg_pairs > 20


def test_no_newton_step_of_a_pile_of_cables_raises_its_energy(monkeypatch):
    # A Levenberg-Marquardt step is taken when it lowers the energy as the model predicts, or when the
    # predicted change is within rounding noise (a pure refinement). Cables pressed together add
    # low-rank terms of either sign to the Newton matrix, which can then be indefinite along a step
    # whose band part is positive definite: such a step was taken as a refinement although the model
    # itself predicted a rise. Reference: the energy, which no accepted step may raise beyond rounding.
    # The solver is run one Newton iteration per call, each preceded by a call that only evaluates the
    # energy at the start (both search their contact pairs afresh at the same positions, so they
    # measure the same energy).
    import solver_core.solve.equilibrium as equilibrium

    real = equilibrium.minimise_rod_energy
    steps, rises = [], []

    def one_iteration_at_a_time(pos, quat, *args):
        args = list(args)
        max_iterations = args[MAX_ITERATIONS]
        if max_iterations == 0:
            return real(pos, quat, *args)
        none = np.zeros(0, dtype=np.int64)
        total = 0
        while True:
            args[HANDED] = CandidatePairs(np.full_like(pos, np.inf), none, none, none, np.zeros(0), np.zeros((0, 3)))
            args[MAX_ITERATIONS] = 0
            before = real(pos, quat, *args).energy
            args[MAX_ITERATIONS] = 1
            out = real(pos, quat, *args)
            status, iterations, after = out.status, out.iterations, out.energy
            if iterations:
                steps.append(before - after)
                # rounding: the energy sums some thousand terms, each up to ~100 times the total
                if after > before + 1e-9 * abs(before):
                    rises.append((before, after))
            total += iterations
            if status != 1 or total >= max_iterations:  # 1: the iteration limit
                return out._replace(iterations=total)

    monkeypatch.setattr(equilibrium, "minimise_rod_energy", one_iteration_at_a_time)
    h = harness(fan(6, 60))  # before the fix: 146 of 766 steps raised the energy (none with 4 cables)
    h.solve_step()
    assert len(steps) > 100 and max(steps) > 0.0
    assert not rises, rises[:3]


def test_nearly_parallel_cables_one_above_the_other_settle_as_each_would_alone():
    # Two cables 0.3 degrees apart, one 10 mm above the other, sag towards a floor: the lower one lies
    # on it, the upper one hangs clear of both (same length, same sag). Solved first alone against the
    # other frozen straight above it, the lower cable stalls (6,657 iterations; 7 of 75 random piles
    # of bench_robustness failed so); it then joins the joint solve from its start, which converges.
    # Reference: as they end apart, each lies as it would with the other cable absent.
    cables = []
    for c, (angle, z) in enumerate([(2.98597, 0.001), (2.98027, 0.011)]):
        d = np.array([math.cos(angle), math.sin(angle), 0.0])
        a, b = -0.15 * d + [0, 0, z], 0.15 * d + [0, 0, z]
        rod = cable(id=f"C{c}", length=0.33, segments=40, start={"position": list(a), "tangent": list(d)})
        rod["end"] = {"position": list(b), "tangent": list(d)}
        rod["material"] = {"E": 126e6, "nu": 0.3, "density": 7958.0}
        cables.append(rod)
    floor = {"type": "plane", "point": [0, 0, -0.06], "normal": [0, 0, 1]}
    h = harness(case(*cables, contact={"cable_cable": True}, obstacles=[floor]))
    reports = h.solve_step()
    assert all(r.converged and r.stable for r in reports.values())
    nodes = {cid: np.array(h.cable_result(cid)["nodes"]) for cid in ("C0", "C1")}
    assert min_clearance(nodes["C0"], R, [floor]) >= -0.01 * R
    assert min_clearance(nodes["C0"], R, (), [(nodes["C1"], R)]) > R  # apart
    for rod in cables:
        alone = harness(case(rod, obstacles=[floor]))
        assert alone.solve_step()[rod["id"]].converged
        assert np.abs(np.array(alone.cable_result(rod["id"])["nodes"]) - nodes[rod["id"]]).max() < 1e-6


def test_a_taut_cable_lifted_against_a_frozen_one_is_refused_never_carried_across_it():
    """A taut bar (0.2 m between ends 0.2 m apart) lifted in steps under a sagging cable that is not
    solved (met as it lies): once they touch, the bar cannot rise further without stretching, and a
    20 mm jump of its connectors, which would carry its middle clean across the 8 mm of both cables in
    one go, is refused for stretch as the 10 mm one is, the bar left below."""
    x = 0.15
    far = {"position": [0.5, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    near = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    ends = [{"position": [x, y, -0.1], "tangent": [0.0, 1.0, 0.0]} for y in (-0.1, 0.1)]
    doc = case(
        cable(id="c", length=0.505, segments=40, diameter=0.004, start=near, end=far),
        cable(id="bar", length=0.2, segments=40, diameter=0.004, start=ends[0], end=ends[1]),
        contact={"cable_cable": True},
    )
    h = harness(doc)
    assert all(r.converged for r in h.solve_step().values())

    def below():  # the bar's middle under the cable where they cross
        c, bar = h.world_nodes("c"), h.world_nodes("bar")
        return np.interp(x, c[:, 0], c[:, 2]) - bar[len(bar) // 2, 2]

    outcomes = []
    for z in (-0.05, -0.03, -0.02, 0.0):
        frames = [Frame(np.array([x, y, z]), np.array([0.0, 1.0, 0.0])) for y in (-0.1, 0.1)]
        report = h.solve_step({"bar": CableChange(start=frames[0], end=frames[1])}, cable_ids=["bar"])["bar"]
        outcomes.append(report.converged)
        assert below() > 0.0
        assert min_clearance(h.world_nodes("bar"), 0.002, others=[(h.world_nodes("c"), 0.002)]) > -0.002
        if not report.converged:
            assert "stretch" in report.message
    assert outcomes[:2] == [True, True] and outcomes[-1] is False


def test_kernel_arrays_are_kept_only_while_what_they_depend_on_stays():
    """Interactions.kernel_arrays keeps a plain cable's arrays between solves: the same object while the
    obstacles, model, settings and stiffness stay, new ones once any of them changes, and never kept
    where friction in contact or clips held by energies make them depend on the step."""
    from dataclasses import replace

    from solver_core.contact.interactions import ContactSettings, Interactions
    from solver_core.contact.obstacles import ObstacleSet, obstacles_from_case

    h = harness(case(cable(id="c", length=0.3, segments=10)))
    session = h.cables["c"]
    inter = Interactions(session.model, ObstacleSet())
    first_arrays = inter.kernel_arrays(session.boundary)
    assert inter.kernel_arrays(session.boundary) is first_arrays
    inter.stiffen(10.0)
    stiffer = inter.kernel_arrays(session.boundary)
    assert stiffer is not first_arrays and stiffer.contact.stiffness == inter.stiffness
    inter.obstacles = obstacles_from_case([{"type": "plane", "point": [0, 0, -0.1], "normal": [0, 0, 1]}])
    floor = inter.kernel_arrays(session.boundary)
    assert floor is not stiffer and len(floor.obstacles.plane_point) == 1 and floor.contact.uses_contact
    inter.settings = replace(inter.settings, cable_cable=True)
    assert inter.kernel_arrays(session.boundary).contact.self_gap > 0
    # friction in contact: built afresh each time, with the friction state as it is then
    rubbing = Interactions(session.model, inter.obstacles, ContactSettings(0.5, 0.4))
    rubbing.friction_state.active[3] = 1
    rubbing.friction_state.force[3] = 2.0
    a = rubbing.kernel_arrays(session.boundary)
    rubbing.friction_state.force[3] = 5.0
    b = rubbing.kernel_arrays(session.boundary)
    assert a is not b and b.fr_force[3] == 5.0


def _segment_gap(p0, p1, q0, q1, samples=201):
    """Distance between two segments by dense sampling of both: never below the exact one, and above
    it by at most half the spacing of the samples on each (_sampling_error)."""
    s = np.linspace(0.0, 1.0, samples)[:, None]
    a, b = p0 + s * (p1 - p0), q0 + s * (q1 - q0)
    return float(np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2).min()))


def _sampling_error(p0, p1, q0, q1, samples=201):
    return 0.5 * (np.linalg.norm(p1 - p0) + np.linalg.norm(q1 - q0)) / (samples - 1)


@settings(max_examples=200, deadline=None)
@given(
    spread=st.floats(0.001, 0.3),
    margin=st.floats(0.0, 0.02),
    seed=st.integers(0, 2**31 - 1),
)
def test_capsules_said_out_of_reach_are_out_of_reach(spread, margin, seed):
    """pairs_depend_on_search leaves out capsules (another cable's segments) further than ``margin``
    from the cable's surface. Brute force over random capsules about a solved cable: a capsule within
    it must be reported, and none reported where all are clearly beyond it (the distances by
    sampling, bounded from both sides)."""
    from solver_core.contact.interactions import Interactions
    from solver_core.contact.obstacles import ObstacleSet

    rng = np.random.default_rng(seed)
    h = harness(case(cable(id="c", length=0.3, segments=12)))
    session = h.cables["c"]
    x = session.state.positions + session.model.origin
    a = x[rng.integers(0, len(x), 6)] + rng.normal(0.0, spread, (6, 3))
    b = a + rng.normal(0.0, 0.03, (6, 3))
    radius = rng.uniform(0.001, 0.004, 6)
    inter = Interactions(session.model, ObstacleSet().with_capsules(a, b, radius))
    cable_radius = 0.5 * session.model.cable.diameter
    pairs = [(i, k) for k in range(6) for i in range(len(x) - 1)]
    gaps = [_segment_gap(x[i], x[i + 1], a[k], b[k]) - margin - cable_radius - radius[k] for i, k in pairs]
    errors = [_sampling_error(x[i], x[i + 1], a[k], b[k]) for i, k in pairs]
    said = inter.pairs_depend_on_search(session.state, margin)
    if min(gaps) <= 0.0:  # sampled: never below the exact distance
        assert said
    if all(gap > error for gap, error in zip(gaps, errors)):
        assert not said
    assert not Interactions(session.model, ObstacleSet()).pairs_depend_on_search(session.state, margin)


def test_a_group_is_near_a_capsule_by_its_cables_segments_not_the_link_between_them():
    """pairs_depend_on_search on two cables joined into a group (rod_group.py), 2 m from the origin:
    the joined chain's link from one cable's last node to the next one's first is no segment, so a
    capsule lying across it, clear of both cables, is out of reach; the same capsule moved onto the
    second cable's middle is within it. Positions and capsules are compared in the group's frame
    (relative to its origin)."""
    from solver_core.contact.interactions import ContactSettings
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.solve.rod_group import GroupInteractions, join_models

    def along(cid, y):
        start = {"position": [2.0, y, 1.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
        end = {"position": [2.2, y, 1.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
        return cable(id=cid, length=0.2, segments=10, start=start, end=end)

    h = harness(case(along("A", 0.0), along("B", 0.1), gravity=[0.0, 0.0, 0.0]))
    a, b = h.cables["A"], h.cables["B"]
    group = join_models([a.model, b.model], [a.state, b.state])
    state = group.join_states([a.state, b.state])
    link_middle = 0.5 * (a.state.positions[-1] + a.model.origin + b.state.positions[0] + b.model.origin)
    across = np.array([[0.0, 0.0, -0.01], [0.0, 0.0, 0.01]])  # 2 cm long, across the link's middle

    def near(centre):
        obstacles = ObstacleSet().with_capsules(centre + across[:1], centre + across[1:], np.array([0.001]))
        inter = GroupInteractions(group, obstacles, ContactSettings(), members=(a.interactions, b.interactions))
        return inter.pairs_depend_on_search(state, 0.0)

    assert np.linalg.norm(link_middle - np.array([2.1, 0.05, 1.0])) < 1e-9  # where the link is
    assert not near(link_middle)
    assert near(b.state.positions[5] + b.model.origin)
