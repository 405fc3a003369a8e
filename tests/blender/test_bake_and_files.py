# SPDX-License-Identifier: GPL-3.0-or-later
"""Baking, playback without the extension, save and reload, undo."""

import json
import os
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
from helpers.blender_scenes import StandIn, StandInEvent, curve_world_points, place, simple_harness

ROOT = Path(__file__).resolve().parents[2]

PLAYBACK = """
import json, sys
import bpy
import numpy as np
import addon_utils
bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
enabled = [m for m in bpy.context.preferences.addons.keys() if "cable_harness" in m]
ob = bpy.data.objects["Cable"]
out = {"enabled": enabled, "has_props": hasattr(ob, "cable_harness"), "frames": {}}
for f in (1, 8, 13, 24):
    bpy.context.scene.frame_set(f)
    dg = bpy.context.evaluated_depsgraph_get()
    pts = ob.evaluated_get(dg).data.splines[0].points
    co = np.empty(len(pts) * 4, dtype=np.float32)
    pts.foreach_get("co", co)
    out["frames"][f] = co.reshape(-1, 4)[:, :3].tolist()
print("RESULT" + json.dumps(out))
"""


def _moving_end_scene():
    start, end, clip, cable = simple_harness()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    end.keyframe_insert("location", frame=1)
    place(end, (0.33, 0.03, 0.01), 1.0)
    end.keyframe_insert("location", frame=24)
    return start, end, clip, cable


def test_bake_keys_every_frame_and_plays_back_without_the_extension(tmp_path):
    _start, end, _clip, cable = _moving_end_scene()
    expected = {}
    # what the solver gives at each frame, stepping through the motion the same way
    bpy.context.scene.frame_set(1)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    assert cable.cable_harness.bake_action
    for f in (1, 8, 13, 24):
        bpy.context.scene.frame_set(f)
        expected[f] = curve_world_points(cable)  # the keyed curve, evaluated here
        # the end point follows the animated connector exactly
        assert np.allclose(expected[f][-1], np.array(end.matrix_world.translation), atol=1e-5)
    assert np.abs(expected[24] - expected[1]).max() > 0.02
    path = tmp_path / "baked.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "fresh_user"))
    out = subprocess.run(
        [sys.executable, "-c", PLAYBACK, str(path)], capture_output=True, text=True, env=env, check=True
    )
    played = json.loads(out.stdout.split("RESULT", 1)[1])
    assert played["enabled"] == [] and played["has_props"] is False  # really without the extension
    for f, pts in played["frames"].items():
        assert np.abs(np.array(pts) - expected[int(f)]).max() < 1e-5


def test_connector_pulled_out_of_reach_holds_the_last_good_state_and_says_so(extension):
    # The ultimate-length stop (Lv 2017, Sec. 2.4) in a running simulation: the cable keeps its
    # last valid state while its connector is out of reach, and the tick says why.
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    _start, end, _clip, cable = simple_harness()
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    assert not simulation.tick(bpy.context).failed
    held = curve_world_points(cable)
    place(end, (0.6, 0.0, 0.0), 1.0)
    report = simulation.tick(bpy.context)
    assert "are 0.6 m apart but the cable is only" in report.failed["Cable"]
    assert np.abs(curve_world_points(cable) - held).max() < 1e-7
    place(end, (0.31, 0.0, 0.0), 1.0)  # back within reach: it follows again
    assert not simulation.tick(bpy.context).failed
    assert np.allclose(curve_world_points(cable)[-1], [0.31, 0.0, 0.0], atol=1e-6)


def _keyed_frames(ob):
    action = ob.data.animation_data.action
    if hasattr(action, "layers"):
        fcurves = [
            fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags for fc in bag.fcurves
        ]
    else:
        fcurves = list(action.fcurves)
    return sorted({round(k.co[0]) for fc in fcurves for k in fc.keyframe_points})


def test_frames_that_do_not_converge_are_not_keyed_but_marked_and_left_out_of_the_report(tmp_path):
    # The end connector is pulled out of the cable's reach in the middle of the motion: those frames
    # have no equilibrium. They must not be keyed as results (playback would show the held state
    # detached from its connector) nor give the report its peaks.
    _start, end, _clip, cable = simple_harness()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 13
    for frame, x in ((1, 0.3), (7, 0.9), (13, 0.3)):
        place(end, (x, 0.0, 0.0), 1.0)
        end.keyframe_insert("location", frame=frame)
    scene.frame_set(1)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    log = json.loads(bpy.data.texts["cable_harness_bake_log.json"].as_string())
    records = log["frames"]["Cable"]
    failed = [r["frame"] for r in records if not r["converged"]]
    assert failed and 7 in failed and 1 not in failed and 13 not in failed
    keyed = _keyed_frames(cable)
    assert keyed == [f for f in range(1, 14) if f not in failed]
    markers = sorted((m.frame, m.name) for m in scene.timeline_markers)
    assert markers == [(f, "not converged: Cable") for f in failed]
    assert bpy.ops.cable_harness.export_report(directory=str(tmp_path)) == {"FINISHED"}
    summary = json.loads((tmp_path / "report.json").read_text())["cables"][0]
    assert summary["frames_not_converged"] == failed
    converged_peaks = {k: max(r["forces"][k] for r in records if r["converged"]) for k in records[0]["forces"]}
    for peak in summary["peak_forces"]:
        assert peak["frame"] not in failed and peak["peak_force"] == converged_peaks[peak["holder"]]
    assert "frames not converged" in (tmp_path / "report.csv").read_text()
    assert bpy.ops.cable_harness.clear_bake() == {"FINISHED"}
    assert not list(scene.timeline_markers)


def test_bake_matches_stepping_the_simulation_frame_by_frame():
    _start, _end, _clip, cable = _moving_end_scene()
    stepped = {}
    for f in range(1, 25):
        bpy.context.scene.frame_set(f)
        bpy.ops.cable_harness.simulate(ticks=1)
        stepped[f] = curve_world_points(cable)
    bpy.ops.cable_harness.reset()
    bpy.context.scene.frame_set(1)
    bpy.ops.cable_harness.bake()
    for f in (5, 17, 24):
        bpy.context.scene.frame_set(f)
        # the bake re-solves from the reset state; warm starts from a converged neighbour agree closely
        assert np.abs(curve_world_points(cable) - stepped[f]).max() < 1e-5


def test_modal_bake_runs_frame_by_frame_and_escape_cancels_without_keys():
    _start, _end, _clip, cable = _moving_end_scene()
    op = StandIn(bpy.types.CABLE_HARNESS_OT_bake)
    assert op._begin(bpy.context)
    for _ in range(5):
        assert op.modal(bpy.context, StandInEvent("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, StandInEvent("ESC", "PRESS")) == {"CANCELLED"}
    assert not cable.cable_harness.bake_action and cable.data.animation_data is None
    assert bpy.context.scene.frame_current == 1
    op = StandIn(bpy.types.CABLE_HARNESS_OT_bake)
    assert op._begin(bpy.context)
    results = [op.modal(bpy.context, StandInEvent("TIMER")) for _ in range(24)]
    assert results[:-1] == [{"RUNNING_MODAL"}] * 23 and results[-1] == {"FINISHED"}
    assert cable.cable_harness.bake_action


def test_clear_bake_removes_exactly_what_the_bake_made():
    _start, _end, _clip, cable = _moving_end_scene()
    user_action = bpy.data.actions.new("user curve action")
    cable.data.animation_data_create().action = user_action
    other_actions = set(bpy.data.actions.keys())
    bpy.ops.cable_harness.bake()
    baked = cable.cable_harness.bake_action
    assert baked in bpy.data.actions and cable.data.animation_data.action.name == baked
    assert bpy.ops.cable_harness.clear_bake() == {"FINISHED"}
    assert baked not in bpy.data.actions
    assert cable.data.animation_data.action == user_action  # the user's action is back
    assert set(bpy.data.actions.keys()) == other_actions


def test_settings_and_last_result_survive_save_and_reload(tmp_path):
    start, end, clip, cable = simple_harness()
    start_name, end_name = start.name, end.name
    cable.cable_harness.segments = 33
    clip.cable_harness.clip_kind = "rotating"
    bpy.ops.cable_harness.solve()
    points = curve_world_points(cable)
    radius = cable.cable_harness.result_min_bend_radius
    path = tmp_path / "harness.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    cable = bpy.data.objects["Cable"]
    s = cable.cable_harness
    assert s.role == "CABLE" and s.segments == 33 and s.start.name == start_name and s.end.name == end_name
    assert s.clips[0].clip.cable_harness.clip_kind == "rotating"
    assert s.result_valid and s.result_min_bend_radius == pytest.approx(radius)
    assert np.array_equal(curve_world_points(cable), points)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}  # and it still solves


def test_operators_that_change_data_can_be_undone():
    window = bpy.context.window_manager.windows[0]
    with bpy.context.temp_override(window=window):
        _start, _end, _clip, cable = simple_harness()
        bpy.ops.ed.undo_push(message="drawn")
        drawn = curve_world_points(cable)
        bpy.ops.cable_harness.solve()
        bpy.ops.ed.undo_push(message="solved")
        assert curve_world_points(bpy.data.objects["Cable"]).shape != drawn.shape  # solved: one point a node
        bpy.ops.ed.undo()
        cable = bpy.data.objects["Cable"]  # undo replaces the data: look it up again
        assert np.abs(curve_world_points(cable) - drawn).max() < 1e-7
        assert not cable.cable_harness.result_valid
    for op in (
        "make_cable",
        "solve",
        "reset",
        "bake",
        "clear_bake",
        "import_case",
        "add_clip",
        "add_connector",
        "assign_role",
    ):
        cls = getattr(bpy.types, f"CABLE_HARNESS_OT_{op}")
        assert "UNDO" in cls.bl_options, op


@pytest.mark.parametrize("unit_scale", [1.0, 0.001])
def test_the_bend_limit_goes_out_with_export_case_and_comes_back_with_import(tmp_path, unit_scale):
    *_, cable_ob = simple_harness(unit_scale=unit_scale, with_clip=False)
    cable_ob.cable_harness.min_bend_radius_allowed = 0.025 / unit_scale  # 25 mm in scene units
    out = tmp_path / "limit.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(out)) == {"FINISHED"}
    assert json.loads(out.read_text())["cables"][0]["allowed_bend_radius"] == pytest.approx(0.025)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    bpy.context.scene.unit_settings.scale_length = unit_scale
    op = StandIn(bpy.types.CABLE_HARNESS_OT_import_case)
    op.filepath, op.colliders, op.scene_settings = str(out), False, False
    assert op.execute(bpy.context) == {"FINISHED"}
    limit = bpy.data.objects["Cable"].cable_harness.min_bend_radius_allowed
    assert limit * unit_scale == pytest.approx(0.025)


def test_a_failed_frame_is_retried_only_where_smaller_steps_may_mend_it(extension, monkeypatch):
    # A frame that fails is solved again from the last frame in sub-frames, which costs as much as
    # RETRY_SUBFRAMES frames: only where that may help. Input refused before solving (the connector out
    # of reach) fails as well in sub-frames, and so does a cable that failed at the frame before: a run
    # of failed frames retries at most its first.
    bake_module = sys.modules[f"{extension.__name__}.cable_harness.operators.bake"]
    simulation_class = sys.modules[f"{extension.__name__}.cable_harness.simulation"].HarnessSimulation
    _start, end, _clip, _cable = simple_harness()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 13
    for frame, x in ((1, 0.3), (7, 0.9), (13, 0.3)):
        place(end, (x, 0.0, 0.0), 1.0)
        end.keyframe_insert("location", frame=frame)
    scene.frame_set(1)
    ticks = []
    tick = simulation_class.tick
    monkeypatch.setattr(simulation_class, "tick", lambda self, *a, **k: ticks.append(1) or tick(self, *a, **k))
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    records = json.loads(bpy.data.texts["cable_harness_bake_log.json"].as_string())["frames"]["Cable"]
    failed = [r["frame"] for r in records if not r["converged"]]
    runs = sum(1 for f in failed if f - 1 not in failed)
    assert len(failed) > runs  # a run of several failed frames
    assert len(ticks) <= 13 + bake_module.RETRY_SUBFRAMES * runs, (len(ticks), failed)
