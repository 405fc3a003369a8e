# SPDX-License-Identifier: GPL-3.0-or-later
"""Compile the solver's kernels ahead of the first solve.

numba compiles a kernel on its first call and caches it on disk (``_jit``); the first solve after an
install or an upgrade would otherwise spend a minute compiling. ``warm_up`` solves small cases that
take the common kernel paths once (a clamped and a free cable, fixed and sliding clips, a plane, a
sphere and a mesh, friction, cable-cable contact and a step), then leaves a marker in the cache
folder. The Blender layer runs it as ``python -m solver_core.warmup`` in a separate process, so that
the compile never holds up the interface.
"""

import sys
import time
from pathlib import Path

import numba

from ._jit import CACHE_DIR
from .case import parse_case
from .run_case import solve_case

# one marker per CPU target: kernels compiled for the host's CPU are not those for NUMBA_CPU_NAME=generic
WARM_MARKER = Path(CACHE_DIR) / f"warm-{numba.config.CPU_NAME or 'host'}"

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


def kernels_are_warm() -> bool:
    """Whether this solver's kernels (this exact source) have been compiled into the cache."""
    return WARM_MARKER.exists()


def warm_up() -> float:
    """Compile the kernels by solving the warm-up case; returns the seconds it took."""
    t0 = time.perf_counter()
    solve_case(parse_case(_CASE))
    seconds = time.perf_counter() - t0
    WARM_MARKER.parent.mkdir(parents=True, exist_ok=True)
    WARM_MARKER.write_text(f"{seconds:.1f} s\n")
    return seconds


if __name__ == "__main__":
    print(f"solver kernels compiled in {warm_up():.1f} s", file=sys.stderr)
