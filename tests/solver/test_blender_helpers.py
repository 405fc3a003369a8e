# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blender layer's bpy-free helpers, tested without Blender: following fast colliders
(cable_harness/follow.py), curve tilts from the solver's directors (scene_model.point_tilts) and the
report's maxima over a bake log (report.py), each against a reference worked out by hand."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.blender_free import layer_module

follow = layer_module("follow")
scene_model = layer_module("scene_model")
report = layer_module("report")
TESTS = Path(__file__).resolve().parents[1]


# the Blender layer's modules that must not need Blender (they are imported here, and in scripts)
BPY_FREE = ("follow", "scene_model", "report", "overlay_data", "variation_study", "dependencies")


def test_the_helpers_import_without_bpy():
    # in a fresh interpreter: this process may hold bpy from other tests run with it
    code = (
        "import sys\n"
        "from helpers.blender_free import layer_module\n"
        f"for name in {BPY_FREE!r}:\n"
        "    layer_module(name)\n"
        "assert 'bpy' not in sys.modules, 'bpy was imported'\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(TESTS.parent)]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("move_radii", "steps"),
    [(0.0, 1), (0.1, 1), (0.4, 1), (0.41, 2), (4.0, 10), (4.01, 11), (100.0, 250)],
)
def test_a_collider_move_is_followed_in_steps_of_at_most_the_follow_fraction_of_a_radius(move_radii, steps):
    radius = 0.002
    assert follow.steps_needed(move_radii * radius, radius) == steps
    # each step moves the collider no further than FOLLOW_MOVE radii
    assert move_radii / steps <= follow.FOLLOW_MOVE + 1e-12


def test_box_corners_placed_and_their_largest_move():
    box = np.array([[x, y, z] for x in (0.0, 1.0) for y in (0.0, 2.0) for z in (0.0, 3.0)])
    turn = np.array([[0.0, -1.0, 0.0, 5.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    placed = follow.world_corners(box, turn)
    # a quarter turn about z maps (x, y, z) to (-y, x, z), then 5 m along x
    assert np.allclose(placed, np.column_stack((5.0 - box[:, 1], box[:, 0], box[:, 2])))
    # corner (1, 2, z) goes to (3, 1, z): the farthest, sqrt(4 + 1)
    assert follow.largest_move(box, placed) == pytest.approx(max(np.linalg.norm(placed - box, axis=1)))
    assert follow.largest_move(box, box) == 0.0


def _frames(tangents, roll):
    """Per segment (d1, d2, d3): d3 the tangent, d1 rolled by ``roll`` (rad) about it from the in-plane
    normal of a curve in the x-z plane."""
    out = []
    for t, a in zip(tangents, roll):
        t = t / np.linalg.norm(t)
        n = np.cross([0.0, 1.0, 0.0], t)
        b = np.cross(t, n)
        d1 = math.cos(a) * n + math.sin(a) * b
        out.append(np.array([d1, np.cross(t, d1), t]))
    return np.array(out)


def test_point_tilts_follow_a_uniform_twist_of_a_straight_cable():
    twist = 0.1  # rad per segment
    segments = 12
    directors = _frames([np.array([0.0, 0.0, 1.0])] * segments, twist * np.arange(segments))
    tilts = scene_model.point_tilts(directors)
    # per segment 0, 0.1, ... ; a node between two segments takes their mean, the ends their segment's
    expected = np.concatenate(([0.0], twist * (np.arange(segments - 1) + 0.5), [twist * (segments - 1)]))
    assert np.allclose(tilts, expected)


def test_a_cable_bent_in_a_plane_without_twist_has_no_tilt():
    angles = np.linspace(0.0, 0.9 * math.pi, 20)
    tangents = [np.array([math.cos(a), 0.0, math.sin(a)]) for a in angles]
    tilts = scene_model.point_tilts(_frames(tangents, np.zeros(len(angles))))
    assert np.abs(tilts).max() < 1e-12


def test_report_takes_each_worst_value_and_the_frame_it_occurs_in():
    info = {
        "rest_length": 1.0,
        "diameter": 0.004,
        "allowed_bend_radius": 0.02,
        "holders": [{"key": "start", "object": "A", "kind": "connector"}],
    }

    def record(frame, radius, gap, force):
        return {
            "frame": frame,
            "converged": True,
            "length": 1.0,
            "min_bend_radius": radius,
            "min_bend_radius_s": 0.5,
            "clearance": gap,
            "clearance_s": 0.25,
            "forces": {"start": force},
        }

    records = [record(1, 0.05, 0.01, 2.0), record(2, 0.015, None, 7.5), record(3, 0.03, 0.002, 3.0)]
    summary = report.cable_summary("W1", info, records)
    assert (summary["min_bend_radius"], summary["min_bend_radius_frame"]) == (0.015, 2)
    assert summary["bend_radius_ok"] is False  # 15 mm < 20 mm allowed
    assert (summary["min_clearance"], summary["min_clearance_frame"]) == (0.002, 3)
    assert summary["peak_forces"][0]["peak_force"] == 7.5 and summary["peak_forces"][0]["frame"] == 2


def test_report_takes_nothing_from_frames_that_did_not_converge():
    info = {
        "rest_length": 1.2,
        "diameter": 0.004,
        "allowed_bend_radius": 0.0,
        "holders": [{"key": "end", "object": "B", "kind": "connector"}],
    }
    good = {
        "frame": 1,
        "converged": True,
        "length": 1.2,
        "min_bend_radius": 0.05,
        "clearance": 0.01,
        "forces": {"end": 3.0},
    }
    # a frame whose solve failed, as an older bake logged it: with the held state's measurements
    bad = {
        "frame": 2,
        "converged": False,
        "length": 1.468,
        "min_bend_radius": 0.001,
        "clearance": -0.02,
        "forces": {"end": 16509.8},
    }
    summary = report.cable_summary(
        "W1", info, [good, bad, {"frame": 3, "converged": False, "message": "no equilibrium"}]
    )
    assert summary["peak_forces"][0]["peak_force"] == 3.0 and summary["peak_forces"][0]["frame"] == 1
    assert summary["min_bend_radius"] == 0.05 and summary["min_clearance"] == 0.01 and summary["length"] == 1.2
    assert summary["frames_not_converged"] == [2, 3] and summary["frames"] == 3
    rows = list(report.csv_rows({"cables": [summary]}))
    assert rows[-1]["ok"] is False and rows[-1]["where"] == "2 3"
    assert "NOT CONVERGED at frames [2, 3]" in report.summary_text({"cables": [summary]})


def test_the_bill_of_materials_lists_every_wire_with_its_connectors_and_length_to_cut():
    base = {"diameter": 0.004, "allowed_bend_radius": 0.0, "holders": []}
    log = {
        "format": report.LOG_FORMAT,
        "cables": {
            "trunk": {
                **base,
                "rest_length": 0.8,
                "material": "lv2017_harness",
                "from": "J1",
                "to": "ECU",
                "wires": [
                    {"diameter": 0.0016, "material": "pvc_wire", "count": 12},
                    {"diameter": 0.001, "material": "CUSTOM", "count": 3},
                ],
            },
            "power": {**base, "rest_length": 0.5, "material": "pvc_wire", "from": "PSU", "to": ""},  # an older log
        },
        "frames": {"trunk": [{"frame": 1, "converged": True, "forces": {}}], "power": [{"frame": 1, "forces": {}}]},
    }
    out = report.harness_report(log)
    bill = out["bill_of_materials"]
    assert [(w["wire"], w["count"], w["from"], w["to"]) for w in bill] == [
        ("power", 1, "PSU", ""),
        ("trunk.1", 12, "J1", "ECU"),
        ("trunk.2", 3, "J1", "ECU"),
    ]
    assert [w["length"] for w in bill] == [0.5, 0.8, 0.8] and bill[1]["total_length"] == pytest.approx(9.6)
    rows = list(report.bill_rows(out))
    assert rows[1]["quantity"] == "wire trunk.1: 12 x 1.60 mm pvc_wire" and rows[0]["where"] == "PSU to (free end)"
    assert "wires: 16 in 3 kinds, 12.500 m in all" in report.summary_text(out)


def test_a_wire_with_an_id_is_billed_once_through_the_junctions_of_its_branches():
    """Trunk PSU -> J1, branches J1 -> ECU and J1 -> J2 -> LAMP: W1 on trunk, mid and leaf runs from PSU
    to LAMP cut to the three lengths; W2 listed on the trunk only ends inside J1: its row says so and
    has no length; the wire without an id stays its cable's row."""

    def branch(length, start, end, ids, start_j=None, end_j=None):
        wires = [{"diameter": 0.0016, "material": "pvc_wire", "count": 1, **({"id": i} if i else {})} for i in ids]
        return {"diameter": 0.004, "allowed_bend_radius": 0.0, "holders": [], "rest_length": length,
                "material": "pvc_wire", "from": start, "to": end, "from_junction": start_j, "to_junction": end_j,
                "wires": wires}  # fmt: skip

    log = {
        "format": report.LOG_FORMAT,
        "cables": {
            "trunk": branch(0.5, "PSU", "J1", ["W1", "W2", None], end_j="J1"),
            "ecu": branch(0.25, "J1", "ECU", [None], start_j="J1"),
            "mid": branch(0.125, "J2", "J1", ["W1"], start_j="J2", end_j="J1"),  # drawn the other way round
            "leaf": branch(0.0625, "J2", "LAMP", ["W1"], start_j="J2"),
        },
        "frames": {name: [] for name in ("trunk", "ecu", "mid", "leaf")},
    }
    bill = {w["wire"]: w for w in report.bill_of_materials(log)}
    assert set(bill) == {"W1", "W2", "trunk.3", "ecu"}
    w1 = bill["W1"]
    assert (w1["from"], w1["to"], w1["cable"]) == ("LAMP", "PSU", "leaf > mid > trunk")
    assert w1["length"] == 0.5 + 0.125 + 0.0625 and "problem" not in w1
    assert bill["W2"]["length"] is None and "ends inside junction 'J1'" in bill["W2"]["problem"]
    rows = [r for r in report.bill_rows({"bill_of_materials": list(bill.values())}) if r.get("ok") is False]
    assert len(rows) == 1 and "W2" in rows[0]["quantity"]
    assert "wire W2: NOT ROUTED" in report.summary_text({"cables": [], "bill_of_materials": list(bill.values())})


def test_solver_messages_are_put_in_the_panels_words_and_the_scenes_unit():
    text = "cable 'power'.clips[0].s = 0.184066 m (with length 0.01 m) lies outside the cable's interior, 0 to 0.15 m"
    assert scene_model.plain_message(text, 0.001) == (
        "cable 'power': clip 1 at Arc Length 184.066 mm (clip Length 10 mm) lies outside the cable, 0 to 150 mm; "
        "set its Arc Length in the Clips list within the cable, or lengthen the cable"
    )
    reach = "step: start and end of cable 'W' are 0.6 m apart but the cable is only 0.33 m long"
    assert scene_model.plain_message(reach, 0.01) == (
        "step: start and end of cable 'W' are 60 cm apart but the cable is only 33 cm long"
    )
    assert scene_model.plain_message(reach, 1.0) == reach
    assert scene_model.plain_message("step: clips[1] and end of cable 'W' are 0.2 m apart", 0.001) == (
        "step: clip 2 and end of cable 'W' are 200 mm apart"
    )
    assert scene_model.plain_message("cable 'W'.diameter must be positive, got 0", 1.0) == (
        "cable 'W' diameter must be positive, got 0"
    )
    assert scene_model.plain_message("cable 'W'.end.position[0] must be a finite number", 1.0) == (
        "cable 'W'.end.position[0] must be a finite number"
    )


overlay_data = layer_module("overlay_data")


def test_bend_use_is_allowed_over_actual_radius_per_point():
    # joints at s = 1, 2, 3 of a cable with points at 0..4: straight, 50 mm, 20 mm; allowed 10 mm
    use = overlay_data.bend_utilisation([None, 0.05, 0.02], [1.0, 2.0, 3.0], [0.0, 1.0, 1.5, 2.0, 3.0, 4.0], 0.01)
    assert np.allclose(use, [0.0, 0.0, 0.1, 0.2, 0.5, 0.5])
    # no allowed radius: relative to the cable's own tightest bend
    relative = overlay_data.bend_utilisation([None, 0.05, 0.02], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 0.0)
    assert np.allclose(relative, [0.0, 0.4, 1.0])
    colours = overlay_data.ramp_colours([0.0, 1.0, 3.0])
    assert np.allclose(colours[0], overlay_data.RAMP[0][1]) and np.allclose(colours[2], overlay_data.RAMP[-1][1])


def test_force_arrows_and_dashes_have_the_lengths_asked_for():
    arrows = overlay_data.force_arrows([[0, 0, 0], [1, 0, 0]], [[0, 0, -2.0], [3.0, 4.0, 0]], 0.1)
    assert np.allclose(arrows, [[0, 0, 0], [0, 0, -0.2], [1, 0, 0], [1.3, 0.4, 0]])
    d = overlay_data.dashes([0, 0, 0], [1.0, 0, 0], 0.1).reshape(-1, 2, 3)
    assert len(d) == 5 and np.allclose(d[:, 1, 0] - d[:, 0, 0], 0.1) and d[-1, 1, 0] <= 1.0


def test_a_cable_overlay_puts_arrows_at_its_holders_and_a_failed_one_is_red_with_gaps():
    result = {
        "nodes": [[0, 0, 0], [0.1, 0, -0.05], [0.2, 0, 0]],
        "arc_lengths": [0.0, 0.1118, 0.2236],
        "length": 0.2236,
        "bend_radii": [0.08],
        "bend_radius_s": [0.1118],
        "end_forces": {"start": {"force": [1.0, 0, 0]}, "end": {"force": [-1.0, 0, 0]}},
        "clip_forces": [{"force": [0, 0, 2.0]}],
        "contacts": [{"point": [0.1, 0, -0.052]}],
    }
    shown = overlay_data.cable_overlay(result, 0.001, 0.04, 0.01, [0.1118])  # a millimetre scene
    assert np.allclose(shown["points"][1], [100.0, 0.0, -50.0])
    assert np.allclose(shown["utilisation"], [0.5, 0.5, 0.5])
    arrows = shown["arrows"].reshape(-1, 2, 3)
    assert np.allclose(arrows[0], [[0, 0, 0], [10.0, 0, 0]])  # 1 N x 10 mm/N
    assert np.allclose(arrows[2][0], [100.0, 0.0, -50.0], atol=1e-6) and np.allclose(
        arrows[2][1] - arrows[2][0], [0, 0, 20.0]
    )
    assert np.allclose(shown["contacts"], [[100.0, 0.0, -52.0]])
    failed = overlay_data.mark_failed(shown, [(shown["points"][-1], np.array([260.0, 0.0, 0.0]))], 8.0)
    assert failed["failed"] and np.allclose(failed["colours"], overlay_data.FAILED)
    assert len(failed["arrows"]) == 0  # a state that is no equilibrium loads no holder
    gap = failed["gap"].reshape(-1, 2, 3)
    assert len(gap) == 4 and np.allclose(gap[0][0], [200.0, 0, 0]) and gap[-1][1][0] <= 260.0


def test_a_junctions_peak_push_by_obstacles_comes_from_converged_frames_only():
    records = [
        {"frame": 1, "converged": True, "fixed": False, "position": [0.0, 0.0, 0.0], "pulls": {"a (end)": 1.0}},
        {"frame": 2, "converged": True, "fixed": False, "position": [0.0, 0.0, -0.01], "pulls": {"a (end)": 2.0},
         "push": 0.7},
        {"frame": 3, "converged": False, "fixed": False},
        {"frame": 4, "converged": True, "fixed": False, "position": [0.0, 0.0, -0.01], "pulls": {"a (end)": 1.5},
         "push": 0.4},
    ]  # fmt: skip
    j = report.junction_summary("J1", records)
    assert (j["peak_push"], j["peak_push_frame"]) == (0.7, 2) and j["frames_not_converged"] == [3]
    assert (j["peak_pull"], j["peak_pull_frame"]) == (2.0, 2)
    rows = list(report.junction_rows({"junctions": [j]}))
    assert {"cable": "junction J1", "quantity": "peak push by obstacles", "value": 0.7, "unit": "N", "frame": 2} in rows
    assert "peak push 0.700 N, frame 2" in report.summary_text({"cables": [], "junctions": [j]})
    clear = report.junction_summary("J2", [{**records[0], "push": 0.0}])  # never touched: no push row
    assert clear["peak_push"] == 0.0 and not any(
        "push" in r["quantity"] for r in report.junction_rows({"junctions": [clear]})
    )


def test_a_missing_or_old_numba_is_said_in_one_sentence_with_the_version_needed():
    dependencies = layer_module("dependencies")
    missing = dependencies.numba_problem(None, python="/opt/blender/python3.10")
    assert missing.startswith("Cable Harness needs numba 0.56 or newer, which Blender's Python does not have")
    assert "/opt/blender/python3.10 -m pip install 'numba>=0.56'" in missing and "\n" not in missing
    old = dependencies.numba_problem("0.55.2")
    assert "has numba 0.55.2" in old and "Blender 4.2 or newer" in old
    for fine in ("0.56.4", "0.68.1", "1.0.0rc1", "0.60.0+dfsg"):
        assert dependencies.numba_problem(fine) is None, fine


def test_the_report_is_in_si_everywhere_and_says_so():
    # report.json and report.csv carry metres and newtons whatever the scene's unit: so do its text and
    # plots (they showed millimetres), and the files name their units
    info = {"rest_length": 0.45, "diameter": 0.004, "allowed_bend_radius": 0.02, "holders": []}
    record = {
        "frame": 1,
        "converged": True,
        "length": 0.45,
        "min_bend_radius": 0.0123,
        "clearance": 0.0031,
        "forces": {},
    }
    summary = report.cable_summary("W1", info, [record])
    text = report.summary_text({"cables": [summary]})
    assert "length 0.45 m, min bend radius 0.0123 m" in text and "min clearance 0.0031 m" in text
    assert " mm" not in text
    log = {"format": report.LOG_FORMAT, "cables": {"W1": info}, "frames": {"W1": [record]}}
    out = report.harness_report(log)
    assert out["units"] == {"length": "m", "force": "N"}
    assert report.PLOT_LENGTH_LABEL == "m"
