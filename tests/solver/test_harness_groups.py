# SPDX-License-Identifier: GPL-3.0-or-later
"""Cables that touch are solved together (harness.py): grouping, fallbacks, refusals, handed-on pairs."""

import numpy as np
import pytest
from helpers.cases import WIRE, cable, case, harness, min_clearance, minimise_argument, solve
from helpers.contact_scenes import R, contact_force, crossed_pair, fan

from solver_core import CableChange, Frame, Harness, parse_case

HANDED = minimise_argument("handed")


def test_cables_that_meet_during_a_step_are_solved_together():
    # B starts well clear above A and is lowered onto it in one step: solved apart first, they meet,
    # and must then be solved together (the contact again carries half the load, nothing penetrates).
    doc = crossed_pair(0.05, 0.03)
    lowered = {
        "B": {
            "start": {"position": [0.0, -0.15, 2 * R], "tangent": [0, 1, 0]},
            "end": {"position": [0.0, 0.15, 2 * R], "tangent": [0, 1, 0]},
        }
    }
    doc["steps"] = [{"cables": lowered}]
    steps = solve(doc)["steps"]
    assert not steps[0]["cables"]["A"]["contacts"]
    a, b = steps[1]["cables"]["A"], steps[1]["cables"]["B"]
    assert a["converged"] and b["converged"]
    assert a["stable"] and b["stable"]  # the joint minimum is verified for each cable
    assert contact_force(a)[2] == pytest.approx(-0.025, rel=1e-3)
    assert min_clearance(a["nodes"], R, (), [(b["nodes"], R)]) >= -0.01 * R


def test_cables_that_cannot_be_solved_together_are_solved_one_by_one_and_say_so(monkeypatch):
    # Should the joint solve of touching cables fail, each cable is still brought to an equilibrium
    # against the others as they lie (nothing penetrates), and the result says that the loads they
    # share are approximate. A joint solve that keeps failing is tried again after 1, 2, 4 ... steps
    # (each failure of ten cables costs seconds of a frozen Blender while a connector is dragged).
    import solver_core.session.cable_groups as cable_groups
    import solver_core.session.harness as harness_module
    from solver_core.solve.equilibrium import MAX_CONTINUATION_DEPTH, SNAP_THROUGH_ROUNDS, SolveReport
    from solver_core.solve.rod_group import RodGroup

    solve_equilibrium = harness_module.solve_equilibrium
    depths = []
    solves = []

    def failing_for_groups(model, state, *args, **kwargs):
        solves.append(1)
        if isinstance(model, RodGroup):
            depths.append((len(solves), kwargs["max_depth"], kwargs["snap_through_rounds"]))
            return SolveReport(state.copy(), False, 1, 1.0, 1, 0.0, "no equilibrium found (made to fail)")
        return solve_equilibrium(model, state, *args, **kwargs)

    monkeypatch.setattr(harness_module, "solve_equilibrium", failing_for_groups)
    monkeypatch.setattr(cable_groups, "solve_equilibrium", failing_for_groups)  # the joint solves
    doc = crossed_pair(0.05, 2 * R)
    doc["steps"] = [
        {"cables": {"B": {"start": {"position": [0, -0.15 + 0.001 * k, 2 * R], "tangent": [0, 1, 0]}}}}
        for k in range(1, 7)
    ]
    steps_at = []

    def solve_step(self, *args, **kwargs):
        steps_at.append(len(solves))
        return real_solve_step(self, *args, **kwargs)

    real_solve_step = harness_module.Harness.solve_step
    monkeypatch.setattr(harness_module.Harness, "solve_step", solve_step)
    result = solve(doc)
    for step in result["steps"]:
        a, b = step["cables"]["A"], step["cables"]["B"]
        assert a["converged"] and b["converged"]
        assert min_clearance(a["nodes"], R, (), [(b["nodes"], R)]) >= -0.01 * R
    assert any("could not be solved together" in w and "approximate" in w for w in result["warnings"])
    # tried together at the start, then in steps 2, 5 (waits of 1 and 2 steps), once rather than along
    # a split path or for extra rounds of a slow descent
    step_of = [sum(1 for s in steps_at if s < at) - 1 for at, _, _ in depths]
    assert step_of == [0, 2, 5] and [d for _, d, _ in depths] == [MAX_CONTINUATION_DEPTH, 0, 0]
    assert [r for _, _, r in depths] == [SNAP_THROUGH_ROUNDS, 0, 0]


def test_a_group_starts_from_the_unstiffened_contact_stiffness():
    # A cable solved alone against frozen neighbours may have had its contact stiffened (a hundredfold
    # was seen); the group it then joins starts from the base stiffness, the cables' modulus per unit
    # length (Young's modulus of the material), and stiffens itself only where its own penetration
    # needs it. (Inherited hundredfold springs left Newton without progress on a pile of ten cables.)
    from solver_core.solve.rod_group import GroupInteractions, join_models

    harness = Harness.from_case(parse_case(crossed_pair(0.002, 2 * R)))
    a, b = harness.cables["A"], harness.cables["B"]
    a.interactions.stiffen(100.0)
    group = join_models([a.model, b.model], [a.state, b.state])
    joined = GroupInteractions(
        group, harness.obstacles, harness.contact_settings, members=(a.interactions, b.interactions)
    )
    assert joined.stiffness == pytest.approx(WIRE["E"], rel=1e-12)
    assert a.interactions.stiffness == pytest.approx(100.0 * WIRE["E"], rel=1e-12)  # its own is its own


def test_a_step_refused_for_one_cable_of_a_touching_group_is_refused_for_all():
    # A and B share their loads: pressing B's ends down onto A stretches A (by 0.028 %, beyond the
    # 0.02 % allowed here), so the step is refused for both, neither moves, and both say that A
    # would stretch, although only B was moved.
    doc = crossed_pair(0.05, 2 * R)
    doc["solver"] = {"ultimate_strain": 2e-4}
    doc["steps"] = [
        {
            "cables": {
                "B": {
                    "start": {"position": [0, -0.15, 0], "tangent": [0, 1, 0]},
                    "end": {"position": [0, 0.15, 0], "tangent": [0, 1, 0]},
                }
            }
        }
    ]
    before, after = (s["cables"] for s in solve(doc)["steps"])
    assert before["A"]["converged"] and before["B"]["converged"] and before["A"]["max_strain"] < 2e-4
    for cid in "AB":
        assert not after[cid]["converged"] and "step refused" in after[cid]["message"]
        assert "cable 'A' would stretch" in after[cid]["message"]
        assert after[cid]["nodes"] == before[cid]["nodes"]


def test_a_refused_step_stays_refused_while_other_cables_are_solved():
    # With cable-cable contact the cables of a step are solved in groups, and groups again when they
    # meet; a cable whose own step was refused must not be "re-solved" in a later round against its
    # old connectors and reported converged (the move it was asked for would silently be dropped).
    material = {"E": 20e6, "nu": 0.4, "density": 1500}
    a, b = (
        cable(
            id=name,
            length=0.3,
            segments=30,
            material=material,
            start={"position": [-0.12, y, 0], "tangent": [1, 0, 0]},
            end={"position": [0.12, y, 0], "tangent": [1, 0, 0]},
        )
        for name, y in (("A", 0.0), ("B", 0.2))
    )
    doc = case(a, b, contact={"cable_cable": True}, solver={"ultimate_strain": 1e-4})
    # pulled nearly straight under its own weight: the tension strains A beyond 0.01 %
    doc["steps"] = [
        {
            "cables": {
                "A": {"end": {"position": [0.179, 0, 0], "tangent": [1, 0, 0]}},
                "B": {"end": {"position": [0.12, 0.2, 0.01], "tangent": [1, 0, 0]}},
            }
        }
    ]
    steps = solve(doc)["steps"]
    moved = steps[-1]["cables"]
    assert moved["B"]["converged"]
    assert not moved["A"]["converged"] and "step refused" in moved["A"]["message"]
    assert moved["A"]["nodes"][-1] == pytest.approx(steps[0]["cables"]["A"]["nodes"][-1])


def test_a_group_hands_its_contact_pairs_on_to_its_next_step_and_its_report_as_after_a_fresh_search(monkeypatch):
    # Cables solved together get new interactions every step; the candidate contact pairs of their last
    # joint solve are handed on to the next (a fresh search of ten crossed cables cost 3.5 ms a step),
    # and the contact report takes the touching pairs from the candidates of the solve that ended
    # there. Reference: the same steps with every joint solve and every report searching afresh, which
    # must give the same shapes and contacts. Whether a solve was handed pairs is seen in where it was
    # told they were searched (inf: nowhere, search now).
    import solver_core.solve.equilibrium as equilibrium
    from solver_core.contact.interactions import Interactions

    real = equilibrium.minimise_rod_energy
    handed = []

    def recording(pos, quat, *args):
        handed.append(bool(np.isfinite(args[HANDED].searched_at).all()))
        return real(pos, quat, *args)

    def run(h, fresh):
        assert all(r.converged for r in h.solve_step().values())
        out = []
        for k in range(1, 4):
            if fresh:
                h.group_candidates.clear()
            end = h.cables["C0"].boundary.end
            moved = Frame(end.position + np.array([0.0, 0.0, 0.001 * (-1) ** k]), end.tangent, end.normal)
            handed.clear()
            assert all(r.converged for r in h.solve_step({"C0": CableChange(end=moved)}).values())
            assert len(h.touching_groups(list(h.cables))) == 1  # solved together
            assert handed[0] == (not fresh)
            out.append({cid: h.cable_result(cid) for cid in h.cables})
        return out

    monkeypatch.setattr(equilibrium, "minimise_rod_energy", recording)
    kept = run(harness(fan(3, 40)), fresh=False)
    monkeypatch.setattr(Interactions, "_touching_candidates", lambda self, state, obstacles: None)
    fresh = run(harness(fan(3, 40)), fresh=True)
    for a_step, b_step in zip(kept, fresh):
        for cid, a in a_step.items():
            b = b_step[cid]
            assert np.allclose(a["nodes"], b["nodes"], rtol=0.0, atol=1e-7)
            assert len(a["contacts"]) == len(b["contacts"]) > 0
            order = [sorted(r["contacts"], key=lambda c: (c["s"], c.get("other_s", -1.0))) for r in (a, b)]
            for ca, cb in zip(*order):
                assert ca.get("other_cable") == cb.get("other_cable")
                assert ca["s"] == pytest.approx(cb["s"], abs=1e-6)
                assert np.allclose(ca["force"], cb["force"], rtol=1e-3, atol=1e-6)
