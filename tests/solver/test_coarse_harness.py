# SPDX-License-Identifier: GPL-3.0-or-later
"""A branched harness's first solve by way of the same harness on coarse branches (coarse_harness.py):
the equilibrium the drawn routes lead to without it, found in a few junction iterations on the fine
branches; over an obstacle as well; and the drawn routes as before where the coarse start fails or
cannot be made."""

from dataclasses import replace

import numpy as np
import pytest
from helpers.harnesses import V_RADIUS, v_on

from benchmarks.bench_harness import harness_case
from solver_core import CableChange, CaseError, Frame, Harness, parse_case
from solver_core.contact.contact import PENETRATION_TOLERANCE
from solver_core.junctions import coarse_harness


def fine(doc: dict, segments: int) -> dict:
    """``doc`` with every cable on ``segments`` segments."""
    return {**doc, "cables": [{**c, "segments": segments} for c in doc["cables"]]}


def first_solve(doc: dict, coarse_start: bool, monkeypatch) -> Harness:
    with monkeypatch.context() as m:
        if not coarse_start:
            m.setattr(coarse_harness, "NESTED_MIN_SEGMENTS", 10**9)
        h = Harness.from_case(parse_case(doc))
        reports = h.solve_step()
    assert all(r.converged and r.stable for r in reports.values()), [r.message for r in reports.values()]
    return h


def assert_same_equilibrium(a: Harness, b: Harness, length: float) -> None:
    """Junction frames and every branch's nodes alike, far inside the discretisation's own error: both
    are the equilibrium, balanced to the solver's tolerance."""
    np.testing.assert_allclose(a.junctions.frames.position, b.junctions.frames.position, atol=2e-6 * length)
    np.testing.assert_allclose(a.junctions.frames.rotation, b.junctions.frames.rotation, atol=2e-5)
    for cid in a.junctions.branches:
        np.testing.assert_allclose(a.world_nodes(cid), b.world_nodes(cid), atol=2e-6 * length)


@pytest.mark.parametrize("segments", [40, 100])
def test_the_benchmark_harness_comes_to_the_equilibrium_its_drawn_routes_lead_to(segments, monkeypatch):
    """10 branches, 4 free junctions: the same equilibrium with and without the coarse start, which
    takes the long way (~35 junction iterations) on 10-segment branches; the whole harness's Newton
    step then refines it on the fine ones, and a junction iteration or two confirm it."""
    doc = harness_case(segments)
    direct = first_solve(doc, False, monkeypatch)
    nested = first_solve(doc, True, monkeypatch)
    assert_same_equilibrium(nested, direct, 1.3)
    assert direct.junctions.last.coarse is None
    coarse = nested.junctions.last.coarse
    assert coarse is not None and coarse.converged
    assert nested.junctions.last.iterations <= 3 < coarse.iterations
    assert nested.junctions.last.iterations < direct.junctions.last.iterations


def test_a_heavy_junction_coarsely_started_still_rests_on_a_thin_plate(monkeypatch):
    """The V harness's heavy junction over a plate of no thickness, 26 mm below it, on 60-segment
    branches: the coarse harness brings the junction down onto the plate (never through it), and the
    fine one comes to rest there as it does from the drawn routes."""
    height = -0.03
    plate = {
        "type": "mesh",
        "vertices": [[0.15, -0.1, height], [0.35, -0.1, height], [0.35, 0.1, height], [0.15, 0.1, height]],
        "triangles": [[0, 1, 2], [0, 2, 3]],
    }
    doc = fine(v_on([plate]), 60)
    nested = first_solve(doc, True, monkeypatch)
    direct = first_solve(doc, False, monkeypatch)
    assert nested.junctions.last.coarse is not None
    z = nested.junctions.frames.position[0, 2]
    assert z - height - V_RADIUS >= -PENETRATION_TOLERANCE * V_RADIUS
    assert nested.junctions.contact[0].touching(nested.obstacles, nested.junctions.frames.position[0])
    assert abs(z - direct.junctions.frames.position[0, 2]) < PENETRATION_TOLERANCE * V_RADIUS


def test_a_coarse_start_that_does_not_balance_leaves_the_drawn_routes(monkeypatch):
    """A coarse harness that fails (here: one Newton iteration allowed per branch solve) changes
    nothing: the fine harness starts from its drawn routes, its report shows the coarse failure, and it
    balances where it does without the coarse start."""
    doc = harness_case(40)
    direct = first_solve(doc, False, monkeypatch)
    made = coarse_harness.coarse_copy

    def starved(harness):
        coarse = made(harness)
        coarse.case = replace(coarse.case, solver=replace(coarse.case.solver, max_iterations=1))
        return coarse

    monkeypatch.setattr(coarse_harness, "coarse_copy", starved)
    nested = first_solve(doc, True, monkeypatch)
    assert not nested.junctions.last.coarse.converged
    assert nested.junctions.last.iterations == direct.junctions.last.iterations
    assert_same_equilibrium(nested, direct, 1.3)


def test_a_case_the_coarse_copy_cannot_express_is_solved_from_its_drawn_routes(monkeypatch):
    doc = harness_case(40)
    direct = first_solve(doc, False, monkeypatch)

    def refuse(harness):
        raise CaseError("cables[0].segments: too few for its clips")

    monkeypatch.setattr(coarse_harness, "coarse_copy", refuse)
    nested = first_solve(doc, True, monkeypatch)
    assert nested.junctions.last.coarse is None
    assert_same_equilibrium(nested, direct, 1.3)


def test_only_the_first_solve_starts_coarse(monkeypatch):
    """A step after the first (a connector moved) starts from the last equilibrium, not from a coarse
    harness; nor does a first solve on branches too coarse for it to pay."""
    h = first_solve(harness_case(40), True, monkeypatch)
    end = h.cables["leaf4a"].boundary.end
    moved = Frame(end.position + np.array([0.0, 0.0, 0.001]), end.tangent, end.normal)
    reports = h.solve_step({"leaf4a": CableChange(end=moved)})
    assert all(r.converged for r in reports.values())
    assert h.junctions.last.coarse is None
    assert first_solve(harness_case(20), True, monkeypatch).junctions.last.coarse is None


def test_a_fine_solve_that_fails_from_the_coarse_start_is_made_from_the_drawn_routes(monkeypatch):
    """The coarse harness balances but the fine one, started there, is refused (here: its branches are
    made to cross at the end): the harness goes back to its drawn routes and solves from there, as
    without the coarse start; failing there too, it keeps the case's junction frames and routes (not
    the coarse start's), says so, and the same step asked again is answered without solving."""
    from solver_core.junctions.junctions import JunctionSystem

    h = Harness.from_case(parse_case(harness_case(40)))
    drawn = h.junctions.frames.position.copy()
    routes = {cid: h.cables[cid].state.positions.copy() for cid in h.junctions.branches}
    real = JunctionSystem._branches_crossing
    tries = []

    def refused(self, harness, nodes=None, rotations=None):
        if harness is h and nodes is None:
            tries.append(harness.junctions.last)
            return "forced crossing"
        return real(self, harness, nodes, rotations)

    monkeypatch.setattr(JunctionSystem, "_branches_crossing", refused)
    reports = h.solve_step()
    assert not any(r.converged for r in reports.values())
    assert h.junctions.last.coarse is not None and h.junctions.last.coarse.converged
    assert len(tries) == 2  # refined from the coarse start, then solved from the drawn routes
    np.testing.assert_array_equal(h.junctions.frames.position, drawn)
    for cid, route in routes.items():
        np.testing.assert_array_equal(h.cables[cid].state.positions, route)
        assert not h.cables[cid].solved and not h.cables[cid].refines_coarse
    again = h.solve_step()
    assert "nothing has changed since" in next(iter(again.values())).message


def test_the_first_tick_of_a_scene_starts_coarse(monkeypatch):
    """The Blender layer hands every holder and fixed junction over on every tick, the first included:
    where they are where the case has them, the first solve still starts coarse; moved, it does not."""
    from solver_core import JunctionMove

    doc = harness_case(40)
    doc["junctions"].append({"id": "J0", "position": [0.0, 0.5, 0.0], "fixed": True})
    h = Harness.from_case(parse_case(doc))
    changes = {
        c.id: CableChange(
            start=None if c.start_junction else h.cables[c.id].boundary.start,
            end=None if c.end_junction else h.cables[c.id].boundary.end,
        )
        for c in h.case.cables
    }
    same = {"J0": JunctionMove(np.array([0.0, 0.5, 0.0]), np.eye(3))}
    reports = h.solve_step(changes, junction_moves=same)
    assert all(r.converged for r in reports.values())
    assert h.junctions.last.coarse is not None
    moved = Harness.from_case(parse_case(doc))
    moved.solve_step(changes, junction_moves={"J0": JunctionMove(np.array([0.0, 0.5, 0.01]), None)})
    assert moved.junctions.last.coarse is None


def test_a_pre_formed_cable_keeps_the_segments_its_rest_curvature_needs():
    """A coarse copy never divides a constant rest curvature more coarsely than the case format allows
    (rest_shape.MAX_REST_TURN a segment): 20 1/m over 1 m needs 20 segments."""
    from solver_core.specs.rest_shape import RestShape

    case = parse_case(harness_case(40))
    trunk = case.cables[0]
    bent = replace(trunk, length=1.0, rest=RestShape(curvature=(20.0, 0.0), twist=0.0))
    assert coarse_harness.coarse_segments(bent) == 20
    assert coarse_harness.coarse_segments(trunk) == coarse_harness.COARSE_SEGMENTS
    assert coarse_harness.coarse_segments(replace(trunk, segments=6)) == 6
