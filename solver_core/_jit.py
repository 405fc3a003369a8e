# SPDX-License-Identifier: GPL-3.0-or-later
"""The one place that decides how kernels are compiled.

Every hot loop of the solver is an ``njit`` function compiled ahead of its first call and cached
on disk (``cache=True``); ``fastmath`` stays off so that NaN checks and residual floors behave.
Inside Blender the add-on points ``NUMBA_CACHE_DIR`` at a per-user folder before this module is
imported (see ``cable_harness.numba_cache``).
"""

import numba

njit = numba.njit(cache=True, fastmath=False, nogil=True)
