# SPDX-License-Identifier: GPL-3.0-or-later
"""The solver's kernels compiled in the background after the extension is enabled.

A fresh install (or an upgrade) has no compiled kernels unless its zip ships them (the Linux zip
does, ``solver_core.prebuilt_kernels``): the first Solve would freeze Blender while numba compiles
them (minutes on a small machine). Instead, ``start`` runs ``python -m
solver_core.warmup`` in a separate process, writing into the same per-user cache; meanwhile Solve,
Simulate and Bake are greyed out with a note (``preparing``), and the panel shows the progress. A
start with a warm cache (``kernels_are_warm``) runs nothing, and neither does a background Blender
(scripts, the test suite), where the first solve compiles in-process; CABLE_HARNESS_WARMUP=1 or 0
overrides that either way.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import bpy

from ..solver_core import CACHE_DIR, compiled_kernel_names, kernel_names, kernels_are_warm

_state = {"process": None, "started": 0.0, "failed": "", "log": None, "kernels": 0}


def _extension_root() -> Path:
    # not resolved: numba files its cache under the source's path as imported, so the child must import
    # the solver through the same (possibly linked) folder as this process does
    return Path(os.path.abspath(__file__)).parent.parent


def interpreter() -> str:
    """The Python that Blender runs: the one in its own prefix. ``sys.executable`` is only a guess in
    an embedded interpreter; a Blender built against the system's Python names whatever ``python3.x``
    comes first on PATH (a pyenv shim was seen), which then mixes its packages with Blender's."""
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for prefix in (sys.prefix, sys.base_prefix):
        bin_dir = Path(prefix) / "bin"
        for candidate in (bin_dir / name, bin_dir / "python.exe", Path(prefix) / "python.exe", bin_dir / "python3"):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return sys.executable


# Runs a module of this extension's solver in a plain Python under the package name Blender gives it
# (bl_ext.<repository>.cable_harness, or cable_harness as a legacy add-on), without running the
# package's bpy-bound __init__: numba's cache records every kernel's module by name and imports it
# when the kernel is loaded, so kernels compiled as a top-level "solver_core" failed to load in a
# Blender that has no such module.
_BOOTSTRAP = """
import runpy, sys, types
package, root, module = sys.argv[1:4]
parts = package.split(".")
for i in range(1, len(parts) + 1):
    name = ".".join(parts[:i])
    if name not in sys.modules:
        stub = types.ModuleType(name)
        stub.__path__ = [root] if i == len(parts) else []
        sys.modules[name] = stub
sys.argv = [module, *sys.argv[4:]]
runpy.run_module(package + "." + module, run_name="__main__", alter_sys=True)
"""


def package_name() -> str:
    """This extension's top-level package as Blender imported it."""
    return __package__.rsplit(".", 1)[0]


def solver_command(module: str, *args: str) -> list:
    """A command running ``module`` of this extension's solver (e.g. "solver_core.warmup", or
    "solver_core" for the CLI) as Blender's own Python, under Blender's package name."""
    return [interpreter(), "-c", _BOOTSTRAP, package_name(), str(_extension_root()), module, *args]


def solver_environment() -> dict:
    """The environment for ``solver_command``: the extension's wheels (numba, llvmlite) are on
    Blender's path, not necessarily on the child's."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def command() -> list:
    """The warm-up process: the interpreter running Blender, importing this extension's solver."""
    return solver_command("solver_core.warmup")


def start(force: bool = False) -> bool:
    """Start compiling unless the kernels are compiled, it runs already, or it is switched off."""
    if _state["process"] is not None or (kernels_are_warm() and not force):
        return False
    # with a window only (a background Blender runs a script that waits for its solve anyway), unless
    # CABLE_HARNESS_WARMUP says otherwise
    wanted = os.environ.get("CABLE_HARNESS_WARMUP", "0" if bpy.app.background else "1") != "0"
    if not (wanted or force):
        return False
    env = solver_environment()
    log = Path(CACHE_DIR).parent / "warmup.log"  # a file, not a pipe: a full pipe would stall the child
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as stderr:
            _state["process"] = subprocess.Popen(
                command(),
                cwd=str(log.parent),  # not the extension folder, which would make "solver_core" importable
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        _state["log"] = log
    except OSError as exc:  # no interpreter to run: the first solve compiles in-process
        _state["failed"] = f"could not start the background compile ({exc}); the first solve compiles instead"
        return False
    _state["started"] = time.monotonic()
    _state["failed"] = ""
    _state["kernels"] = len(kernel_names())
    if not bpy.app.timers.is_registered(_poll):
        bpy.app.timers.register(_poll, first_interval=1.0, persistent=True)
    return True


def preparing() -> bool:
    process = _state["process"]
    return process is not None and process.poll() is None


def progress() -> str:
    """What the panel shows while compiling: kernels compiled of all the solver defines, and about how
    long the rest takes at the pace so far."""
    if not preparing():
        return _state["failed"]
    total = _state["kernels"]
    compiled = min(len(compiled_kernel_names()), total)
    seconds = time.monotonic() - _state["started"]
    text = f"Preparing the solver (first start only): {compiled} of {total} kernels"
    if compiled >= max(3, total // 20):  # a pace worth extrapolating
        text += f", about {seconds * (total - compiled) / compiled:.0f} s left"
    return text


def waited(process, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for a background process; False if it still runs."""
    if process is not None:
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
    return True


def wait(timeout: float) -> bool:
    """Block until the compile ends (scripts and tests); True when the kernels are compiled."""
    if not waited(_state["process"], timeout):
        return False
    _finish()
    return kernels_are_warm()


def _finish() -> None:
    process = _state["process"]
    if process is None or process.poll() is None:
        return
    _state["process"] = None
    if process.returncode != 0:
        try:
            lines = _state["log"].read_text(errors="replace").strip().splitlines()
        except (OSError, AttributeError):
            lines = []
        reason = f": {lines[-1]}" if lines else ""
        _state["failed"] = f"the background compile failed{reason}; the first solve compiles instead"


def _redraw() -> None:
    for window in getattr(bpy.context.window_manager, "windows", []):
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


def _poll():
    _redraw()
    if preparing():
        return 1.0
    _finish()
    return None


def stop(process, grace: float = 5.0) -> None:
    """End a background process of the extension: asked to, then killed after ``grace`` seconds."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5.0)


def cancel() -> None:
    """Stop a running compile (the extension is being disabled)."""
    stop(_state["process"])
    _state["process"] = None
    if bpy.app.timers.is_registered(_poll):
        bpy.app.timers.unregister(_poll)
