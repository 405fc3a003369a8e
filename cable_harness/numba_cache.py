# SPDX-License-Identifier: GPL-3.0-or-later
"""Where numba keeps compiled solver kernels when the solver runs inside Blender.

An installed extension's own folder may be read-only and is replaced on every upgrade, so the
cache goes to the extension's per-user folder (bpy.utils.extension_path_user). numba reads the
location when a cached function is defined, i.e. when solver_core is first imported: this must
run before that. A NUMBA_CACHE_DIR set by the user wins; outside an installed extension (tests,
development checkouts) numba's default next to the sources is kept.
"""

import os
import sys


def configure(root_package: str) -> str | None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    if not root_package.startswith("bl_ext."):
        return None
    # imported here, so that the Blender layer's bpy-free modules can be imported (and tested) without bpy
    import bpy

    path = bpy.utils.extension_path_user(root_package, path="numba_cache", create=True)
    os.environ["NUMBA_CACHE_DIR"] = path

    numba_config = sys.modules.get("numba.core.config")
    if numba_config is not None:
        # numba was imported by someone else first: its config is read per cached function
        numba_config.CACHE_DIR = path
    return path
