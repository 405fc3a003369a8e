# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether an equilibrium is a minimum of the energy, and which way to leave it when it is not.

A vanishing gradient is also met at saddles: a straight cable compressed beyond its Euler load,
a rod twisted beyond its critical twist, a cable balanced on the top of a sphere. The Hessian of
the total energy on the free degrees of freedom, H = B + U C U^T (the band B and the low-rank
contact couplings of banded.low_rank_factor), tells them apart: a minimum has it positive
definite. The test is a Cholesky factorisation of H + eps D, D the diagonal of H (the
Levenberg-Marquardt scaling), so that zero-energy modes (a roll-free cable turning about its
own axis) count as stable and round-off cannot decide; on a saddle, inverse iteration on the
pencil (H, D) with a shift just beyond its most negative eigenvalue gives the direction of
steepest negative curvature, from a fixed start vector so that a symmetric state buckles the
same way on every machine.
"""

import math

import numpy as np

from .._jit import njit
from ..maths.banded import _panel, band_cholesky, low_rank_factor, low_rank_solve
from ..maths.small_dense import dot, positive_eigenvalue_count

# Relative shift of the stability test: an eigenvalue of the pencil (H, D) above -shift counts as
# non-negative. D is H's diagonal, which the stiff stretch and shear dominate, the more the shorter
# the segments: a rod 0.5 % past Greenhill's critical twist shows some 1e-3 delta / N^2 (N segments),
# 1e-10 at 400, where round-off near zero modes is some 1e-14. So the shift falls with N^2 from
# STABILITY_SHIFT at COARSE_SEGMENTS and below to MIN_STABILITY_SHIFT: with 1e-9 throughout a
# 200-segment rod was called a stable minimum up to 1.8 % past the critical twist, with 1e-11
# throughout a five-segment cable balanced over a sphere's top kept leaving round-off saddles
# (tests/solver/test_stability.py, test_intersection_free.py).
STABILITY_SHIFT = 1e-9
MIN_STABILITY_SHIFT = 1e-11
COARSE_SEGMENTS = 25.0
INVERSE_ITERATIONS = 40


@njit
def stability_shift(rest_len):
    """The shift for a rod (or rods) of these segment lengths: STABILITY_SHIFT scaled by
    (COARSE_SEGMENTS / N)^2, N = whole length / shortest segment, and not below MIN_STABILITY_SHIFT."""
    total = 0.0
    shortest = np.inf
    for j in range(rest_len.shape[0]):
        total += rest_len[j]
        shortest = min(shortest, rest_len[j])
    if not (shortest > 0.0) or not math.isfinite(total):
        return STABILITY_SHIFT
    scale = min(1.0, COARSE_SEGMENTS * shortest / total)
    return max(MIN_STABILITY_SHIFT, STABILITY_SHIFT * scale * scale)


@njit
def band_matvec(band, bw, x, out):
    """out = A x for the symmetric band A (lower band by rows, banded.py's storage)."""
    n = band.shape[0]
    for i in range(n):
        out[i] = band[i, bw] * x[i]
    for i in range(n):
        for c in range(bw):
            j = i - (bw - c)
            if j >= 0:
                a = band[i, c]
                out[i] += a * x[j]
                out[j] += a * x[i]


@njit
def low_rank_matvec(Ut, k_c, k_s, x, out):
    """out += U C U^T x, with U^T, C as in banded.low_rank_factor."""
    m_c = k_c.shape[0]
    for j in range(m_c):
        a = dot(Ut[2 * j], x)
        b = dot(Ut[2 * j + 1], x)
        for i in range(x.shape[0]):
            out[i] += k_c[j] * (b * Ut[2 * j, i] + a * Ut[2 * j + 1, i])
    for q in range(k_s.shape[0]):
        r = 2 * m_c + q
        a = dot(Ut[r], x)
        for i in range(x.shape[0]):
            out[i] += k_s[q] * a * Ut[r, i]


@njit
def _capacitance_positive(panels, k_c, k_s, m):
    """Positive eigenvalues of S = C^-1 + Z^T Z (rebuilt from Z's panels; low_rank_factor keeps
    only S's LU)."""
    S = np.zeros((m, m))
    for g in range(panels[1].shape[0]):
        lo, panel, rows = _panel(panels, g)
        for i in range(panel.shape[0]):
            for c in range(rows.shape[0]):
                zc = panel[i, c]
                if zc != 0.0:
                    for d in range(rows.shape[0]):
                        S[rows[c], rows[d]] += zc * panel[i, d]
    for j in range(k_c.shape[0]):
        S[2 * j, 2 * j + 1] += 1.0 / k_c[j]
        S[2 * j + 1, 2 * j] += 1.0 / k_c[j]
    for q in range(k_s.shape[0]):
        r = 2 * k_c.shape[0] + q
        S[r, r] += 1.0 / k_s[q]
    return positive_eigenvalue_count(S)


@njit
def factor_shifted(band, bw, damping, shift, work, Ut, k_c, k_s, S, piv, spans):
    """Factor H + shift D into ``work`` (and the low-rank part); returns (whether H + shift D is
    positive definite, Z's panels for low_rank_solve).

    With the band B + shift D positive definite, the inertia of the whole matrix follows from
    Haynsworth's formula on [[B, U], [U^T, -C^-1]]: its negative eigenvalues number pos(S) - pos(C),
    S = C^-1 + U^T B^-1 U; C has one positive eigenvalue per coupling pair and one per positive k_s.
    """
    n = band.shape[0]
    for i in range(n):
        for c in range(bw + 1):
            work[i, c] = band[i, c]
        work[i, bw] += shift * damping[i]
    panels = (np.zeros(0), np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64))
    if not band_cholesky(work, bw):
        return False, panels
    m = Ut.shape[0]
    if m == 0:
        return True, panels
    factored, panels = low_rank_factor(work, bw, Ut, k_c, k_s, S, piv, spans)
    if not factored:
        return False, panels
    positive_c = k_c.shape[0]
    for q in range(k_s.shape[0]):
        if k_s[q] > 0.0:
            positive_c += 1
    return _capacitance_positive(panels, k_c, k_s, m) == positive_c, panels


@njit
def _start_vector(fixed, out):
    """A fixed, irregular start for inverse iteration: it has a component along every mode, of a size
    that does not depend on round-off, so the buckling direction chosen is the same everywhere."""
    for i in range(out.shape[0]):
        out[i] = 0.0 if fixed[i] else math.sin(12.9898 * (i + 1) + 78.233 * math.sin(0.37 * (i + 1)))


@njit
def negative_curvature_direction(band, bw, damping, fixed, coupling, work, shift, out):
    """The direction of most negative curvature of H = B + U C U^T (the pencil (H, D); the band B,
    the low-rank terms ``coupling``, kernel_arrays.LowRankCoupling) into ``out``, normalised to
    |out|_D = 1; returns its Rayleigh quotient out^T H out (< 0 on a saddle; 0.0 if no shift up to
    1e6 made H + shift D positive definite).

    The shift is raised by factors of 4 until H + shift D factorises and then bisected (in the
    logarithm) to within 20 % of the most negative eigenvalue, so that inverse iteration,
    x <- (H + shift D)^-1 D x, converges by a factor of 5 or more per solve."""
    Ut, k_c, k_s, S, piv, spans = coupling.Ut, coupling.k_c, coupling.k_s, coupling.S, coupling.piv, coupling.spans
    n = band.shape[0]
    low, high = shift, shift
    ok = False
    for _k in range(40):
        high *= 4.0
        ok, _p = factor_shifted(band, bw, damping, high, work, Ut, k_c, k_s, S, piv, spans)
        if ok:
            break
        low = high
        if high > 1e6:
            break
    if not ok:
        return 0.0
    for _k in range(3):
        mid = math.sqrt(low * high)
        fine, _p = factor_shifted(band, bw, damping, mid, work, Ut, k_c, k_s, S, piv, spans)
        if fine:
            high = mid
        else:
            low = mid
    _ok, panels = factor_shifted(band, bw, damping, high, work, Ut, k_c, k_s, S, piv, spans)
    x = np.empty(n)
    rhs = np.empty(n)
    _start_vector(fixed, x)
    for _it in range(INVERSE_ITERATIONS):
        for i in range(n):
            rhs[i] = 0.0 if fixed[i] else damping[i] * x[i]
        low_rank_solve(work, bw, rhs, out, S, piv, panels)
        norm = 0.0
        for i in range(n):
            if fixed[i]:
                out[i] = 0.0
            norm += damping[i] * out[i] * out[i]
        norm = math.sqrt(norm)
        if not (norm > 0.0) or not math.isfinite(norm):
            return 0.0
        for i in range(n):
            x[i] = out[i] / norm
    hx = np.empty(n)
    band_matvec(band, bw, x, hx)
    if Ut.shape[0] > 0:
        low_rank_matvec(Ut, k_c, k_s, x, hx)
    curvature = 0.0
    for i in range(n):
        out[i] = x[i]
        if not fixed[i]:
            curvature += x[i] * hx[i]
    return curvature
