# SPDX-License-Identifier: GPL-3.0-or-later
"""Compile the solver's kernels ahead of the first solve.

numba compiles a kernel on its first call and caches it on disk (``_jit``); the first solve after an
install or an upgrade would otherwise spend a minute compiling. ``warm_up`` solves small cases that
take the common kernel paths once (a clamped and a free cable, fixed and sliding clips, a plane, a
sphere and a mesh, friction, cable-cable contact and a step; a cantilever with each other
solver.model), then leaves a marker in the cache
folder. The Blender layer runs it as ``python -m solver_core.warmup`` in a separate process, so that
the compile never holds up the interface.

Where the machine has two cores and ``fork``, the compile runs in two processes (numba compiles a
kernel, and everything it calls, in one thread): the kernels of the obstacle tree, the pair search
and the contact energy, which the warm-up case reaches before its first Newton solve (a third of the
compile), are compiled by a forked helper while this process compiles the Newton solver's tree
(``minimise_rod_energy``, the other two thirds) on a cable without obstacles; the warm-up case then
finds the helper's kernels in the cache. The Newton solver's own callees are compiled first, one
by one, with its body run as Python, so that the two processes' work does not overlap
(docs/performance.md: 182 -> 141 s on 2 cores).
"""

import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

from . import _jit, prebuilt_kernels
from ._jit import CACHE_DIR, SOURCE_DIGEST, WARM_MARKER
from .case import parse_case
from .clearance import clearance_to_triangles
from .run_case import solve_case

_MATERIAL = {"E": 126e6, "nu": 0.3, "density": 7958.0}
_BOX = {
    "type": "mesh",
    "vertices": [[x, y, z] for x in (0.1, 0.2) for y in (-0.05, 0.05) for z in (-0.19, -0.15)],
    "triangles": [
        [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
        [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3],
    ],
}  # fmt: skip
_CASE = {
    "format": "cable-harness-case/1",
    "cables": [
        {
            "id": "clamped",
            "length": 0.42,
            "diameter": 0.004,
            "material": _MATERIAL,
            "segments": 24,
            "start": {"position": [0.0, 0.0, 0.0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
            "end": {"position": [0.3, 0.0, 0.0], "tangent": [1, 0, 0]},
            "clips": [
                {
                    "s": 0.12,
                    "kind": "fixed",
                    "length": 0.01,
                    "frame": {"position": [0.08, 0, -0.05], "tangent": [1, 0, 0]},
                },
                {"s": 0.3, "kind": "sliding", "frame": {"position": [0.22, 0, -0.05], "tangent": [1, 0, 0]}},
            ],
        },
        {
            "id": "free",
            "length": 0.25,
            "diameter": 0.004,
            "material": {"preset": "lv2017_harness"},
            "segments": 16,
            "start": {"position": [0.15, -0.1, 0.02], "tangent": [0, 1, 0]},
            "end": None,
        },
    ],
    "obstacles": [
        {"type": "plane", "point": [0, 0, -0.2], "normal": [0, 0, 1]},
        {"type": "sphere", "center": [0.25, 0.1, -0.15], "radius": 0.03},
        _BOX,
    ],
    "contact": {"friction_static": 0.3, "friction_dynamic": 0.2, "cable_cable": True},
    "steps": [{"cables": {"clamped": {"end": {"position": [0.28, 0.02, 0.0], "tangent": [1, 0, 0]}}}}],
}


# the Newton solver's kernels without any contact kernel: one clamped cable, no obstacles
_BARE_CASE = {
    "format": "cable-harness-case/1",
    "cables": [{**_CASE["cables"][0], "clips": []}],
    "steps": [{"cables": {"clamped": {"end": {"position": [0.28, 0.02, 0.0], "tangent": [1, 0, 0]}}}}],
}

# the other models' kernels (solver.model): a short cantilever and one step, for each of them
_MODEL_CASE = {
    "format": "cable-harness-case/1",
    "cables": [
        {
            "id": "cantilever",
            "length": 0.2,
            "diameter": 0.004,
            "material": _MATERIAL,
            "segments": 8,
            "start": {"position": [0.0, 0.0, 0.0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
            "end": None,
        }
    ],
    "steps": [{"cables": {"cantilever": {"start": {"position": [0.0, 0.0, 0.01], "tangent": [1, 0, 0]}}}}],
}
OTHER_MODELS = ("cosserat_pbd", "kirchhoff_cg", "mass_spring")


def _box_triangles() -> np.ndarray:
    vertices = np.array(_BOX["vertices"], dtype=np.float64)
    return vertices[np.array(_BOX["triangles"])]


class _Reached(BaseException):
    """The helper's stop at the first Newton solve (not an Exception: nothing on the way catches it)."""


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _compile_contact_kernels_aside() -> int | None:
    """Fork a helper that compiles what the warm-up case calls before its first Newton solve; returns
    its pid, or None where the compile stays in this process (no fork, one core)."""
    if not hasattr(os, "fork") or _cores() < 2:
        return None
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        if sys.platform.startswith("linux"):  # the helper ends with this process (a cancelled compile)
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        from . import equilibrium

        def reached(*args, **kwargs):
            raise _Reached

        equilibrium.minimise_rod_energy = reached
        try:
            solve_case(parse_case(_CASE))
        except _Reached:
            pass
        code = 0
    finally:
        os._exit(code)


def _compile_newton_callees() -> None:
    """Compile the kernels the Newton solver calls, each on its own, by running its body as Python on
    the bare case: numba then compiles ``minimise_rod_energy`` around kernels it has (a third less
    time in it), while the helper compiles the contact kernels. Only a head start: whatever fails
    here is compiled with the solver below."""
    from . import equilibrium, newton

    equilibrium.minimise_rod_energy = newton.minimise_rod_energy.py_func
    try:
        solve_case(parse_case(_BARE_CASE))
    except Exception:
        pass
    finally:
        equilibrium.minimise_rod_energy = newton.minimise_rod_energy


def kernels_are_warm() -> bool:
    """Whether this solver's kernels (this exact source) have been compiled into the cache."""
    return WARM_MARKER.exists()


def warm_up() -> float:
    """Compile the kernels by solving the warm-up case; returns the seconds it took."""
    t0 = time.perf_counter()
    helper = _compile_contact_kernels_aside()
    try:
        if helper is not None:
            _compile_newton_callees()
        solve_case(parse_case(_BARE_CASE))
        if helper is not None:
            os.waitpid(helper, 0)
            helper = None
    finally:
        if helper is not None:  # this process failed or was interrupted: so is the compile
            os.kill(helper, signal.SIGKILL)
            os.waitpid(helper, 0)
    solve_case(parse_case(_CASE))
    # the clearance read-out of a bake and a report (not part of a solve)
    clearance_to_triangles(np.array([[0.15, 0.0, -0.1], [0.15, 0.0, -0.12]]), 0.002, _box_triangles())
    for model in OTHER_MODELS:  # a scene switched to another model does not stop to compile it
        solve_case(parse_case({**_MODEL_CASE, "solver": {"model": model}}))
    seconds = time.perf_counter() - t0
    WARM_MARKER.parent.mkdir(parents=True, exist_ok=True)
    WARM_MARKER.write_text(f"{seconds:.1f} s\n")
    return seconds


def main(argv: list[str]) -> int:
    """``python -m solver_core.warmup`` compiles into the cache; ``--export FOLDER`` then copies the
    kernels out to be shipped (``prebuilt_kernels``: run with NUMBA_CPU_NAME=generic)."""
    seconds = warm_up()
    print(f"solver kernels compiled in {seconds:.1f} s", file=sys.stderr)
    if argv[:1] == ["--export"] and len(argv) == 2:
        count = prebuilt_kernels.export(CACHE_DIR, SOURCE_DIGEST, _jit.__package__, _jit.__file__, Path(argv[1]))
        print(f"{count} cache files exported to {argv[1]}", file=sys.stderr)
    elif argv:
        print("usage: python -m solver_core.warmup [--export FOLDER]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
