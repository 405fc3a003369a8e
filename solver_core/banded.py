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
    """In-place Cholesky factor L (same storage). Returns False if A is not positive definite.

    Right-looking: once column j is final, it updates the triangle of the next bw rows. Each entry
    receives the same subtractions in the same order as in the dot-product form, but the updates
    are independent of each other, where the dot products were chains of dependent additions (the
    factorisation of ten cables' band took 0.55 ms that way, 0.33 ms this way)."""
    n = band.shape[0]
    column = np.empty(bw + 1)
    for j in range(n):
        d = band[j, bw]
        if not (d > 0.0) or not math.isfinite(d):
            return False
        d = math.sqrt(d)
        band[j, bw] = d
        last = bw if j + bw < n else n - 1 - j
        for r in range(1, last + 1):
            v = band[j + r, bw - r] / d  # L[j + r, j]
            band[j + r, bw - r] = v
            column[r] = v
        for r in range(1, last + 1):
            # A[j + r, j + q] -= L[j + r, j] L[j + q, j], q = 1..r, contiguous in row j + r
            row = band[j + r]
            base = bw - r
            v = column[r]
            for q in range(1, r + 1):
                row[base + q] -= v * column[q]
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
def _block_pieces(start, end, Ut, spans):
    """The rows of U^T cut at the boundaries of the factor's independent blocks: per piece its row,
    block start and first column, with a row's pieces in one block merged into one (a cable
    touching itself), sorted by block."""
    m = Ut.shape[0]
    row = np.empty(4 * m + 8, dtype=np.int64)
    block = np.empty_like(row)
    first = np.empty_like(row)
    n = 0
    for a in range(m):
        own = n
        for piece in range(2):
            lo, hi = spans[a, 2 * piece], spans[a, 2 * piece + 1]
            while lo < hi:
                b0 = start[lo]
                merged = False
                for q in range(own, n):
                    if block[q] == b0:
                        first[q] = min(first[q], lo)
                        merged = True
                if not merged:
                    if n == row.shape[0]:
                        row = np.concatenate((row, np.empty_like(row)))
                        block = np.concatenate((block, np.empty_like(block)))
                        first = np.concatenate((first, np.empty_like(first)))
                    row[n], block[n], first[n] = a, b0, lo
                    n += 1
                lo = end[lo]
    order = np.argsort(block[:n], kind="mergesort")
    return row[:n][order], block[:n][order], first[:n][order]


@njit
def low_rank_factor(work, bw, Ut, k_c, k_s, S, piv, spans):
    """Woodbury for B + U C U^T, given B's band factor L in ``work`` (B = L L^T). The columns of U
    come in pairs first, C = k_j [[0, 1], [1, 0]] per pair (the coupling k (a b^T + b a^T) of two
    parts of one band, whose own blocks k a a^T and k b b^T are in B), then one at a time, C = k_s
    (a term k v v^T whole). Builds the capacitance matrix S = C^-1 + Z^T Z, Z = L^-1 U, and its LU.
    U is passed transposed (rows contiguous). ``spans`` (m, 4): per row of U^T its nonzero columns
    in up to two pieces [0, 2) and [2, 4) (given by whoever built the rows; supersets will do).
    False if S is singular.

    L is block diagonal (cables solved together share one band, nothing in it couples them), so Z
    is computed block by block: the pieces of U in one block, from the first piece's first column
    to the block's end (L^-1 fills everything below a column's first nonzero), as the columns of
    one dense panel, forward-substituted together so that the panel's rows are independent updates
    instead of one chain of dependent ones per column, and S gathers the panel's Gram matrix."""
    m = Ut.shape[0]
    for a in range(m):
        for b in range(m):
            S[a, b] = 0.0
    if m > 0:
        start, end = independent_blocks(work, bw)
        row, block, first = _block_pieces(start, end, Ut, spans)
        g = 0
        while g < row.shape[0]:
            h = g
            lo = first[g]
            while h < row.shape[0] and block[h] == block[g]:
                lo = min(lo, first[h])
                h += 1
            stop, width = end[block[g]], h - g
            panel = np.empty((stop - lo, width))
            for i in range(lo, stop):
                for c in range(width):
                    panel[i - lo, c] = Ut[row[g + c], i]
            for i in range(lo, stop):
                target = panel[i - lo]
                for k in range(max(lo, i - bw), i):
                    lik = work[i, bw - (i - k)]
                    source = panel[k - lo]
                    for c in range(width):
                        target[c] -= lik * source[c]
                diag = work[i, bw]
                for c in range(width):
                    target[c] /= diag
            gram = np.zeros((width, width))
            for i in range(stop - lo):
                z = panel[i]
                for c in range(width):
                    zc = z[c]
                    if zc != 0.0:
                        for d in range(c + 1):
                            gram[c, d] += zc * z[d]
            for c in range(width):
                for d in range(c + 1):
                    S[row[g + c], row[g + d]] += gram[c, d]
                    if c != d:
                        S[row[g + d], row[g + c]] += gram[c, d]
            g = h
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
