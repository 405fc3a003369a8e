# SPDX-License-Identifier: GPL-3.0-or-later
"""The extension loads as Blender loads it, registers cleanly and reaches the solver."""

import json
import sys

import bpy
import pytest
from helpers.blender_env import MODULE, disable_extension, enable_extension


def _operator_registered():
    return hasattr(bpy.types, "CABLE_HARNESS_OT_solve_case_file")


def test_solver_is_a_subpackage_of_the_extension(extension):
    assert f"{MODULE}.solver_core" in sys.modules
    assert extension.__name__ == MODULE


def test_register_unregister_three_times_leaves_nothing_behind():
    for _ in range(3):
        disable_extension()
        assert not _operator_registered()
        enable_extension()
        assert _operator_registered()


def test_solve_case_file_operator(tmp_path):
    case = {
        "format": "cable-harness-case/1",
        "cables": [
            {
                "id": "W1",
                "length": 0.3,
                "diameter": 0.004,
                "material": {"preset": "lv2017_harness"},
                "segments": 20,
                "start": {"position": [0, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
                "end": None,
            }
        ],
    }
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    assert bpy.ops.cable_harness.solve_case_file(filepath=str(path)) == {"FINISHED"}


def test_bad_case_file_is_reported_with_the_field(tmp_path):
    # An ERROR report reaches a script as RuntimeError carrying the report text (the UI shows it).
    path = tmp_path / "case.json"
    path.write_text(json.dumps({"format": "cable-harness-case/1", "cables": []}))
    with pytest.raises(RuntimeError, match="cables must be a non-empty list"):
        bpy.ops.cable_harness.solve_case_file(filepath=str(path))
