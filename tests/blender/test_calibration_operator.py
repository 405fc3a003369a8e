# SPDX-License-Identifier: GPL-3.0-or-later
"""Calibrate from Tests in a saved millimetre scene: the fitted EI is stored in the library beside the
.blend and given to the active cable as the custom material of its own diameter."""

import json
import math
import sys

import bpy
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import simple_harness


def test_calibrate_from_tests_stores_the_fit_and_gives_it_to_the_active_cable(tmp_path):
    calibration = sys.modules[f"{MODULE}.solver_core.io.calibration"]
    EI, d, mu = 2.3e-3, 0.004, 0.1
    nodes, arc = calibration._solved_nodes(calibration._cantilever_case(EI, d, mu, 0.4))
    points = [{"s": s, "z": float(calibration._at(nodes, arc, s)[2])} for s in (0.2, 0.3, 0.4)]
    tests = tmp_path / "bench.json"
    tests.write_text(
        json.dumps(
            {
                "format": "cable-harness-calibration/1",
                "name": "lab_pvc",
                "diameter": d,
                "linear_density": mu,
                "tests": [{"kind": "cantilever", "length": 0.4, "points": points}],
            }
        )
    )
    *_, cable = simple_harness(unit_scale=0.001)
    bpy.context.view_layer.objects.active = cable
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    assert bpy.ops.cable_harness.calibrate_from_tests(filepath=str(tests)) == {"FINISHED"}
    library = json.loads((tmp_path / "materials.json").read_text())["materials"]
    assert library["lab_pvc"]["EI"] == pytest.approx(EI, rel=1e-3)
    s = cable.cable_harness
    diameter_m = s.diameter * 0.001
    assert s.material == "CUSTOM"
    assert s.youngs_modulus * 1e6 * math.pi * diameter_m**4 / 64 == pytest.approx(EI, rel=1e-3)
    assert s.density * math.pi * diameter_m**2 / 4 == pytest.approx(mu, rel=1e-3)


def test_a_bad_calibration_file_is_refused_by_name(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "cable-harness-calibration/1", "name": "x", "diameter": -1}))
    simple_harness()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    try:
        result = bpy.ops.cable_harness.calibrate_from_tests(filepath=str(bad))
    except RuntimeError as exc:  # the operator's ERROR report
        assert "diameter" in str(exc)
    else:
        assert result == {"CANCELLED"}
    assert not (tmp_path / "materials.json").exists()
