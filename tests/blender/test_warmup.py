# SPDX-License-Identifier: GPL-3.0-or-later
"""The solver's kernels compiled in a separate process, so that the first solve does not freeze Blender."""

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


def test_solving_waits_while_the_kernels_compile(warmup, monkeypatch):
    simple_harness()
    monkeypatch.setattr(warmup, "command", lambda: [sys.executable, "-c", "import time; time.sleep(2)"])
    assert warmup.start(force=True)
    assert warmup.preparing() and "Preparing the solver" in warmup.progress()
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
