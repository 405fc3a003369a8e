# SPDX-License-Identifier: GPL-3.0-or-later
"""Symmetric banded matrices: Cholesky factorisation, solves and products in O(n * bw^2).

Storage: the lower band by rows, ``band[i, bw - (i - j)] = A[i, j]`` for ``0 <= i - j <= bw``,
so that the dot products of the factorisation run over contiguous memory. Entries that would
fall before column 0 are ignored.
"""

import math

from ._jit import njit


@njit
def band_cholesky(band, bw):
    """In-place Cholesky factor L (same storage). Returns False if A is not positive definite."""
    n = band.shape[0]
    for i in range(n):
        row_i = band[i]
        off_i = bw - i  # L[i, k] = row_i[off_i + k]
        k0 = i - bw if i > bw else 0
        for j in range(k0, i + 1):
            row_j = band[j]
            off_j = bw - j
            # A[i, j] - sum_k L[i, k] L[j, k], k over the overlap of both bands: [i - bw, j)
            s = row_i[off_i + j]
            for k in range(k0, j):
                s -= row_i[off_i + k] * row_j[off_j + k]
            if j < i:
                row_i[off_i + j] = s / row_j[bw]
            else:
                if not (s > 0.0) or not math.isfinite(s):
                    return False
                row_i[bw] = math.sqrt(s)
    return True


@njit
def band_cholesky_solve(factor, bw, rhs, out):
    """Solve A x = rhs with the factor from band_cholesky."""
    n = factor.shape[0]
    for i in range(n):
        s = rhs[i]
        k0 = i - bw if i > bw else 0
        for k in range(k0, i):
            s -= factor[i, bw - (i - k)] * out[k]
        out[i] = s / factor[i, bw]
    for i in range(n - 1, -1, -1):
        s = out[i]
        k1 = i + bw if i + bw < n - 1 else n - 1
        for k in range(i + 1, k1 + 1):
            s -= factor[k, bw - (k - i)] * out[k]
        out[i] = s / factor[i, bw]


@njit
def band_symmetric_matvec(band, bw, x, out):
    """out = A x for the symmetric matrix whose lower band is stored in band."""
    n = band.shape[0]
    out[:] = 0.0
    for i in range(n):
        out[i] += band[i, bw] * x[i]
        k0 = i - bw if i > bw else 0
        for k in range(k0, i):
            a = band[i, bw - (i - k)]
            out[i] += a * x[k]
            out[k] += a * x[i]
