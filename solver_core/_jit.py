# SPDX-License-Identifier: GPL-3.0-or-later
"""The one place that decides how kernels are compiled and where compiled kernels are cached.

Every hot loop of the solver is an ``njit`` function compiled on its first call and cached on
disk (``cache=True``); ``fastmath`` stays off so that NaN checks and residual floors behave.

numba invalidates a cached function only when its own source file changes, not when a kernel it
calls from another module does, so an edit of one module (or an extension upgrade) could run
stale machine code. The cache therefore lives in a folder named after a digest of all solver
sources: ``$NUMBA_CACHE_DIR/<digest>`` (inside Blender the add-on points NUMBA_CACHE_DIR at its
per-user folder first, see ``cable_harness.numba_cache``), or ``solver_core/__pycache__/numba/<digest>``.

A constant passed from one kernel to another (``mode=3``, ``True``) is typed as a literal, and
numba compiles one version of the callee per literal value: such arguments are passed as
``np.int64(...)`` or ``np.bool_(...)``, so that each kernel is compiled once.

An installed extension may ship kernels compiled ahead of time (``prebuilt_kernels``): they are
copied into the cache, and the CPU target chosen, here, before any kernel is defined.
"""

import os
from pathlib import Path

import numba

from . import prebuilt_kernels


def _cache_dir(digest: str) -> str:
    base = os.environ.get("NUMBA_CACHE_DIR") or str(Path(__file__).resolve().parent / "__pycache__" / "numba")
    return os.path.join(base, digest)


SOURCE_DIGEST = prebuilt_kernels.source_digest(Path(__file__).resolve().parent)
CACHE_DIR = _cache_dir(SOURCE_DIGEST)
# read by numba whenever a cached function is defined, so setting it here covers every kernel below
numba.config.CACHE_DIR = CACHE_DIR


def _warm_marker(cpu: str | None) -> Path:
    """Left once every kernel of the warm-up is in the cache; one per CPU target, as their kernels differ."""
    return Path(CACHE_DIR) / f"warm-{cpu or 'host'}"


PREBUILT = prebuilt_kernels.install(
    CACHE_DIR, SOURCE_DIGEST, __package__, __file__, _warm_marker(prebuilt_kernels.CPU_NAME)
)
WARM_MARKER = _warm_marker(numba.config.CPU_NAME)

njit = numba.njit(cache=True, fastmath=False, nogil=True)
# Small helpers called per contact pair: inlined into their callers, where passing a dozen arrays per
# call cost more than the geometry itself.
njit_inline = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")
