# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the headless Blender tests (see helpers/blender_env.py for how the extension loads)."""

# isort: off
from helpers.blender_env import disable_extension, enable_extension  # first: it prepares the environment

import sys  # noqa: E402

import bpy  # noqa: E402
import pytest  # noqa: E402

# isort: on


@pytest.fixture(scope="session", autouse=True)
def extension():
    module = enable_extension()
    # as an interactive Blender does on enabling (a background one skips it): compile the solver's
    # kernels in a separate process (cable_harness/warmup.py); the tests then load them from the cache
    warmup = sys.modules[f"{module.__name__}.cable_harness.warmup"]
    if not sys.modules[f"{module.__name__}.solver_core"].kernels_are_warm():
        warmup.start(force=True)
        warmup.wait(1200)
    yield module
    disable_extension()


@pytest.fixture(autouse=True)
def empty_file():
    # read_homefile keeps user extensions enabled (read_factory_settings would disable them)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    yield
