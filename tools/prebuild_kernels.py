# SPDX-License-Identifier: GPL-3.0-or-later
"""Compile the solver's kernels to ship them in the Linux zip (solver_core/prebuilt_kernels.py).

    .venv/bin/python -m tools.prebuild_kernels [FOLDER]     # default dist/kernel_cache

Copies solver_core into a scratch folder under the package name an extension installed from disk
has (bl_ext.user_default.cable_harness.solver_core: a cached kernel imports its module by that
name), runs its warm-up there for numba's generic CPU into a scratch cache and exports the cache
files with their kernels.json into FOLDER. A FOLDER that already holds the kernels of these
sources is kept. SciPy is unimportable during the compile, as in Blender's own Python: a kernel
calling BLAS or LAPACK (numba reaches them through SciPy) fails the build rather than abort a user's
Blender. Needs the project's environment (numba and Python as in the zip's cp311 wheels); about
2 minutes on 2 cores.

Kernels built once are kept for the user too (tools/kernel_store.py), so that another clone of the
same solver on this machine, and the other of the README's two commands, copies them instead of
compiling them again; under CI=true there is no store. A release (tools/dev.py build) may so ship
kernels copied from the store: the files a compile of the same sources, Python and numba made.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import kernel_store

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "bl_ext.user_default.cable_harness"
DEFAULT_FOLDER = ROOT / "dist" / "kernel_cache"


def _prebuilt_module():
    """solver_core/prebuilt_kernels.py on its own: importing the solver package would define its kernels,
    which makes numba choose this process's CPU target, and a Blender test process must still be able
    to take the generic one of the shipped kernels."""
    spec = importlib.util.spec_from_file_location("_prebuilt_kernels", ROOT / "solver_core" / "prebuilt_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _current(folder: Path) -> bool:
    """Whether FOLDER holds kernels for these sources, this Python and numba (the zip's cp311 wheels)."""
    try:
        return json.loads((folder / "kernels.json").read_text()) == _wanted()
    except (OSError, ValueError):
        return False


def _wanted() -> dict:
    prebuilt = _prebuilt_module()
    return prebuilt.identity(prebuilt.source_digest(ROOT / "solver_core"), f"{PACKAGE}.solver_core")


def store() -> Path | None:
    """Where the user's store keeps the kernels of the checkout's solver (tools/kernel_store.py)."""
    return kernel_store.store_folder(_wanted())


def provide(folder: Path = DEFAULT_FOLDER) -> tuple:
    """(FOLDER, how) with FOLDER holding the kernels of the checkout's solver_core for the generic
    CPU: "present" already, "copied" from the user's store or "compiled"; the store gets them too."""
    stored = store()
    how = "present"
    if not _current(folder) and stored is not None and _current(stored):
        try:
            kernel_store.copy_whole(stored, folder, _current)
            how = "copied"
        except OSError:
            pass  # a store being pruned meanwhile: compiled below
    if not _current(folder):
        _compile(folder)
        how = "compiled"
    if stored is not None:
        try:
            if not _current(stored):
                kernel_store.copy_whole(folder, stored, _current)
            kernel_store.keep_newest(stored)
        except OSError:
            pass  # a full or read-only home: the next clone compiles again
    return folder, how


def build(folder: Path = DEFAULT_FOLDER) -> Path:
    """FOLDER with the kernels of the checkout's solver_core for the generic CPU (``provide``)."""
    return provide(folder)[0]


def _compile(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as scratch:
        stage = Path(scratch, "stage")
        parts = PACKAGE.split(".")
        package = stage.joinpath(*parts)
        package.mkdir(parents=True)
        for depth in range(1, len(parts) + 1):
            stage.joinpath(*parts[:depth], "__init__.py").touch()  # empty: the real cable_harness needs bpy
        shutil.copytree(ROOT / "solver_core", package / "solver_core", ignore=shutil.ignore_patterns("__pycache__"))
        # no other numba setting (optimisation level, bounds checks, debug info) is part of a cache key
        env = {
            k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") and k != "CABLE_HARNESS_PREBUILT_KERNELS"
        }
        env.update(NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES="", NUMBA_CACHE_DIR=str(Path(scratch, "cache")))
        # SciPy unimportable, as in Blender's Python: a kernel that needs BLAS or LAPACK fails to compile
        env["PYTHONPATH"] = os.pathsep.join([str(stage), str(ROOT / "tools" / "without_scipy")])
        subprocess.run(
            [sys.executable, "-m", f"{PACKAGE}.solver_core.warmup", "--export", str(folder.resolve())],
            cwd=stage,
            env=env,
            check=True,
        )
    if not _current(folder):
        raise RuntimeError(f"{folder}: the exported kernels are not those of this checkout's solver_core")


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_FOLDER))
