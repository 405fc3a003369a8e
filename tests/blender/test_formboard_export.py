# SPDX-License-Identifier: GPL-3.0-or-later
"""Export Formboard from a scene in millimetres: a Y harness drawn with the operators, solved and laid
flat; the runs on the board are the solved lengths in mm, whatever the scene's unit."""

import xml.etree.ElementTree as ET

import bpy
import numpy as np
from helpers.blender_scenes import curve_world_points, y_harness

SVG = "{http://www.w3.org/2000/svg}"


def test_export_formboard_draws_the_solved_harness_at_its_lengths(tmp_path):
    _junction, trunk, branches = y_harness(unit_scale=0.001)
    path = tmp_path / "board.svg"
    assert bpy.ops.cable_harness.export_formboard(filepath=str(path)) == {"FINISHED"}
    root = ET.parse(path).getroot()
    runs = {e.get("data-cable"): e for e in root.iter(f"{SVG}line") if "run" in e.get("class", "").split()}
    assert set(runs) == {trunk.name, *(b.name for b in branches)}
    for ob in (trunk, *branches):
        # the solved curve's length (metres in world space), as the board draws it in mm
        points = curve_world_points(ob, 0.001)
        solved_mm = 1e3 * float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum())
        e = runs[ob.name]
        x1, y1, x2, y2 = (float(e.get(k)) for k in ("x1", "y1", "x2", "y2"))
        assert abs(np.hypot(x2 - x1, y2 - y1) - solved_mm) < 0.05  # the curve is written in single precision


def test_export_formboard_without_cables_says_so():
    try:
        result = bpy.ops.cable_harness.export_formboard(filepath="/tmp/none.svg")
    except RuntimeError as exc:  # the operator's ERROR report
        assert "cable" in str(exc)
    else:
        assert result == {"CANCELLED"}


def test_export_formboard_as_dxf_where_ezdxf_is_installed(tmp_path):
    import pytest

    ezdxf = pytest.importorskip("ezdxf")
    _junction, trunk, branches = y_harness(unit_scale=0.001)
    path = tmp_path / "board.dxf"
    assert bpy.ops.cable_harness.export_formboard(filepath=str(path)) == {"FINISHED"}
    msp = ezdxf.readfile(str(path)).modelspace()
    lines = sorted(e.dxf.start.distance(e.dxf.end) for e in msp.query('LINE[layer=="RUNS"]'))
    solved = sorted(
        1e3 * float(np.linalg.norm(np.diff(curve_world_points(ob, 0.001), axis=0), axis=1).sum())
        for ob in (trunk, *branches)
    )
    assert np.allclose(lines, solved, atol=0.05)  # the curve is written in single precision
