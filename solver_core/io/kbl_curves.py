# SPDX-License-Identifier: GPL-3.0-or-later
"""Centre curves for KBL: a clamped uniform non-rational B-spline fitted to a solved centre line.

KBL's ``B_spline_curve`` holds only a degree and control points; its guideline (prostep ivip, "3D B-Spline
Representation", KBLFRM-923) leaves the knots to "external knowledge": uniform, clamped or unclamped. The
curves written here are clamped (they start at the first control point and end at the last) with
uniform interior knots, and the export says so in each segment's processing information.
"""

import math

import numpy as np

DEGREE = 3
MAX_PIECE_POINTS = 120  # points of the centre line one curve is fitted to; a longer line gets several


def clamped_knots(count: int, degree: int) -> np.ndarray:
    """The clamped uniform knot vector of ``count`` control points (Piegl & Tiller 1997, Eq. 2.13 with
    equally spaced interior knots): degree + 1 zeros, the interior knots, degree + 1 ones."""
    interior = np.arange(1, count - degree) / (count - degree)
    return np.concatenate([np.zeros(degree + 1), interior, np.ones(degree + 1)])


def basis_matrix(u: np.ndarray, count: int, degree: int) -> np.ndarray:
    """B[j, i] = N_i,p(u_j), by the Cox-de Boor recursion (Piegl & Tiller 1997, Eq. 2.5), with the
    last basis function 1 at u = 1 (the clamped curve ends at its last control point)."""
    u = np.asarray(u, dtype=np.float64)
    knots = clamped_knots(count, degree)
    spans = len(knots) - 1
    b = np.zeros((u.size, spans))
    for i in range(spans):
        if knots[i] < knots[i + 1]:
            b[:, i] = (knots[i] <= u) & (u < knots[i + 1])
    for p in range(1, degree + 1):
        nxt = np.zeros((u.size, spans - p))
        for i in range(spans - p):
            left = knots[i + p] - knots[i]
            right = knots[i + p + 1] - knots[i + 1]
            if left > 0.0:
                nxt[:, i] += (u - knots[i]) / left * b[:, i]
            if right > 0.0:
                nxt[:, i] += (knots[i + p + 1] - u) / right * b[:, i + 1]
        b = nxt
    b[u >= 1.0, :] = 0.0  # half-open spans leave u = 1 outside every one
    b[u >= 1.0, count - 1] = 1.0
    return b


def curve_points(control: np.ndarray, degree: int, u: np.ndarray) -> np.ndarray:
    """Points of the clamped uniform B-spline at parameters ``u`` in [0, 1]."""
    control = np.asarray(control, dtype=np.float64)
    return basis_matrix(u, len(control), degree) @ control


def chord_parameters(points: np.ndarray) -> np.ndarray:
    """Parameters in [0, 1] proportional to the polyline's arc length (Piegl & Tiller 1997, Eq. 9.5)."""
    steps = np.linalg.norm(np.diff(points, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(steps)])
    return s / s[-1] if s[-1] > 0.0 else np.linspace(0.0, 1.0, len(points))


def fit_centre_curves(points: np.ndarray, tolerance: float) -> list:
    """[(control points, degree, deviation)]: the centre line as clamped uniform B-splines end to end,
    one per run of at most MAX_PIECE_POINTS points (a longer line would make the least squares below
    slow: its cost grows with the cube of the control points), each by fit_centre_curve."""
    points = np.asarray(points, dtype=np.float64)
    pieces = max(1, math.ceil((len(points) - 1) / (MAX_PIECE_POINTS - 1)))
    bounds = np.linspace(0, len(points) - 1, pieces + 1).round().astype(np.int64)
    return [fit_centre_curve(points[a : b + 1], tolerance) for a, b in zip(bounds[:-1], bounds[1:])]


def fit_centre_curve(points: np.ndarray, tolerance: float) -> tuple:
    """(control points, degree, deviation): a clamped uniform B-spline whose point at each polyline
    point's chord parameter lies within ``tolerance`` (m) of it, the ends interpolated exactly, with as
    few control points as a search finds (doubling, then halving the interval: the deviation falls as
    control points are added, if not strictly). The deviation is the largest such distance (an upper
    bound of the polyline points' distance from the curve); where no number of control points meets the
    tolerance, the best tried. Least squares with fixed ends (Piegl & Tiller 1997, Sec. 9.4.1)."""
    points = np.asarray(points, dtype=np.float64)
    m = len(points)
    degree = min(DEGREE, m - 1)
    u = chord_parameters(points)

    def fitted(count):
        control = _fixed_end_fit(points, u, count, degree)
        return control, degree, float(np.max(np.linalg.norm(curve_points(control, degree, u) - points, axis=1)))

    low = degree + 1
    best = fitted(low)
    if best[2] <= tolerance:
        return best
    high = low
    while True:  # doubling until the tolerance is met (or every point is a control point)
        high = min(2 * high, m)
        trial = fitted(high)
        best = trial if trial[2] < best[2] else best
        if trial[2] <= tolerance or high == m:
            break
        low = high
    if not trial[2] <= tolerance:
        return best
    while high - low > 1:  # the fewest between the last count that failed and the first that met it
        middle = (low + high) // 2
        candidate = fitted(middle)
        if candidate[2] <= tolerance:
            high, trial = middle, candidate
        else:
            low = middle
    return trial


def _fixed_end_fit(points, u, count, degree) -> np.ndarray:
    b = basis_matrix(u, count, degree)
    control = np.empty((count, 3))
    control[0], control[-1] = points[0], points[-1]
    if count > 2:
        rhs = points - np.outer(b[:, 0], points[0]) - np.outer(b[:, -1], points[-1])
        control[1:-1] = np.linalg.lstsq(b[:, 1:-1], rhs, rcond=None)[0]
    return control
