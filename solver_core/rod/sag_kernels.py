# SPDX-License-Identifier: GPL-3.0-or-later
"""Compiled kernels of the first guess's centre line: a polyline's length, its nodes placed evenly
by arc length, and the sag that gives a span between two holders its cable length.

The first guess lowers a route towards its full sag in up to 64 steps per cable, and each step
solves, span by span, for the sag's amplitude (some 13 lengths of the sagged span each): written
with numpy, those small array operations were two thirds of a sweep variant's time. The kernels do
the same arithmetic in the same order as the numpy they replace (numpy's pairwise summation of a
reduction, ``np.interp``'s search and formula), so the first guess, and every solve started from
it, is the same to the bit.
"""

import math

import numpy as np

from .._jit import njit

# numpy's pairwise summation (numpy/core/src/umath/loops_utils.h.src): blocks of up to 128 summed
# with 8 accumulators, larger arrays halved at a multiple of 8; a reduction of more values than the
# iterator's buffer (8192) adds the buffers' sums in turn to the identity
_PAIRWISE_BLOCK = 128
_BUFFER = 8192


@njit
def _block_sum(values, start, n):
    """numpy's sum of a block of at most _PAIRWISE_BLOCK values."""
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    r0, r1, r2, r3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    r4, r5, r6, r7 = values[start + 4], values[start + 5], values[start + 6], values[start + 7]
    i = 8
    while i < n - n % 8:
        k = start + i
        r0 += values[k]
        r1 += values[k + 1]
        r2 += values[k + 2]
        r3 += values[k + 3]
        r4 += values[k + 4]
        r5 += values[k + 5]
        r6 += values[k + 6]
        r7 += values[k + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += values[start + i]
        i += 1
    return total


@njit
def numpy_sum(values, n):
    """``values[:n].sum()`` of a float64 array, as numpy sums it, to the bit."""
    total = 0.0
    for start in range(0, n, _BUFFER):
        total += _pairwise_sum(values, start, min(_BUFFER, n - start))
    return total


@njit
def _pairwise_sum(values, start, n):
    """numpy's pairwise sum of ``values[start:start + n]``. numpy halves recursively; here the same
    tree is walked with a stack (numba's cache cannot load a recursive kernel's callers: they crash)."""
    if n <= _PAIRWISE_BLOCK:
        return _block_sum(values, start, n)
    depth = 2 * int(math.log2(n)) + 4
    starts = np.empty(depth, dtype=np.int64)
    sizes = np.empty(depth, dtype=np.int64)
    phases = np.zeros(depth, dtype=np.int64)  # 0: left half next, 1: right half next, 2: add them
    sums = np.empty(depth)
    top, held = 0, 0
    starts[0], sizes[0] = start, n
    while top >= 0:
        s, m = starts[top], sizes[top]
        if m <= _PAIRWISE_BLOCK:
            sums[held] = _block_sum(values, s, m)
            held += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if phases[top] == 0:
            phases[top] = 1
            top += 1
            starts[top], sizes[top], phases[top] = s, half, 0
        elif phases[top] == 1:
            phases[top] = 2
            top += 1
            starts[top], sizes[top], phases[top] = s + half, m - half, 0
        else:
            held -= 1
            sums[held - 1] = sums[held - 1] + sums[held]
            top -= 1
    return sums[0]


@njit
def _segment_lengths(points, amplitude, bump, out):
    """out[i] = |q[i+1] - q[i]| with q = points + amplitude * bump, as ``np.linalg.norm(np.diff(q,
    axis=0), axis=1)`` computes it."""
    for i in range(points.shape[0] - 1):
        s = 0.0
        for k in range(3):
            d = (points[i + 1, k] + amplitude * bump[i + 1, k]) - (points[i, k] + amplitude * bump[i, k])
            s += d * d
        out[i] = math.sqrt(s)


@njit
def _chord_lengths(points, out):
    """out[i] = |points[i+1] - points[i]|, as ``np.linalg.norm(np.diff(points, axis=0), axis=1)``
    computes it (inf stays inf: no zero-amplitude bump is added)."""
    for i in range(points.shape[0] - 1):
        s = 0.0
        for k in range(3):
            d = points[i + 1, k] - points[i, k]
            s += d * d
        out[i] = math.sqrt(s)


@njit
def polyline_length(points):
    """The length of the polyline ``points`` (m, 3): ``norm(diff(points), axis=1).sum()`` to the bit."""
    m = points.shape[0] - 1
    if m < 1:
        return 0.0
    lengths = np.empty(m)
    _chord_lengths(points, lengths)
    return numpy_sum(lengths, m)


@njit
def _interval(arc, x):
    """np.interp's search: -2 for NaN, -1 below ``arc``, len(arc) above it, else the last j with
    arc[j] <= x."""
    m = arc.shape[0]
    if math.isnan(x):
        return -2
    if x > arc[m - 1]:
        return m
    if x < arc[0]:
        return -1
    lo, hi = 0, m
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        if x >= arc[mid]:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@njit
def resample_polyline(points, fractions):
    """Points along the polyline ``points`` (m, 3) at ``fractions`` of its length: each coordinate
    ``np.interp(fractions * length, arc, points[:, k])``, the same arithmetic as numpy's."""
    m = points.shape[0]
    arc = np.empty(m)
    arc[0] = 0.0
    if m > 1:
        lengths = np.empty(m - 1)
        _chord_lengths(points, lengths)
        for i in range(m - 1):  # cumsum: in order
            arc[i + 1] = arc[i] + lengths[i]
    total = arc[m - 1]
    out = np.empty((fractions.shape[0], 3))
    if m == 1:  # np.interp's own case for one point: that point, whatever x (NaN too)
        for q in range(fractions.shape[0]):
            for k in range(3):
                out[q, k] = points[0, k]
        return out
    for q in range(fractions.shape[0]):
        x = fractions[q] * total
        j = _interval(arc, x)
        for k in range(3):
            if j == -2:
                out[q, k] = x
            elif j == -1:
                out[q, k] = points[0, k]
            elif j >= m - 1:
                out[q, k] = points[m - 1, k]
            elif arc[j] == x:
                out[q, k] = points[j, k]
            else:
                slope = (points[j + 1, k] - points[j, k]) / (arc[j + 1] - arc[j])
                value = slope * (x - arc[j]) + points[j, k]
                if math.isnan(value):
                    value = slope * (x - arc[j + 1]) + points[j + 1, k]
                    if math.isnan(value) and points[j, k] == points[j + 1, k]:
                        value = points[j, k]
                out[q, k] = value
    return out


@njit
def sagged_span(points, bump, fractions, wanted, largest, tolerance):
    """The span ``points`` (m, 3) sagged by ``a * bump`` to the length ``wanted``, its inner nodes at
    ``fractions`` of its length. ``a`` on [0, largest] by false position with the Illinois
    modification to ``tolerance`` (rod_state._increasing_root, the same steps)."""
    lengths = np.empty(points.shape[0] - 1)
    m = lengths.shape[0]
    lo, hi = 0.0, largest
    _segment_lengths(points, lo, bump, lengths)
    f_lo = numpy_sum(lengths, m) - wanted
    _segment_lengths(points, hi, bump, lengths)
    f_hi = numpy_sum(lengths, m) - wanted
    if f_lo >= 0.0:
        amplitude = lo
    elif f_hi <= 0.0:
        amplitude = hi
    else:
        amplitude = math.nan
        side = 0
        for _ in range(200):
            x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            if not lo < x < hi:
                x = 0.5 * (lo + hi)
            _segment_lengths(points, x, bump, lengths)
            fx = numpy_sum(lengths, m) - wanted
            if fx == 0.0 or hi - lo <= tolerance:
                amplitude = x
                break
            if fx < 0.0:
                lo, f_lo = x, fx
                if side == -1:
                    f_hi *= 0.5
                side = -1
            else:
                hi, f_hi = x, fx
                if side == 1:
                    f_lo *= 0.5
                side = 1
            if hi - lo <= tolerance:
                break
        if math.isnan(amplitude):
            amplitude = 0.5 * (lo + hi)
    sagged = np.empty_like(points)
    for i in range(points.shape[0]):
        for k in range(3):
            sagged[i, k] = points[i, k] + amplitude * bump[i, k]
    return resample_polyline(sagged, fractions)
