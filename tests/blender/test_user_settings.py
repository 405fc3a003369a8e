# SPDX-License-Identifier: GPL-3.0-or-later
"""What the user owns and sees: curve settings kept, honest read-outs, roles by object type, clips
that follow the length, and a description on every setting and command."""

import re
import sys

import bpy
import numpy as np
import pytest
from helpers.blender_scenes import StandIn, curve_world_points, place, simple_harness


def test_solve_keeps_the_users_curve_settings():
    *_, cable = simple_harness()
    curve = cable.data
    curve.bevel_mode, curve.bevel_resolution, curve.use_fill_caps = "ROUND", 9, False
    curve.twist_mode = "Z_UP"
    curve.bevel_depth = 0.01  # the user's own thickness
    bpy.ops.cable_harness.solve()
    assert (curve.bevel_resolution, curve.use_fill_caps, curve.twist_mode) == (9, False, "Z_UP")
    assert curve.bevel_depth == pytest.approx(0.01)
    assert cable.cable_harness.result_converged


def test_the_bevel_shows_the_cable_radius_on_a_scaled_object_and_follows_the_diameter():
    *_, cable = simple_harness()
    cable.scale = (2.0, 2.0, 2.0)
    bpy.context.view_layer.update()
    bpy.ops.cable_harness.solve()
    # world thickness = local bevel x object scale = the cable radius
    assert 2.0 * cable.data.bevel_depth == pytest.approx(0.5 * cable.cable_harness.diameter, rel=1e-6)
    cable.cable_harness.diameter = 0.006
    assert 2.0 * cable.data.bevel_depth == pytest.approx(0.003, rel=1e-6)


def test_a_failed_solve_is_not_shown_as_converged_and_a_changed_setting_marks_the_result_stale():
    *_, cable = simple_harness()
    s = cable.cable_harness
    bpy.ops.cable_harness.solve()
    assert s.result_converged and not s.result_stale and not s.result_message
    s.segments = 30
    assert s.result_stale  # the read-outs are of 40 segments
    s.length = 0.15  # the connectors are 0.3 m apart
    with pytest.raises(RuntimeError, match="apart but the cable is only 0.15 m long"):
        bpy.ops.cable_harness.solve()
    assert not s.result_converged and "apart but the cable is only 0.15 m long" in s.result_message


def test_errors_in_a_millimetre_scene_are_in_millimetres_and_name_the_setting():
    *_, cable = simple_harness(unit_scale=0.001)
    cable.cable_harness.length = 150.0  # mm; the connectors are 300 mm apart
    with pytest.raises(RuntimeError, match="are 300 mm apart but the cable is only 150 mm long"):
        bpy.ops.cable_harness.solve()
    cable.cable_harness.length = 400.0
    cable.cable_harness.clips[0].s = 399.0  # mm, with a 10 mm clip: past the end
    with pytest.raises(RuntimeError, match="cable 'Cable': clip 1 'Clip' at Arc Length 399 mm"):
        bpy.ops.cable_harness.solve()


def test_a_connector_out_of_reach_while_simulating_shows_as_not_converged(extension):
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    _start, end, _clip, cable = simple_harness()
    s = cable.cable_harness
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    simulation.tick(bpy.context)
    assert s.result_converged
    place(end, (0.9, 0.0, 0.0), 1.0)
    simulation.tick(bpy.context)
    assert not s.result_converged and "are 0.9 m apart but the cable is only" in s.result_message
    # Simulate started on a scene that cannot be solved says so in the read-outs too
    with pytest.raises(RuntimeError, match="0.9 m apart"):
        bpy.ops.cable_harness.simulate(ticks=1)
    assert not s.result_converged


def test_clips_keep_their_place_along_the_cable_in_proportion_to_its_length():
    *_, cable = simple_harness()
    s = cable.cable_harness
    before = s.clips[0].s / s.length
    s.length *= 1.2
    assert s.clips[0].s / s.length == pytest.approx(before, rel=1e-6)
    bpy.ops.cable_harness.solve()
    assert s.result_converged


@pytest.mark.parametrize(
    "kind,offered",
    [("EMPTY", {"NONE", "CONNECTOR", "CLIP"}), ("MESH", {"NONE", "CONNECTOR", "CLIP", "COLLIDER"})],
)
def test_roles_are_offered_only_to_objects_that_can_carry_them(kind, offered):
    data = None if kind == "EMPTY" else bpy.data.meshes.new("m")
    ob = bpy.data.objects.new("thing", data)
    bpy.context.scene.collection.objects.link(ob)
    for role in ("NONE", "CONNECTOR", "CLIP", "CABLE", "COLLIDER"):
        if role in offered:
            ob.cable_harness.role = role
            assert ob.cable_harness.role == role
        else:
            with pytest.raises(TypeError):
                ob.cable_harness.role = role


def test_an_empty_marked_as_collider_in_an_older_file_does_not_break_a_solve():
    *_, cable = simple_harness()
    empty = bpy.data.objects.new("empty collider", None)
    bpy.context.scene.collection.objects.link(empty)
    with pytest.raises(TypeError):
        empty.cable_harness.role = "COLLIDER"
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}


def _our_property_groups():
    ob = bpy.data.objects.new("probe", None)
    settings = ob.cable_harness.bl_rna
    return [
        settings,
        bpy.context.scene.cable_harness.bl_rna,
        settings.properties["clips"].fixed_type,
        settings.properties["route"].fixed_type,
    ]


def test_every_setting_and_command_has_a_description():
    missing = []
    for rna in _our_property_groups():
        for prop in rna.properties:
            if prop.identifier in {"rna_type", "name"} or prop.is_hidden:
                continue
            if not prop.description.strip():
                missing.append(f"{rna.identifier}.{prop.identifier}")
    operators = [getattr(bpy.ops.cable_harness, n) for n in dir(bpy.ops.cable_harness)]
    assert len(operators) >= 10
    for op in operators:
        rna = op.get_rna_type()
        if not rna.description.strip():
            missing.append(rna.identifier)
        for prop in rna.properties:
            if prop.identifier != "rna_type" and not prop.is_hidden and not prop.description.strip():
                missing.append(f"{rna.identifier}.{prop.identifier}")
    assert not missing, missing


def _select_only(*objects, active):
    for ob in bpy.context.selected_objects:
        ob.select_set(False)
    for ob in objects:
        ob.select_set(True)
    bpy.context.view_layer.objects.active = active


def test_a_clip_removed_and_added_back_returns_where_the_cable_passes_it():
    _start, _end, clip, cable = simple_harness()
    s = cable.cable_harness
    bpy.ops.cable_harness.solve()
    drawn = s.clips[0].s
    _select_only(cable, active=cable)
    assert bpy.ops.cable_harness.clip_remove() == {"FINISHED"} and len(s.clips) == 0
    _select_only(clip, cable, active=cable)
    assert bpy.ops.cable_harness.clip_add() == {"FINISHED"}
    assert len(s.clips) == 1 and s.clips[0].clip == clip
    assert s.clips[0].s == pytest.approx(drawn, abs=0.01 * s.length)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and s.result_converged


def _distance_to_line(line, point):
    a, b = line[:-1], line[1:]
    t = np.clip(np.einsum("ij,ij->i", point - a, b - a) / np.einsum("ij,ij->i", b - a, b - a), 0.0, 1.0)
    return float(np.linalg.norm(a + t[:, None] * (b - a) - point, axis=1).min())


def test_adding_a_clip_far_from_the_cable_warns_with_its_name_and_distance():
    # the arc position of a clip far off the route is only the nearest point's (often s = 0): the user
    # must hear that the clip is not where the cable passes, and how far off it is
    bpy.ops.cable_harness.add_connector()
    start = bpy.context.active_object
    place(start, (0.0, 0.0, 0.0), 1.0)
    bpy.ops.cable_harness.add_connector()
    end = bpy.context.active_object
    place(end, (1.0, 0.0, 0.0), 1.0)
    _select_only(start, end, active=start)
    assert bpy.ops.cable_harness.make_cable(solve=False) == {"FINISHED"}
    cable = next(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE")
    bpy.ops.cable_harness.add_clip()
    near = bpy.context.active_object
    place(near, curve_world_points(cable)[1], 1.0)  # on the drawn route: no warning
    bpy.ops.cable_harness.add_clip()
    far = bpy.context.active_object
    far.name = "Far Clip"
    place(far, (0.5, 0.5, 0.0), 1.0)
    expected = _distance_to_line(curve_world_points(cable), np.array([0.5, 0.5, 0.0]))
    assert 0.45 < expected < 0.55
    _select_only(near, far, cable, active=cable)
    op = StandIn(bpy.types.CABLE_HARNESS_OT_clip_add)
    assert op.execute(bpy.context) == {"FINISHED"}
    assert {ref.clip.name for ref in cable.cable_harness.clips} == {near.name, "Far Clip"}  # still added
    warnings = [message for level, message in op.reports if "WARNING" in level]
    assert len(warnings) == 1 and "Far Clip" in warnings[0] and f"'{near.name}'" not in warnings[0], op.reports
    value, unit = re.search(r"(\d+(?:\.\d+)?) ?(mm|cm|m)\b", warnings[0]).groups()
    assert float(value) * {"mm": 1e-3, "cm": 1e-2, "m": 1.0}[unit] == pytest.approx(expected, rel=0.02)


def test_moving_a_clip_down_the_list_swaps_the_clips_and_keeps_the_positions_in_order():
    _start, _end, clip, cable = simple_harness()
    s = cable.cable_harness
    bpy.ops.cable_harness.add_clip()
    second = bpy.context.active_object
    place(second, (0.24, 0.0, -0.04), 1.0)
    _select_only(second, cable, active=cable)
    assert bpy.ops.cable_harness.clip_add() == {"FINISHED"}
    assert [ref.clip for ref in s.clips] == [clip, second]
    positions = [ref.s for ref in s.clips]
    s.active_clip = 0
    assert bpy.ops.cable_harness.clip_move(direction="DOWN") == {"FINISHED"}
    assert [ref.clip for ref in s.clips] == [second, clip] and [ref.s for ref in s.clips] == positions
    assert s.active_clip == 1
    assert bpy.ops.cable_harness.clip_move(direction="DOWN") == {"CANCELLED"}  # already last


def test_clip_list_commands_without_an_active_cable_say_so():
    bpy.ops.cable_harness.add_clip()
    with pytest.raises(RuntimeError, match="make a cable the active object"):
        bpy.ops.cable_harness.clip_add()


def test_the_viewport_overlay_shows_bend_forces_and_a_failed_cable(extension):
    overlay = sys.modules[f"{extension.__name__}.cable_harness.overlay"]
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    _start, end, _clip, cable = simple_harness()
    s = cable.cable_harness
    s.min_bend_radius_allowed = 0.01
    bpy.context.scene.cable_harness.arrow_length_per_newton = 0.05
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    simulation.tick(bpy.context)
    shown = overlay.shown("Cable")
    assert len(shown["points"]) == s.segments + 1 and shown["colours"].shape == (s.segments + 1, 4)
    assert 0.0 < shown["utilisation"].max() and not shown["failed"]
    arrows = shown["arrows"].reshape(-1, 2, 3)
    assert len(arrows) == 3  # two connectors and the clip
    assert np.linalg.norm(arrows[0][1] - arrows[0][0]) == pytest.approx(0.05 * s.result_start_force, rel=1e-6)
    place(end, (0.9, 0.0, 0.0), 1.0)  # out of reach: held, red, dashed to where its end should be
    simulation.tick(bpy.context)
    shown = overlay.shown("Cable")
    assert shown["failed"] and len(shown["gap"]) > 0
    assert np.linalg.norm(shown["gap"][-1] - np.array([0.9, 0.0, 0.0])) < 0.05


def test_physics_attributes_reach_a_companion_mesh_in_scene_units(extension):
    # Geometry Nodes and materials read per-point attributes, which a legacy Curve lacks: with
    # Physics Attributes on, each solve writes the centre line (scene units) and curvature (1/m),
    # tension (N), twist rate (rad/m) and bend utilisation per point into "<cable> Physics".
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    _start, end, _clip, cable = simple_harness(unit_scale=0.001)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert "Cable Physics" not in bpy.data.objects  # off by default: no cost, no extra object
    bpy.context.scene.cable_harness.point_attributes = True
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    report = simulation.tick(bpy.context)
    result = report.results["Cable"]
    companion = bpy.data.objects["Cable Physics"]
    mesh = companion.data
    n = cable.cable_harness.segments + 1
    assert len(mesh.vertices) == n and len(mesh.edges) == n - 1 and companion["converged"]
    co = np.empty(3 * n, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    assert np.allclose(co.reshape(-1, 3), curve_world_points(cable, 0.001) / 0.001, atol=1e-3)  # mm

    def attribute(name):
        values = np.empty(n, dtype=np.float32)
        mesh.attributes[name].data.foreach_get("value", values)
        return values.astype(np.float64)

    # the first segment's axial force is the start connector's pull along it, up to the weight lumped
    # at the end node: half the first segment's (its rest length from the arc lengths)
    directors = np.array(result["directors"])
    pull = np.dot(result["end_forces"]["start"]["force"], directors[0][2])
    mu = 0.030 / 0.300  # the lv2017_harness preset: 30 g over 300 mm, kg/m
    half_weight = 0.5 * mu * 9.81 * (result["arc_lengths"][1] - result["arc_lengths"][0])
    tension = attribute("tension")
    assert abs(tension[0] + pull) <= 1.001 * half_weight
    assert np.allclose(tension[1:-1], 0.5 * (np.array(result["tensions"])[:-1] + result["tensions"][1:]), rtol=1e-6)
    curvature = attribute("curvature")
    assert curvature.max() == pytest.approx(1.0 / result["min_bend_radius"], rel=1e-5)
    assert attribute("twist_rate").shape == (n,) and np.isfinite(attribute("bend_utilisation")).all()
    place(end, (0.9, 0.0, 0.0), 0.001)  # out of reach: the last good state, marked as not converged
    simulation.tick(bpy.context)
    assert not bpy.data.objects["Cable Physics"]["converged"]


def test_turning_physics_attributes_off_removes_the_companions_it_made_and_nothing_else():
    # a "<cable> Physics" mesh left behind after the option is off shows an old solve as if current
    *_, cable = simple_harness()
    settings = bpy.context.scene.cable_harness
    settings.point_attributes = True
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert "Cable Physics" in bpy.data.objects and "Cable Physics" in bpy.data.meshes
    own_mesh = bpy.data.meshes.new("Mine Physics")  # the user's own, named alike but not marked
    own = bpy.data.objects.new("Mine Physics", own_mesh)
    bpy.context.scene.collection.objects.link(own)
    settings.point_attributes = False
    assert "Cable Physics" not in bpy.data.objects and "Cable Physics" not in bpy.data.meshes
    assert bpy.data.objects.get("Mine Physics") is own
    # a companion from a file saved with the option on goes with the next solve
    settings.point_attributes = True
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    settings["point_attributes"] = False  # as a file saved before: no update runs
    assert "Cable Physics" in bpy.data.objects
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert "Cable Physics" not in bpy.data.objects and "Mine Physics" in bpy.data.objects


def _stale_input_changes(scene, start, clip, cable):
    """(what, set it, set it back): each an input of the solved cable that the case it is solved from
    carries, or (the bend limit) that its read-outs follow."""
    settings, s = scene.cable_harness, cable.cable_harness

    def change(owner, name, value):
        before = getattr(owner, name)
        before = tuple(before) if hasattr(before, "__len__") and not isinstance(before, str) else before
        return (name, lambda: setattr(owner, name, value), lambda: setattr(owner, name, before))

    return [
        change(settings, "model", "mass_spring"),
        change(settings, "motion", "DYNAMIC"),
        change(scene, "gravity", (0.0, 0.0, -5.0)),
        change(scene, "use_gravity", False),
        change(settings, "friction_static", 0.4),
        change(settings, "cable_cable", True),
        change(clip.cable_harness, "clip_kind", "rotating"),
        change(clip.cable_harness, "clip_length", 0.02),
        change(clip.cable_harness, "clip_compliant", True),
        change(start.cable_harness, "roll_free", True),
        change(s, "min_bend_radius_allowed", 0.05),
        change(s.clips[0], "reversed", True),
    ]


def test_every_input_of_a_result_marks_it_stale_and_setting_it_back_does_not(extension):
    scene_model = sys.modules[f"{extension.__name__}.cable_harness.scene_model"]
    start, _end, clip, cable = simple_harness()
    scene = bpy.context.scene
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert not scene_model.result_is_stale(scene, cable)  # what the panel shows
    for what, change, undo in _stale_input_changes(scene, start, clip, cable):
        change()
        assert scene_model.result_is_stale(scene, cable), what
        undo()
        assert not scene_model.result_is_stale(scene, cable), what
    # while Dynamic, the time step and damping are inputs too
    scene.cable_harness.motion = "DYNAMIC"
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert not scene_model.result_is_stale(scene, cable)
    scene.cable_harness.damping = 5.0
    assert scene_model.result_is_stale(scene, cable)


def test_the_result_names_the_model_and_motion_it_was_solved_with(extension):
    ui = sys.modules[f"{extension.__name__}.cable_harness.ui"]
    *_, cable = simple_harness()
    scene = bpy.context.scene
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert ui.solved_with(cable.cable_harness) == "Model: Cosserat Rod, Motion: Quasi-static"
    scene.cable_harness.model = "mass_spring"
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert ui.solved_with(cable.cable_harness) == "Model: Mass-Spring (Lv 2017), Motion: Quasi-static"
    scene.cable_harness.model = "cosserat"
    scene.cable_harness.motion = "DYNAMIC"
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert ui.solved_with(cable.cable_harness) == "Model: Cosserat Rod, Motion: Dynamic"


def _arrow_lengths(shown):
    arrows = shown["arrows"].reshape(-1, 2, 3)
    return np.linalg.norm(arrows[:, 1] - arrows[:, 0], axis=1)


def _solved_arrows(overlay, unit_scale):
    """(arrow length per N in m, arrow lengths in m) of the simple harness solved in a new scene."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    *_, cable = simple_harness(unit_scale=unit_scale)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    per_newton = bpy.context.scene.cable_harness.arrow_length_per_newton * unit_scale
    return per_newton, _arrow_lengths(overlay.shown(cable.name)) * unit_scale


def test_force_arrows_are_visible_by_default_in_millimetre_and_metre_scenes(extension):
    overlay = sys.modules[f"{extension.__name__}.cable_harness.overlay"]
    mm_per_newton, mm_arrows = _solved_arrows(overlay, 0.001)
    m_per_newton, m_arrows = _solved_arrows(overlay, 1.0)
    # the harness spans 0.3 m: its longest arrow (connectors and clip, 0.1-0.3 N) is a few percent of that
    # to all of it, in either unit
    assert 0.006 <= mm_arrows.max() <= 0.3
    assert mm_per_newton == pytest.approx(m_per_newton, rel=1e-6)
    assert np.allclose(mm_arrows, m_arrows, rtol=1e-3)


def test_an_arrow_length_the_user_set_is_kept(extension):
    overlay = sys.modules[f"{extension.__name__}.cable_harness.overlay"]
    *_, cable = simple_harness(unit_scale=0.001)
    settings = bpy.context.scene.cable_harness
    settings.arrow_length_per_newton = 7.0  # mm per N
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert settings.arrow_length_per_newton == pytest.approx(7.0)
    assert _arrow_lengths(overlay.shown("Cable"))[0] == pytest.approx(7.0 * cable.cable_harness.result_start_force)
    # one set after the extension chose one is the user's too
    per_newton, _ = _solved_arrows(overlay, 0.001)
    settings = bpy.context.scene.cable_harness
    settings.arrow_length_per_newton = 3.0 * per_newton / 0.001
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert settings.arrow_length_per_newton == pytest.approx(3.0 * per_newton / 0.001)


def test_a_cable_whose_solve_failed_draws_no_force_arrows(extension):
    overlay = sys.modules[f"{extension.__name__}.cable_harness.overlay"]
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    _start, end, _clip, cable = simple_harness()
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    simulation.tick(bpy.context)
    assert len(_arrow_lengths(overlay.shown("Cable"))) == 3
    place(end, (0.9, 0.0, 0.0), 1.0)  # out of reach: the held state's forces are no holder's load
    simulation.tick(bpy.context)
    shown = overlay.shown("Cable")
    assert shown["failed"] and len(shown["arrows"]) == 0
