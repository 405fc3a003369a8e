# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input, objects deleted or renamed while simulating, the modal operator, clean unregister."""

import math
import re
import sys

import bpy
import numpy as np
import pytest
from helpers.blender_env import disable_extension, enable_extension
from helpers.blender_scenes import StandIn, StandInEvent, curve_world_points, place, simple_harness, y_harness


def _simulation_module(extension):
    return sys.modules[f"{extension.__name__}.cable_harness.simulation"]


@pytest.mark.parametrize(
    "breakage,message",
    [
        (lambda start, end, clip, cable: setattr(cable.cable_harness, "start", None), "has no start connector"),
        (lambda start, end, clip, cable: setattr(cable.cable_harness, "diameter", 0.0), "diameter must be positive"),
        (
            lambda start, end, clip, cable: setattr(cable.cable_harness, "length", 0.25),
            "apart but the cable is only 0.25 m long",
        ),
        (lambda start, end, clip, cable: bpy.data.objects.remove(clip), "clip 1 in its list is missing"),
        (lambda start, end, clip, cable: setattr(start.cable_harness, "role", "NONE"), "is not a connector"),
    ],
)
def test_bad_input_is_reported_and_changes_nothing(breakage, message):
    start, end, clip, cable = simple_harness()
    bpy.ops.cable_harness.solve()
    before = curve_world_points(cable)
    breakage(start, end, clip, cable)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.cable_harness.solve()
    assert np.array_equal(curve_world_points(cable), before)


def test_no_cable_in_the_scene_is_reported():
    with pytest.raises(RuntimeError, match="the scene has no cable"):
        bpy.ops.cable_harness.solve()


def test_connector_deleted_while_simulating_stops_only_its_cable(extension):
    start, end, clip, cable = simple_harness()
    bpy.ops.cable_harness.add_connector()
    lone = bpy.context.active_object
    place(lone, (0.0, 0.2, 0.0), 1.0)
    lone.select_set(True)
    bpy.context.view_layer.objects.active = lone
    bpy.ops.cable_harness.make_cable(solve=False)  # a second cable, free-ended
    simulation = _simulation_module(extension).HarnessSimulation(bpy.context.scene)
    assert simulation.tick(bpy.context).solved == 2
    held = curve_world_points(cable)
    bpy.data.objects.remove(start)
    report = simulation.tick(bpy.context)
    assert "has no start connector" in report.failed["Cable"]
    assert report.solved == 1
    assert np.array_equal(curve_world_points(bpy.data.objects["Cable"]), held)


def test_cable_renamed_or_deleted_while_simulating(extension):
    *_, cable = simple_harness()
    simulation = _simulation_module(extension).HarnessSimulation(bpy.context.scene)
    simulation.tick(bpy.context)
    cable.name = "Renamed"
    report = simulation.tick(bpy.context)
    assert report.solved == 1 and "Renamed" in report.results
    bpy.data.objects.remove(bpy.data.objects["Renamed"])
    report = simulation.tick(bpy.context)
    assert report.solved == 0 and "deleted" in report.failed["Renamed"]


def test_degenerate_colliders_do_not_break_the_tick(extension):
    *_, cable = simple_harness()
    empty_mesh = bpy.data.objects.new("Empty collider", bpy.data.meshes.new("empty"))
    bpy.context.scene.collection.objects.link(empty_mesh)
    sheet = bpy.data.meshes.new("sheet")  # one open triangle: non-manifold
    sheet.from_pydata([(0.1, -0.1, -0.05), (0.2, 0.1, -0.05), (0.1, 0.1, -0.05)], [], [(0, 1, 2)])
    open_tri = bpy.data.objects.new("Open collider", sheet)
    bpy.context.scene.collection.objects.link(open_tri)
    for ob in (empty_mesh, open_tri):
        ob.cable_harness.role = "COLLIDER"
    report = _simulation_module(extension).HarnessSimulation(bpy.context.scene).tick(bpy.context)
    assert report.solved == 1 and not report.failed


def test_cable_settings_changed_while_simulating_rebuild_the_cable(extension):
    *_, cable = simple_harness()
    simulation = _simulation_module(extension).HarnessSimulation(bpy.context.scene)
    simulation.tick(bpy.context)
    cable.cable_harness.segments = 25
    report = simulation.tick(bpy.context)
    assert report.solved == 1 and len(cable.data.splines[0].points) == 26


def test_a_clip_added_while_simulating_is_part_of_the_next_steps(extension):
    start, end, clip, cable = simple_harness()
    cable.cable_harness.clips.clear()
    simulation = _simulation_module(extension).HarnessSimulation(bpy.context.scene)
    assert simulation.tick(bpy.context).solved == 1
    ref = cable.cable_harness.clips.add()
    ref.clip, ref.s = clip, 0.5 * cable.cable_harness.length
    report = simulation.tick(bpy.context)  # rebuilt with the clip
    assert report.solved == 1, report.failed
    place(clip, (0.15, 0.03, -0.06), 1.0, (0.0, math.pi / 2.0, 0.0))
    report = simulation.tick(bpy.context)  # a step that moves the clip the rebuilt cable now has
    assert report.solved == 1, report.failed
    middle = curve_world_points(cable)[len(cable.data.splines[0].points) // 2]
    assert np.linalg.norm(middle - (0.15, 0.03, -0.06)) < 0.01


def test_ticks_between_setting_changes_read_only_the_holders(extension, monkeypatch):
    start, end, clip, cable = simple_harness()
    simulation_module = _simulation_module(extension)
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    simulation.tick(bpy.context)

    def no_document(*args, **kwargs):
        raise AssertionError("a case document was built for a tick that only moved a connector")

    monkeypatch.setattr(simulation_module, "cable_document", no_document)
    monkeypatch.setattr(simulation_module, "parse_scene_case", no_document)
    place(end, (0.28, 0.0, 0.0), 1.0)
    report = simulation.tick(bpy.context)
    assert report.solved == 1, report.failed
    assert np.linalg.norm(curve_world_points(cable)[-1] - (0.28, 0.0, 0.0)) < 1e-6


def test_a_connector_scaled_flat_is_reported_by_name(extension):
    start, end, clip, cable = simple_harness()
    simulation = _simulation_module(extension).HarnessSimulation(bpy.context.scene)
    simulation.tick(bpy.context)
    end.scale = (1.0, 1.0, 0.0)
    bpy.context.view_layer.update()
    report = simulation.tick(bpy.context)
    assert f"{end.name!r} has no direction" in report.failed["Cable"]


def test_stand_in_events_have_only_real_event_attributes():
    real = set(bpy.types.Event.bl_rna.properties.keys())
    assert set(StandInEvent.__slots__) <= real


def _timer_event():
    return StandInEvent("TIMER")


def test_modal_simulate_ticks_on_its_timer_and_ends_on_escape():
    _start, end, _clip, cable = simple_harness()
    op = StandIn(bpy.types.CABLE_HARNESS_OT_simulate)
    assert op._start(bpy.context)
    op._timer = bpy.context.window_manager.event_timer_add(10.0, window=bpy.context.window)
    assert op.modal(bpy.context, _timer_event()) == {"PASS_THROUGH"}
    first = curve_world_points(cable)
    place(end, (0.28, 0.02, 0.0), 1.0)
    assert op.modal(bpy.context, StandInEvent("MOUSEMOVE")) == {"PASS_THROUGH"}  # no tick, view stays usable
    assert np.array_equal(curve_world_points(cable), first)
    op.modal(bpy.context, _timer_event())
    assert np.allclose(curve_world_points(cable)[-1], [0.28, 0.02, 0.0], atol=1e-6)
    assert op.modal(bpy.context, StandInEvent("ESC", "PRESS")) == {"FINISHED"}
    assert op._timer is None and op._simulation is None


def test_modal_simulate_stops_cleanly_when_a_file_is_loaded():
    simple_harness()
    op = StandIn(bpy.types.CABLE_HARNESS_OT_simulate)
    assert op._start(bpy.context)
    op._timer = bpy.context.window_manager.event_timer_add(10.0, window=bpy.context.window)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)  # runs the load_pre handlers
    assert op.modal(bpy.context, _timer_event()) == {"FINISHED"}
    assert any("file was reloaded" in message for _, message in op.reports)


def _our_handlers():
    found = []
    for name in ("depsgraph_update_post", "frame_change_post", "load_pre"):
        for fn in getattr(bpy.app.handlers, name):
            if "cable_harness" in getattr(fn, "__module__", ""):
                found.append((name, fn.__name__))
    return found


def test_unregister_leaves_no_handlers_timers_or_classes_behind(extension):
    solve_module = sys.modules[f"{extension.__name__}.cable_harness.operators.solve"]
    overlay_module = sys.modules[f"{extension.__name__}.cable_harness.overlay"]
    assert _our_handlers()
    for _ in range(3):
        disable_extension()
        assert _our_handlers() == []
        assert not hasattr(bpy.types.Object, "cable_harness")
        assert not any(name.startswith("CABLE_HARNESS_") for name in dir(bpy.types))
        assert not hasattr(bpy.types, "VIEW3D_PT_cable_harness")
        assert overlay_module._handlers == []
        enable_extension()
        assert sorted(_our_handlers()) == [
            ("depsgraph_update_post", "_on_depsgraph_update"),  # colliders whose geometry changed
            ("frame_change_post", "_on_frame_change"),  # colliders that may deform
            ("load_pre", "_forget_on_load"),  # a variation study belongs to its file
            ("load_pre", "_stop_on_load"),  # Simulate stops
        ]
        overlay_module = sys.modules[f"{extension.__name__}.cable_harness.overlay"]
        assert len(overlay_module._handlers) == 2  # the viewport overlay's draw handlers
    assert solve_module._state["timers"] == []


def test_a_connector_inside_a_collider_is_reported_not_hidden():
    start, end, clip, cable = simple_harness(with_clip=False, segments=30)
    bpy.ops.mesh.primitive_cube_add(size=0.1, location=(0.0, 0.0, 0.0))  # swallows the start connector
    bpy.context.active_object.cable_harness.role = "COLLIDER"
    for ob in bpy.context.selected_objects:
        ob.select_set(False)
    bpy.ops.cable_harness.solve()
    assert "passes through an obstacle" in cable.cable_harness.result_message


def _delete_with_x(*objects):
    """What X (Delete) in the viewport does: the objects leave the scene; a cable's pointer keeps them in
    the file, so undo can link them back."""
    bpy.ops.object.select_all(action="DESELECT")
    for ob in objects:
        ob.select_set(True)
    bpy.context.view_layer.objects.active = objects[0]
    assert bpy.ops.object.delete() == {"FINISHED"}


def _distance_to(points, where):
    return float(np.linalg.norm(points - np.asarray(where), axis=1).min())


def test_a_clip_deleted_with_x_lets_the_cable_go_and_undo_brings_it_back(extension):
    scene_model = sys.modules[f"{extension.__name__}.cable_harness.scene_model"]
    clip_at = (0.15, 0.02, -0.06)
    window = bpy.context.window_manager.windows[0]
    with bpy.context.temp_override(window=window):
        _start, _end, clip, cable = simple_harness()
        assert bpy.ops.cable_harness.solve() == {"FINISHED"}
        assert _distance_to(curve_world_points(cable), clip_at) < 0.006  # a node spacing of the clip
        bpy.ops.ed.undo_push(message="solved through the clip")
        _delete_with_x(clip)
        bpy.ops.ed.undo_push(message="clip deleted")
        scene = bpy.context.scene
        cable = bpy.data.objects["Cable"]
        assert "Clip" in bpy.data.objects and "Clip" not in scene.objects  # kept by the cable's pointer
        notes = scene_model.detached_notes(scene, cable)
        assert len(notes) == 1 and "'Clip'" in notes[0] and "deleted" in notes[0]  # the panel says so
        assert bpy.ops.cable_harness.solve() == {"FINISHED"}
        s = cable.cable_harness
        assert s.result_converged and "'Clip'" in s.result_message
        assert _distance_to(curve_world_points(cable), clip_at) > 0.01  # it hangs free of the deleted clip
        bpy.ops.ed.undo()  # back to before the delete
        scene = bpy.context.scene
        cable = bpy.data.objects["Cable"]
        assert "Clip" in scene.objects and scene_model.detached_notes(scene, cable) == []
        assert bpy.ops.cable_harness.solve() == {"FINISHED"}
        assert _distance_to(curve_world_points(cable), clip_at) < 0.006  # a node spacing of the clip


def test_a_connector_deleted_with_x_is_not_held_any_more(extension):
    scene_model = sys.modules[f"{extension.__name__}.cable_harness.scene_model"]
    start, end, _clip, cable = simple_harness()
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    end_name = end.name
    _delete_with_x(end)  # the end connector: the cable's end hangs free
    notes = scene_model.detached_notes(bpy.context.scene, cable)
    assert len(notes) == 1 and repr(end_name) in notes[0]
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    s = cable.cable_harness
    assert s.result_converged and repr(end_name) in s.result_message
    assert np.linalg.norm(curve_world_points(cable)[-1] - (0.3, 0.0, 0.0)) > 0.01
    start_name = start.name
    _delete_with_x(start)  # nothing holds the cable any more: refused, naming the deleted start
    with pytest.raises(RuntimeError, match=f"has no start connector: {start_name!r} was deleted"):
        bpy.ops.cable_harness.solve()
    assert not s.result_converged


def test_a_clip_deleted_with_x_while_simulating_lets_the_cable_go(extension):
    _start, _end, clip, cable = simple_harness()
    simulation = _simulation_module(extension).HarnessSimulation(bpy.context.scene)
    assert simulation.tick(bpy.context).solved == 1
    _delete_with_x(clip)
    report = simulation.tick(bpy.context)
    assert report.solved == 1, report.failed
    assert any("'Clip'" in w for w in report.warnings)
    assert _distance_to(curve_world_points(cable), (0.15, 0.02, -0.06)) > 0.01


@pytest.mark.parametrize("model", ["mass_spring", "kirchhoff_cg"])
def test_a_model_switched_to_during_simulate_that_solve_refuses_ends_simulate_with_the_reason(
    extension, monkeypatch, model
):
    solve_module = sys.modules[f"{extension.__name__}.cable_harness.operators.solve"]
    status = []
    monkeypatch.setattr(solve_module, "_status_text", lambda context, text: status.append(text))
    _start, _end, _clip, cable = simple_harness()
    scene = bpy.context.scene
    scene.cable_harness.cable_cable = True  # a contact only the Cosserat rod models
    op = StandIn(bpy.types.CABLE_HARNESS_OT_simulate)
    assert op._start(bpy.context)
    op._timer = bpy.context.window_manager.event_timer_add(10.0, window=bpy.context.window)
    assert op.modal(bpy.context, _timer_event()) == {"PASS_THROUGH"}
    assert status[-1].startswith("Cable Harness:")
    scene.cable_harness.model = model
    with pytest.raises(RuntimeError) as refused:  # Solve refuses the same setting ...
        bpy.ops.cable_harness.solve()
    reason = str(refused.value).strip().splitlines()[-1].removeprefix("Error: ")
    # ... and Simulate ends with that reason: no traceback, its timer and status text gone
    assert op.modal(bpy.context, _timer_event()) == {"FINISHED"}
    assert op._timer is None and op._simulation is None and status[-1] is None
    assert [level for level, _ in op.reports] == [{"ERROR"}]
    assert reason in op.reports[0][1] and op.reports[0][1].startswith("Simulate stopped: ")
    assert not cable.cable_harness.result_converged and cable.cable_harness.result_message


def test_simulate_run_from_a_script_ends_with_the_reason_when_a_tick_is_refused(extension, monkeypatch):
    simulation_module = _simulation_module(extension)
    *_, cable = simple_harness()
    original = simulation_module.HarnessSimulation.tick

    def refused_tick(self, context, write=True):
        bpy.context.scene.cable_harness.model = "mass_spring"
        bpy.context.scene.cable_harness.cable_cable = True
        return original(self, context, write)

    monkeypatch.setattr(simulation_module.HarnessSimulation, "tick", refused_tick)
    with pytest.raises(RuntimeError, match="Simulate stopped: "):
        bpy.ops.cable_harness.simulate(ticks=2)


def _two_good_cables_and_a_bad_one():
    """Three cables side by side, none selected; the last has no start connector."""
    *_, first = simple_harness(with_clip=False)
    for y in (0.2, 0.4):
        ends = []
        for x in (0.0, 0.3):
            bpy.ops.cable_harness.add_connector()
            ends.append(bpy.context.active_object)
            place(ends[-1], (x, y, 0.0), 1.0)
        bpy.ops.object.select_all(action="DESELECT")
        for ob in ends:
            ob.select_set(True)
        bpy.context.view_layer.objects.active = ends[0]
        assert bpy.ops.cable_harness.make_cable(segments=20, solve=False) == {"FINISHED"}
    cables = [first, *(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE" and o is not first)]
    assert len(cables) == 3
    bad = cables[2]
    bad.cable_harness.start = None
    bpy.ops.object.select_all(action="DESELECT")
    return cables[:2], bad


def _solved_and_refused(good, bad, reports):
    for ob in good:
        s = ob.cable_harness
        assert s.result_valid and s.result_converged and not s.result_message, (ob.name, s.result_message)
    assert not bad.cable_harness.result_converged
    assert "has no start connector" in bad.cable_harness.result_message
    assert [level for level, _ in reports] == [{"WARNING"}]
    assert repr(bad.name) in reports[0][1] and "has no start connector" in reports[0][1]


def test_solve_with_nothing_selected_solves_the_valid_cables_and_names_the_invalid_one():
    good, bad = _two_good_cables_and_a_bad_one()
    op = StandIn(bpy.types.CABLE_HARNESS_OT_solve)
    assert op.execute(bpy.context) == {"FINISHED"}
    _solved_and_refused(good, bad, op.reports)


def test_simulate_with_nothing_selected_solves_the_valid_cables_and_names_the_invalid_one():
    good, bad = _two_good_cables_and_a_bad_one()
    op = StandIn(bpy.types.CABLE_HARNESS_OT_simulate)
    op.ticks = 1
    assert op.execute(bpy.context) == {"FINISHED"}
    _solved_and_refused(good, bad, op.reports)


def test_bake_with_nothing_selected_bakes_the_valid_cables_and_names_the_invalid_one():
    good, bad = _two_good_cables_and_a_bad_one()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    op = StandIn(bpy.types.CABLE_HARNESS_OT_bake)
    assert op.execute(bpy.context) == {"FINISHED"}
    assert all(ob.cable_harness.bake_action for ob in good)
    assert not bad.cable_harness.bake_action
    assert [level for level, _ in op.reports] == [{"WARNING"}]
    assert repr(bad.name) in op.reports[0][1] and "has no start connector" in op.reports[0][1]


# a case-format field path or model key left in a message (the panel has none of these)
CASE_WORDS = re.compile(
    r"\b(solver|contact|cables|junctions|obstacles|material|bundle)\.\w|\[\d+\]|\bsolver\.model\b|\"mass_spring\""
    r"|\bcosserat\b|\.(s|E|nu)\b"
)


def _dynamic_with_a_junction():
    junction, *_ = y_harness()
    bpy.context.scene.cable_harness.motion = "DYNAMIC"
    return ["Motion", "set Motion to Quasi-static", repr(junction.name)]


def _dynamic_mass_spring():
    simple_harness()
    bpy.context.scene.cable_harness.model = "mass_spring"
    bpy.context.scene.cable_harness.motion = "DYNAMIC"
    return ["Model Mass-Spring (Lv 2017)", "set Motion to Quasi-static"]


def _mass_spring_with_cable_contact():
    simple_harness()
    bpy.context.scene.cable_harness.model = "mass_spring"
    bpy.context.scene.cable_harness.cable_cable = True
    return ["Model Mass-Spring (Lv 2017)", "untick Cable-Cable Contact", "set Model to Cosserat Rod"]


def _a_clip_beyond_the_cable():
    *_, clip, cable = simple_harness()
    cable.cable_harness.clips[0].s = 1.5 * cable.cable_harness.length
    return [repr(cable.name), f"clip 1 {clip.name!r}", "Arc Length", "lengthen the cable"]


def _no_youngs_modulus():
    *_, cable = simple_harness()
    cable.cable_harness.material = "CUSTOM"
    cable.cable_harness.youngs_modulus = 0.0
    return [repr(cable.name), "Young's Modulus"]


@pytest.mark.parametrize(
    "provoke",
    [
        _dynamic_with_a_junction,
        _dynamic_mass_spring,
        _mass_spring_with_cable_contact,
        _a_clip_beyond_the_cable,
        _no_youngs_modulus,
    ],
)
def test_a_refused_setting_is_named_in_the_panels_words(provoke):
    words = provoke()
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.cable_harness.solve()
    message = str(refused.value).strip().splitlines()[-1].removeprefix("Error: ")
    assert not CASE_WORDS.search(message), message
    for word in words:
        assert word in message, message


def test_the_messages_name_the_models_as_the_panel_does(extension):
    scene_model = sys.modules[f"{extension.__name__}.cable_harness.scene_model"]
    items = bpy.context.scene.cable_harness.bl_rna.properties["model"].enum_items
    assert scene_model.MODEL_NAMES == {item.identifier: item.name for item in items}
