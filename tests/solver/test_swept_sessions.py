# SPDX-License-Identifier: GPL-3.0-or-later
"""No motion of a session moves a cable through an obstacle: Simulate's ticks (a connector dragged a
little per tick), a fast drag that the solver splits itself (as Bake's sub-frames and Simulate's
follow steps are), and a fixed junction moved tick by tick with its branches draped over a box.

Every state is recorded (helpers.iterates: the kernel one iteration per call), and every motion
between them is checked by the independent swept test of helpers.swept: the iterates within a kernel
call, and the jump to each call's start from the state it came from. The start of a call is either a
state seen before (a checkpoint put back, the last result) or one the solver made from one (a carried
or predicted state, a junction's new frame): it is checked against the nearest state recorded
before it, which is the one it was made from whenever the solver moves by small steps."""

import numpy as np
import pytest
from helpers.cases import cable, case
from helpers.drapes import drape_case
from helpers.harnesses import at
from helpers.iterates import IterateRecorder, passes_through_count
from helpers.obstacles import box

import solver_core.solve.equilibrium as equilibrium
from solver_core import CableChange, Frame, Harness, JunctionMove, parse_case


@pytest.fixture
def every_iterate(monkeypatch):
    recorder = IterateRecorder(equilibrium)
    monkeypatch.setattr(equilibrium, "minimise_rod_energy", recorder)
    return recorder


def _solved_drape(seed, kind, segments, slack):
    """A drape drawn over ``kind`` (helpers.drapes), solved: (what was drawn, its obstacle, the cable's
    radius, the harness)."""
    drawn = drape_case(np.random.default_rng(seed), kind=kind, side="over", segments=segments, slack=slack)
    doc = drawn["case"]
    h = Harness.from_case(parse_case(doc))
    assert h.solve_step()["W"].converged
    return drawn, doc["obstacles"][0], 0.5 * doc["cables"][0]["diameter"], h


def _moved_end(h, cable_id, move):
    end = h.cables[cable_id].boundary.end
    return {cable_id: CableChange(end=Frame(end.position + move, end.tangent, end.normal))}


@pytest.mark.parametrize("kind", ["box"])
def test_a_connector_dragged_tick_by_tick_never_pulls_the_cable_through(kind, every_iterate):
    drawn, obstacle, radius, h = _solved_drape(7, kind, segments=14, slack=0.25)
    # Simulate: the plug dragged across the route and down past the obstacle's top, 4 % of its size
    # per tick, then back up (a tick solves in some 300 iterations: 8 ticks keep the test short)
    size = drawn["size"]
    ticks = [np.array([0.0, 0.04, -0.015]) * size] * 5 + [np.array([0.0, -0.03, 0.04]) * size] * 3
    converged = 0
    for move in ticks:
        converged += h.solve_step(_moved_end(h, "W", move))["W"].converged
    assert converged >= len(ticks) - 1
    assert passes_through_count(every_iterate, obstacle, radius) == 0


@pytest.mark.parametrize("kind", ["sphere"])
def test_a_fast_drag_split_by_the_solver_never_pulls_the_cable_through(kind, every_iterate):
    # one step of 40 % of the obstacle's size: the solver continues along it in pieces (what Bake's
    # sub-frames and Simulate's follow steps hand it are the same kind of step)
    drawn, obstacle, radius, h = _solved_drape(11, kind, segments=12, slack=0.15)
    report = h.solve_step(_moved_end(h, "W", np.array([0.0, 0.3, -0.25]) * drawn["size"]))["W"]
    assert report.converged or report.message  # a failure says why
    assert passes_through_count(every_iterate, obstacle, radius) == 0


def _y_over_a_box():
    """A trunk from a connector to a fixed junction above a box's middle, and two branches from it
    over the box's edges down to connectors beside it, drawn tight with 15 % slack."""
    block = box((-0.08, -0.06, -0.04), (0.08, 0.06, 0.0))
    diameter = 0.006
    top = 2 * diameter  # drawn one diameter clear of the box's top
    j = [0.0, 0.0, top]

    def branch(cid, start, end, route):
        route = np.asarray(route, float)
        length = float(np.linalg.norm(np.diff(route, axis=0), axis=1).sum()) * 1.15
        return cable(id=cid, length=length, diameter=diameter, segments=12, start=start, end=end, route=route.tolist())

    def leaving(p, t):
        return {"position": p, "tangent": t}

    trunk = branch("trunk", leaving([0.0, -0.2, top], [0, 1, 0]), at("J", [0, 1, 0]), [[0, -0.2, top], j])
    left = branch(
        "left", at("J", [-1, 0, 0]), leaving([-0.2, 0.0, -0.03], [-1, 0, 0]), [j, [-0.09, 0, top], [-0.2, 0, -0.03]]
    )
    right = branch(
        "right", at("J", [1, 0, 0]), leaving([0.2, 0.0, -0.03], [1, 0, 0]), [j, [0.09, 0, top], [0.2, 0, -0.03]]
    )
    doc = case(trunk, left, right, junctions=[{"id": "J", "position": j, "fixed": True}], obstacles=[block])
    return doc, block, 0.5 * diameter


def test_a_fixed_junction_moved_tick_by_tick_keeps_its_branches_on_the_box(every_iterate):
    doc, block, radius = _y_over_a_box()
    h = Harness.from_case(parse_case(doc))
    reports = h.solve_step()
    assert all(r.converged for r in reports.values()), {k: r.message for k, r in reports.items()}
    where = np.array(doc["junctions"][0]["position"], float)
    converged = 0
    # the junction lifted, then pushed sideways and lowered towards the box's top, tick by tick
    for move in [[0, 0, 0.006]] * 3 + [[0.002, -0.008, -0.003]] * 6:
        where = where + move
        reports = h.solve_step(junction_moves={"J": JunctionMove(where.copy())})
        converged += all(r.converged for r in reports.values())
    assert converged >= 8
    assert passes_through_count(every_iterate, block, radius) == 0
