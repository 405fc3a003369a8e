# SPDX-License-Identifier: GPL-3.0-or-later
"""The mass-spring chain's rest state by damped Newton steps, where Lv 2017's explicit relaxation
cannot get there in time.

Lv et al. relax the points by semi-implicit Euler steps (their Eq. 28; mass_spring.relax). A stable
explicit step shrinks with the square of the link length (the bend springs' stiffness per point grows
as EI / l^3 while a point's mass falls as l) and the slowest mode's period grows with the cable, so the
steps to rest grow as the square of the point count: 88,000 at 25 links of a cantilever, 355,000 at 50,
and at 100 and 200 links the relaxation stalled short of the tolerance (0.8-6.8 N of force left on the
tip-loaded elastica and the roll-up). The rest state is the minimum of the chain's energy, so it is
found here as such: Newton steps on the free points' positions with the springs' stiffness taken by
central differences of their analytic forces (mass_spring.mass_spring_energy's gradient), damped in
the Levenberg-Marquardt way (Nocedal & Wright, Numerical Optimization, 2nd ed., Sec. 10.3: K + lambda
diag K) where the stiffness is not positive definite or a step does less than its model promised.

A point's force depends on the points at most REACH away (a torsion spring spans the four points
around its link, Eqs. 7-12), so the stiffness is a band: points 2 REACH + 1 apart never share a row and
are moved together (the colouring of Curtis, Powell & Reid 1974), 3 (2 REACH + 1) pairs of gradients
for the whole band whatever the point count. What a step gains is measured as the work of the forces
along it (Simpson's rule on the gradients at its start, middle and end): the energy's change where the
loads are conservative, computed from forces (an energy difference loses its digits near rest), and
still a measure where a dead moment is not (in 3-D its couple of forces turns with the link).
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit
from ..maths.banded import band_cholesky, band_cholesky_solve
from .mass_spring import AT_REST, NOT_FINITE, OUT_OF_STEPS, STALLED, MassSpringArrays, mass_spring_energy

# a point's force depends on the points at most this many links away (torsion of link i: i-1 .. i+2)
REACH = 3
COLOURS = 2 * REACH + 1
# half bandwidth of the stiffness in free coordinates: REACH points of 3 coordinates, and the
# coordinates of a point's own row
BAND = 3 * REACH + 2
# Levenberg-Marquardt damping, relative to the stiffness's diagonal: its first value after a pure
# Newton step fails, and the largest before the step is given up (the forces left are then noise)
DAMPING_FIRST = 1e-8
DAMPING_LARGEST = 1e12
# a step is taken when it gains at least this part of what its quadratic model predicted
ACCEPT = 1e-4
# the central differences' step, relative to the shortest link: their truncation error is some
# (1e-6)^2 of an entry, their round-off eps |force| / step, 1e-8 of a stretch spring's entry
DIFFERENCE_STEP = 1e-6
MAX_ITERATIONS = 2000


@njit
def _free_coordinates(held):
    """Per point the index of its first coordinate among the free coordinates, -1 where held."""
    n = held.shape[0]
    dof = np.full(n, -1, dtype=np.int64)
    count = 0
    for i in range(n):
        if held[i] == 0:
            dof[i] = 3 * count
            count += 1
    return dof


@njit
def _stiffness(x, a: MassSpringArrays, dof, step, full, plus, minus):
    """The stiffness dF/dx on the free coordinates by central differences into ``full`` (row r, column
    c at full[r, BAND + c - r]); ``x`` is moved and put back exactly."""
    n = x.shape[0]
    full[:] = 0.0
    saved = np.empty(n)
    spread = np.empty(n)  # the coordinates' differences as represented (not exactly 2 step)
    for colour in range(COLOURS):
        for k in range(3):
            for j in range(colour, n, COLOURS):
                if dof[j] >= 0:
                    saved[j] = x[j, k]
                    x[j, k] = saved[j] + step
                    spread[j] = x[j, k]
            mass_spring_energy(x, a, plus)
            for j in range(colour, n, COLOURS):
                if dof[j] >= 0:
                    x[j, k] = saved[j] - step
                    spread[j] -= x[j, k]
            mass_spring_energy(x, a, minus)
            for j in range(colour, n, COLOURS):
                if dof[j] < 0:
                    continue
                x[j, k] = saved[j]
                column = dof[j] + k
                for i in range(max(0, j - REACH), min(n, j + REACH + 1)):
                    if dof[i] < 0:
                        continue
                    for kk in range(3):
                        row = dof[i] + kk
                        full[row, BAND + column - row] = (plus[i, kk] - minus[i, kk]) / spread[j]


@njit
def _symmetric_band(full, band):
    """The lower band of (K + K^T) / 2 (banded.py's storage): the forces of a dead moment in 3-D are
    not an energy's, and the differences' noise is not symmetric."""
    m = full.shape[0]
    for r in range(m):
        for c in range(max(0, r - BAND), r + 1):
            band[r, BAND - (r - c)] = 0.5 * (full[r, BAND + c - r] + full[c, BAND + r - c])


@njit
def _band_product(band, p, out):
    """out = K p for the symmetric K whose lower band is ``band``."""
    m = band.shape[0]
    out[:] = 0.0
    for r in range(m):
        for c in range(max(0, r - BAND), r):
            v = band[r, BAND - (r - c)]
            out[r] += v * p[c]
            out[c] += v * p[r]
        out[r] += band[r, BAND] * p[r]


@njit
def _largest_force(grad, dof):
    largest = 0.0
    for i in range(grad.shape[0]):
        if dof[i] >= 0:
            size = math.sqrt(grad[i, 0] ** 2 + grad[i, 1] ** 2 + grad[i, 2] ** 2)
            if not size <= np.inf:
                return np.nan
            largest = max(largest, size)
    return largest


@njit
def _moved(x, dof, p, scale, out):
    """out = x with every free point moved by scale times its part of ``p``."""
    for i in range(x.shape[0]):
        for k in range(3):
            out[i, k] = x[i, k] + (scale * p[dof[i] + k] if dof[i] >= 0 else 0.0)


@njit
def _along(grad, dof, p):
    """grad . p over the free coordinates."""
    s = 0.0
    for i in range(grad.shape[0]):
        if dof[i] >= 0:
            for k in range(3):
                s += grad[i, k] * p[dof[i] + k]
    return s


class NewtonScratch(NamedTuple):
    """The arrays of newton_rest's iterations: per point (n, 3), per free coordinate (m) or banded."""

    dof: np.ndarray  # (n,) int64, _free_coordinates
    full: np.ndarray  # (m, 2 BAND + 1) the difference stiffness, unsymmetric
    band: np.ndarray  # (m, BAND + 1) its symmetric part's lower band
    factor: np.ndarray  # (m, BAND + 1) the damped band's Cholesky factor
    grad: np.ndarray  # (n, 3) the energy's gradient at the current points
    plus: np.ndarray  # (n, 3) gradients at moved points: differences, a step's middle and end
    minus: np.ndarray
    grad_end: np.ndarray
    trial: np.ndarray  # (n, 3) the points at a step's middle and end
    middle: np.ndarray
    rhs: np.ndarray  # (m,) the forces on the free coordinates
    p: np.ndarray  # (m,) the step
    kp: np.ndarray  # (m,) the stiffness times the step


def newton_scratch(n: int, held: np.ndarray) -> NewtonScratch:
    m = 3 * int(np.sum(held == 0))
    rows = max(m, 1)
    points = [np.zeros((n, 3)) for _ in range(6)]
    return NewtonScratch(
        _free_coordinates(held),
        np.zeros((rows, 2 * BAND + 1)),
        np.zeros((rows, BAND + 1)),
        np.zeros((rows, BAND + 1)),
        *points,
        np.zeros(m),
        np.zeros(m),
        np.zeros(m),
    )


@njit
def _stiffness_band(x, a: MassSpringArrays, w: NewtonScratch, step):
    """w.band from the difference stiffness at ``x``; the largest diagonal entry."""
    _stiffness(x, a, w.dof, step, w.full, w.plus, w.minus)
    _symmetric_band(w.full, w.band)
    top = 0.0
    for r in range(w.band.shape[0]):
        top = max(top, w.band[r, BAND])
    return top


@njit
def damped_solve(w: NewtonScratch, damping, top):
    """w.p from (K + damping |diag K|) p = w.rhs (Levenberg-Marquardt; |K_ii|: a strongly compressed
    start has negative diagonal entries); False where that is not positive definite."""
    w.factor[:] = w.band
    for r in range(w.rhs.shape[0]):
        w.factor[r, BAND] += damping * max(abs(w.band[r, BAND]), 1e-12 * top)
    if not band_cholesky(w.factor, BAND):
        return False
    band_cholesky_solve(w.factor, BAND, w.rhs, w.p)
    return True


@njit
def gain_and_work(a: MassSpringArrays, w: NewtonScratch, fraction):
    """(the gain the quadratic model predicts for the move ``fraction`` w.p, the work of the forces
    along it by Simpson's rule: minus the energy's change), its middle and end in w.middle and
    w.trial; the end's gradient into w.grad_end."""
    _band_product(w.band, w.p, w.kp)
    curvature = 0.0
    for r in range(w.p.shape[0]):
        curvature += w.p[r] * w.kp[r]
    slope = _along(w.grad, w.dof, w.p)
    mass_spring_energy(w.middle, a, w.plus)
    mass_spring_energy(w.trial, a, w.grad_end)
    change = fraction * (slope + 4.0 * _along(w.plus, w.dof, w.p) + _along(w.grad_end, w.dof, w.p)) / 6.0
    return -fraction * slope - 0.5 * fraction * fraction * curvature, change


@njit
def _damped_step(x, a: MassSpringArrays, w: NewtonScratch, damping, top):
    """Solve (K + damping diag K) p = F and measure the step: (factored, predicted gain, work done
    along it; w.trial and w.grad_end hold its end)."""
    if not damped_solve(w, damping, top):
        return False, 0.0, 0.0
    _moved(x, w.dof, w.p, 0.5, w.middle)
    _moved(x, w.dof, w.p, 1.0, w.trial)
    predicted, change = gain_and_work(a, w, 1.0)
    return True, predicted, change


@njit
def newton_rest(x, a: MassSpringArrays, w: NewtonScratch, tolerance, max_iterations):
    """Newton steps from ``x`` (in place; held points stay) until the force left on every free point is
    below ``tolerance`` (N): (iterations, largest force, why: mass_spring.AT_REST .. NOT_FINITE,
    whether the undamped stiffness at the last point is positive definite, i.e. a minimum)."""
    step = DIFFERENCE_STEP * a.rest.min()
    damping = 0.0
    mass_spring_energy(x, a, w.grad)
    for iteration in range(max_iterations + 1):
        largest = _largest_force(w.grad, w.dof)
        if not largest <= np.inf:
            return iteration, largest, NOT_FINITE, False
        top = _stiffness_band(x, a, w, step)
        if largest <= tolerance or iteration == max_iterations:
            w.factor[:] = w.band
            minimum = w.rhs.shape[0] == 0 or band_cholesky(w.factor, BAND)
            return iteration, largest, AT_REST if largest <= tolerance else OUT_OF_STEPS, minimum
        for i in range(x.shape[0]):
            if w.dof[i] >= 0:
                for k in range(3):
                    w.rhs[w.dof[i] + k] = -w.grad[i, k]
        while True:
            factored, predicted, change = _damped_step(x, a, w, damping, top)
            if factored and predicted > 0.0 and change < 0.0 and -change >= ACCEPT * predicted:
                break
            damping = max(4.0 * damping, DAMPING_FIRST)
            if damping > DAMPING_LARGEST:
                return iteration, largest, STALLED, False
        x[:] = w.trial
        w.grad[:] = w.grad_end
        ratio = -change / predicted
        if ratio > 0.75:  # the model held: less damping, down to a pure Newton step
            damping = damping / 3.0 if damping > 3.0 * DAMPING_FIRST else 0.0
        elif ratio < 0.25:
            damping = max(2.0 * damping, DAMPING_FIRST)
    return max_iterations, np.inf, OUT_OF_STEPS, False
