# SPDX-License-Identifier: GPL-3.0-or-later
"""The junctions' stiffness from the branches' Hessians (end_stiffness.py) and the whole harness's Newton
step (junction_newton.py): a straight cable's end stiffness against the Timoshenko beam's closed form, a
harness's condensed stiffness against differences of branch re-solves, warm steps predicted by the
arrow-head Newton method against the nested solve alone, and the prediction refused where a branch
would reach an obstacle."""

import numpy as np
import pytest
from helpers.cases import cable, case, harness
from helpers.harnesses import AT_ORIGIN, STIFF, asymmetric_harness, at, branch, connector

from solver_core import CableChange, Frame
from solver_core.junctions.junction_newton import MAX_REPEAT, Curvature, HarnessNewton
from solver_core.junctions.junction_stiffness import ENERGY_RESOLUTION
from solver_core.junctions.junctions import MAX_MOVE, MAX_TURN, JunctionSystem
from solver_core.maths.rotations import axis_angle_matrix, world_turn
from solver_core.solve.end_stiffness import Condensation, condensed_end_stiffness
from solver_core.solve.newton import rod_gradient
from solver_core.solve.sessions import restore_sessions, snapshot_sessions


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


@pytest.mark.parametrize("sides", [("start",), ("end",), ("start", "end")])
def test_the_end_stiffness_of_a_straight_cable_is_the_timoshenko_beam_s(sides):
    """A straight, unloaded cable clamped at both ends: the stiffness its held ends show, condensed from
    the discrete rod's Hessian, is the beam element's to the discretisation error (O(h^2), 1e-4 here);
    at the start alone too, which is condensed in reverse order (end_stiffness.Condensation)."""
    L = 0.5
    end = {"position": [L, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    h = harness(case(cable(length=L, segments=100, end=end, material=dict(STIFF)), gravity=[0.0, 0.0, 0.0]))
    assert h.solve_step()["W1"].converged
    s = h.cables["W1"]
    K = condensed_end_stiffness(s.model, s.state, list(sides))
    sec = s.model.cable.section
    full = beam_element(L, sec.stretch_stiffness, sec.twist_stiffness, sec.bend_stiffness, sec.shear_stiffness)
    expected = {("start",): full[:6, :6], ("end",): full[6:, 6:]}.get(sides, full)
    # compared in units where every diagonal entry is one, so that zero entries are judged fairly
    d = 1.0 / np.sqrt(np.diag(expected))
    np.testing.assert_allclose(d[:, None] * K * d[None, :], d[:, None] * expected * d[None, :], atol=1e-3)


@pytest.mark.parametrize("sides", [("start",), ("end",), ("start", "end")])
def test_a_condensation_is_the_dense_schur_complement(sides):
    """On a bent, loaded branch between two junctions: the condensed stiffness, reduced gradient and free
    dofs' Newton step for a move of the ends (Condensation.reduced) against the dense linear algebra they
    stand for (S = H_hh - H_hf H_ff^-1 H_fh, r = g_h - H_hf H_ff^-1 g_f, df = -H_ff^-1 (g_f + H_fh dh)),
    from the same banded Hessian: equal to 1e-9 of their size, in either order of condensing."""
    from solver_core.solve.end_stiffness import end_dofs, end_map, hessian_band

    h = harness(asymmetric_harness(30))
    assert all(r.converged for r in h.solve_step().values())
    session = h.cables["trunk"] if sides == ("end",) else h.cables["left"]
    if sides == ("start", "end"):
        session = _between_junctions(h)
    model, state = session.model, session.state
    state = state.copy()
    state.positions[1:-1] += 1e-6 * np.sin(np.arange(model.n_nodes - 2))[:, None]  # off balance: g_f != 0
    grad, band = hessian_band(model, state)
    n, bw = model.n_dof, model.bw
    H = np.zeros((n, n))
    for i in range(n):
        for c in range(bw + 1):
            if i - (bw - c) >= 0:
                H[i, i - (bw - c)] = H[i - (bw - c), i] = band[i, c]
    held = np.concatenate([end_dofs(model, side) for side in sides])
    free = np.flatnonzero(~model.fixed.astype(bool))
    H_ff, H_fh = H[np.ix_(free, free)], H[np.ix_(free, held)]
    S = H[np.ix_(held, held)] - H_fh.T @ np.linalg.solve(H_ff, H_fh)
    r = grad[held] - H_fh.T @ np.linalg.solve(H_ff, grad[free])
    J = end_map(model, state, list(sides))
    dy = np.random.default_rng(3).normal(size=held.shape[0])
    df = -np.linalg.solve(H_ff, grad[free] + H_fh @ (J @ dy))
    condensation = Condensation.at(model, state, sides)
    assert condensation is not None
    K, rb, step = condensation.reduced(state, grad)

    def close(a, b):
        return np.abs(a - b).max() <= 1e-9 * np.abs(b).max()

    assert close(K, J.T @ S @ J) and close(rb, J.T @ r) and close(step(dy)[free], df)


def _between_junctions(h):
    """A harness with a branch between two free junctions: the asymmetric one's right branch ending at a
    second junction that sends two leaves on."""
    from helpers.cases import harness as build

    two = asymmetric_harness(30)
    right = next(c for c in two["cables"] if c["id"] == "right")
    right["end"] = at("K", [1, -0.5, 0])
    two["junctions"].append({"id": "K", "position": [0.5, -0.12, 0.0], "mass": 0.01})
    two["cables"].append(branch("k1", 0.15, at("K", [1, 0, 0]), connector([0.64, -0.1, 0.0], [1, 0, 0]), 30))
    two["cables"].append(branch("k2", 0.18, at("K", [1, -1, 0]), connector([0.6, -0.24, 0.0], [1, -1, 0]), 30))
    other = build(two)
    assert all(r.converged for r in other.solve_step().values())
    return other.cables["right"]


def test_the_junctions_energy_does_not_grow_with_where_the_scene_lies():
    """The asymmetric harness as drawn and raised 100 m: the energy the junctions' Newton method judges
    its steps and its balance by (JunctionSystem.energy, against its round-off) is the same size, so
    neither test loosens with the scene's height, and the harness comes to rest at the same place."""
    import copy

    def raised(doc, dz):
        out = copy.deepcopy(doc)
        for c in out["cables"]:
            for side in ("start", "end"):
                if "position" in c[side]:
                    c[side]["position"][2] += dz
        for j in out["junctions"]:
            j["position"][2] += dz
        return out

    results = []
    for dz in (0.0, 100.0):
        h = harness(raised(asymmetric_harness(20), dz))
        assert all(r.converged and r.stable for r in h.solve_step().values())
        js = h.junctions
        results.append((js.energy(h, js.frames), js._energy_scale(h), js.frames.position[0] - [0.0, 0.0, dz]))
    (e0, scale, p0), (e1, _scale, p1) = results
    assert abs(e1 - e0) < 1e-9 * scale and abs(e0) < 10.0 * scale
    assert np.abs(p1 - p0).max() < 1e-8


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


def test_a_branch_started_from_its_linear_response_is_second_order_close_to_its_balance():
    """The junction moved by a small step (a shift and a turn) and every branch solved again: a branch
    started from its linear response to the move (_linear_guesses, from the condensation the stability
    test formed) lies within O(step^2) of where the solve ends (the error falls fourfold as the step
    halves), where the start carried along with its ends lies O(step) off (twofold); so the guess is
    the Newton step it claims to be, and far closer than the carried start."""
    from solver_core.rod.rod_state import carry_boundary_motion

    h = harness(asymmetric_harness(40))
    assert all(r.converged for r in h.solve_step().values())
    js = h.junctions
    L = js._length_scale(h)
    assert js._analytic_stiffness(h, js.frames, L) is not None
    targets = {cid: h.cables[cid].boundary for cid in js.branches}
    ids = list(js.branches)
    kept = snapshot_sessions(h, ids)
    direction = np.array([0.3, -0.2, -0.5, 0.4, 0.2, -0.3])
    errors = {"guess": [], "carried": []}
    for size in (2e-3, 1e-3, 5e-4):
        step = size * direction / np.linalg.norm(direction)
        moved = js._moved(js.frames, step, L)
        guesses = js._linear_guesses(h, targets, moved, step, L)
        assert set(guesses) == set(ids)
        carried = {}
        for cid in ids:
            session = h.cables[cid]
            carried[cid] = session.state.copy()
            carry_boundary_motion(
                session.model, carried[cid], session.boundary, js.branch_boundary(cid, targets[cid], moved)
            )
        ok, message = js._evaluate(h, targets, moved, ids, {"iterations": 0, "solves": 0})
        assert ok, message
        for name, starts in (("guess", guesses), ("carried", carried)):
            errors[name].append(max(np.abs(starts[c].positions - h.cables[c].state.positions).max() for c in ids))
        restore_sessions(h, kept)
    guess, carried = np.array(errors["guess"]), np.array(errors["carried"])
    assert ((guess[:-1] / guess[1:] > 3.5) & (guess[:-1] / guess[1:] < 4.5)).all(), guess
    assert ((carried[:-1] / carried[1:] > 1.7) & (carried[:-1] / carried[1:] < 2.3)).all(), carried
    assert (guess < 0.05 * carried).all()


@pytest.mark.parametrize("fixed", [False, True], ids=["free-junction", "fixed-junction"])
def test_a_renamed_branch_steps_as_it_would_have_under_its_old_name(fixed):
    """A branch renamed after a solve (its Blender object was) and then moved: the step ends where the
    same step of the harness under the old name ends, with what was kept of the branch (its
    condensation, the crossing test's last clear state) carried over or dropped, never misread (the
    crossing test's memory raised KeyError for the new name: found in review)."""
    doc = asymmetric_harness(20)
    doc["junctions"][0]["fixed"] = fixed
    kept, renamed = harness(doc), harness(doc)
    for h in (kept, renamed):
        assert all(r.converged for r in h.solve_step().values())
    renamed.rename_cable("right", "right2")
    for h, cid in ((kept, "right"), (renamed, "right2")):
        end = h.cables[cid].boundary.end
        moved = Frame(end.position + np.array([0.0, 0.0, 0.001]), end.tangent, end.normal)
        reports = h.solve_step({cid: CableChange(end=moved)})
        assert all(r.converged and r.stable for r in reports.values()), [r.message for r in reports.values()]
    np.testing.assert_allclose(renamed.junctions.frames.position, kept.junctions.frames.position, atol=1e-9)
    np.testing.assert_allclose(renamed.world_nodes("right2"), kept.world_nodes("right"), atol=1e-9)


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
    monkeypatch.setattr(HarnessNewton, "predict", lambda self, frames, *a, **k: None)
    nested = drag(harness(asymmetric_harness(40)), "right", moves)
    for (p, iterations), (q, nested_iterations) in zip(predicted, nested):
        assert iterations == 1 < nested_iterations
        assert np.abs(p - q).max() < 1e-6 * 0.3


def first_step_error(h, cid, size, monkeypatch, carry=True):
    """Drag ``cid``'s connector up by ``size`` twice; the largest force out of balance on the branches'
    free dofs (in their tolerances) once the second step's prediction took its first Newton step."""
    if not carry:
        monkeypatch.setattr(HarnessNewton, "_carried", lambda self, curvature, move: 0.0)
    errors = []
    newton_step = HarnessNewton._newton_step

    def recorded(self, states, prescribed=None):
        if prescribed is None and not errors:  # the states the first step reached
            worst = 0.0
            for b, ends in self.ends.items():
                model, st = self.harness.cables[b].model, states[b]
                g = rod_gradient(model, st.positions, st.quats)
                worst = max(worst, float(np.max(np.abs(g[ends.free]) / ends.free_tolerance)))
            errors.append(worst)
        return newton_step(self, states, prescribed)

    assert all(r.converged for r in h.solve_step().values())
    end = h.cables[cid].boundary.end
    for k in (1, 2):
        if k == 2:
            monkeypatch.setattr(HarnessNewton, "_newton_step", recorded)
        moved = Frame(end.position + np.array([0.0, 0.0, size * k]), end.tangent, end.normal)
        reports = h.solve_step({cid: CableChange(end=moved)})
        assert all(r.converged and r.stable for r in reports.values()), [r.message for r in reports.values()]
    monkeypatch.undo()
    return errors[0]


def test_the_last_steps_second_order_term_makes_the_first_steps_error_third_order(monkeypatch):
    """The first Newton step of a drag's step is the harness's linear response to the move: its error
    is of second order in the move (halving the move quarters it). With the last step's second-order
    term carried along (junction_newton.Curvature), of third order (halving the move divides it by
    eight), and smaller."""
    sizes = (0.002, 0.001)
    carried = [first_step_error(harness(asymmetric_harness(40)), "right", s, monkeypatch) for s in sizes]
    linear = [first_step_error(harness(asymmetric_harness(40)), "right", s, monkeypatch, False) for s in sizes]
    assert 3.5 < linear[0] / linear[1] < 4.5
    assert 7.0 < carried[0] / carried[1] < 9.0
    assert carried[1] < 0.2 * linear[1]


def test_a_move_carries_the_last_ones_term_only_along_its_line():
    """The factor of the last step's second-order term a move carries: the square of its length in
    last moves along the same line (a drag), 0 for a move backwards, across, longer than MAX_REPEAT
    last moves, or of other branches."""
    last = {"a": np.array([1.0, 0.0, 0.0]), "b": np.array([0.0, 2.0, 0.0])}
    curvature = Curvature(last, {}, np.zeros(0))
    carried = HarnessNewton._carried
    for factor in (0.5, 1.0, 2.0):
        assert carried(None, curvature, {cid: factor * m for cid, m in last.items()}) == pytest.approx(factor**2)
    across = {"a": np.array([0.0, 1.0, 0.0]), "b": np.array([2.0, 0.0, 0.0])}
    off = {cid: m + 0.2 * across[cid] for cid, m in last.items()}  # 11 degrees off the line
    assert carried(None, curvature, off) == pytest.approx(1.0)
    for move in (
        {cid: -m for cid, m in last.items()},
        across,
        {cid: m + 0.5 * across[cid] for cid, m in last.items()},
        {cid: (MAX_REPEAT + 0.5) * m for cid, m in last.items()},
        {"a": last["a"]},
        {"a": last["a"], "c": last["b"]},
        {cid: 0.0 * m for cid, m in last.items()},
    ):
        assert carried(None, curvature, move) == 0.0
    assert carried(None, None, last) == 0.0


def test_a_restored_harness_forgets_the_second_order_term_of_the_step_undone():
    """The last step's second-order term is part of the harness's checkpoint: a step undone takes its
    term with it, and the next step carries the one from before it."""
    h = harness(asymmetric_harness(20))
    assert all(r.converged for r in h.solve_step().values())
    end = h.cables["right"].boundary.end
    for k in (1, 2):
        moved = Frame(end.position + np.array([0.0, 0.0, 0.001 * k]), end.tangent, end.normal)
        assert all(r.converged for r in h.solve_step({"right": CableChange(end=moved)}).values())
        if k == 1:
            kept, before = h.checkpoint(list(h.cables)), h.junctions.curvature
    assert before is not None and h.junctions.curvature is not before
    h.restore(kept)
    assert h.junctions.curvature is before


def drag_twice(h, cid="right"):
    """Solve ``h`` and drag ``cid``'s connector up 1 mm twice; the junction iterations of each step."""
    assert all(r.converged for r in h.solve_step().values())
    end = h.cables[cid].boundary.end
    out = []
    for k in (1, 2):
        moved = Frame(end.position + np.array([0.0, 0.0, 0.001 * k]), end.tangent, end.normal)
        reports = h.solve_step({cid: CableChange(end=moved)})
        assert all(r.converged and r.stable for r in reports.values()), [r.message for r in reports.values()]
        out.append(h.junctions.last.iterations)
    return out


def test_a_prediction_that_fails_with_the_carried_term_is_made_without_it(monkeypatch):
    """Where the last step's second-order term leads the prediction astray (here: every prediction
    that carried one fails), the step is predicted again from the linear response alone, and one
    junction iteration still confirms it."""
    predict = HarnessNewton.predict
    carried = []

    def failing_when_carried(self, *a, **k):
        out = predict(self, *a, **k)
        carried.append(self.carried)
        return None if self.carried > 0.0 else out

    monkeypatch.setattr(HarnessNewton, "predict", failing_when_carried)
    assert drag_twice(harness(asymmetric_harness(20))) == [1, 1]
    assert carried[-2:] == [1.0, 0.0]  # the second step carried the first's term, then went without


def test_no_second_order_term_is_kept_from_a_step_that_left_its_linear_reach(monkeypatch):
    """A step whose equilibrium lies further from its linear response than the response itself goes
    (a snap, a jump), or whose first step was cut to the junctions' step limits, leaves no term for
    the next step to repeat."""
    curvature = HarnessNewton.step_curvature
    for field, value in (("first_size", 1e-30), ("first_size", None)):

        def shrunk(self, *a, field=field, value=value):
            setattr(self, field, value)
            return curvature(self, *a)

        monkeypatch.setattr(HarnessNewton, "step_curvature", shrunk)
        h = harness(asymmetric_harness(20))
        drag_twice(h)
        assert h.junctions.curvature is None
    monkeypatch.undo()
    h = harness(asymmetric_harness(20))
    drag_twice(h)
    assert h.junctions.curvature is not None


def test_a_renamed_branch_keeps_its_second_order_term():
    """Renaming a branch's cable renames its part of the last step's second-order term: swapping the
    names of two branches of the same segments swaps their terms, not leaves each the other's."""
    h = harness(asymmetric_harness(20))
    drag_twice(h)
    before = h.junctions.curvature
    h.rename_cable("left", "spare")
    h.rename_cable("right", "left")
    h.rename_cable("spare", "right")
    after = h.junctions.curvature
    assert set(after.branches) == set(before.branches)
    for new, old in (("left", "right"), ("right", "left"), ("trunk", "trunk")):
        assert after.branches[new] is before.branches[old] and after.move[new] is before.move[old]


def test_the_world_turn_between_two_frames_is_exact_for_small_turns_too():
    """The rotation vector between two frames, against the one that made them, from 1e-10 to 3 rad."""
    rng = np.random.default_rng(3)
    for angle in (1e-10, 1e-8, 1e-6, 1e-3, 0.5, 3.0):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        start = rng.normal(size=3)
        a = axis_angle_matrix(start / np.linalg.norm(start), 1.0)
        b = axis_angle_matrix(axis, angle) @ a
        np.testing.assert_allclose(world_turn(a, b), angle * axis, rtol=1e-6, atol=1e-15)


def test_a_condensation_stands_for_its_state_to_round_off_only():
    """A branch's condensation serves a state that differs from where it was formed by round-off (a
    frame held at a junction written by another route), never one moved further, another cable's
    model or other ends."""
    h = harness(asymmetric_harness(20))
    assert all(r.converged for r in h.solve_step().values())
    session = h.cables["right"]
    model, state = session.model, session.state
    condensation = Condensation.at(model, state, ["start"])
    assert condensation is not None and condensation.formed_at(model, state, ["start"])
    rounded, moved, turned = state.copy(), state.copy(), state.copy()
    rounded.positions[5] *= 1.0 + 2.0 * np.finfo(float).eps
    rounded.quats[0] = np.nextafter(rounded.quats[0], 2.0)
    moved.positions[5, 2] += 1e-12 * model.cable.length
    turned.quats[3] = np.nextafter(turned.quats[3], 2.0) + 1e-13
    assert condensation.formed_at(model, rounded, ["start"])
    assert not condensation.formed_at(model, moved, ["start"])
    assert not condensation.formed_at(model, turned, ["start"])
    assert not condensation.formed_at(model, state, ["end"])
    assert not condensation.formed_at(h.cables["left"].model, h.cables["left"].state, ["start"])


def test_a_predicted_step_condenses_each_branch_twice(monkeypatch):
    """A drag's step, predicted by the whole harness's Newton method from the last step's condensations
    and confirmed: each branch's Hessian is condensed once for the second Newton step and once where
    the prediction ends, which the confirmation's stability test uses; none is formed again."""
    h = harness(asymmetric_harness(20))
    moves = [[0.0, 0.0, 0.001 * k] for k in range(1, 4)]
    counts = [0]  # the cold solve's, then each step's
    at = Condensation.at.__func__

    def counted(cls, *a, **k):
        counts[-1] += 1
        return at(cls, *a, **k)

    monkeypatch.setattr(Condensation, "at", classmethod(counted))
    assert all(r.converged for r in h.solve_step().values())
    end = h.cables["right"].boundary.end
    for move in moves:
        counts.append(0)
        moved = Frame(end.position + np.asarray(move), end.tangent, end.normal)
        reports = h.solve_step({"right": CableChange(end=moved)})
        assert all(r.converged and r.stable for r in reports.values())
        assert h.junctions.last.iterations == 1
    assert counts[2:] == [2 * len(h.junctions.branches)] * (len(moves) - 1)  # after the first: carried


def test_a_predicted_branch_is_confirmed_by_its_balance_and_its_condensation(monkeypatch):
    """Where the prediction ends, every branch's condensation shows its free block positive definite, so
    the solve that confirms a branch checks its balance alone (solve_equilibrium's ``stable_start``): no
    Newton kernel runs in a warm step after the first, and the harness ends bit for bit where the
    kernel's own confirmation (balance, then its stability test) puts it."""
    import solver_core.solve.equilibrium as equilibrium

    moves = [[0.0, 0.0, 0.001 * k] for k in range(1, 5)]
    kernel_calls = [0]
    minimise = equilibrium._minimise

    def counted(*a, **k):
        kernel_calls[0] += 1
        return minimise(*a, **k)

    monkeypatch.setattr(equilibrium, "_minimise", counted)
    h = harness(asymmetric_harness(20))
    assert all(r.converged for r in h.solve_step().values())
    end = h.cables["right"].boundary.end
    states = []
    for k, move in enumerate(moves):
        kernel_calls[0] = 0
        reports = h.solve_step(
            {"right": CableChange(end=Frame(end.position + np.asarray(move), end.tangent, end.normal))}
        )
        assert all(r.converged and r.stable for r in reports.values())
        if k > 0:
            assert kernel_calls[0] == 0
        states.append({cid: h.cables[cid].state.positions.copy() for cid in h.junctions.branches})
    monkeypatch.setattr(JunctionSystem, "_stable_starts", lambda self, harness, ids: frozenset())
    h = harness(asymmetric_harness(20))
    assert all(r.converged for r in h.solve_step().values())
    for k, move in enumerate(moves):
        kernel_calls[0] = 0
        reports = h.solve_step(
            {"right": CableChange(end=Frame(end.position + np.asarray(move), end.tangent, end.normal))}
        )
        assert all(r.converged and r.stable for r in reports.values())
        assert kernel_calls[0] == len(h.junctions.branches)
        for cid, positions in states[k].items():
            assert np.array_equal(h.cables[cid].state.positions, positions)


def test_a_stable_start_is_solved_as_any_other_unless_it_is_balanced_and_held_still():
    """solve_equilibrium's ``stable_start`` on a single cable: its own equilibrium, held still, is
    converged at once (no iteration, stable); the same start off balance by 1e-4 of its length, or with
    a holder moved, is solved by the Newton kernel as without the promise, to the same equilibrium."""
    from solver_core.rod.rod_model import Boundary
    from solver_core.solve.equilibrium import solve_equilibrium

    L = 0.4
    end = {"position": [0.3, 0.0, 0.05], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    h = harness(case(cable(length=L, segments=30, end=end, material=dict(STIFF))))
    assert h.solve_step()["W1"].converged
    s = h.cables["W1"]
    model, state, boundary = s.model, s.state, s.boundary
    condensation = Condensation.at(model, state, [])
    assert condensation is not None and condensation.proves_stable(model, state)
    assert not Condensation.at(model, state, [], geometric=0.0).proves_stable(model, state)

    def solve(start, target, stable_start):
        return solve_equilibrium(model, start, target, boundary, interactions=s.interactions, stable_start=stable_start)

    held = solve(state, boundary, True)
    assert held.converged and held.stable and held.iterations == 0
    assert np.array_equal(held.state.positions, solve(state, boundary, False).state.positions)
    off = state.copy()
    off.positions[1:-1, 2] += 1e-4 * L * np.sin(np.linspace(0.0, np.pi, model.n_nodes - 2))
    moved_end = Frame(boundary.end.position + np.array([0.0, 0.0, 0.002]), boundary.end.tangent, boundary.end.normal)
    moved = Boundary(boundary.start, moved_end, boundary.clips)
    for start, target in ((off, boundary), (state, moved)):
        promised, plain = solve(start, target, True), solve(start, target, False)
        assert promised.converged and promised.stable and promised.iterations > 0
        assert np.array_equal(promised.state.positions, plain.state.positions)


def test_the_prediction_is_refused_where_a_branch_would_reach_an_obstacle(monkeypatch):
    """A thin plate (two triangles) under the right branch near its connector, clear of it by more than a
    reach: a step that lowers the connector 20 mm is predicted (nothing within reach at the start), but
    the prediction, which knows no contact, carries the branch through the plate on straight lines, so
    it is refused (_stays_clear) and the nested solve lays the branch onto the plate, never through it."""
    height, x0, x1 = -0.02, 0.43, 0.49
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
    assert not right.interactions.contacts(right.state)
    end = right.boundary.end
    lowered = Frame(end.position + np.array([0.0, 0.0, -0.02]), end.tangent, end.normal)
    targets = {cid: h.cables[cid].boundary for cid in h.junctions.branches}
    targets["right"] = h.changed_boundary("right", CableChange(end=lowered))
    js: JunctionSystem = h.junctions
    newton = HarnessNewton(js, h, targets, MAX_MOVE, MAX_TURN, ENERGY_RESOLUTION)
    assert newton.usable()
    verdicts = []
    clear = HarnessNewton._stays_clear
    monkeypatch.setattr(
        HarnessNewton, "_stays_clear", lambda self, *a: verdicts.append(clear(self, *a)) or verdicts[-1]
    )
    assert newton.predict(js.frames.copy()) is None
    assert verdicts == [False]
    monkeypatch.undo()
    reports = h.solve_step({"right": CableChange(end=lowered)})
    nodes = h.world_nodes("right")
    over = (nodes[:, 0] > x0) & (nodes[:, 0] < x1)
    # above the plate wherever the branch is over it, whether the step converged or was refused
    assert over.any() and (nodes[over, 2] > height).all()
    if reports["right"].converged:
        assert right.interactions.contacts(right.state)


@pytest.mark.parametrize("size", [0.0001, 0.003, 0.02, 0.06, 0.1])
def test_a_step_of_any_size_ends_where_the_nested_solve_ends_or_fails_as_it_does(size, monkeypatch):
    """A leaf's connector jerked by 0.1 mm to 100 mm in one step, up and sideways (at 100 mm further
    than the leaf reaches from where its junction started): where the whole harness's Newton method
    cannot follow (its first step from the last equilibrium is the linear response alone) the step is
    split and the nested solve takes over; the step ends converged exactly where the nested solve
    alone ends it, or fails as that does, with the harness put back."""
    move = size * np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])

    def jerk():
        h = harness(asymmetric_harness(40))
        assert all(r.converged for r in h.solve_step().values())
        before = {cid: h.world_nodes(cid).copy() for cid in h.cables}
        end = h.cables["left"].boundary.end
        reports = h.solve_step({"left": CableChange(end=Frame(end.position + move, end.tangent, end.normal))})
        converged = all(r.converged for r in reports.values())
        if not converged:  # shown as a failure, with the last valid state kept
            assert not any(r.converged for r in reports.values())
            for cid in h.cables:
                np.testing.assert_array_equal(h.world_nodes(cid), before[cid])
        return converged, h.junctions.frames.position.copy()

    with_prediction = jerk()
    monkeypatch.setattr(HarnessNewton, "predict", lambda self, frames, *a, **k: None)
    nested = jerk()
    assert with_prediction[0] == nested[0]
    if nested[0]:
        assert np.abs(with_prediction[1] - nested[1]).max() < 1e-6 * 0.3


def chain_harness(fixed_second=False, segments=24):
    """A trunk to J1, a branch on to J2, a leaf from J1 and two from J2: two junctions coupled through a
    branch held at both ends by junctions; J2 free or fixed."""
    j1, j2 = [0.25, 0.0, 0.0], [0.5, 0.05, 0.0]
    return case(
        branch("trunk", 0.27, AT_ORIGIN, at("J1", [1, 0, 0]), segments),
        branch("middle", 0.27, at("J1", [1, 0.2, 0]), at("J2", [1, 0.2, 0]), segments, 0.005),
        branch("leaf1", 0.24, at("J1", [0.8, -1, 0]), connector([0.4, -0.18, 0.0], [0.6, -1, 0]), segments),
        branch("leaf2", 0.28, at("J2", [1, 0.8, 0]), connector([0.7, 0.2, 0.0], [1, 0.7, 0]), segments),
        branch("leaf3", 0.3, at("J2", [1, -0.5, 0]), connector([0.77, -0.08, 0.0], [1, -0.4, 0]), segments),
        junctions=[
            {"id": "J1", "position": j1, "mass": 0.01},
            {"id": "J2", "position": j2, "mass": 0.01, "fixed": fixed_second},
        ],
    )


def turned(frame, angle, axis=(0.0, 0.0, 1.0)):
    """``frame`` moved 2 mm up and turned by ``angle`` about ``axis``."""
    from helpers.cases import rotation

    R = rotation(axis, angle)
    normal = None if frame.normal is None else R @ frame.normal
    return Frame(frame.position + np.array([0.0, 0.0, 0.002]), R @ frame.tangent, normal)


def steps_of(h, changes):
    """Solve ``h``, then each of ``changes`` (a function of the harness giving solve_step's arguments);
    every junction's position after each step and the junction iterations it took."""
    assert all(r.converged for r in h.solve_step().values())
    out = []
    for change in changes:
        reports = h.solve_step(**change(h))
        assert all(r.converged and r.stable for r in reports.values()), [r.message for r in reports.values()]
        out.append((h.junctions.frames.position.copy(), h.junctions.last.iterations))
    return out


@pytest.mark.parametrize("fixed_second", [False, True])
def test_predicted_steps_agree_with_the_nested_solve_on_a_chain_of_junctions(fixed_second, monkeypatch):
    """Two junctions joined by a branch held at both ends: a leaf's connector raised and turned 3
    degrees a step, and (J2 fixed) J2 itself moved and turned by a step of its own. Predicted steps
    end where the nested solve alone ends them, to the branches' tolerance."""
    from solver_core import JunctionMove

    def change(k):
        def make(h):
            if fixed_second:
                R = rotation_about_z(np.radians(3.0 * k))
                return {"junction_moves": {"J2": JunctionMove(np.array([0.5, 0.05, 0.002 * k]), R)}}
            end = h.cables["leaf2"].boundary.end
            return {"changes": {"leaf2": CableChange(end=turned(end, np.radians(3.0)))}}

        return make

    changes = [change(k) for k in range(1, 5)]
    used = []
    predict = HarnessNewton.predict
    monkeypatch.setattr(HarnessNewton, "predict", lambda self, *a, **k: used.append(predict(self, *a, **k)) or used[-1])
    predicted = steps_of(harness(chain_harness(fixed_second)), changes)
    assert sum(p is not None for p in used) >= len(changes)  # every step was predicted
    monkeypatch.setattr(HarnessNewton, "predict", lambda self, frames, *a, **k: None)
    nested = steps_of(harness(chain_harness(fixed_second)), changes)
    for (p, _i), (q, _j) in zip(predicted, nested):
        assert np.abs(p - q).max() < 1e-6 * 0.3


def rotation_about_z(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
