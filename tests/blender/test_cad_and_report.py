# SPDX-License-Identifier: GPL-3.0-or-later
"""Import CAD (STEP), the bake log, Export Report, and exported cases carrying the colliders."""

import csv
import json
import math
import sys

import bpy
import numpy as np
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import simple_harness

OCP = pytest.importorskip("OCP", reason="the CAD kernel (cadquery-ocp-novtk) is in requirements/dev.txt")


def _step_with_holed_block(path):
    """A 40 x 20 x 10 mm block with a 8 mm through hole, named, as STEP (the demo's own writer)."""
    from OCP.BRepAlgoAPI import BRepAlgoAPI_Cut
    from OCP.BRepPrimAPI import BRepPrimAPI_MakeBox, BRepPrimAPI_MakeCylinder
    from OCP.gp import gp_Ax2, gp_Dir, gp_Pnt
    from OCP.IFSelect import IFSelect_RetDone
    from OCP.STEPCAFControl import STEPCAFControl_Writer
    from OCP.STEPControl import STEPControl_AsIs
    from OCP.TCollection import TCollection_ExtendedString
    from OCP.TDataStd import TDataStd_Name
    from OCP.TDocStd import TDocStd_Document
    from OCP.XCAFDoc import XCAFDoc_DocumentTool

    block = BRepPrimAPI_MakeBox(gp_Pnt(0, 0, 0), 40.0, 20.0, 10.0).Shape()
    hole = BRepPrimAPI_MakeCylinder(gp_Ax2(gp_Pnt(20, 10, -1), gp_Dir(0, 0, 1)), 4.0, 12.0).Shape()
    document = TDocStd_Document(TCollection_ExtendedString("XmlOcaf"))
    tool = XCAFDoc_DocumentTool.ShapeTool_s(document.Main())
    TDataStd_Name.Set_s(
        tool.AddShape(BRepAlgoAPI_Cut(block, hole).Shape(), False), TCollection_ExtendedString("holed_block")
    )
    TDataStd_Name.Set_s(
        tool.AddShape(BRepPrimAPI_MakeBox(gp_Pnt(100, 0, 0), 10.0, 10.0, 10.0).Shape(), False),
        TCollection_ExtendedString("cube"),
    )
    writer = STEPCAFControl_Writer()
    writer.SetNameMode(True)
    assert writer.Transfer(document, STEPControl_AsIs) and writer.Write(str(path)) == IFSelect_RetDone
    return path


def _volume_and_open_edges(ob):
    me = ob.data
    v = np.array([vert.co for vert in me.vertices], dtype=float)
    t = np.array([p.vertices[:] for p in me.polygons])
    volume = np.einsum("ij,ij->i", v[t[:, 0]], np.cross(v[t[:, 1]], v[t[:, 2]])).sum() / 6.0
    edges = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    _, count = np.unique(edges, axis=0, return_counts=True)
    return volume, int((count != 2).sum())


@pytest.mark.parametrize("unit_scale", [1.0, 0.001])
def test_import_step_gives_named_watertight_parts_in_scene_units(tmp_path, unit_scale):
    path = _step_with_holed_block(tmp_path / "parts.step")
    bpy.context.scene.unit_settings.scale_length = unit_scale
    assert bpy.ops.cable_harness.import_step(filepath=str(path), linear_deflection=0.05) == {"FINISHED"}
    block, cube = bpy.data.objects["holed_block"], bpy.data.objects["cube"]
    assert block.cable_harness.role == "COLLIDER" and cube.cable_harness.role == "COLLIDER"
    mm3_per_unit3 = (unit_scale * 1e3) ** 3
    volume, open_edges = _volume_and_open_edges(block)
    # exact: 40*20*10 - pi 4^2 10; the hole is a polygon inscribed within the chord tolerance
    exact = 8000.0 - math.pi * 16.0 * 10.0
    assert volume * mm3_per_unit3 == pytest.approx(exact, rel=2e-3)
    assert open_edges == 0  # faces welded: a closed solid, so no edge counts as an open (sharp) rim
    cube_volume, _ = _volume_and_open_edges(cube)
    assert cube_volume * mm3_per_unit3 == pytest.approx(1000.0, rel=1e-5)  # float32 vertices
    corner = np.array([min(v.co[i] for v in cube.data.vertices) for i in range(3)]) * unit_scale
    assert corner == pytest.approx([0.1, 0.0, 0.0], abs=1e-7)  # 100 mm along x, whatever the unit


def test_import_step_reports_a_missing_cad_kernel_with_the_install_command(tmp_path, monkeypatch):
    path = _step_with_holed_block(tmp_path / "parts.step")
    for name in [m for m in sys.modules if m == "OCP" or m.startswith("OCP.")]:
        monkeypatch.setitem(sys.modules, name, None)  # import OCP.* now raises ImportError
    with pytest.raises(RuntimeError, match="pip install cadquery-ocp-novtk"):
        bpy.ops.cable_harness.import_step(filepath=str(path))
    assert not [o for o in bpy.data.objects if o.type == "MESH"]


def test_import_step_refuses_a_file_that_is_not_step(tmp_path):
    bad = tmp_path / "notes.step"
    bad.write_text("hello")
    with pytest.raises(RuntimeError, match="not a readable STEP file"):
        bpy.ops.cable_harness.import_step(filepath=str(bad))
    with pytest.raises(RuntimeError, match="no such file"):
        bpy.ops.cable_harness.import_step(filepath=str(tmp_path / "missing.step"))


def _animated_harness():
    start, end, clip, cable = simple_harness(with_clip=True, segments=30)
    for frame, x in ((1, 0.3), (11, 0.26)):
        end.location.x = x
        end.keyframe_insert("location", frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 11
    return start, end, clip, cable


def test_bake_log_and_report_agree_with_the_frames_they_summarise(tmp_path):
    start, end, clip, cable = _animated_harness()
    cable.cable_harness.min_bend_radius_allowed = 0.02
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    log = json.loads(bpy.data.texts["cable_harness_bake_log.json"].as_string())
    records = log["frames"][cable.name]
    assert [r["frame"] for r in records] == list(range(1, 12))
    # every frame's forces are those of a fresh solve of that frame (the same scene, re-solved)
    bpy.context.scene.frame_set(6)
    simulation = sys.modules[f"{MODULE}.cable_harness.simulation"]
    fresh = simulation.HarnessSimulation(bpy.context.scene).tick(bpy.context, write=False).results[cable.name]
    assert records[5]["forces"]["end"] == pytest.approx(np.linalg.norm(fresh["end_forces"]["end"]["force"]), rel=1e-3)
    assert bpy.ops.cable_harness.export_report(directory=str(tmp_path)) == {"FINISHED"}
    report = json.loads((tmp_path / "report.json").read_text())
    (summary,) = report["cables"]
    # peaks are the maxima of the logged series, at the frame they happen
    for holder in summary["peak_forces"]:
        series = [r["forces"][holder["holder"]] for r in records]
        assert holder["peak_force"] == max(series)
        assert holder["frame"] == records[int(np.argmax(series))]["frame"]
    assert summary["min_bend_radius"] == min(r["min_bend_radius"] for r in records)
    assert summary["bend_radius_ok"] == (summary["min_bend_radius"] >= 0.02)
    assert summary["rest_length"] == pytest.approx(cable.cable_harness.length)
    rows = list(csv.DictReader(open(tmp_path / "report.csv")))
    assert {r["quantity"] for r in rows} >= {"rest length", "min bend radius", "min clearance"}
    assert (tmp_path / "bend_radius.png").stat().st_size > 0 and (tmp_path / "forces.png").stat().st_size > 0


def test_clearance_in_the_log_is_the_gap_to_a_collider_below(tmp_path):
    start, end, clip, cable = _animated_harness()
    cable.cable_harness.segments = 30
    bpy.ops.mesh.primitive_plane_add(size=2.0, location=(0.15, 0.0, -0.5))
    plane = bpy.context.active_object
    plane.cable_harness.role = "COLLIDER"
    for ob in bpy.context.selected_objects:
        ob.select_set(False)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    log = json.loads(bpy.data.texts["cable_harness_bake_log.json"].as_string())
    # the plane is 0.5 m below: outside the 50 mm clearance search, reported as no collider near
    assert all(r["clearance"] is None for r in log["frames"][cable.name])
    plane.location.z = -0.09
    bpy.context.view_layer.update()
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    log = json.loads(bpy.data.texts["cable_harness_bake_log.json"].as_string())
    bpy.context.scene.frame_set(1)
    pts = np.array([list(cable.matrix_world @ p.co.xyz) for p in cable.data.splines[0].points])
    lowest = pts[:, 2].min()
    gap = log["frames"][cable.name][0]["clearance"]
    assert gap == pytest.approx(lowest - (-0.09) - 0.5 * cable.cable_harness.diameter, abs=2e-4)


def test_export_report_without_a_bake_says_so(tmp_path):
    simple_harness()
    with pytest.raises(RuntimeError, match="bake the cables first"):
        bpy.ops.cable_harness.export_report(directory=str(tmp_path))


def test_exported_case_carries_colliders_and_solves_the_same_in_the_cli(tmp_path):
    # the CLI's entry points from the extension's own copy of solver_core: the same sources as the
    # checkout's, whose kernels would be compiled again for their path (some 200 s on 2 cores)
    solver_core = sys.modules[f"{MODULE}.solver_core"]
    load_case, solve_case = solver_core.load_case, solver_core.solve_case

    start, end, clip, cable = simple_harness(with_clip=False, segments=30)
    cable.cable_harness.length = 0.6  # sags onto the plate below
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.15, 0.0, -0.13))
    plate = bpy.context.active_object
    plate.scale = (1.0, 1.0, 0.04)  # top at z = -0.11, well inside the sag of the free cable
    plate.cable_harness.role = "COLLIDER"
    for ob in bpy.context.selected_objects:
        ob.select_set(False)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert cable.cable_harness.result_converged
    path = tmp_path / "scene.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(path)) == {"FINISHED"}
    doc = json.loads(path.read_text())
    (mesh,) = doc["obstacles"]
    assert mesh["name"] == plate.name and len(mesh["triangles"]) == 12
    assert np.max(np.array(mesh["vertices"])[:, 2]) == pytest.approx(-0.11)  # world space, scale applied
    # The CLI gets the same problem, route included: without it the cable, longer than its span on a
    # flat plate, may bow to either side, and which side would be decided by round-off
    assert doc["cables"][0]["route"]
    result = solve_case(load_case(str(path)))["steps"][0]["cables"][cable.name]
    assert result["converged"]
    nodes = np.array(result["nodes"])
    pts = np.array([list(cable.matrix_world @ p.co.xyz) for p in cable.data.splines[0].points])
    r = 0.5 * cable.cable_harness.diameter
    # both rest on the plate: lowest point at the top plus the radius (1 % of r penetration allowed)
    for z in (nodes[:, 2].min(), pts[:, 2].min()):
        assert -0.11 + r - 0.01 * r <= z <= -0.11 + r + 1e-4
    assert np.abs(pts - nodes).max() < 1e-3  # and it is the same equilibrium
