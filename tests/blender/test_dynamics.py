# SPDX-License-Identifier: GPL-3.0-or-later
"""Motion: Dynamic in Blender: the case it writes, a bake at the scene's frame rate that matches the
solver stepped frame by frame, a cable that swings on after its connector stops, Simulate's ticks, and
a branched harness refused in dynamic mode with a message instead of a bake."""

import sys

import bpy
import numpy as np
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import curve_world_points, place, simple_harness, y_harness


def _extension(name):
    """A module of the installed extension (imported by the session's fixture)."""
    return sys.modules[f"{MODULE}.{name}"]


def case_document(scene, cables):
    return _extension("cable_harness.scene_model").case_document(scene, cables)


def HarnessSimulation(scene, cables, **kw):  # noqa: N802
    return _extension("cable_harness.simulation").HarnessSimulation(scene, cables, **kw)


def _swinging_scene(motion="DYNAMIC"):
    """The end connector moves 6 cm sideways over frames 1-12, then stands still until frame 36."""
    start, end, _clip, cable = simple_harness(with_clip=False, segments=20)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 36
    scene.render.fps, scene.render.fps_base = 24, 1.0
    settings = scene.cable_harness
    settings.motion = motion
    settings.time_step = 0.004
    settings.damping = 0.5
    end.keyframe_insert("location", frame=1)
    place(end, (0.3, 0.06, 0.0), 1.0)
    end.keyframe_insert("location", frame=12)
    return start, end, cable


def test_dynamic_scene_writes_solver_dynamics_into_its_case():
    _start, _end, cable = _swinging_scene()
    doc = case_document(bpy.context.scene, [cable])
    assert doc["solver"]["dynamics"] == pytest.approx({"time_step": 0.004, "damping": 0.5})
    bpy.context.scene.cable_harness.motion = "QUASI_STATIC"
    assert "dynamics" not in case_document(bpy.context.scene, [cable])["solver"]


@pytest.mark.parametrize("model", ["cosserat", "cosserat_pbd"])
def test_dynamic_bake_matches_the_solver_stepped_at_the_frame_rate_and_swings_on(model):
    """Either model that has dynamics: the rod's Bathe steps or the position-based rod's XPBD steps."""
    _start, end, cable = _swinging_scene()
    scene = bpy.context.scene
    scene.cable_harness.model = model
    scene.frame_set(1)
    # the solver on its own: the scene's case, the end connector's place at every frame, 1/24 s apart
    solver = _extension("solver_core")
    CableChange, Frame, Harness, parse_case = solver.CableChange, solver.Frame, solver.Harness, solver.parse_case
    harness = Harness.from_case(parse_case(case_document(scene, [cable])))
    cid = next(iter(harness.cables))
    assert harness.solve_step()[cid].converged
    expected = {1: harness.world_nodes(cid)}
    for f in range(2, 37):
        scene.frame_set(f)
        b = harness.cables[cid].boundary.end
        moved = Frame(np.array(end.matrix_world.translation, dtype=float), b.tangent, b.normal)
        assert harness.solve_step({cid: CableChange(end=moved)}, duration=1.0 / 24.0)[cid].converged
        expected[f] = harness.world_nodes(cid)
    assert harness.time == pytest.approx(35.0 / 24.0)

    scene.frame_set(1)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    baked = {}
    for f in (1, 6, 12, 20, 28, 36):
        scene.frame_set(f)
        baked[f] = curve_world_points(cable)
        assert np.abs(baked[f] - expected[f]).max() < 1e-5, f
    # the connector stands still from frame 12; the cable swings on (a quasi-static bake would not move)
    assert np.abs(baked[28] - baked[20]).max() > 2e-4


def test_quasi_static_bake_stands_still_once_the_connector_stops():
    _start, _end, cable = _swinging_scene("QUASI_STATIC")
    scene = bpy.context.scene
    scene.frame_set(1)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    scene.frame_set(20)
    a = curve_world_points(cable)
    scene.frame_set(28)
    assert np.abs(curve_world_points(cable) - a).max() < 1e-6


def test_simulate_ticks_advance_the_motion_by_the_tick_interval():
    _start, end, cable = _swinging_scene()
    scene = bpy.context.scene
    scene.frame_set(1)
    simulation = HarnessSimulation(scene, [cable], seconds_per_tick=1.0 / 30.0)
    assert simulation.tick(bpy.context).solved == 1  # the first solve: at rest
    place(end, (0.3, 0.05, 0.0), 1.0)  # dragged
    for k in range(1, 6):
        report = simulation.tick(bpy.context)
        assert report.solved == 1 and not report.failed
        assert simulation.harness.time == pytest.approx(k / 30.0)


def test_branched_harness_in_dynamic_mode_is_refused_with_a_message():
    _junction, trunk, branches = y_harness()
    bpy.context.scene.cable_harness.motion = "DYNAMIC"
    bpy.ops.object.select_all(action="DESELECT")
    trunk.select_set(True)
    bpy.context.view_layer.objects.active = trunk
    with pytest.raises(RuntimeError, match="junctions"):
        bpy.ops.cable_harness.solve()
    assert not trunk.cable_harness.result_valid


def test_switching_motion_during_simulate_takes_effect_at_the_next_tick():
    _start, end, cable = _swinging_scene("QUASI_STATIC")
    scene = bpy.context.scene
    simulation = HarnessSimulation(scene, [cable], seconds_per_tick=1.0 / 30.0)
    assert simulation.tick(bpy.context).solved == 1
    assert simulation.harness.case.solver.dynamics is None
    scene.cable_harness.motion = "DYNAMIC"
    place(end, (0.3, 0.05, 0.0), 1.0)
    assert simulation.tick(bpy.context).solved == 1  # rebuilt: its first solve finds the cable at rest
    assert simulation.harness.case.solver.dynamics is not None and simulation.seconds_per_tick == 1.0 / 30.0
    place(end, (0.3, 0.0, 0.0), 1.0)
    assert simulation.tick(bpy.context).solved == 1
    assert simulation.harness.time == pytest.approx(1.0 / 30.0)


def test_model_and_motion_go_out_with_an_exported_case_and_come_back_with_it(tmp_path):
    from helpers.blender_scenes import StandIn

    _start, _end, cable = _swinging_scene()
    scene = bpy.context.scene
    scene.cable_harness.damping = 1.5
    out = tmp_path / "dynamic.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(out)) == {"FINISHED"}
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    settings = bpy.context.scene.cable_harness
    assert settings.motion == "QUASI_STATIC"
    op = StandIn(bpy.types.CABLE_HARNESS_OT_import_case)
    op.filepath, op.colliders, op.scene_settings = str(out), False, True
    assert op.execute(bpy.context) == {"FINISHED"}
    assert not [text for level, text in op.reports if level == {"WARNING"}]
    assert settings.motion == "DYNAMIC" and settings.model == "cosserat"
    assert settings.time_step == pytest.approx(0.004) and settings.damping == pytest.approx(1.5)
