# SPDX-License-Identifier: GPL-3.0-or-later
"""Drive a built extension zip through Blender's own extension installer, in a fresh bpy process.

    python -m tools.extension_probe install ZIP   # install + enable, build a harness, Solve
    python -m tools.extension_probe start         # enable the installed extension, time the first Solve
    python -m tools.extension_probe remove        # disable + uninstall, check what is left
    python -m tools.extension_probe tour ZIP      # install + enable, then every feature once (feature_tour)

Each mode prints one JSON line (prefixed ``PROBE``) with what it observed; the package test and the
start-time benchmark read it. Run with BLENDER_USER_RESOURCES pointing at a scratch folder (set
before bpy is imported) so nothing touches the user's own Blender configuration, and without
NUMBA_CACHE_DIR so that the extension chooses its per-user cache folder itself.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tools import feature_tour  # before the checkout leaves sys.path (probe); it imports no solver

PKG_ID = "cable_harness"
REPO = "user_default"
MODULE = f"bl_ext.{REPO}.{PKG_ID}"


def run_probe(mode: str, user_dir, *args, timeout=600, background_compile=False, without_scipy=False) -> dict:
    """Run one probe mode in a fresh process of this Python with ``user_dir`` as Blender's user
    resources; returns what it observed (raises RuntimeError with its output when it failed).
    ``background_compile``: enable as a Blender with a window does, compiling the kernels in a
    separate process (cable_harness/warmup.py), and wait for that before solving.
    ``without_scipy``: SciPy unimportable in it and its children, as in Blender's own Python."""
    env = dict(
        os.environ, BLENDER_USER_RESOURCES=str(user_dir), CABLE_HARNESS_WARMUP="1" if background_compile else "0"
    )
    env.pop("NUMBA_CACHE_DIR", None)  # the installed extension picks its own per-user cache folder
    # A new Blender, not a child of this process: that this one could not take shipped kernels (it
    # defined the checkout's kernels for its own CPU first, as the Blender tests do when NUMBA_CPU_NAME
    # is not set) says nothing about the installed zip, which must take its own.
    env.pop("CABLE_HARNESS_PREBUILT_KERNELS", None)
    root = Path(__file__).resolve().parent.parent
    if without_scipy:
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(root / "tools" / "without_scipy"), env.get("PYTHONPATH")])
        )
    run = subprocess.run(
        [sys.executable, "-m", "tools.extension_probe", mode, *map(str, args)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("PROBE ")]
    if run.returncode != 0 or not lines:
        raise RuntimeError(f"probe {mode} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return json.loads(lines[-1][len("PROBE ") :])


def _repo_directory(bpy) -> str:
    return bpy.utils.user_resource("EXTENSIONS", path=REPO)


def _solve_simple_harness(bpy) -> dict:
    """Two connectors and a cable made with the extension's operators, then one Solve."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    bpy.ops.cable_harness.add_connector()
    start = bpy.context.active_object
    bpy.ops.cable_harness.add_connector()
    end = bpy.context.active_object
    end.location = (0.3, 0.0, 0.0)
    bpy.context.view_layer.update()
    start.select_set(True)
    end.select_set(True)
    bpy.context.view_layer.objects.active = start
    bpy.ops.cable_harness.make_cable(segments=40, solve=False)
    cable = next(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE")
    t0 = time.perf_counter()
    outcome = bpy.ops.cable_harness.solve()
    seconds = time.perf_counter() - t0
    s = cable.cable_harness
    return {
        "solve_result": sorted(outcome),
        "solve_s": seconds,
        "converged": bool(s.result_converged),
        "length": s.result_length,
        "cable_length": s.length,
    }


def _kernels_compiled_here() -> int:
    """How many of the solver's kernels this process compiled rather than loaded from the cache."""
    return feature_tour.kernels_compiled(MODULE)


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def _numba_cache_files(bpy) -> int:
    folder = Path(bpy.utils.extension_path_user(MODULE, path="numba_cache"))
    return sum(1 for _ in folder.rglob("*.nbc")) if folder.exists() else 0


def probe(mode: str, zip_path: str | None) -> dict:
    if "BLENDER_USER_RESOURCES" not in os.environ:
        raise SystemExit("set BLENDER_USER_RESOURCES to a scratch folder first")
    os.environ.pop("NUMBA_CACHE_DIR", None)
    # as in a user's Blender, the checkout (this process's working folder) must not make a top-level
    # solver_core importable: kernels cached under that name would load here, and not there
    root = Path(__file__).resolve().parent.parent
    sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != root]
    t_start = time.perf_counter()
    # isort: off
    import bpy
    import addon_utils  # importable once bpy is

    # isort: on

    out = {"mode": mode}
    if mode in ("install", "tour"):
        outcome = bpy.ops.extensions.package_install_files(filepath=zip_path, repo=REPO, enable_on_install=True)
        out["install_result"] = sorted(outcome)
        out["installed_dir"] = os.path.isdir(os.path.join(_repo_directory(bpy), PKG_ID))
        bpy.ops.wm.save_userpref()
    elif mode == "start":
        t0 = time.perf_counter()
        bpy.ops.preferences.addon_enable(module=MODULE)
        out["enable_s"] = time.perf_counter() - t0
    if mode == "tour":
        out["enabled"] = list(addon_utils.check(MODULE))
        out["scipy_importable"] = _importable("scipy")
        out["prebuilt_kernels"] = bool(sys.modules[f"{MODULE}.solver_core._jit"].PREBUILT)
        names = [n for n in os.environ.get("CABLE_HARNESS_TOUR", "").split(",") if n]  # default: all
        out["features"] = feature_tour.run_tour(bpy, MODULE, os.environ["NUMBA_CACHE_DIR"], names)
        out["kernels_compiled"] = _kernels_compiled_here()
    if mode in ("install", "start"):
        out["enabled"] = list(addon_utils.check(MODULE))
        module = sys.modules.get(MODULE)
        out["module_file"] = getattr(module, "__file__", None)
        import numba

        out["numba_file"] = numba.__file__
        warmup = sys.modules.get(f"{MODULE}.cable_harness.warmup")
        if warmup is not None and warmup.preparing():
            # the background compile (CABLE_HARNESS_WARMUP=1, as in a Blender with a window)
            t0 = time.perf_counter()
            out["background_compiled"] = warmup.wait(1800)
            out["background_compile_s"] = time.perf_counter() - t0
        out.update(_solve_simple_harness(bpy))
        out["first_solve_since_start_s"] = time.perf_counter() - t_start
        out["numba_cache_files"] = _numba_cache_files(bpy)
        out["numba_cache_dir"] = os.environ.get("NUMBA_CACHE_DIR")
        out["top_level_solver_core"] = "solver_core" in sys.modules
        out["kernels_compiled"] = _kernels_compiled_here()
        out["prebuilt_kernels"] = bool(sys.modules[f"{MODULE}.solver_core._jit"].PREBUILT)
    elif mode == "remove":
        bpy.ops.wm.read_userpref()
        out["enabled_before"] = list(addon_utils.check(MODULE))
        addon_utils.disable(MODULE, default_set=True)
        out["enabled_after_disable"] = list(addon_utils.check(MODULE))
        out["operator_after_disable"] = hasattr(bpy.types, "CABLE_HARNESS_OT_solve")
        repos = list(bpy.context.preferences.extensions.repos)
        index = next(i for i, r in enumerate(repos) if r.module == REPO)
        outcome = bpy.ops.extensions.package_uninstall(repo_index=index, pkg_id=PKG_ID)
        out["uninstall_result"] = sorted(outcome)
        out["installed_dir"] = os.path.isdir(os.path.join(_repo_directory(bpy), PKG_ID))
        local = Path(bpy.utils.user_resource("EXTENSIONS", path=".local"))
        out["numba_left_in_local"] = any(local.rglob("numba/__init__.py")) if local.exists() else False
    return out


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("install", "start", "remove", "tour") or (mode in ("install", "tour") and len(sys.argv) < 3):
        raise SystemExit(__doc__)
    result = probe(mode, sys.argv[2] if len(sys.argv) > 2 else None)
    print("PROBE " + json.dumps(result), flush=True)
