# SPDX-License-Identifier: GPL-3.0-or-later
"""Symmetric banded matrices: Cholesky factorisation, solves and products in O(n * bw^2).

Storage: the lower band by rows, ``band[i, bw - (i - j)] = A[i, j]`` for ``0 <= i - j <= bw``,
so that the dot products of the factorisation run over contiguous memory. Entries that would
fall before column 0 are ignored. A few couplings between distant parts of a band (a cable touching
itself) are solved as a low-rank update of the band factor (Woodbury), with a small dense LU.
"""

import math

import numpy as np

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
    _band_forward_within(factor, bw, rhs, out, 0, n)
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


@njit
def lu_factor(S, piv):
    """LU with partial pivoting in place (the small dense capacitance matrix); False if singular."""
    m = S.shape[0]
    for col in range(m):
        best = col
        for r in range(col + 1, m):
            if abs(S[r, col]) > abs(S[best, col]):
                best = r
        piv[col] = best
        if S[best, col] == 0.0:
            return False
        if best != col:
            for c in range(m):
                S[col, c], S[best, c] = S[best, c], S[col, c]
        for r in range(col + 1, m):
            S[r, col] /= S[col, col]
            for c in range(col + 1, m):
                S[r, c] -= S[r, col] * S[col, c]
    return True


@njit
def lu_solve(S, piv, b):
    m = S.shape[0]
    for col in range(m):
        if piv[col] != col:
            b[col], b[piv[col]] = b[piv[col]], b[col]
    for r in range(m):
        for c in range(r):
            b[r] -= S[r, c] * b[c]
    for r in range(m - 1, -1, -1):
        for c in range(r + 1, m):
            b[r] -= S[r, c] * b[c]
        b[r] /= S[r, r]


@njit
def _row_dot(Ut, a, spans, x):
    acc = 0.0
    for piece in range(2):
        for d in range(spans[a, 2 * piece], spans[a, 2 * piece + 1]):
            acc += Ut[a, d] * x[d]
    return acc


@njit
def _row_add(Ut, a, spans, scale, out):
    for piece in range(2):
        for d in range(spans[a, 2 * piece], spans[a, 2 * piece + 1]):
            out[d] += scale * Ut[a, d]


@njit
def independent_blocks(factor, bw):
    """Per row of a band factor, the rows [start, end) of the independent diagonal block it lies in.

    Cables solved together (rod_group.py) share one band but nothing in it couples them: their
    Cholesky factor is block diagonal, and B^-1 u for a u on one cable lives on that cable alone.
    A block starts at row b where no row from b on has a nonzero left of column b."""
    n = factor.shape[0]
    boundary = np.zeros(n + 1, dtype=np.bool_)
    boundary[n] = True
    leftmost = n
    for i in range(n - 1, -1, -1):
        first = i
        for c in range(bw):
            if i - bw + c >= 0 and factor[i, c] != 0.0:
                first = i - bw + c
                break
        leftmost = min(leftmost, first)
        boundary[i] = leftmost >= i
    start = np.empty(n, dtype=np.int64)
    end = np.empty(n, dtype=np.int64)
    s = 0
    for i in range(n):
        if boundary[i]:
            s = i
        start[i] = s
    e = n
    for i in range(n - 1, -1, -1):
        if boundary[i + 1]:
            e = i + 1
        end[i] = e
    return start, end


@njit
def _band_forward_within(factor, bw, rhs, out, lo, end):
    """out = L^-1 rhs on [lo, end) for a right-hand side that is zero before lo (L^-1 rhs is zero
    there too, L being lower triangular) and zero beyond ``end`` in its result (end: the end of
    the last independent block rhs touches)."""
    for i in range(lo, end):
        s = rhs[i]
        k0 = i - bw if i - bw > lo else lo
        for k in range(k0, i):
            s -= factor[i, bw - (i - k)] * out[k]
        out[i] = s / factor[i, bw]


@njit
def low_rank_factor(work, bw, Ut, k_c, k_s, Z, S, piv, spans):
    """Woodbury for B + U C U^T, given B's band factor L in ``work`` (B = L L^T). The columns of U
    come in pairs first, C = k_j [[0, 1], [1, 0]] per pair (the coupling k (a b^T + b a^T) of two
    parts of one band, whose own blocks k a a^T and k b b^T are in B), then one at a time, C = k_s
    (a term k v v^T whole). Z = L^-1 U by forward substitutions only, each from a piece's first
    nonzero to the end of the independent block it ends in, and the LU of the capacitance matrix
    S = C^-1 + Z^T Z. U is passed transposed (rows contiguous). ``spans`` (m, 8): per row of U^T
    its nonzero columns in up to two pieces [0, 2) and [2, 4) (given by whoever built the rows;
    supersets will do), and those of Z in [4, 8) (set here; Z is not written outside). False if S is
    singular."""
    m = Ut.shape[0]
    if m > 0:
        _start, end = independent_blocks(work, bw)
    for a in range(m):
        lo, hi, lo2, hi2 = spans[a, 0], spans[a, 1], spans[a, 2], spans[a, 3]
        if hi <= lo or (hi2 > lo2 and lo2 < lo):  # the lower nonempty piece first
            lo, hi, lo2, hi2 = lo2, hi2, lo, hi
        if hi > lo and hi2 > lo2 and lo2 < end[hi - 1]:
            hi, lo2, hi2 = max(hi, hi2), 0, 0  # both pieces in one block (a cable touching itself): one solve
        spans[a, 4], spans[a, 5], spans[a, 6], spans[a, 7] = lo, lo, lo2, lo2
        if hi > lo:
            spans[a, 5] = end[hi - 1]
            _band_forward_within(work, bw, Ut[a], Z[a], lo, end[hi - 1])
        if hi2 > lo2:
            spans[a, 7] = end[hi2 - 1]
            _band_forward_within(work, bw, Ut[a], Z[a], lo2, end[hi2 - 1])
    for a in range(m):
        for b in range(a + 1):
            acc = 0.0
            for pa in range(2):
                for pb in range(2):
                    lo = max(spans[a, 4 + 2 * pa], spans[b, 4 + 2 * pb])
                    hi = min(spans[a, 5 + 2 * pa], spans[b, 5 + 2 * pb])
                    for d in range(lo, hi):
                        acc += Z[a, d] * Z[b, d]
            S[a, b] = acc
            S[b, a] = acc
    for j in range(k_c.shape[0]):
        S[2 * j, 2 * j + 1] += 1.0 / k_c[j]
        S[2 * j + 1, 2 * j] += 1.0 / k_c[j]
    for q in range(k_s.shape[0]):
        r = 2 * k_c.shape[0] + q
        S[r, r] += 1.0 / k_s[q]
    return lu_factor(S, piv)


@njit
def low_rank_solve(work, bw, rhs, out, Ut, S, piv, spans):
    """out = (B + U C U^T)^-1 rhs = x - B^-1 U S^-1 U^T x with x = B^-1 rhs (``spans`` from
    low_rank_factor; one more band solve costs less than keeping B^-1 U)."""
    band_cholesky_solve(work, bw, rhs, out)
    m = Ut.shape[0]
    if m == 0:
        return
    y = np.empty(m)
    for a in range(m):
        y[a] = _row_dot(Ut, a, spans, out)
    lu_solve(S, piv, y)
    v = np.zeros(out.shape[0])
    for a in range(m):
        _row_add(Ut, a, spans, y[a], v)
    correction = np.empty(out.shape[0])
    band_cholesky_solve(work, bw, v, correction)
    for d in range(out.shape[0]):
        out[d] -= correction[d]


@njit
def low_rank_matvec(Ut, k_c, k_s, x, out, spans):
    """out += U C U^T x: k (a b^T + b a^T) x over the coupling pairs and k v v^T x over the single
    columns (``spans`` as for low_rank_factor, so that the product does not scan U^T)."""
    for j in range(k_c.shape[0]):
        a, b = 2 * j, 2 * j + 1
        alpha = _row_dot(Ut, a, spans, x)
        beta = _row_dot(Ut, b, spans, x)
        _row_add(Ut, a, spans, k_c[j] * beta, out)
        _row_add(Ut, b, spans, k_c[j] * alpha, out)
    for q in range(k_s.shape[0]):
        r = 2 * k_c.shape[0] + q
        _row_add(Ut, r, spans, k_s[q] * _row_dot(Ut, r, spans, x), out)
