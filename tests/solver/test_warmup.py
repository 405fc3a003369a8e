# SPDX-License-Identifier: GPL-3.0-or-later
"""warmup.py: the case that compiles the kernels ahead of the first solve, and its marker."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solver_core import kernels_are_warm, parse_case, solve_case, warm_up, warmup_cases
from solver_core import warmup as warmup_module

ROOT = Path(__file__).resolve().parents[2]


def test_the_warm_up_case_takes_contact_friction_clips_and_a_step_and_converges():
    case = warmup_cases.CONTACT
    kinds = {o["type"] for o in case["obstacles"]}
    assert kinds == {"plane", "sphere", "mesh"} and case["contact"]["cable_cable"] and case["steps"]
    result = solve_case(parse_case(case))
    for step in result["steps"]:
        assert all(c["converged"] for c in step["cables"].values())


def test_the_warm_up_takes_every_feature():
    cases = dict(warmup_cases.feature_cases())
    parsed = {name: parse_case(case) for name, case in cases.items()}
    assert any(c.junctions for c in parsed.values()) and any(c.wires for c in parsed.values())
    assert {c.solver.model for c in parsed.values()} == {"cosserat", "cosserat_pbd", "kirchhoff_cg", "mass_spring"}
    assert {c.solver.model for c in parsed.values() if c.solver.dynamics} == {"cosserat", "cosserat_pbd"}
    cables = [cable for c in parsed.values() for cable in c.cables]
    assert any(cable.rest is not None for cable in cables)
    cables += list(parse_case(warmup_cases.CONTACT).cables)
    assert {clip.kind for cable in cables for clip in cable.clips} == {"fixed", "rotating", "sliding"}
    assert any(clip.stiffness is not None for cable in cables for clip in cable.clips)


@pytest.mark.parametrize("name", [name for name, _case in warmup_cases.feature_cases()])
def test_each_warm_up_case_converges_at_every_step(name):
    result = solve_case(parse_case(dict(warmup_cases.feature_cases())[name]))
    assert all(c["converged"] for step in result["steps"] for c in step["cables"].values()), name


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


def _alive_children(pid: int) -> list:
    """Processes whose parent is ``pid`` and that have not ended (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or warmup_module._cores() < 2,
    reason="a helper is forked on two cores or more; its end with its parent is set with Linux's prctl",
)
def test_a_cancelled_compile_takes_its_helper_with_it(tmp_path):
    # the Blender layer stops the compile (the extension disabled) by terminating the process it started
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "solver_core.warmup"], cwd=ROOT, env=env, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        helpers = []
        while not helpers and time.monotonic() < deadline and process.poll() is None:
            helpers = _alive_children(process.pid)
            time.sleep(0.1)
        assert helpers, "the compile forked no helper"
    finally:
        process.terminate()
        process.wait(30)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in helpers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in helpers)
    assert not list(tmp_path.rglob("warm-*"))  # not taken for a finished compile
