# SPDX-License-Identifier: GPL-3.0-or-later
"""The solver's kernels compiled in a separate process, so that the first solve does not freeze Blender."""

import re
import sys

import bpy
import pytest
from helpers.blender_scenes import simple_harness


@pytest.fixture
def warmup(extension, monkeypatch):
    module = sys.modules[f"{extension.__name__}.cable_harness.warmup"]
    monkeypatch.setitem(module._state, "failed", "")
    yield module
    module.cancel()


def test_the_background_compile_leaves_the_kernels_in_the_cache_the_extension_reads(warmup, extension):
    # the session fixture ran the real compile (python -m solver_core.warmup) before any test solved
    solver = sys.modules[f"{extension.__name__}.solver_core"]
    assert solver.kernels_are_warm() and not warmup.preparing() and warmup.progress() == ""
    assert warmup.start() is False  # warm: nothing to do
    # every kernel of every feature, so that no first use of one compiles
    missing = set(solver.kernel_names()) - solver.compiled_kernel_names()
    assert not missing, sorted(missing)


def test_solving_waits_while_the_kernels_compile(warmup, monkeypatch):
    simple_harness()
    monkeypatch.setattr(warmup, "command", lambda: [sys.executable, "-c", "import time; time.sleep(2)"])
    assert warmup.start(force=True)
    assert warmup.preparing() and re.fullmatch(
        r"Preparing the solver \(first start only\): \d+ of \d+ kernels(, about \d+ s left)?", warmup.progress()
    )
    assert not bpy.ops.cable_harness.solve.poll() and not bpy.ops.cable_harness.bake.poll()
    assert warmup.wait(60)
    assert not warmup.preparing() and bpy.ops.cable_harness.solve.poll()
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}


def test_a_failed_background_compile_says_why_and_solving_still_works(warmup, monkeypatch):
    *_, cable = simple_harness()
    monkeypatch.setattr(warmup, "command", lambda: [sys.executable, "-c", "raise SystemExit('no compiler here')"])
    assert warmup.start(force=True)
    warmup.wait(60)
    assert "background compile failed: no compiler here" in warmup.progress()
    assert bpy.ops.cable_harness.solve() == {"FINISHED"} and cable.cable_harness.result_converged


def test_the_background_compile_runs_the_python_blender_runs(warmup, monkeypatch, tmp_path):
    # A Blender built against the system's Python reports as sys.executable whatever python3.x comes
    # first on PATH (a pyenv shim was seen: its packages then clashed with Blender's, and the
    # compile failed). The child must be the interpreter of Blender's own prefix.
    import subprocess

    monkeypatch.setattr(sys, "executable", str(tmp_path / "not-this-python"))
    python = warmup.interpreter()
    assert python != sys.executable
    prefix = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True)
    assert prefix.stdout.strip() == sys.prefix
    assert warmup.command()[0] == python


def test_the_background_compile_imports_the_solver_under_blenders_package_name(warmup, tmp_path):
    # numba's cache names each kernel's module and imports it when loading the kernel: Blender can
    # load only kernels compiled under its own names (bl_ext.<repository>.cable_harness.solver_core),
    # not under a top-level "solver_core" (Debian's Blender failed so on its first solve)
    import subprocess

    cmd = warmup.solver_command("solver_core.maths.rotations")  # a module that only defines functions
    cmd[2] += "\nprint(sorted(m for m in sys.modules if m.endswith('solver_core')))"
    out = subprocess.run(cmd, capture_output=True, text=True, env=warmup.solver_environment(), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert warmup.package_name().startswith("bl_ext.")
    assert out.stdout.strip().splitlines()[-1] == str([f"{warmup.package_name()}.solver_core"])
