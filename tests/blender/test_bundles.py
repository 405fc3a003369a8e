# SPDX-License-Identifier: GPL-3.0-or-later
"""A cable made a bundle of wires in the panel: its diameter and bevel follow the wires, it is exported
as the case format's `bundle`, solves as the CLI solves that case, and comes back on import."""

import json
import sys

import bpy
import numpy as np
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import RecordingLayout, StandIn, curve_world_points, simple_harness


def make_bundle(cable_ob, wires, wrap="taped", sheath=0.0):
    s = cable_ob.cable_harness
    bpy.context.view_layer.objects.active = cable_ob
    for diameter, count, material in wires:
        assert bpy.ops.cable_harness.wire_add() == {"FINISHED"}
        w = s.wires[-1]
        w.diameter, w.count, w.material = diameter, count, material
    s.wrap, s.sheath = wrap, sheath
    return s


@pytest.mark.parametrize("unit_scale", [1.0, 0.001])
def test_a_bundle_is_exported_and_solved_as_the_cli_solves_its_case(tmp_path, unit_scale):
    *_, cable_ob = simple_harness(unit_scale=unit_scale, with_clip=False, segments=30)
    s = make_bundle(
        cable_ob, [(0.0016 / unit_scale, 7, "pvc_wire"), (0.001 / unit_scale, 12, "CUSTOM")], sheath=0.0003 / unit_scale
    )
    assert s.is_bundle
    case_path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(case_path)) == {"FINISHED"}
    doc = json.loads(case_path.read_text())
    written = doc["cables"][0]
    assert "diameter" not in written and "material" not in written
    assert written["bundle"]["wrap"] == "taped" and written["bundle"]["sheath"] == pytest.approx(0.0003)
    assert [(w["count"], w["material"].get("preset")) for w in written["bundle"]["wires"]] == [
        (7, "pvc_wire"),
        (12, None),
    ]
    assert written["bundle"]["wires"][0]["diameter"] == pytest.approx(0.0016)
    solver = sys.modules[f"{MODULE}.solver_core"]
    spec = solver.parse_case(doc).cables[0]
    # the bevel shows the bundle's diameter, as the solver derives it
    assert 2.0 * cable_ob.data.bevel_depth * unit_scale == pytest.approx(spec.diameter, rel=1e-6)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and s.result_converged
    result = solver.solve_case(doc)["steps"][-1]["cables"][cable_ob.name]
    assert result["bundle"]["wires"] == 19
    np.testing.assert_allclose(curve_world_points(cable_ob, unit_scale), np.array(result["nodes"]), atol=1e-6)


def test_the_bundle_settings_are_part_of_the_result_and_the_bevel_follows_them():
    *_, cable_ob = simple_harness(with_clip=False)
    s = make_bundle(cable_ob, [(0.0016, 3, "pvc_wire")], wrap="loose")
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and not s.result_stale
    depth = cable_ob.data.bevel_depth
    s.wires[0].count = 7  # 3 -> 7 wires: from 2.155 to 3 wire diameters
    assert s.result_stale
    assert cable_ob.data.bevel_depth == pytest.approx(depth * 3.0 / (1.0 + 2.0 / 3.0**0.5), rel=1e-6)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and not s.result_stale
    s.sheath = 0.001
    assert s.result_stale and cable_ob.data.bevel_depth == pytest.approx(0.5 * 3 * 0.0016 + 0.001, rel=1e-6)
    assert bpy.ops.cable_harness.wire_remove() == {"FINISHED"} and not len(s.wires)
    with pytest.raises(RuntimeError, match="bundle without wires"):
        bpy.ops.cable_harness.solve()
    s.is_bundle = False
    assert cable_ob.data.bevel_depth == pytest.approx(0.5 * s.diameter)


def test_an_imported_bundle_comes_back_as_a_bundle(tmp_path):
    *_, cable_ob = simple_harness(with_clip=False)
    make_bundle(cable_ob, [(0.0016, 5, "pvc_wire"), (0.0012, 2, "CUSTOM")], wrap="sleeved", sheath=0.0005)
    out = tmp_path / "bundle.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(out)) == {"FINISHED"}
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    op = StandIn(bpy.types.CABLE_HARNESS_OT_import_case)
    op.filepath, op.colliders, op.scene_settings = str(out), False, False
    assert op.execute(bpy.context) == {"FINISHED"}
    assert not [text for level, text in op.reports if level == {"WARNING"}]
    s = bpy.data.objects["Cable"].cable_harness
    assert s.is_bundle and (s.wrap, len(s.wires)) == ("sleeved", 2)
    assert s.sheath == pytest.approx(0.0005) and [w.count for w in s.wires] == [5, 2]
    again = tmp_path / "again.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(again)) == {"FINISHED"}
    a, b = json.loads(out.read_text())["cables"][0], json.loads(again.read_text())["cables"][0]
    assert a["bundle"]["wrap"] == b["bundle"]["wrap"] and len(a["bundle"]["wires"]) == len(b["bundle"]["wires"])
    for x, y in zip(a["bundle"]["wires"], b["bundle"]["wires"]):
        assert x["count"] == y["count"] and x["diameter"] == pytest.approx(y["diameter"], rel=1e-6)
        assert x["material"].keys() == y["material"].keys()


def test_a_bundle_with_a_measured_stiffness_is_imported_as_one_cable_and_says_so(tmp_path):
    doc = {
        "format": "cable-harness-case/1",
        "cables": [
            {
                "id": "W1",
                "length": 0.4,
                "segments": 20,
                "bundle": {"wires": [{"diameter": 0.0016, "material": {"preset": "pvc_wire"}, "count": 4}]},
                "material": {"EI": 0.001},
                "start": {"position": [0, 0, 0], "tangent": [1, 0, 0]},
                "end": {"position": [0.3, 0, 0], "tangent": [1, 0, 0]},
            }
        ],
    }
    path = tmp_path / "measured.json"
    path.write_text(json.dumps(doc))
    op = StandIn(bpy.types.CABLE_HARNESS_OT_import_case)
    op.filepath, op.colliders, op.scene_settings = str(path), False, False
    assert op.execute(bpy.context) == {"FINISHED"}
    warnings = [text for level, text in op.reports if level == {"WARNING"}]
    assert any("W1: a bundle whose wires or overrides the panel cannot hold" in w for w in warnings)
    s = bpy.data.objects["W1"].cable_harness
    assert not s.is_bundle and s.material == "CUSTOM"


def test_wire_list_commands_without_an_active_cable_say_so():
    bpy.ops.cable_harness.add_connector()
    with pytest.raises(RuntimeError, match="make a cable the active object"):
        bpy.ops.cable_harness.wire_add()
    with pytest.raises(RuntimeError, match="has no wire to remove"):
        bpy.ops.cable_harness.wire_remove()


def test_a_baked_bundle_is_in_the_reports_bill_of_materials(tmp_path):
    start, end, _, cable_ob = simple_harness(with_clip=False, segments=20)
    make_bundle(cable_ob, [(0.0016, 6, "pvc_wire"), (0.001, 2, "CUSTOM")])
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 2
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    assert bpy.ops.cable_harness.export_report(directory=str(tmp_path)) == {"FINISHED"}
    bill = json.loads((tmp_path / "report.json").read_text())["bill_of_materials"]
    assert [(w["wire"], w["count"], w["from"], w["to"]) for w in bill] == [
        ("Cable.1", 6, start.name, end.name),
        ("Cable.2", 2, start.name, end.name),
    ]
    assert all(w["length"] == pytest.approx(cable_ob.cable_harness.length) for w in bill)
    assert bill[0]["diameter"] == pytest.approx(0.0016)


@pytest.mark.parametrize("unit_scale", [1.0, 0.001])
def test_the_panel_draws_a_bundle_with_its_diameter_in_scene_units(unit_scale):
    *_, cable_ob = simple_harness(unit_scale=unit_scale, with_clip=False)
    s = make_bundle(cable_ob, [(0.0016 / unit_scale, 7, "pvc_wire"), (0.001 / unit_scale, 1, "CUSTOM")])
    s.active_wire = 1
    drawn = []
    bpy.types.VIEW3D_PT_cable_harness._draw_cable(RecordingLayout(drawn, wire_prefix=True), s)
    props = [entry[1] for entry in drawn if entry[0] == "prop"]
    assert "wrap" in props and "sheath" in props and "wire.youngs_modulus" in props  # the selected wire is custom
    assert "diameter" not in props and "material" not in props  # the bundle's own, not the cable's
    assert ("list", "CABLE_HARNESS_UL_wires") in drawn
    labels = " ".join(entry[1] for entry in drawn if entry[0] == "label")
    assert "8 wires" in labels and "lower bound" in labels
    # eight wires: the area rule, sqrt((7 x 1.6^2 + 1^2) / 0.82) = 4.80 mm, in the scene's unit system
    assert f"{1e3 * ((7 * 0.0016**2 + 0.001**2) / 0.82) ** 0.5:.2f}" == "4.80"
    assert "Bundle diameter 4.8 mm, 8 wires" in labels
