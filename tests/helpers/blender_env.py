# SPDX-License-Identifier: GPL-3.0-or-later
"""Loading the extension into the bpy module from PyPI, for the Blender tests.

The repository is loaded the way Blender loads an installed extension: a local extension
repository whose folder holds a link named after the extension id, enabled as
bl_ext.chdev.cable_harness. User resources go to a temporary folder so ~/.config stays clean.
"""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="cable_harness_user_"))
# Compiled kernels survive between test runs (the extension would use its per-user folder).
os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".venv" / "numba-cache"))

import bpy  # noqa: E402

REPO_MODULE = "chdev"
MODULE = f"bl_ext.{REPO_MODULE}.cable_harness"
# A stable location: numba keys its cache on the source path, so a new temporary folder per run
# would recompile every kernel (~13 s) each time.
_repo_dir = str(ROOT / ".venv" / "blender-extension-repo")
os.makedirs(_repo_dir, exist_ok=True)
if not os.path.lexists(os.path.join(_repo_dir, "cable_harness")):
    os.symlink(ROOT, os.path.join(_repo_dir, "cable_harness"))


def enable_extension():
    bpy.ops.preferences.addon_enable(module=MODULE)
    return sys.modules[MODULE]


def disable_extension():
    bpy.ops.preferences.addon_disable(module=MODULE)
