# SPDX-License-Identifier: GPL-3.0-or-later
"""Balance of reactions, invariance, boundary conditions, warm starts, continuation and failure."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, harness, rotation, solve

from solver_core import CableChange, Frame, parse_case
from solver_core.maths.rotations import matrix_from_quat
from solver_core.rod.rod_model import Boundary

HARNESS_CABLE = cable(
    length=0.6,
    segments=60,
    start={"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
    end={"position": [0.35, 0.1, -0.05], "tangent": [0.0, 1.0, 0.0], "normal": [0.0, 0.0, 1.0]},
    clips=[
        {
            "s": 0.15,
            "kind": "fixed",
            "length": 0.012,
            "frame": {"position": [0.12, 0.0, 0.03], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        },
        {
            "s": 0.33,
            "kind": "rotating",
            "length": 0.01,
            "frame": {"position": [0.28, 0.02, 0.0], "tangent": [0.6, 0.8, 0.0]},
        },
        {
            "s": 0.45,
            "kind": "fixed",
            "length": 0.0,
            "frame": {"position": [0.33, 0.0, -0.02], "tangent": [0.0, 1.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        },
    ],
    loads=[{"s": 0.25, "force": [0.0, 0.05, -0.2]}],
)


def _external_loads(doc):
    """Total external force and its moment about the origin, computed from the case alone."""
    c = doc["cables"][0]
    g = np.array(doc["gravity"])
    return np.array(c["loads"][0]["force"]), g


def test_reactions_balance_weight_and_loads():
    doc = case(HARNESS_CABLE)
    result = first(solve(doc))
    assert result["converged"]
    h = harness(doc)
    model = h.cables["W1"].model
    nodes = np.array(result["nodes"])
    load_force, g = _external_loads(doc)
    weight = model.cable.section.linear_density * model.cable.length * g
    holders = [result["end_forces"]["start"], result["end_forces"]["end"], *result["clip_forces"]]
    total_force = sum(np.array(r["force"]) for r in holders)
    assert np.allclose(total_force + weight + load_force, 0.0, atol=1e-7 * np.linalg.norm(weight))
    # moments about the origin: reactions (connector moments act at their points, clip moments at
    # the clip centres) balance gravity on the lumped node masses and the point load
    centres = [nodes[0], nodes[-1]] + [np.array(k["frame"]["position"]) for k in doc["cables"][0]["clips"]]
    moment = sum(np.cross(p, np.array(r["force"])) + np.array(r["moment"]) for p, r in zip(centres, holders))
    moment += np.cross(nodes, model.node_force - _point_load_share(model, load_force)).sum(axis=0)
    s_load = doc["cables"][0]["loads"][0]["s"]
    load_point = np.array([np.interp(s_load, result["arc_lengths"], nodes[:, k]) for k in range(3)])
    moment += np.cross(load_point, load_force)
    assert np.allclose(moment, 0.0, atol=1e-7 * np.linalg.norm(weight) * model.cable.length)


def _point_load_share(model, force):
    share = np.zeros_like(model.node_force)
    load = model.cable.loads[0]
    j = np.searchsorted(model.node_s, load.s, side="right") - 1
    t = (load.s - model.node_s[j]) / model.rest_len[j]
    share[j] += (1 - t) * force
    share[j + 1] += t * force
    return share


def test_held_nodes_and_frames_sit_exactly_where_the_holders_are():
    doc = case(HARNESS_CABLE)
    result = first(solve(doc))
    nodes = np.array(result["nodes"])
    s = np.array(result["arc_lengths"])
    directors = np.array(result["directors"])
    spec = doc["cables"][0]
    assert np.allclose(nodes[0], spec["start"]["position"], atol=1e-12)
    assert np.allclose(nodes[-1], spec["end"]["position"], atol=1e-12)
    for clip in spec["clips"]:
        c = np.array(clip["frame"]["position"])
        t = np.array(clip["frame"]["tangent"])
        t /= np.linalg.norm(t)
        inside = np.abs(s - clip["s"]) <= clip["length"] / 2 + 1e-12
        assert inside.any()
        for k in np.flatnonzero(inside):
            assert np.allclose(nodes[k], c + (s[k] - clip["s"]) * t, atol=1e-12)
        seg_inside = np.flatnonzero(inside[:-1] & inside[1:])
        for i in seg_inside:
            assert np.allclose(directors[i][2], t, atol=1e-9)
            if clip["kind"] == "fixed":
                assert np.allclose(directors[i][0], clip["frame"]["normal"], atol=1e-9)


def test_solution_is_invariant_under_rigid_rotation_of_the_case(rng):
    doc = case(HARNESS_CABLE)
    base = np.array(first(solve(doc))["nodes"])
    R = rotation(rng.normal(size=3), 1.1)
    offset = np.array([2.5, -1.0, 0.7])  # and a CAD-like placement far from the origin

    def move(p):
        return (R @ np.asarray(p) + offset).tolist()

    def turn(v):
        return (R @ np.asarray(v)).tolist()

    moved = case(HARNESS_CABLE, gravity=turn(doc["gravity"]))
    c = moved["cables"][0]
    for frame in [c["start"], c["end"]] + [k["frame"] for k in c["clips"]]:
        frame["position"] = move(frame["position"])
        frame["tangent"] = turn(frame["tangent"])
        if "normal" in frame:
            frame["normal"] = turn(frame["normal"])
    for load in c["loads"]:
        load["force"] = turn(load["force"])
    rotated = np.array(first(solve(moved))["nodes"])
    assert np.abs(rotated - (base @ R.T + offset)).max() <= 1e-8 * c["length"]  # within the solve tolerance


def test_roll_free_end_transmits_no_twisting_moment():
    spec = cable(
        length=0.4, segments=40, end={"position": [0.25, 0.1, 0.0], "tangent": [0.0, 0.0, 1.0]}
    )  # no normal: roll free
    result = first(solve(case(spec)))
    assert result["converged"]
    directors = np.array(result["directors"])
    moment = np.array(result["end_forces"]["end"]["moment"])
    end_tangent = directors[-1][2]
    assert abs(moment @ end_tangent) <= 1e-6 * max(np.linalg.norm(moment), 1e-12) + 1e-9


def test_end_frame_normal_sets_the_roll_of_the_last_segment():
    spec = cable(
        length=0.4,
        segments=40,
        end={"position": [0.3, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 1.0, 0.0]},
    )
    result = first(solve(case(spec, gravity=[0.0, 0.0, 0.0])))
    directors = np.array(result["directors"])
    # a quarter turn of twist between a start normal +z and an end normal +y, uniform along the cable
    d1 = directors[:, 0]
    angles = np.unwrap(np.arctan2(-d1[:, 1], d1[:, 2]))
    assert abs(abs(angles[-1] - angles[0]) - math.pi / 2 * (1 - 1 / 40)) < 0.02


class TestWarmStartAndContinuation:
    def _moved(self, dx, angle_deg):
        # the slow path passes a nearly taut state; the ultimate-length stop is tested elsewhere
        h = harness(case(HARNESS_CABLE, solver={"ultimate_strain": 0.05}))
        h.solve_step()
        end = h.cables["W1"].boundary.end
        R = rotation([0.0, 0.0, 1.0], math.radians(angle_deg))
        frame = Frame(end.position + np.array([dx, 0.0, 0.0]), R @ end.tangent, R @ end.normal)
        return h, CableChange(end=frame)

    def test_small_move_converges_in_a_few_iterations(self):
        h, change = self._moved(0.001, 2.0)
        cold = h.cables["W1"].last_report
        report = h.solve_step({"W1": change})["W1"]
        assert report.converged and report.substeps == 1
        assert report.iterations <= 10 and report.iterations < cold.iterations / 2

    def test_large_move_is_split_into_substeps_and_matches_a_slow_path(self):
        h, change = self._moved(-0.12, 120.0)
        report = h.solve_step({"W1": change})["W1"]
        assert report.converged
        direct = h.cables["W1"].state.positions.copy()
        # the same motion in 24 small steps reaches the same equilibrium
        h2, _ = self._moved(0.0, 0.0)
        end0 = h2.cables["W1"].boundary.end
        for k in range(1, 25):
            R = rotation([0.0, 0.0, 1.0], math.radians(120.0 * k / 24))
            frame = Frame(end0.position + np.array([-0.12 * k / 24, 0, 0]), R @ end0.tangent, R @ end0.normal)
            assert h2.solve_step({"W1": CableChange(end=frame)})["W1"].converged
        assert np.abs(h2.cables["W1"].state.positions - direct).max() < 1e-6

    def test_non_convergence_keeps_the_last_good_state(self):
        doc = case(HARNESS_CABLE, solver={"max_iterations": 1})
        h = harness(doc)
        report = h.solve_step()["W1"]
        assert not report.converged
        assert "last good state" in report.message
        result = h.cable_result("W1")
        assert result["converged"] is False
        assert np.isfinite(np.array(result["nodes"])).all()
        assert np.isfinite(result["energy"])


def test_a_failed_solve_with_the_frames_still_is_tried_once_not_split():
    # With nothing moving, every half of the path is the same problem from the same start: splitting
    # it (as a moving step is split) would fail it 2^depth times over. A moving step is still split.
    from solver_core.solve.equilibrium import MAX_CONTINUATION_DEPTH, solve_equilibrium

    h = harness(case(HARNESS_CABLE))
    h.solve_step()
    session = h.cables["W1"]
    model, state, held = session.model, session.state, session.boundary
    # a new load, too few iterations to carry it (without the pseudo-time descent, which keeps what
    # every one of its steps gains and gets there in 16 iterations of two per call)
    model.node_force[30] += [0.0, 0.0, -2.0]
    still = solve_equilibrium(model, state, held, held, 2, snap_through_rounds=0)
    assert not still.converged and still.substeps == 1
    assert np.array_equal(still.state.positions, state.positions)  # the last good state
    moved = Boundary(
        held.start, Frame(held.end.position + [0.0, 0.0, 0.01], held.end.tangent, held.end.normal), held.clips
    )
    split = solve_equilibrium(model, state, moved, held, 2, snap_through_rounds=0)
    assert not split.converged and split.substeps == MAX_CONTINUATION_DEPTH + 1


def test_roll_free_start_is_a_swivel_the_cable_turns_about():
    # Roll-free start, free end, no fixed clip: the material roll is a gauge freedom (pinned
    # internally), yet the cable must still swing about the start tangent like a swivel: a
    # sideways tip force turns it until gravity balances, and no twisting moment reaches the start.
    spec = cable(start={"position": [0, 0, 0], "tangent": [1, 0, 0]}, loads=[{"s": 0.3, "force": [0, 0.05, 0]}])
    result = first(solve(case(spec)))
    assert result["converged"]
    nodes = np.array(result["nodes"])
    assert nodes[-1][1] > 0.05  # swung sideways
    moment = np.array(result["end_forces"]["start"]["moment"])
    assert abs(moment[0]) <= 1e-7


def test_the_first_guess_of_a_free_end_cable_starts_at_its_connector(monkeypatch):
    # A cable held at its start only: the first centre line runs out of the start connector (and turns
    # to hang where its weight bends it far: rod_state._free_tail), its frames along it. Its first node
    # was once left unset (np.empty): the first frames followed whatever the memory held, NaN at times.
    # Made visible here by filling new arrays with a huge number.
    from solver_core.rod.rod_model import build_rod_model
    from solver_core.rod.rod_state import initial_centerline, initial_state

    def filled(shape, dtype=float, *args, **kwargs):  # integer arrays (indices) get a huge index instead
        return np.full(shape, 1e300 if np.dtype(dtype).kind == "f" else 2**62, dtype, *args, **kwargs)

    monkeypatch.setattr(np, "empty", filled)
    doc = parse_case(case(cable(start={"position": [0.1, 0.2, 0.3], "tangent": [0, 1, 0]})))
    model = build_rod_model(doc.cables[0], doc.gravity, doc.solver.tolerance)
    boundary = Boundary.of(doc.cables[0])
    line = initial_centerline(model, boundary, sag=1.0)
    assert np.all(np.isfinite(line)) and np.allclose(line[0], [0.1, 0.2, 0.3])
    edges = np.diff(line, axis=0)
    assert np.isclose(np.linalg.norm(edges, axis=1).sum(), doc.cables[0].length)
    state = initial_state(model, boundary, sag=1.0)
    tangents = np.array([matrix_from_quat(q)[:, 2] for q in state.quats[: model.n_segments]])
    assert np.allclose(tangents, edges / np.linalg.norm(edges, axis=1)[:, None])
    # the start runs along the connector's tangent: straight out where gravity is off
    doc = parse_case(case(cable(start={"position": [0.1, 0.2, 0.3], "tangent": [0, 1, 0]}), gravity=[0, 0, 0]))
    model = build_rod_model(doc.cables[0], doc.gravity, doc.solver.tolerance)
    line = initial_centerline(model, Boundary.of(doc.cables[0]), sag=1.0)
    assert np.allclose(line[-1] - line[0], [0, doc.cables[0].length, 0])


def test_a_route_is_laid_between_the_holders_span_by_span():
    # A clip at the route's middle, the cable 1.2 times the route: resampled in proportion to the
    # whole length, the clip's node would sit 0.08 m from where the route passes the clip and the
    # segment beside it start stretched by some 300 %; span by span, the first span lies on the first
    # half of the route unstrained and the second takes the slack (compressed uniformly, no sag).
    from solver_core.rod.rod_model import build_rod_model
    from solver_core.rod.rod_state import initial_centerline

    spec = cable(
        length=1.2,
        segments=24,
        start={"position": [0, 0, 0], "tangent": [1, 0, 0]},
        end={"position": [1, 0, 0], "tangent": [1, 0, 0]},
        route=[[0, 0, 0], [1, 0, 0]],
        clips=[{"s": 0.5, "frame": {"position": [0.5, 0, 0], "tangent": [1, 0, 0]}}],
    )
    doc = parse_case(case(spec))
    model = build_rod_model(doc.cables[0], doc.gravity, doc.solver.tolerance)
    line = initial_centerline(model, Boundary.of(doc.cables[0]), sag=0.0)
    strain = np.linalg.norm(np.diff(line, axis=0), axis=1) / model.rest_len - 1.0
    first_span = model.node_s[1:] <= 0.5 + 1e-12
    assert np.abs(strain[first_span]).max() < 1e-12
    assert np.allclose(strain[~first_span], 0.5 / 0.7 - 1.0)
    assert np.allclose(line[np.isclose(model.node_s, 0.5)], [0.5, 0, 0])


def test_several_cables_are_solved_independently():
    a = cable(id="A")
    b = cable(id="B", start={"position": [0, 0.1, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]})
    result = solve(case(a, b))
    na = np.array(result["steps"][0]["cables"]["A"]["nodes"])
    nb = np.array(result["steps"][0]["cables"]["B"]["nodes"])
    assert np.allclose(nb - na, [0, 0.1, 0], atol=1e-7)


def test_steps_are_solved_in_sequence_from_the_previous_result():
    doc = case(HARNESS_CABLE)
    end = doc["cables"][0]["end"]
    doc["steps"] = [
        {"cables": {"W1": {"end": {**end, "position": [0.35, 0.1 + 0.01 * k, -0.05]}}}} for k in range(1, 4)
    ]
    result = solve(doc)
    assert len(result["steps"]) == 4
    for k, step in enumerate(result["steps"]):
        c = step["cables"]["W1"]
        assert c["converged"]
        assert c["nodes"][-1] == pytest.approx([0.35, 0.1 + 0.01 * k, -0.05], abs=1e-12)
    # a warm-started step needs far fewer iterations than the cold first solve
    assert result["steps"][1]["cables"]["W1"]["iterations"] < result["steps"][0]["cables"]["W1"]["iterations"]


def test_free_tail_route_shorter_than_the_cable_is_paid_out():
    # Nothing to sag against beyond the last holder: the compressed guess is relaxed by paying
    # the cable out from the route's own length (continuation over the rest lengths).
    spec = cable(length=0.3, segments=40, route=[[0, 0, 0], [0.1, 0, 0]])
    result = first(solve(case(spec)))
    reference = first(solve(case(cable(length=0.3, segments=40))))
    assert result["converged"] and result["substeps"] > 1
    assert np.abs(np.array(result["nodes"]) - np.array(reference["nodes"])).max() < 1e-7


def test_straight_line_route_shorter_than_the_cable_sags_to_the_same_equilibrium():
    spec = cable(
        length=0.3,
        segments=50,
        start={"position": [0, 0, 0], "tangent": [0, 0, -1], "normal": [1, 0, 0]},
        end={"position": [0.1, 0, 0], "tangent": [0, 0, 1], "normal": [1, 0, 0]},
    )
    guided = first(solve(case(spec)))
    straight = first(solve(case(dict(spec, route=[[0, 0, 0], [0.1, 0, 0]]))))
    assert straight["converged"] and guided["converged"]
    assert np.abs(np.array(straight["nodes"]) - np.array(guided["nodes"])).max() < 1e-7
    assert straight["length"] == pytest.approx(0.3, rel=1e-4)


def test_directors_are_orthonormal_and_d3_follows_the_centre_line():
    result = first(solve(case(HARNESS_CABLE)))
    D = np.array(result["directors"])
    nodes = np.array(result["nodes"])
    for frame in D:
        assert np.allclose(frame @ frame.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(frame) == pytest.approx(1.0, abs=1e-12)
    edges = np.diff(nodes, axis=0)
    edges /= np.linalg.norm(edges, axis=1)[:, None]
    # shear is tiny for a slender cable: d3 and the edge direction agree closely
    assert np.einsum("ij,ij->i", edges, D[:, 2]).min() > 0.9999


def test_bend_radius_of_a_rolled_ring_is_its_radius():
    L, EI = 1.0, 1.0
    spec = cable(
        length=L,
        diameter=0.01,
        segments=60,
        material={"EI": EI, "GJ": 0.8, "EA": 1e6, "GA": 1e6, "linear_density": 1.0},
        loads=[{"s": L, "moment": [0.0, -math.pi * EI / L, 0.0]}],
    )  # half circle
    result = first(solve(case(spec, gravity=[0, 0, 0])))
    assert result["min_bend_radius"] == pytest.approx(L / math.pi, rel=2e-3)


def test_frames_from_quaternions_are_rotations():
    h = harness(case(HARNESS_CABLE))
    h.solve_step()
    for q in h.cables["W1"].state.quats:
        R = matrix_from_quat(q)
        assert np.allclose(R.T @ R, np.eye(3), atol=1e-12)


def test_case_parses_once_and_solves_twice_identically():
    c = parse_case(case(HARNESS_CABLE))
    from solver_core import solve_case

    a = solve_case(c)["steps"][0]["cables"]["W1"]["nodes"]
    b = solve_case(c)["steps"][0]["cables"]["W1"]["nodes"]
    assert a == b


def test_a_failed_step_is_not_tried_again_until_something_changes(monkeypatch):
    # An interactive session asks for the same step on every tick while nothing moves; a step that
    # failed and changed nothing would fail the same way again (the solver is deterministic).
    from solver_core.session import harness as harness_module

    h = harness(case(HARNESS_CABLE, solver={"max_iterations": 1}))
    calls = []
    real = harness_module.solve_equilibrium
    monkeypatch.setattr(harness_module, "solve_equilibrium", lambda *a, **k: calls.append(1) or real(*a, **k))
    first_try = h.solve_step()["W1"]
    assert not first_try.converged and len(calls) == 1
    again = h.solve_step()["W1"]
    assert len(calls) == 1 and not again.converged and again.iterations == 0
    assert first_try.message in again.message and "not tried again" in again.message
    # anything that changes the input is tried: a moved connector, other obstacles
    end = h.cables["W1"].boundary.end
    h.solve_step({"W1": CableChange(end=Frame(end.position + [0.0, 0.0, 0.001], end.tangent, end.normal))})
    assert len(calls) == 2
    from solver_core.contact.obstacles import ObstacleSet

    h.set_obstacles(ObstacleSet(plane_point=np.array([[0.0, 0.0, -1.0]]), plane_normal=np.array([[0.0, 0.0, 1.0]])))
    h.solve_step()
    assert len(calls) == 3


def _lv_arch(segments):
    # the clamped arch of the Lv 2017 cable: 0.3 m, ends 0.2 m apart, tangents up and down
    return case(
        cable(
            length=0.3,
            segments=segments,
            start={"position": [0, 0, 0], "tangent": [0, 0, 1], "normal": [1, 0, 0]},
            end={"position": [0.2, 0, 0], "tangent": [0, 0, -1], "normal": [-1, 0, 0]},
        )
    )


def test_cold_solve_iterations_do_not_grow_with_resolution(monkeypatch):
    # The cold solve walks a long way from its guess; walked on 1000 segments it took 239 Newton
    # iterations against 48 on 100. A finely divided cable is first solved on COARSE_SEGMENTS and
    # refined from there (nested iteration): the same equilibrium, in about as many iterations.
    import solver_core.session.harness as harness_module

    coarse = first(solve(_lv_arch(100)))
    fine = first(solve(_lv_arch(1000)))
    assert coarse["converged"] and fine["converged"]
    assert fine["iterations"] <= 2 * coarse["iterations"]
    # the same shape at the same arc lengths, to the discretisation error of 100 segments
    assert np.abs(np.array(fine["nodes"])[::10] - np.array(coarse["nodes"])).max() < 1e-3 * 0.3
    # and the same equilibrium as the fine cable solved from its own guess
    monkeypatch.setattr(harness_module, "NESTED_MIN_SEGMENTS", 10**9)
    direct = first(solve(_lv_arch(1000)))
    assert direct["converged"]
    assert np.abs(np.array(direct["nodes"]) - np.array(fine["nodes"])).max() < 1e-8


def test_pseudo_time_springs_write_inside_the_band():
    # A proximal spring of pseudo-time is a compliant clip on one node; as such it names a rotation
    # too (with zero stiffness). Its Hessian block spans the node's and that rotation's dofs, so the
    # rotation must be one numbered next to the node, or the writes fall outside the banded matrix.
    from helpers.contact_scenes import crossed_pair

    from solver_core import Harness
    from solver_core.solve.equilibrium import rotations_next_to_nodes
    from solver_core.solve.rod_group import join_models

    clipped = harness(case(HARNESS_CABLE)).cables["W1"].model
    pair = Harness.from_case(parse_case(crossed_pair(0.002, 0.004)))
    a, b = pair.cables["A"], pair.cables["B"]
    group = join_models([a.model, b.model], [a.state, b.state])
    for model in (clipped, group):
        r = rotations_next_to_nodes(model)
        assert r.shape == model.node_dof.shape
        # the 6x6 block of node and rotation: its farthest entry lies within the lower band
        span = np.maximum(model.node_dof, model.rot_dof[r]) + 2 - np.minimum(model.node_dof, model.rot_dof[r])
        assert span.max() <= model.bw
        assert (np.abs(model.rot_dof[r] - model.node_dof) == 3).all()
