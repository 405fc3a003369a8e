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

Kernels built once are kept for the user too (``store``: ~/.cache/cable_harness/kernels/<digest>), so
that another clone of the same solver on this machine, and the other of the README's two commands,
copies them instead of compiling them again (32 MB a version, the newest STORE_VERSIONS kept). CI
(CI=true) neither reads nor fills the store: a clean checkout compiles as a new machine does.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

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
    prebuilt = _prebuilt_module()
    wanted = prebuilt.identity(prebuilt.source_digest(ROOT / "solver_core"), f"{PACKAGE}.solver_core")
    try:
        return json.loads((folder / "kernels.json").read_text()) == wanted
    except (OSError, ValueError):
        return False


STORE_VERSIONS = 4  # solver versions whose kernels the user's store keeps (the newest used)


def store() -> Path | None:
    """The user's store of built kernels for the checkout's solver sources, or None under CI."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = _prebuilt_module().source_digest(ROOT / "solver_core")
    return Path(base, "cable_harness", "kernels", digest)


def _copy_whole(source: Path, target: Path) -> None:
    """``source``'s files into ``target`` as a whole: copied beside it and renamed, so that a process
    reading ``target`` meanwhile sees the old folder or the new one, never half of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        shutil.copytree(source, partial, dirs_exist_ok=True)
        old = target.with_name(f".{target.name}.old.{os.getpid()}")
        if target.exists():
            os.replace(target, old)
        os.replace(partial, target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _keep_newest(kept: Path) -> None:
    """Of the store's solver versions, keep the STORE_VERSIONS used last (``kept`` just now)."""
    os.utime(kept)
    versions = sorted(
        (p for p in kept.parent.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in versions[STORE_VERSIONS:]:
        shutil.rmtree(old, ignore_errors=True)


def built_before(folder: Path = DEFAULT_FOLDER) -> bool:
    """Whether ``build`` has the kernels without compiling them: in FOLDER or the user's store."""
    kept = store()
    return _current(folder) or (kept is not None and _current(kept))


def build(folder: Path = DEFAULT_FOLDER) -> Path:
    """FOLDER with the kernels of the checkout's solver_core for the generic CPU (copied from the
    user's store where it has them, else compiled), and the store with them too; returns FOLDER."""
    kept = store()
    if not _current(folder):
        if kept is not None and _current(kept):
            try:
                _copy_whole(kept, folder)
            except OSError:
                pass  # a store being pruned by another process meanwhile: compiled below
        if not _current(folder):
            _compile(folder)
    if kept is not None:
        try:
            if not _current(kept):
                _copy_whole(folder, kept)
            _keep_newest(kept)
        except OSError:
            pass  # a full or read-only home: the next clone compiles again
    return folder


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
