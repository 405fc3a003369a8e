# SPDX-License-Identifier: GPL-3.0-or-later
"""warmup.py: the case that compiles the kernels ahead of the first solve, and its marker."""

import subprocess
import sys
from pathlib import Path

from solver_core import kernels_are_warm, parse_case, solve_case, warm_up
from solver_core import warmup as warmup_module

ROOT = Path(__file__).resolve().parents[2]


def test_the_warm_up_case_takes_contact_friction_clips_and_a_step_and_converges():
    case = warmup_module._CASE
    kinds = {o["type"] for o in case["obstacles"]}
    assert kinds == {"plane", "sphere", "mesh"} and case["contact"]["cable_cable"] and case["steps"]
    result = solve_case(parse_case(case))
    for step in result["steps"]:
        assert all(c["converged"] for c in step["cables"].values())


def test_warm_up_leaves_its_marker_in_this_sources_cache_folder(tmp_path):
    warm_up()
    assert kernels_are_warm() and warmup_module.WARM_MARKER.exists()
    # another process with another cache folder starts cold
    probe = "import solver_core; print(solver_core.kernels_are_warm())"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"NUMBA_CACHE_DIR": str(tmp_path), "PATH": ""},
        check=True,
    )
    assert out.stdout.strip() == "False"
