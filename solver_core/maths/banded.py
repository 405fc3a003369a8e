# SPDX-License-Identifier: GPL-3.0-or-later
"""Symmetric banded matrices: Cholesky factorisation and solves in O(n * bw^2).

Storage: the lower band by rows, ``band[i, bw - (i - j)] = A[i, j]`` for ``0 <= i - j <= bw``,
so that the factorisation's updates of a row run over contiguous memory. Entries that would
fall before column 0 are ignored. A few couplings between distant parts of a band (a cable touching
itself) are solved as a low-rank update of the band factor (Woodbury), with a small dense LU.
"""

import math

import numpy as np

from .._jit import njit


@njit
def band_cholesky(band, bw):
    """In-place Cholesky factor L (same storage). Returns False if A is not positive definite.

    Right-looking: once column j is final, it updates the triangle of the next bw rows. Each entry
    receives the same subtractions in the same order as in the dot-product form, but the updates
    are independent of each other, where the dot products were chains of dependent additions
    (docs/performance.md)."""
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
def _forward(factor, bw, rhs, out):
    """out = L^-1 rhs."""
    for i in range(factor.shape[0]):
        s = rhs[i]
        k0 = i - bw if i > bw else 0
        for k in range(k0, i):
            s -= factor[i, bw - (i - k)] * out[k]
        out[i] = s / factor[i, bw]


@njit
def _backward(factor, bw, out):
    """out = L^-T out, in place."""
    n = factor.shape[0]
    for i in range(n - 1, -1, -1):
        s = out[i]
        k1 = i + bw if i + bw < n - 1 else n - 1
        for k in range(i + 1, k1 + 1):
            s -= factor[k, bw - (k - i)] * out[k]
        out[i] = s / factor[i, bw]


@njit
def band_cholesky_solve(factor, bw, rhs, out):
    """Solve A x = rhs with the factor from band_cholesky."""
    _forward(factor, bw, rhs, out)
    _backward(factor, bw, out)


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
            f = S[r, col]
            if f != 0.0:  # many are: the Gram blocks of cables that do not touch each other are zero
                for c in range(col + 1, m):
                    S[r, c] -= f * S[col, c]
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
def _panel(panels, g):
    """Panel g of low_rank_factor's Z: its rows lo..stop of the band, and its columns' rows of U^T."""
    zbuf, groups, piece_row = panels
    lo, stop, width, offset, first = groups[g, 0], groups[g, 1], groups[g, 2], groups[g, 3], groups[g, 4]
    return lo, zbuf[offset : offset + (stop - lo) * width].reshape((stop - lo, width)), piece_row[first : first + width]


@njit
def low_rank_factor(work, bw, Ut, k_c, k_s, S, piv, spans):
    """Woodbury for B + U C U^T, given B's band factor L in ``work`` (B = L L^T). The columns of U
    come in pairs first, C = k_j [[0, 1], [1, 0]] per pair (the coupling k (a b^T + b a^T) of two
    parts of one band, whose own blocks k a a^T and k b b^T are in B), then one at a time, C = k_s
    (a term k v v^T whole). Builds Z = L^-1 U, the capacitance matrix S = C^-1 + Z^T Z and its LU.
    U is passed transposed (rows contiguous). ``spans`` (m, 4): per row of U^T its nonzero columns
    in up to two pieces [0, 2) and [2, 4) (given by whoever built the rows; supersets will do).
    Returns (False if S is singular, Z's panels for low_rank_solve).

    L is block diagonal (cables solved together share one band, nothing in it couples them), so Z
    is computed block by block: the pieces of U in one block, from the first piece's first column
    to the block's end (L^-1 fills everything below a column's first nonzero), as the columns of
    one dense panel, forward-substituted together so that the panel's rows are independent updates
    instead of one chain of dependent ones per column, and S gathers the panel's Gram matrix."""
    m = Ut.shape[0]
    for a in range(m):
        for b in range(m):
            S[a, b] = 0.0
    groups = np.zeros((0, 5), dtype=np.int64)
    piece_row = np.zeros(0, dtype=np.int64)
    zbuf = np.zeros(0)
    if m > 0:
        start, end = independent_blocks(work, bw)
        piece_row, block, first = _block_pieces(start, end, Ut, spans)
        n_groups = 0
        for q in range(piece_row.shape[0]):
            if q == 0 or block[q] != block[q - 1]:
                n_groups += 1
        groups = np.empty((n_groups, 5), dtype=np.int64)
        g, q, size = 0, 0, 0
        while q < piece_row.shape[0]:
            h, lo = q, first[q]
            while h < piece_row.shape[0] and block[h] == block[q]:
                lo = min(lo, first[h])
                h += 1
            stop = end[block[q]]
            groups[g, 0], groups[g, 1], groups[g, 2], groups[g, 3], groups[g, 4] = lo, stop, h - q, size, q
            size += (stop - lo) * (h - q)
            g, q = g + 1, h
        zbuf = np.empty(size)
        panels = (zbuf, groups, piece_row)
        for g in range(n_groups):
            lo, panel, rows = _panel(panels, g)
            width = rows.shape[0]
            for i in range(panel.shape[0]):
                for c in range(width):
                    panel[i, c] = Ut[rows[c], lo + i]
            for i in range(panel.shape[0]):
                target = panel[i]
                for k in range(max(0, i - bw), i):
                    lik = work[lo + i, bw - (i - k)]
                    source = panel[k]
                    for c in range(width):
                        target[c] -= lik * source[c]
                diag = work[lo + i, bw]
                for c in range(width):
                    target[c] /= diag
            gram = np.zeros((width, width))
            for i in range(panel.shape[0]):
                z = panel[i]
                for c in range(width):
                    zc = z[c]
                    if zc != 0.0:
                        for d in range(c + 1):
                            gram[c, d] += zc * z[d]
            for c in range(width):
                for d in range(c + 1):
                    S[rows[c], rows[d]] += gram[c, d]
                    if c != d:
                        S[rows[d], rows[c]] += gram[c, d]
    for j in range(k_c.shape[0]):
        S[2 * j, 2 * j + 1] += 1.0 / k_c[j]
        S[2 * j + 1, 2 * j] += 1.0 / k_c[j]
    for q in range(k_s.shape[0]):
        r = 2 * k_c.shape[0] + q
        S[r, r] += 1.0 / k_s[q]
    return lu_factor(S, piv), (zbuf, groups, piece_row)


@njit
def low_rank_solve(work, bw, rhs, out, S, piv, panels):
    """out = (B + U C U^T)^-1 rhs (S, piv and Z's ``panels`` from low_rank_factor; S empty: B^-1 rhs).

    With f = L^-1 rhs, the Woodbury identity reads out = L^-T (f - Z S^-1 Z^T f): one forward and one
    backward substitution, the low-rank part on Z's panels between them."""
    m = S.shape[0]
    if m == 0:
        band_cholesky_solve(work, bw, rhs, out)
        return
    _forward(work, bw, rhs, out)
    y = np.zeros(m)
    for g in range(panels[1].shape[0]):
        lo, panel, rows = _panel(panels, g)
        for i in range(panel.shape[0]):
            f = out[lo + i]
            if f != 0.0:
                for c in range(rows.shape[0]):
                    y[rows[c]] += panel[i, c] * f
    lu_solve(S, piv, y)
    for g in range(panels[1].shape[0]):
        lo, panel, rows = _panel(panels, g)
        for i in range(panel.shape[0]):
            acc = 0.0
            for c in range(rows.shape[0]):
                acc += panel[i, c] * y[rows[c]]
            out[lo + i] -= acc
    _backward(work, bw, out)
