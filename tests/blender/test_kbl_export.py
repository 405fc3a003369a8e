# SPDX-License-Identifier: GPL-3.0-or-later
"""Export KBL from a scene in millimetres: a Y harness drawn with the operators, solved and written as
KBL 2.4 SR-1; the file validates against the published schema, and its segments are the solved
centre lines (lengths in mm, whatever the scene's unit) between the junction and the connectors."""

from pathlib import Path

import bpy
import numpy as np
from helpers.blender_scenes import curve_world_points, y_harness
from lxml import etree

from solver_core import read_kbl

SCHEMA = Path(__file__).parents[1] / "data" / "kbl24_sr1.xsd"


def test_export_kbl_writes_the_solved_harness(tmp_path):
    junction, trunk, branches = y_harness(unit_scale=0.001)
    path = tmp_path / "y.kbl"
    assert bpy.ops.cable_harness.export_kbl(filepath=str(path)) == {"FINISHED"}
    schema = etree.XMLSchema(etree.parse(str(SCHEMA)))
    assert schema.validate(etree.parse(str(path))), schema.error_log
    back = read_kbl(str(path))
    kinds = sorted(kind for kind, _point, _components in back.nodes.values())
    assert kinds == ["connector"] * 3 + ["junction"]
    # connectors are named after their objects, as the user named them
    connectors = {ob.name for ob in bpy.context.scene.objects if ob.cable_harness.role == "CONNECTOR"}
    assert {label for label, node in back.nodes.items() if node[0] == "connector"} == connectors
    for ob in (trunk, *branches):
        (segment,) = [s for s in back.segments.values() if s.data["cable"] == ob.name]
        points = curve_world_points(ob, 0.001)  # metres
        solved = float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum())
        assert abs(segment.length - solved) < 5e-5  # the curve object holds single precision
        assert junction.name in (segment.start, segment.end)
        # the centre curve runs along the solved curve, within the export's 0.1 mm and float32
        dense = segment.curve_points(400)
        gaps = np.linalg.norm(points[:, None] - dense[None], axis=2).min(axis=1)
        assert gaps.max() < 2e-3 * solved + 1e-4


def test_export_kbl_without_cables_says_so():
    try:
        result = bpy.ops.cable_harness.export_kbl(filepath="/tmp/none.kbl")
    except RuntimeError as exc:  # the operator's ERROR report
        assert "cable" in str(exc)
    else:
        assert result == {"CANCELLED"}


def test_file_export_offers_the_harness_documents():
    """File > Export lists the formboard, the KBL file and the swept envelope (and the case file)."""
    draw = bpy.types.TOPBAR_MT_file_export.draw
    modules = {f.__module__.rsplit(".", 1)[-1] for f in getattr(draw, "_draw_funcs", [])}
    assert {"formboard", "kbl", "envelope", "case"} <= modules
