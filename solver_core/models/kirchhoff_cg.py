# SPDX-License-Identifier: GPL-3.0-or-later
"""The discrete extensible Kirchhoff rod of Linn, Stephan, Carlsson and Bohlin (seed 001), minimised by
nonlinear conjugate gradients under sequentially varied boundary conditions (solver.model "kirchhoff_cg").

The energy is their Eqs. (6)-(7), w = EI/2 |t x d_s t|^2 + GJ/2 Omega_t^2 + EA/2 (|d_s phi| - 1)^2, less
the work of gravity and point loads, on the rod model's nodes x_i (finite differences, trapezoidal
quadrature):

- stretch, per segment j of rest length l_j: EA/2 (|e_j| - l_j)^2 / l_j (Eq. 5);
- bend, at every joint between consecutive unit tangents a, b: EI/(2 l^) |kappa b|^2 with the discrete
  curvature binormal kappa b = 2 a x b / (1 + a . b) (its length 2 tan(phi/2) is the turning angle phi
  to second order; Bergou et al. 2008) and l^ the length the joint stands for (half of each segment
  beside it); |kappa b|^2 = 4 (1 - a . b) / (1 + a . b) depends on a . b alone. A clamped end adds a
  joint between the connector's outlet and the first segment (the boundary condition "by fixing the
  derivatives of phi at prescribed values", end of their Sec. 2.2), standing for half a segment;
- twist: Eq. (2) makes Omega_t constant along an unloaded isotropic rod in equilibrium (their remark
  after Eq. 4), so the adapted frame's angle is eliminated exactly: with d carried along the centre
  line by parallel transport (zero twist) from the start connector's normal, the twist needed to meet
  the end connector's normal is Tw(x), the angle from the transported normal to it, and the energy is
  GJ Tw^2 / (2 L). Tw depends on the whole centre line (its holonomy): this is the bend-twist coupling
  the paper stresses (the Omega-shape twisted by 2 pi buckles out of its plane, their Fig. 1). Its
  gradient is the reference-twist gradient of Bergou et al. 2008, Sec. 6: turning the frame carried
  across a joint by d m = kappa b . (d e_a / (2 |e_a|) + d e_b / (2 |e_b|)). Tw is followed through
  whole turns from step to step (a step may turn an end by less than half a turn).

Minimised by Polak-Ribiere nonlinear CG (Shewchuk 1994, the paper's ref. 22) with a secant line
search, preconditioned by the banded stiffness without the twist term (difference Hessian, formed
afresh every REFRESH iterations, when the directions restart), to the rod model's force tolerance on
every free node; a rest state that is a saddle is left along its lowest curvature. What the paper has
not (obstacles, contact, clips, junctions, rest shapes, dead moments) is refused by name (model_features.py).
"""

import math
import time
from typing import NamedTuple

import numpy as np

from .._jit import njit
from ..maths.banded import band_cholesky, band_cholesky_solve
from ..maths.rotations import frame_from_tangent
from ..solve import minimum_check

MAX_ITERATIONS = 2_000_000
LINE_SEARCH_STEPS = 8
REFRESH = 20  # iterations between preconditioners
SADDLE_ESCAPES = 5  # saddles left per solve before a saddle is reported as such
STALL = 200  # iterations without a smaller largest force before the minimisation gives up


class KirchhoffArrays(NamedTuple):
    rest: np.ndarray  # (n-1,) segment rest lengths [m]
    k_stretch: np.ndarray  # (n-1,) EA / l [N/m]
    bend: float  # EI [N m^2]
    joint_len: np.ndarray  # (n,) length each node's joint stands for [m] (0: no joint there)
    outlet: np.ndarray  # (2, 3) unit tangents of clamped start and end
    clamped: np.ndarray  # (2,) uint8: whether each end is clamped (has an outlet joint)
    twist_k: float  # GJ / L [N m], 0 where the ends do not hold the roll
    start_normal: np.ndarray  # (3,) the start connector's normal (carried along)
    end_normal: np.ndarray  # (3,) the end connector's normal (met at the end)
    followed: np.ndarray  # (2,) Tw and the roll (mod 2 pi) at the last accepted iterate: Tw followed
    # continuously through whole turns (each iterate turns the roll by less than half a turn)
    held: np.ndarray  # (n,) uint8
    force: np.ndarray  # (n, 3) weight and point loads [N]


@njit
def _roll(x, a):
    """The angle (-pi, pi] from the start normal carried along the centre line (and the outlets) to the
    end normal, about the end's tangent."""
    n = x.shape[0]
    u0, u1, u2 = a.start_normal[0], a.start_normal[1], a.start_normal[2]
    if a.clamped[0]:
        p0, p1, p2 = a.outlet[0, 0], a.outlet[0, 1], a.outlet[0, 2]
    else:
        e = x[1] - x[0]
        le = max(math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), 1e-300)
        p0, p1, p2 = e[0] / le, e[1] / le, e[2] / le
    count = n - 1 + (1 if a.clamped[1] else 0)
    for j in range(count):
        if j < n - 1:
            e = x[j + 1] - x[j]
            le = max(math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), 1e-300)
            b0, b1, b2 = e[0] / le, e[1] / le, e[2] / le
        else:
            b0, b1, b2 = a.outlet[1, 0], a.outlet[1, 1], a.outlet[1, 2]
        c = max(p0 * b0 + p1 * b1 + p2 * b2, -1.0 + 1e-12)
        # u <- R u, R the smallest rotation taking p to b (Rodrigues with v = p x b)
        v0, v1, v2 = p1 * b2 - p2 * b1, p2 * b0 - p0 * b2, p0 * b1 - p1 * b0
        w0, w1, w2 = v1 * u2 - v2 * u1, v2 * u0 - v0 * u2, v0 * u1 - v1 * u0  # v x u
        f = 1.0 / (1.0 + c)
        ww0, ww1, ww2 = v1 * w2 - v2 * w1, v2 * w0 - v0 * w2, v0 * w1 - v1 * w0  # v x (v x u)
        u0, u1, u2 = u0 + w0 + f * ww0, u1 + w1 + f * ww1, u2 + w2 + f * ww2
        p0, p1, p2 = b0, b1, b2
    d = a.end_normal
    cx, cy, cz = u1 * d[2] - u2 * d[1], u2 * d[0] - u0 * d[2], u0 * d[1] - u1 * d[0]
    return math.atan2(cx * p0 + cy * p1 + cz * p2, u0 * d[0] + u1 * d[1] + u2 * d[2])


@njit
def _followed_twist(roll, followed):
    """Tw at a roll (mod 2 pi) near the last followed one: the change taken within half a turn."""
    change = roll - followed[1]
    change -= 2.0 * math.pi * math.floor((change + math.pi) / (2.0 * math.pi))
    return followed[0] + change


@njit
def _follow(x, a):
    """Move the followed twist on to ``x`` (an accepted iterate)."""
    if a.twist_k > 0.0:
        roll = _roll(x, a)
        a.followed[0] = _followed_twist(roll, a.followed)
        a.followed[1] = roll


@njit
def kirchhoff_energy(x, a, grad):
    """The energy of the module docstring at nodes ``x`` (n, 3); its gradient into ``grad`` (n, 3)."""
    n = x.shape[0]
    grad[:] = 0.0
    energy = 0.0
    # unit tangents and lengths of the segments, with the outlets as ghost segments at clamped ends
    tang = np.empty((n + 1, 3))
    length = np.ones(n + 1)
    first = 0 if a.clamped[0] else 1
    last = n if a.clamped[1] else n - 1
    if a.clamped[0]:
        tang[0] = a.outlet[0]
    if a.clamped[1]:
        tang[n] = a.outlet[1]
    for j in range(n - 1):
        e0, e1, e2 = x[j + 1, 0] - x[j, 0], x[j + 1, 1] - x[j, 1], x[j + 1, 2] - x[j, 2]
        le = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        if not le > 0.0:  # two nodes on one point: no tangent, no energy (the minimiser backs off)
            grad[:] = np.nan
            return np.inf
        length[j + 1] = le
        tang[j + 1, 0], tang[j + 1, 1], tang[j + 1, 2] = e0 / le, e1 / le, e2 / le
        # stretch (Eq. 5)
        strain = le - a.rest[j]
        energy += 0.5 * a.k_stretch[j] * strain * strain
        f = a.k_stretch[j] * strain
        for k in range(3):
            grad[j + 1, k] += f * tang[j + 1, k]
            grad[j, k] -= f * tang[j + 1, k]
    # d E / d t of every segment (ghosts included), projected and divided by |e| below
    dt = np.zeros((n + 1, 3))
    twist_on = a.twist_k > 0.0
    tw = 0.0
    if twist_on:
        roll = _roll(x, a)
        tw = _followed_twist(roll, a.followed)
        energy += 0.5 * a.twist_k * tw * tw
    for j in range(first, last):  # the joint between segment j and j + 1 (node j)
        node = j
        if a.joint_len[node] <= 0.0:
            continue
        p, b = tang[j], tang[j + 1]
        c = p[0] * b[0] + p[1] * b[1] + p[2] * b[2]
        c = max(c, -1.0 + 1e-12)
        k = a.bend / (2.0 * a.joint_len[node])
        energy += k * 4.0 * (1.0 - c) / (1.0 + c)
        dc = -8.0 * k / ((1.0 + c) * (1.0 + c))
        for r in range(3):
            dt[j, r] += dc * b[r]
            dt[j + 1, r] += dc * p[r]
        if twist_on:
            # reference-twist gradient: d m = kappa b . (d e_a / (2 |e_a|) + d e_b / (2 |e_b|))
            g = a.twist_k * tw
            f = 2.0 / (1.0 + c)
            kb0 = f * (p[1] * b[2] - p[2] * b[1])
            kb1 = f * (p[2] * b[0] - p[0] * b[2])
            kb2 = f * (p[0] * b[1] - p[1] * b[0])
            for side in range(2):
                seg = j + side  # the segment in tang numbering; real ones are 1..n-1
                if 1 <= seg <= n - 1:
                    s = 0.5 * g / length[seg]
                    i0 = seg - 1
                    grad[i0 + 1, 0] += s * kb0
                    grad[i0 + 1, 1] += s * kb1
                    grad[i0 + 1, 2] += s * kb2
                    grad[i0, 0] -= s * kb0
                    grad[i0, 1] -= s * kb1
                    grad[i0, 2] -= s * kb2
    for seg in range(1, n):  # d t / d e = (I - t t^T) / |e|
        t = tang[seg]
        d = dt[seg]
        dot = d[0] * t[0] + d[1] * t[1] + d[2] * t[2]
        inv = 1.0 / length[seg]
        for r in range(3):
            v = (d[r] - dot * t[r]) * inv
            grad[seg, r] += v
            grad[seg - 1, r] -= v
    for i in range(n):
        for r in range(3):
            energy -= a.force[i, r] * x[i, r]
            grad[i, r] -= a.force[i, r]
    return energy


@njit
def _free_dot(u, v, held):
    s = 0.0
    for i in range(u.shape[0]):
        if not held[i]:
            s += u[i, 0] * v[i, 0] + u[i, 1] * v[i, 1] + u[i, 2] * v[i, 2]
    return s


@njit
def _largest_free(g, held):
    """The largest force component on a free node; infinite where any is not finite."""
    m = 0.0
    for i in range(g.shape[0]):
        if not held[i]:
            for r in range(3):
                v = abs(g[i, r])
                if not v <= 1e300:
                    return np.inf
                m = max(m, v)
    return m


@njit
def _move(x, d, alpha, held, out):
    for i in range(x.shape[0]):
        for r in range(3):
            out[i, r] = x[i, r] if held[i] else x[i, r] + alpha * d[i, r]


@njit
def stiffness_band(x, a, bw):
    """The Hessian of the energy without its twist term (a, twist off), by central differences of the
    gradient over nodes five apart at once (a joint couples a node with the next two either side), as
    a symmetric band (banded.py storage) with held nodes' rows and columns the identity."""
    n = x.shape[0]
    m = 3 * n
    band = np.zeros((m, bw + 1))
    h = 1e-6 * float(a.rest.min())
    gp = np.zeros((n, 3))
    gm = np.zeros((n, 3))
    xp = x.copy()
    for color in range(5):
        for r in range(3):
            for i in range(color, n, 5):
                if not a.held[i]:
                    xp[i, r] = x[i, r] + h
            kirchhoff_energy(xp, a, gp)
            for i in range(color, n, 5):
                if not a.held[i]:
                    xp[i, r] = x[i, r] - h
            kirchhoff_energy(xp, a, gm)
            for i in range(color, n, 5):
                xp[i, r] = x[i, r]
            for i in range(color, n, 5):
                if a.held[i]:
                    continue
                col = 3 * i + r
                for k in range(max(0, i - 2), min(n, i + 3)):
                    if a.held[k]:
                        continue
                    for q in range(3):
                        row = 3 * k + q
                        value = (gp[k, q] - gm[k, q]) / (2.0 * h)
                        if row != col:
                            value *= 0.5  # its mirror entry adds the other half
                        if row >= col and row - col <= bw:
                            band[row, bw - (row - col)] += value
                        elif col > row and col - row <= bw:
                            band[col, bw - (col - row)] += value
    for i in range(n):
        if a.held[i]:
            for q in range(3):
                band[3 * i + q, bw] = 1.0
    return band


@njit
def _factor_positive(band, bw):
    """Cholesky of the band, shifted along its diagonal until positive definite (a compressed cable's
    stiffness is indefinite; the preconditioner need only be positive definite)."""
    scale = 0.0
    for i in range(band.shape[0]):
        scale = max(scale, abs(band[i, bw]))
    shift = 0.0
    for _attempt in range(40):
        factor = band.copy()
        for i in range(band.shape[0]):
            factor[i, bw] += shift
        if band_cholesky(factor, bw):
            return factor
        shift = 1e-8 * scale if shift == 0.0 else 10.0 * shift
    return np.zeros((0, 0))


@njit
def _precondition(g, factor, bw, held, s, work, out):
    """s = -M^-1 g on the free nodes (M the band factor's matrix; Jacobi where there is none)."""
    n = g.shape[0]
    for i in range(n):
        for r in range(3):
            work[3 * i + r] = 0.0 if held[i] else -g[i, r]
    band_cholesky_solve(factor, bw, work, out)
    for i in range(n):
        for r in range(3):
            s[i, r] = 0.0 if held[i] else out[3 * i + r]


@njit
def minimise_cg(x, a, a_plain, tolerance, max_iterations):
    """Polak-Ribiere nonlinear CG on the free nodes of ``x`` (modified in place), preconditioned by the
    banded stiffness without the twist term (``a_plain``: ``a`` with twist off), formed afresh every
    REFRESH iterations (Shewchuk 1994, Sec. 14.3), with his secant line search (Sec. 14.2, B5)
    safeguarded by backtracking to a decrease of the energy; returns (iterations, largest force on a
    free node)."""
    n = x.shape[0]
    held = a.held
    bw = 8
    g = np.zeros((n, 3))
    g_try = np.zeros((n, 3))
    g_mid = np.zeros((n, 3))
    trial = np.empty((n, 3))
    work = np.empty(3 * n)
    out = np.empty(3 * n)
    energy = kirchhoff_energy(x, a, g)
    factor = _factor_positive(stiffness_band(x, a_plain, bw), bw)
    if factor.shape[0] == 0:
        return 0, _largest_free(g, held)
    s = np.zeros((n, 3))
    _precondition(g, factor, bw, held, s, work, out)
    d = s.copy()
    delta = -_free_dot(g, s, held)
    sigma = 1e-3 * float(a.rest.min())
    largest = _largest_free(g, held)
    best, best_at, lowest = largest, 0, energy
    # the size of the energy's terms (the loads' work over the cable's extent), whose round-off the
    # energy carries: some 1e-15 of it near a minimum
    work_scale = 0.0
    for i in range(n):
        for r in range(3):
            work_scale += abs(a.force[i, r]) * (abs(x[i, r]) + float(a.rest.sum()))
    it = 0
    while it < max_iterations and largest > tolerance:
        it += 1
        slope = _free_dot(g, d, held)
        if slope >= 0.0:  # not a descent direction: restart along the preconditioned gradient
            d[:] = s
            slope = _free_dot(g, d, held)
        dnorm = math.sqrt(_free_dot(d, d, held))
        if dnorm == 0.0 or slope >= 0.0:
            break
        # secant steps on phi'(alpha) = g(x + alpha d) . d from alpha = 0 and a probe
        probe = min(1.0, sigma / dnorm)
        _move(x, d, probe, held, trial)
        kirchhoff_energy(trial, a, g_try)
        slope_prev, slope_here = _free_dot(g_try, d, held), slope
        alpha, step = 0.0, -probe
        for _j in range(LINE_SEARCH_STEPS):
            if slope_prev == slope_here:
                break
            step = step * slope_here / (slope_prev - slope_here)
            alpha += step
            slope_prev = slope_here
            _move(x, d, alpha, held, trial)
            kirchhoff_energy(trial, a, g_try)
            slope_here = _free_dot(g_try, d, held)
            if abs(step) * dnorm < 1e-6 * sigma:
                break
        if not (alpha > 0.0) or not math.isfinite(alpha):
            alpha = 1.0
        # accepted: a sufficient decrease of the energy, or, where the decrease is below the energy's
        # own round-off (near the minimum: (force)^2 / stiffness against 1e-16 of the energy), a
        # smaller slope along d without a rise beyond an allowance for that round-off (1e-11 of the
        # energy's scale, well above the 1e-15 measured)
        noise = 1e-11 * (abs(energy) + work_scale)
        e_new = energy
        accepted = False
        for _back in range(60):
            _move(x, d, alpha, held, trial)
            e_new = kirchhoff_energy(trial, a, g_try)
            if e_new <= energy + 1e-4 * alpha * slope:
                accepted = True
                break
            if e_new <= energy + noise and abs(_free_dot(g_try, d, held)) <= 0.5 * abs(slope):
                accepted = True
                break
            # below the energy's resolution (a stiff section at 200 segments stopped at 100 times the
            # force tolerance): the change measured as the work of the forces along the step, by
            # Simpson's rule on the gradients, which keep their digits where energies do not
            _move(x, d, 0.5 * alpha, held, trial)
            kirchhoff_energy(trial, a, g_mid)
            _move(x, d, alpha, held, trial)
            kirchhoff_energy(trial, a, g_try)
            change = alpha * (slope + 4.0 * _free_dot(g_mid, d, held) + _free_dot(g_try, d, held)) / 6.0
            if change <= 1e-4 * alpha * slope:
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            break  # no decrease along d: the energy is at its resolution here
        x[:] = trial
        _follow(x, a)
        energy = e_new
        g[:] = g_try
        refresh = it % REFRESH == 0
        if refresh:
            fresh = _factor_positive(stiffness_band(x, a_plain, bw), bw)
            if fresh.shape[0] == 0:
                break
            factor = fresh
        s_old = s.copy()
        _precondition(g, factor, bw, held, s, work, out)
        delta_old = delta
        delta = -_free_dot(g, s, held)
        delta_mid = -_free_dot(g, s_old, held)  # Polak-Ribiere: r' . (s' - s) / (r . s)
        beta = max(0.0, (delta - delta_mid) / delta_old) if delta_old > 0.0 else 0.0
        if refresh:
            beta = 0.0  # a new preconditioner: the conjugacy of the old directions is lost
        for i in range(n):
            for r in range(3):
                d[i, r] = s[i, r] + beta * d[i, r]
        largest = _largest_free(g, held)
        if largest < best or energy < lowest - noise:
            best, best_at = min(best, largest), it
            lowest = min(lowest, energy)
        elif it - best_at > STALL:
            break  # neither the force nor the energy goes down: both are at their resolution
    return it, largest


def arrays_for(model, boundary, x_start: np.ndarray, twist_before: float | None) -> KirchhoffArrays:
    """The arrays of a cable's rod model held at ``boundary``; the twist followed from ``twist_before``
    (the last solve's Tw; None: the least twist that meets the end's normal), measured at ``x_start``."""
    section = model.cable.section
    rest = model.rest_len.copy()
    n = model.n_nodes
    joint_len = np.zeros(n)
    joint_len[1:-1] = 0.5 * (rest[:-1] + rest[1:])
    outlet = np.zeros((2, 3))
    clamped = np.zeros(2, dtype=np.uint8)
    outlet[0], clamped[0], joint_len[0] = boundary.start.tangent, 1, 0.5 * rest[0]
    if boundary.end is not None:
        outlet[1], clamped[1], joint_len[-1] = boundary.end.tangent, 1, 0.5 * rest[-1]
    start_normal = frame_from_tangent(boundary.start.tangent, boundary.start.normal)[:, 0].copy()
    holds_roll = boundary.start.normal is not None and boundary.end is not None and boundary.end.normal is not None
    end_normal = np.asarray(boundary.end.normal, dtype=float) if holds_roll else np.array([1.0, 0.0, 0.0])
    k_stretch = section.stretch_stiffness / rest
    arrays = KirchhoffArrays(
        rest,
        k_stretch,
        float(section.bend_stiffness),
        joint_len,
        outlet,
        clamped,
        float(section.twist_stiffness / model.cable.length) if holds_roll else 0.0,
        start_normal,
        end_normal,
        np.zeros(2),
        model.held_nodes().astype(np.uint8),
        model.node_force.copy(),
    )
    if not holds_roll:
        return arrays
    roll = float(_roll(np.ascontiguousarray(x_start, dtype=float), arrays))
    twist = roll if twist_before is None else roll + 2.0 * math.pi * round((twist_before - roll) / (2.0 * math.pi))
    arrays.followed[:] = (twist, roll)
    return arrays


def end_twist(x: np.ndarray, arrays: KirchhoffArrays) -> float:
    """Tw at ``x``: the end normal's angle from the carried start normal, followed through whole turns."""
    if arrays.twist_k == 0.0:
        return 0.0
    return float(_followed_twist(_roll(np.ascontiguousarray(x, dtype=float), arrays), arrays.followed))


def _leave_saddle(x: np.ndarray, arrays: KirchhoffArrays, mode: np.ndarray) -> bool:
    """Move ``x`` (in place) along the direction of negative curvature ``mode`` (either way) until the
    energy is lower than at the saddle; False where it is not (the curvature was noise)."""
    scratch = np.zeros_like(x)
    here = kirchhoff_energy(np.ascontiguousarray(x), arrays, scratch)
    size = float(np.abs(mode).max())
    for length in 0.3 * float(arrays.rest.min()) * 0.5 ** np.arange(12):
        for sign in (1.0, -1.0):
            trial = x + sign * length / size * mode
            if kirchhoff_energy(trial, arrays, scratch) < here - 1e-12 * abs(here):
                x[:] = trial
                return True
    return False


def solve_kirchhoff(
    model, start_positions, boundary, tolerance: float, twist_before=None, max_iterations=MAX_ITERATIONS
):
    """Minimise from ``start_positions`` (held nodes where ``boundary`` puts them), the end twist followed
    from ``twist_before`` (arrays_for), leaving saddles along their negative curvature (at most
    SADDLE_ESCAPES times): (positions, converged, a verified minimum, iterations, largest force on a
    free node (N), milliseconds, arrays)."""
    t0 = time.perf_counter()
    x = np.ascontiguousarray(start_positions, dtype=float).copy()
    arrays = arrays_for(model, boundary, x, twist_before)
    plain = arrays._replace(twist_k=0.0)
    iterations, stable = 0, False
    for escape in range(SADDLE_ESCAPES + 1):
        spent, largest = minimise_cg(x, arrays, plain, tolerance, max(1, max_iterations - iterations))
        iterations += spent
        converged = bool(largest <= tolerance and np.isfinite(x).all())
        if not converged:
            break
        value, mode, noise = minimum_check.lowest_curvature(
            x, np.flatnonzero(arrays.held == 0), _gradient(arrays), _step(arrays)
        )
        stable = value > -noise
        # a saddle (a symmetric start, an Omega drawn inside out): left along its negative curvature
        if stable or escape == SADDLE_ESCAPES or iterations >= max_iterations or not _leave_saddle(x, arrays, mode):
            break
    return x, converged, stable, int(iterations), float(largest), (time.perf_counter() - t0) * 1e3, arrays


def _gradient(arrays):
    return lambda y, out: kirchhoff_energy(np.ascontiguousarray(y), arrays, out)


def _step(arrays: KirchhoffArrays) -> float:
    return 1e-7 * float(arrays.rest.min())


def readings(model, x: np.ndarray, arrays: KirchhoffArrays) -> dict:
    """What the results report of the rod at ``x`` (relative to the model's origin): each held end's
    force and moment (the energy's derivatives with respect to its holder's place and turn: the
    outlet joint's bend and, about the end's tangent, the twist moment GJ Tw / L), the segments'
    tensions, the energy and the end twist Tw it was solved with (the next step follows it)."""
    grad = np.zeros_like(x)
    energy = kirchhoff_energy(np.ascontiguousarray(x), arrays, grad)
    twist = end_twist(x, arrays)
    ends = {}
    for side, node, other, k in (("start", 0, 1, 0), ("end", model.n_nodes - 1, model.n_nodes - 2, 1)):
        if side == "end" and model.end_frame < 0:
            continue
        u = arrays.outlet[k]
        link = x[other] - x[node] if side == "start" else x[node] - x[other]
        t = link / np.linalg.norm(link)
        c = float(np.clip(u @ t, -1.0 + 1e-12, None))
        bend = arrays.bend / (2.0 * arrays.joint_len[node]) if arrays.joint_len[node] > 0.0 else 0.0
        # turning the outlet u by dtheta changes the joint's energy by dtheta . (u x dE/du), dE/du = dc t
        moment = np.cross(u, -8.0 * bend / (1.0 + c) ** 2 * t)
        # turning the end's frame about its tangent turns Tw with it (the start's against it); turning
        # its outlet across itself carries the frame's normal along (time-parallel) but changes the
        # transport over the outlet's joint by d m = kappa b . (dtheta x u) / 2 (Bergou et al. 2008)
        a_, b_ = (u, t) if side == "start" else (t, u)
        curvature = 2.0 * np.cross(a_, b_) / (1.0 + c)
        moment = moment + arrays.twist_k * twist * ((1.0 if side == "end" else -1.0) * u + 0.5 * np.cross(u, curvature))
        ends[side] = {"force": grad[node].copy(), "moment": moment}
    links = np.diff(x, axis=0)
    tensions = arrays.k_stretch * (np.sqrt(np.einsum("ij,ij->i", links, links)) - arrays.rest)
    return {"ends": ends, "clips": [], "tensions": tensions, "energy": float(energy), "twist": twist}
