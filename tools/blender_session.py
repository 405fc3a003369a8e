# SPDX-License-Identifier: GPL-3.0-or-later
"""Load the extension from this checkout into the bpy module (the main job, tests, benchmarks).

The checkout is loaded the way Blender loads an extension installed from disk: Blender's own
"user_default" repository, pointed at a folder in .venv that holds a link named after the extension
id, enables it as bl_ext.user_default.cable_harness, the package name of an installed zip, so that
the kernels tools/prebuild_kernels.py builds for the zip serve it too (``kernel_folder``). Call
``prepare_environment`` before bpy is imported: Blender's user resources go to a scratch folder
(never the user's ~/.config/blender) and compiled kernels to a cache kept in .venv.
"""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPO_MODULE = "user_default"
MODULE = f"bl_ext.{REPO_MODULE}.cable_harness"
# A stable location: numba keys its cache on the source path, so a new temporary folder per run
# would recompile every kernel each time.
REPO_DIR = ROOT / ".venv" / "blender-extension-repo"


def prepare_environment(kernel_folder: Path | None = None) -> None:
    """``kernel_folder``: kernels built by tools/prebuild_kernels.py for these sources, used as an
    installed zip uses its own (solver_core.prebuilt_kernels)."""
    if "bpy" in sys.modules:
        raise RuntimeError("prepare_environment() must run before bpy is imported")
    if "BLENDER_USER_RESOURCES" not in os.environ:
        scratch = tempfile.mkdtemp(prefix="cable_harness_user_")
        os.environ["BLENDER_USER_RESOURCES"] = scratch
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".venv" / "numba-cache"))
    if kernel_folder is not None:
        os.environ["CABLE_HARNESS_KERNEL_FOLDER"] = str(kernel_folder)
    REPO_DIR.mkdir(parents=True, exist_ok=True)
    link = REPO_DIR / "cable_harness"
    if os.path.lexists(link) and os.path.realpath(link) != str(ROOT):
        os.remove(link)  # a checkout moved, or another one shares this environment
    if not os.path.lexists(link):
        os.symlink(ROOT, link)


def add_repository() -> None:
    import bpy

    # a stable folder: numba keys its cache on the source path, so a new scratch folder per run would
    # need every kernel again
    repo = next(r for r in bpy.context.preferences.extensions.repos if r.module == REPO_MODULE)
    repo.custom_directory = str(REPO_DIR)
    repo.use_custom_directory = True


def enable_extension():
    import bpy

    add_repository()
    bpy.ops.preferences.addon_enable(module=MODULE)
    return sys.modules[MODULE]


def disable_extension():
    import bpy

    bpy.ops.preferences.addon_disable(module=MODULE)
