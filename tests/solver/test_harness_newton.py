# SPDX-License-Identifier: GPL-3.0-or-later
"""The junctions' stiffness from the branches' Hessians (end_stiffness.py) and the whole harness's Newton
step (junction_newton.py): a straight cable's end stiffness against the Timoshenko beam's closed form, a
harness's condensed stiffness against differences of branch re-solves, warm steps predicted by the
arrow-head Newton method against the nested solve alone, and the prediction refused where a branch
would reach an obstacle."""

import numpy as np
import pytest
from helpers.cases import cable, case, harness
from helpers.harnesses import AT_ORIGIN, STIFF, at, branch, connector

from solver_core import CableChange, Frame
from solver_core.end_stiffness import condensed_end_stiffness
from solver_core.junction_newton import HarnessNewton
from solver_core.junctions import MAX_MOVE, MAX_TURN, JunctionSystem, restore_sessions, snapshot_sessions


def beam_element(L, EA, GJ, EI, GA):
    """The 12x12 stiffness of a straight Timoshenko beam along x between two clamped ends, in (u, v, w,
    rot x, rot y, rot z) of each end (Przemieniecki, Theory of Matrix Structural Analysis, Sec. 5.6):
    phi = 12 EI / (GA L^2) is the shear's share."""
    K = np.zeros((12, 12))
    K[np.ix_([0, 6], [0, 6])] = EA / L * np.array([[1, -1], [-1, 1]])
    K[np.ix_([3, 9], [3, 9])] = GJ / L * np.array([[1, -1], [-1, 1]])
    phi = 12.0 * EI / (GA * L * L)
    c = EI / ((1.0 + phi) * L**3)
    bend = c * np.array(
        [
            [12, 6 * L, -12, 6 * L],
            [6 * L, (4 + phi) * L * L, -6 * L, (2 - phi) * L * L],
            [-12, -6 * L, 12, -6 * L],
            [6 * L, (2 - phi) * L * L, -6 * L, (4 + phi) * L * L],
        ]
    )
    K[np.ix_([1, 5, 7, 11], [1, 5, 7, 11])] = bend  # v with rot z = v'
    flip = np.diag([1.0, -1.0, 1.0, -1.0])  # w with rot y = -w'
    K[np.ix_([2, 4, 8, 10], [2, 4, 8, 10])] = flip @ bend @ flip
    return K


@pytest.mark.parametrize("sides", [("end",), ("start", "end")])
def test_the_end_stiffness_of_a_straight_cable_is_the_timoshenko_beam_s(sides):
    """A straight, unloaded cable clamped at both ends: the stiffness its held ends show, condensed from
    the discrete rod's Hessian, is the beam element's to the discretisation error (O(h^2), 1e-4 here)."""
    L = 0.5
    end = {"position": [L, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    h = harness(case(cable(length=L, segments=100, end=end, material=dict(STIFF)), gravity=[0.0, 0.0, 0.0]))
    assert h.solve_step()["W1"].converged
    s = h.cables["W1"]
    K = condensed_end_stiffness(s.model, s.state, list(sides))
    sec = s.model.cable.section
    full = beam_element(L, sec.stretch_stiffness, sec.twist_stiffness, sec.bend_stiffness, sec.shear_stiffness)
    expected = full[6:, 6:] if sides == ("end",) else full
    # compared in units where every diagonal entry is one, so that zero entries are judged fairly
    d = 1.0 / np.sqrt(np.diag(expected))
    np.testing.assert_allclose(d[:, None] * K * d[None, :], d[:, None] * expected * d[None, :], atol=1e-3)


def asymmetric_harness(segments=20):
    """A trunk to a free junction carrying two branches of different length at different angles, one
    rising, under gravity: no symmetry for the condensed stiffness to hide an error in."""
    return case(
        branch("trunk", 0.27, AT_ORIGIN, at("J", [1, 0, 0]), segments),
        branch("left", 0.22, at("J", [1, 1, 0.3]), connector([0.38, 0.14, 0.05], [1, 1, 0]), segments),
        branch("right", 0.3, at("J", [1, -0.6, 0]), connector([0.5, -0.12, 0.0], [1, -0.5, 0]), segments, 0.006),
        junctions=[{"id": "J", "position": [0.25, 0.0, 0.0], "mass": 0.02}],
    )


def test_the_condensed_stiffness_matches_differences_of_branch_re_solves():
    """The junction's 6x6 stiffness from the branches' Hessians against central differences of the force
    and moment its branches pull with as it moves and they are solved again (the reference of earlier
    releases, whose forward differences carried 1e-2 of error here): equal to 1e-4 of its size."""
    h = harness(asymmetric_harness())
    assert all(r.converged for r in h.solve_step().values())
    js = h.junctions
    L = js._length_scale(h)
    exact = js._analytic_stiffness(h, js.frames, L)
    assert exact is not None
    targets = {cid: h.cables[cid].boundary for cid in js.branches}
    ids = list(js.branches)
    kept = snapshot_sessions(h, ids)
    step = 1e-5
    differences = np.zeros((6, 6))
    for c in range(6):
        pulls = []
        for sign in (1.0, -1.0):
            moved = js._moved(js.frames, sign * step * np.eye(6)[c], L)
            ok, message = js._evaluate(h, targets, moved, ids, {"iterations": 0, "solves": 0})
            assert ok, message
            pulls.append(js._scaled(js._branch_gradient(h), L))
            restore_sessions(h, kept)
        differences[:, c] = (pulls[0] - pulls[1]) / (2.0 * step)
    assert np.abs(exact - differences).max() < 1e-4 * np.abs(differences).max()
    assert np.abs(exact - exact.T).max() < 1e-9 * np.abs(exact).max()
    assert np.linalg.eigvalsh(exact)[0] > 0.0


def drag(h, cid, moves):
    """Solve ``h``, then move branch ``cid``'s connector end by each of ``moves`` in turn; the junction's
    positions and the junction iterations of each step."""
    assert all(r.converged for r in h.solve_step().values())
    end = h.cables[cid].boundary.end
    out = []
    for move in moves:
        moved = Frame(end.position + np.asarray(move, float), end.tangent, end.normal)
        reports = h.solve_step({cid: CableChange(end=moved)})
        assert all(r.converged and r.stable for r in reports.values()), [r.message for r in reports.values()]
        out.append((h.junctions.frames.position.copy(), h.junctions.last.iterations))
    return out


def test_warm_steps_predicted_by_the_whole_harness_land_where_the_nested_solve_does(monkeypatch):
    """A leaf dragged in 1 mm steps: the arrow-head Newton step of the whole harness predicts each, and
    one solve of the branches confirms it (one junction iteration); the junction ends where the nested
    solve alone (the prediction switched off) puts it, to the branches' tolerance."""
    moves = [[0.0, 0.0, 0.001 * k] for k in range(1, 6)] + [[0.001 * k, 0.0, 0.005] for k in range(1, 4)]
    predicted = drag(harness(asymmetric_harness(40)), "right", moves)
    monkeypatch.setattr(HarnessNewton, "predict", lambda self, frames, *a: None)
    nested = drag(harness(asymmetric_harness(40)), "right", moves)
    for (p, iterations), (q, nested_iterations) in zip(predicted, nested):
        assert iterations == 1 < nested_iterations
        assert np.abs(p - q).max() < 1e-6 * 0.3


def test_the_prediction_is_refused_where_a_branch_would_reach_an_obstacle():
    """A thin plate (two triangles) 15 mm under the middle of the right branch: a step that lowers its
    connector (beyond the plate) 40 mm would carry the branch through the plate on straight lines, so
    the whole harness's Newton step is not used; the nested solve lays the branch over the plate's
    edge, never through it."""
    height, x0, x1 = -0.015, 0.33, 0.42
    plate = {
        "type": "mesh",
        "vertices": [[x0, -0.3, height], [x1, -0.3, height], [x1, 0.1, height], [x0, 0.1, height]],
        "triangles": [[0, 1, 2], [0, 2, 3]],
    }
    doc = asymmetric_harness(40)
    doc["obstacles"] = [plate]
    h = harness(doc)
    assert all(r.converged for r in h.solve_step().values())
    right = h.cables["right"]
    end = right.boundary.end
    lowered = Frame(end.position + np.array([0.0, 0.0, -0.04]), end.tangent, end.normal)
    targets = {cid: h.cables[cid].boundary for cid in h.junctions.branches}
    targets["right"] = h.changed_boundary("right", CableChange(end=lowered))
    js: JunctionSystem = h.junctions
    assert HarnessNewton(js, h, targets, MAX_MOVE, MAX_TURN).predict(js.frames.copy()) is None
    reports = h.solve_step({"right": CableChange(end=lowered)})
    nodes = h.world_nodes("right")
    over = (nodes[:, 0] > x0) & (nodes[:, 0] < x1)
    # above the plate wherever the branch is over it, whether the step converged or was refused
    assert (nodes[over, 2] > height).all()
    if reports["right"].converged:
        assert right.interactions.contacts(right.state)
