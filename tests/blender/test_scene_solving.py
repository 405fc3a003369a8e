# SPDX-License-Identifier: GPL-3.0-or-later
"""Scenes built with the operators, solved in Blender, against the CLI on the exported case."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import StandIn, curve_world_points, place, simple_harness
from helpers.cases import cable, case, min_clearance


def test_make_cable_draws_a_route_through_the_clip_with_slack():
    start, end, clip, cable = simple_harness()
    s = cable.cable_harness
    assert s.start == start and s.end == end and [r.clip for r in s.clips] == [clip]
    route = np.array([p.co for p in s.route])
    route_length = np.linalg.norm(np.diff(route, axis=0), axis=1).sum()
    assert s.length == pytest.approx(route_length * 1.15, rel=1e-6)
    assert 0.0 < s.clips[0].s < s.length
    assert cable.data.bevel_depth == pytest.approx(0.002)


def test_blender_solve_matches_the_cli_on_the_exported_case(tmp_path):
    *_, cable = simple_harness()
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert cable.cable_harness.result_converged
    blender_points = curve_world_points(cable)
    case_path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(case_path)) == {"FINISHED"}
    result_path = tmp_path / "result.json"
    # the CLI of the extension's own solver_core, run as the background compile runs: Blender's Python,
    # the same (unresolved) path and package name as inside Blender, whose kernels are compiled
    # already (the checkout's copy would compile them again for its path, some 200 s on 2 cores).
    # Nothing on its path makes a top-level "solver_core" importable: kernels cached under that name
    # would not load in Blender either, and this would fail.
    warmup = sys.modules[f"{MODULE}.cable_harness.warmup"]
    env = warmup.solver_environment()
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in env["PYTHONPATH"].split(os.pathsep) if not (Path(p) / "solver_core").is_dir()
    )
    subprocess.run(
        warmup.solver_command("solver_core", "solve", str(case_path), "-o", str(result_path), "-q"),
        cwd=tmp_path,
        env=env,
        check=True,
    )
    cli_nodes = np.array(json.loads(result_path.read_text())["steps"][0]["cables"][cable.name]["nodes"])
    # the curve stores float32 coordinates
    assert np.abs(blender_points - cli_nodes).max() < 1e-6


def test_millimetre_and_metre_scenes_give_the_same_cable():
    *_, cable_m = simple_harness(unit_scale=1.0)
    bpy.ops.cable_harness.solve()
    metres = curve_world_points(cable_m, 1.0)
    length_m = cable_m.cable_harness.result_length
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    *_, cable_mm = simple_harness(unit_scale=0.001)
    assert cable_mm.cable_harness.diameter == pytest.approx(4.0)  # 4 mm in a millimetre scene
    bpy.ops.cable_harness.solve()
    millimetres = curve_world_points(cable_mm, 0.001)
    assert np.abs(millimetres - metres).max() < 1e-6
    assert cable_mm.cable_harness.result_length * 0.001 == pytest.approx(length_m, rel=1e-6)


def test_read_outs_are_filled():
    *_, cable = simple_harness()
    bpy.ops.cable_harness.solve()
    s = cable.cable_harness
    assert s.result_valid and s.result_converged and s.result_iterations > 0
    assert s.result_length == pytest.approx(s.length, rel=1e-3)
    assert s.result_min_bend_radius > 0.0
    assert s.result_start_force > 0.0 and s.result_end_force > 0.0
    s.min_bend_radius_allowed = 10.0  # 10 m: every real bend violates it
    bpy.ops.cable_harness.solve()
    assert "below the allowed" in s.result_message


def test_reset_puts_the_cable_back_on_its_route():
    *_, cable = simple_harness()
    bpy.ops.cable_harness.solve()
    bpy.ops.cable_harness.reset()
    pts = curve_world_points(cable)
    route = np.array([p.co for p in cable.cable_harness.route])
    assert np.allclose(pts[0], route[0], atol=1e-6) and np.allclose(pts[-1], route[-1], atol=1e-6)
    assert not cable.cable_harness.result_valid


def test_import_case_rebuilds_a_scene_that_solves_like_the_case(tmp_path):
    *_, cable = simple_harness()
    case_path = tmp_path / "case.json"
    bpy.ops.cable_harness.export_case(filepath=str(case_path))
    bpy.ops.cable_harness.solve()
    original = curve_world_points(cable)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.cable_harness.import_case(filepath=str(case_path)) == {"FINISHED"}
    imported = next(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE")
    bpy.ops.cable_harness.solve()
    assert np.abs(curve_world_points(imported) - original).max() < 1e-6


def test_import_case_keeps_a_rest_shape_and_says_what_blender_does_not_hold(tmp_path):
    # a pre-formed cable (kept, and exported again as it came) and a point load (said to be dropped)
    rest = {"curvature": [-3.0, 4.0], "twist": 2.0}
    doc = case(cable(rest=rest, loads=[{"s": 0.1, "force": [0.0, 0.0, -1.0]}]))
    path = tmp_path / "preformed.json"
    path.write_text(json.dumps(doc))
    op = StandIn(bpy.types.CABLE_HARNESS_OT_import_case)
    op.filepath, op.colliders, op.scene_settings = str(path), False, False
    assert op.execute(bpy.context) == {"FINISHED"}
    warnings = [text for level, text in op.reports if level == {"WARNING"}]
    assert warnings == ["W1: its 1 point load(s) are not held in Blender: imported without"]
    s = bpy.data.objects["W1"].cable_harness
    assert s.rest_shape == "BENT" and s.rest_bend_radius == pytest.approx(0.2)  # 1 / |(-3, 4)|
    out = tmp_path / "again.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(out)) == {"FINISHED"}
    again = json.loads(out.read_text())["cables"][0]["rest"]
    np.testing.assert_allclose(again["curvature"], rest["curvature"], rtol=1e-6)
    assert again["twist"] == pytest.approx(rest["twist"], rel=1e-6)


@pytest.mark.parametrize("unit_scale", [1.0, 0.001])
def test_a_preformed_cable_solves_in_blender_as_the_cli_solves_its_case(tmp_path, unit_scale):
    *_, cable_ob = simple_harness(unit_scale=unit_scale, with_clip=False, segments=30)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    straight = curve_world_points(cable_ob, unit_scale)
    s = cable_ob.cable_harness
    s.rest_shape, s.rest_bend_radius, s.rest_bend_direction = "BENT", 0.08 / unit_scale, math.pi / 2
    assert s.result_stale  # the rest shape is a setting the result was built from
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and s.result_converged
    bent = curve_world_points(cable_ob, unit_scale)
    # bending towards d2 of the start connector: the hanging cable swings out of its plane
    assert np.abs(bent - straight).max() > 0.01
    case_path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(case_path)) == {"FINISHED"}
    doc = json.loads(case_path.read_text())
    # (Blender keeps the angle in single precision: cos(pi / 2) is then 4e-8)
    np.testing.assert_allclose(doc["cables"][0]["rest"]["curvature"], [-12.5, 0.0], atol=1e-5)
    solver = sys.modules[f"{MODULE}.solver_core"]
    # from the exported route (the bent result): without its rest shape it would relax back
    want = np.array(solver.solve_case(doc)["steps"][-1]["cables"][cable_ob.name]["nodes"])
    assert np.abs(bent - want).max() < 1e-6


def test_set_rest_shape_takes_the_curve_as_it_is_now(tmp_path):
    # a cantilever sagging from a connector that points along +X, its end free: a curve in one plane,
    # whose parallel-transported frames need no twist (a route is a centre line only: between two
    # connectors a 3-D one may arrive rolled against the second, and is then twisted)
    start, end, _, cable_ob = simple_harness(unit_scale=0.001, segments=20, with_clip=False)
    place(start, (0.0, 0.0, 0.0), 0.001, (0.0, math.pi / 2.0, 0.0))
    s = cable_ob.cable_harness
    s.end = None
    s.length = 300.0  # mm
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and s.result_converged
    solved = curve_world_points(cable_ob, 0.001)
    assert solved[-1, 2] < -0.05  # it sags
    assert bpy.ops.cable_harness.set_rest_shape() == {"FINISHED"}
    assert s.rest_shape == "CURVE" and len(s.rest_route) == 21
    case_path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(case_path)) == {"FINISHED"}
    route = np.array(json.loads(case_path.read_text())["cables"][0]["rest"]["route"])
    np.testing.assert_allclose(route, solved, atol=1e-9)  # in metres, from a millimetre scene
    # without gravity it is unstressed in its rest shape and stays there, but for the first segment's
    # frame, which a route gives to first order in the segment length; a straight cable springs back
    bpy.context.scene.use_gravity = False
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and s.result_converged
    kept = np.abs(curve_world_points(cable_ob, 0.001) - solved).max()
    s.rest_shape = "STRAIGHT"
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and s.result_converged
    sprung = np.abs(curve_world_points(cable_ob, 0.001) - solved).max()
    assert kept < 0.02 * sprung and sprung > 0.05, (kept, sprung)


def test_set_rest_shape_needs_an_active_cable():
    simple_harness()
    bpy.context.view_layer.objects.active = None
    op = StandIn(bpy.types.CABLE_HARNESS_OT_set_rest_shape)
    assert op.execute(bpy.context) == {"CANCELLED"}
    assert op.reports == [({"ERROR"}, "make a cable the active object (click it last)")]


def test_import_case_builds_its_obstacles_as_colliders_that_solve_like_the_case(tmp_path):
    # Without its obstacles an imported case would route another harness: meshes come in as they
    # are, planes as large squares, spheres as UV spheres (wound outwards), each a Collider.
    solver = sys.modules[f"{MODULE}.solver_core"]
    plate = [[0.0, -0.1, -0.06], [0.3, -0.1, -0.06], [0.3, 0.1, -0.06], [0.0, 0.1, -0.06]]
    # the start connector turns the cable a little towards +y, so that it slides off that side of the
    # plate (a symmetric scene leaves it two mirror-image ways to go, chosen by round-off)
    held = {"tangent": [0.96, 0.28, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(
        cable(
            id="W1",
            length=0.45,
            segments=30,
            start={"position": [0.0, 0.0, 0.0], **held},
            end={"position": [0.3, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        ),
        obstacles=[
            {"type": "mesh", "name": "plate", "vertices": plate, "triangles": [[0, 1, 2], [0, 2, 3]]},
            {"type": "plane", "point": [0.0, 0.0, -0.5], "normal": [0.0, 0.0, 1.0]},
            {"type": "sphere", "center": [1.0, 0.0, 0.0], "radius": 0.1},
        ],
    )
    case_path = tmp_path / "case.json"
    case_path.write_text(json.dumps(doc))
    bpy.context.scene.unit_settings.scale_length = 0.001  # a millimetre scene
    assert bpy.ops.cable_harness.import_case(filepath=str(case_path)) == {"FINISHED"}
    colliders = {o.name: o for o in bpy.context.scene.objects if o.cable_harness.role == "COLLIDER"}
    assert sorted(colliders) == ["plane 1", "plate", "sphere 2"]
    corners = np.array([v.co for v in colliders["plate"].data.vertices])
    assert np.allclose(corners, np.array(plate) * 1000.0, atol=1e-3)
    plane = colliders["plane 1"].data
    assert plane.polygons[0].normal.z == pytest.approx(1.0) and plane.vertices[0].co.z == pytest.approx(-500.0)
    sphere = colliders["sphere 2"].data
    centres = np.array([p.center for p in sphere.polygons])
    normals = np.array([p.normal for p in sphere.polygons])
    radial = (centres - [1000.0, 0.0, 0.0]) / np.linalg.norm(centres - [1000.0, 0.0, 0.0], axis=1)[:, None]
    assert (np.einsum("ij,ij->i", normals, radial) > 0.99).all()
    distance = np.linalg.norm(np.array([v.co for v in sphere.vertices]) - [1000.0, 0.0, 0.0], axis=1)
    assert np.allclose(distance, 100.0, rtol=1e-6)
    imported = next(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE")
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert imported.cable_harness.result_converged
    reference = np.array(solver.solve_case(solver.load_case(str(case_path)))["steps"][0]["cables"]["W1"]["nodes"])
    # the cable rests on the plate's edge (it slid off its side), as in the case; without the plate it
    # would hang some 0.15 m low
    assert -0.01 * 0.002 <= min_clearance(reference, 0.002, [doc["obstacles"][0]]) < 1e-4
    assert np.abs(curve_world_points(imported, 0.001) - reference).max() < 1e-5


def test_simulate_follows_a_moved_connector():
    start, end, clip, cable = simple_harness()
    assert bpy.ops.cable_harness.simulate(ticks=2) == {"FINISHED"}
    before = curve_world_points(cable)
    place(end, (0.32, 0.01, 0.0), 1.0)
    bpy.ops.cable_harness.simulate(ticks=1)
    after = curve_world_points(cable)
    assert np.allclose(after[-1], [0.32, 0.01, 0.0], atol=1e-6)
    assert np.abs(after - before).max() > 1e-3


def _crossing_cables():
    """A hanging cable above a nearly taut one crossing under it (routes apart, the sag brings them
    together)."""
    start, end, clip, upper = simple_harness(with_clip=False, segments=40)
    upper.cable_harness.length = 0.36
    bpy.ops.cable_harness.add_connector()
    a = bpy.context.active_object
    place(a, (0.15, -0.15, -0.05), 1.0, (-math.pi / 2, 0.0, 0.0))  # outlet +y
    bpy.ops.cable_harness.add_connector()
    b = bpy.context.active_object
    place(b, (0.15, 0.15, -0.05), 1.0, (math.pi / 2, 0.0, 0.0))  # outlet -y
    for ob in bpy.context.selected_objects:
        ob.select_set(False)
    a.select_set(True)
    b.select_set(True)
    bpy.context.view_layer.objects.active = a
    bpy.ops.cable_harness.make_cable(segments=40, solve=False)
    lower = bpy.context.active_object
    lower.cable_harness.length = 0.302
    for ob in bpy.context.selected_objects:
        ob.select_set(False)
    return upper, lower


@pytest.mark.parametrize("cable_cable", [False, True])
def test_scene_cable_cable_contact_keeps_crossing_cables_apart(cable_cable):
    upper, lower = _crossing_cables()
    bpy.context.scene.cable_harness.cable_cable = cable_cable
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert upper.cable_harness.result_converged and lower.cable_harness.result_converged
    P, Q = curve_world_points(upper), curve_world_points(lower)
    r = 0.5 * upper.cable_harness.diameter
    gap = min_clearance(P, r, others=[(Q, r)])
    if cable_cable:
        # the upper cable rests on the lower one: touching, not through (1 % of r tolerance)
        assert -0.01 * r <= gap <= 0.02 * r
        assert P[:, 2].min() > Q[:, 2].min()
    else:
        # without it the upper one sags through the lower one and hangs below it where they cross
        assert P[:, 2].min() < Q[:, 2].min()


def test_scene_contact_settings_reach_the_case_and_come_back_from_it(tmp_path):
    simple_harness()
    settings = bpy.context.scene.cable_harness
    settings.friction_static, settings.friction_dynamic, settings.cable_cable = 0.4, 0.3, True
    path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(path)) == {"FINISHED"}
    doc = json.loads(path.read_text())
    assert doc["contact"] == {
        "friction_static": pytest.approx(0.4),
        "friction_dynamic": pytest.approx(0.3),
        "cable_cable": True,
    }
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    # by default an import keeps the scene's own settings (and says that the case's differ)
    assert bpy.ops.cable_harness.import_case(filepath=str(path)) == {"FINISHED"}
    settings = bpy.context.scene.cable_harness
    assert (settings.friction_static, settings.cable_cable) == (0.0, False)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.cable_harness.import_case(filepath=str(path), scene_settings=True) == {"FINISHED"}
    settings = bpy.context.scene.cable_harness
    assert (settings.friction_static, settings.friction_dynamic, settings.cable_cable) == (
        pytest.approx(0.4),
        pytest.approx(0.3),
        True,
    )
