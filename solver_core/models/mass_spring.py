# SPDX-License-Identifier: GPL-3.0-or-later
"""The extended mass-spring cable of Lv et al. 2017 (seed 000), relaxed to rest by damped explicit steps.

Mass points on the rod model's nodes, joined by stretch springs (Eqs. 2-3), with a bend spring at every
inner point on the angle between its links (Eqs. 4-6), a torsion spring per link on the dihedral angle
between the osculating planes either side of it plus the twist the ends impose (Eqs. 7-12), and at a
clamped end an outlet spring on the angle between the first link and the connector's direction
(Eqs. 14-15). Held points (connectors, clips by their two end points, Eqs. 16-17) do not move. The
points are relaxed by semi-implicit Euler steps with viscous damping (Eq. 28) until the force on every
free point is within the tolerance. A warm step starts from the secant prediction of the rod's
(predictor.py, model_solves.py) where the holders move as they did in the last step.

Where this departs from the paper, and why:
- the bend constant is EI over the length a point stands for (half of each link beside it), not the
  paper's 3 EI / l (Eq. 24): that one is a cantilever's tip-load stiffness given to a joint that carries
  a moment, and the chain then converges to a rod three times stiffer in bending than EI (the paper's
  tests move both ends, where the shape hardly depends on EI); an outlet spring stands for half a link
  (2 EI / l), not the paper's 3 k_b "from experience";
- the dihedral angle is signed (its gradient, the paper's Eqs. 42-45, is that of the signed angle) and
  taken modulo a half turn (an inflection flips the osculating plane, it does not twist the cable), and
  the torsion spring fades where either bend beside the link is below BEND_FOR_TORSION (the osculating
  plane, hence the angle, is undefined on a straight stretch; Eqs. 42-45 divide by sin beta);
- the time step is the explicit scheme's stability limit from a bound on the stiffest spring (Eq. 31
  is not dimensionally a time), the torsion springs' counted where their plane fades, where they
  are stiffest (TORSION_BOUND), and the damping is kinetic (Cundall 1976: the points are stopped
  whenever their kinetic energy passes a peak) instead of the viscous k^d v of Eq. 28, for which the
  paper gives no value: one that suits the slowest mode lets the fastest ring, and one that damps
  the fastest (a warm step jerks the end links) leaves the slowest crawling (380 N out of balance
  after 2e6 steps).
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit
from ..contact.crossing import step_crosses_triangles
from ..rod.rod_state import framed_state
from ..solve import minimum_check
from .mass_spring_contact import (
    MAX_CONTACTS,
    MAX_MOVE_RADII,
    ChainContact,
    chain_contact,
    no_contact,
    put_back,
    supported,
    touching,
)

# below this bend (rad) either side of a link, its torsion spring fades out (weight 1/2 there)
BEND_FOR_TORSION = 0.05
# The torsion spring's pull on a point grows as 1 / (l sin BEND_FOR_TORSION) where its plane fades (at a
# bend of BEND_FOR_TORSION, |w dphi/dp| = 1 / (2 l sin beta)), not as 1 / l: its stiffness there is this
# many times the 16 k / l^2 per point of the bound below. Without it, a cable moved out of its plane
# rang at 100 N for all its steps (a planar one never excites the stiff out-of-plane motion)
TORSION_BOUND = 1.0 / (4.0 * math.sin(BEND_FOR_TORSION) ** 2)
MAX_STEPS = 2_000_000
# A relaxation whose largest force has not fallen by 1 % for this many steps has stopped coming to rest
# (with a time step past the torsion springs' stability bound, see TORSION_BOUND, ends asking for half a
# turn of twist rang at 46 N for all 2e6 steps, 42 s); converging ones set a new lowest every few
# thousand steps (the slowest measured: 105,000 steps in all)
STALL_STEPS = 100_000


class MassSpringArrays(NamedTuple):
    """Everything the relaxation reads, per point (n), per link (n - 1) or per end (2)."""

    mass: np.ndarray  # (n,) kg
    rest: np.ndarray  # (n-1,) m
    k_stretch: np.ndarray  # (n-1,) N/m, EA / l (Eq. 20)
    k_bend: np.ndarray  # (n,) N m, EI / (l_i + l_i+1) * 2 at inner points, 0 at the ends
    k_twist: np.ndarray  # (n-1,) N m, G I_p / l (Eq. 27)
    twist: np.ndarray  # (n-1,) rad, theta_i: the ends' twist shared out by length (Eq. 11)
    fade: np.ndarray  # (n-1,) m^4, (sin BEND_FOR_TORSION l_i l_i+1)^2 of the plane before each link
    held: np.ndarray  # (n,) uint8
    outlet: np.ndarray  # (2, 3) unit directions of the cable at a clamped start and end
    k_outlet: np.ndarray  # (2,) N m (0: that end is not clamped)
    force: np.ndarray  # (n, 3) N, weight and point loads
    couple: np.ndarray  # (n-1, 3) N m, a dead moment on a link (applied as a couple of forces on its points)


@njit
def _angle_gradient(a, b, k, ga, gb):
    """Energy k beta^2 / 2 of the angle beta between vectors a and b; adds its gradients to ga, gb.
    beta dbeta/da = (beta / sin beta) (cos beta a^ - b^) / |a|: finite on a straight line."""
    la = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    lb = math.sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2])
    ua0, ua1, ua2 = a[0] / la, a[1] / la, a[2] / la
    ub0, ub1, ub2 = b[0] / lb, b[1] / lb, b[2] / lb
    cx, cy, cz = ua1 * ub2 - ua2 * ub1, ua2 * ub0 - ua0 * ub2, ua0 * ub1 - ua1 * ub0
    s = math.sqrt(cx * cx + cy * cy + cz * cz)
    c = ua0 * ub0 + ua1 * ub1 + ua2 * ub2
    beta = math.atan2(s, c)
    ratio = beta / s if s > 1e-8 else 1.0 + beta * beta / 6.0
    fa = k * ratio / la
    fb = k * ratio / lb
    ga[0] += fa * (c * ua0 - ub0)
    ga[1] += fa * (c * ua1 - ub1)
    ga[2] += fa * (c * ua2 - ub2)
    gb[0] += fb * (c * ub0 - ua0)
    gb[1] += fb * (c * ub1 - ua1)
    gb[2] += fb * (c * ub2 - ua2)
    return 0.5 * k * beta * beta


# 3-vectors as tuples inside the kernels: no array is allocated per spring (with small arrays each
# step of an 80-point chain took 68 us, most of it in the allocator)
@njit
def _diff(x, i, j):
    """x[i] - x[j] (rows of x; no view of a row is made: each costs a reference count)."""
    return (x[i, 0] - x[j, 0], x[i, 1] - x[j, 1], x[i, 2] - x[j, 2])


@njit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit
def _add_to(g, i, c, v):
    """g[i] += c v."""
    g[i, 0] += c * v[0]
    g[i, 1] += c * v[1]
    g[i, 2] += c * v[2]


@njit
def _torsion(x, i, k, theta, fade1, fade2, g):
    """Energy k w (phi + theta)^2 / 2 of the signed dihedral angle phi about link i of the points ``x``
    (points i-1 .. i+2, Eqs. 7-10), w the fade of each osculating plane, q / (q + fade) with
    q = |b1 x b2|^2; adds its gradients to ``g``."""
    b1, b2, b3 = _diff(x, i, i - 1), _diff(x, i + 1, i), _diff(x, i + 2, i + 1)
    n1, n2 = _cross(b1, b2), _cross(b2, b3)
    q1, q2 = _dot(n1, n1), _dot(n2, n2)
    w1, w2 = q1 / (q1 + fade1), q2 / (q2 + fade2)
    lb2 = math.sqrt(_dot(b2, b2))
    phi = math.atan2(lb2 * _dot(b1, n2), _dot(n1, n2))
    # an inflection turns the osculating plane by a half turn without twisting the cable: the angle is
    # taken modulo pi (the paper's counts it as a half turn of twist, and a planar S buckles out of plane)
    if phi > 0.5 * math.pi:
        phi -= math.pi
    elif phi < -0.5 * math.pi:
        phi += math.pi
    psi = phi + theta
    w = w1 * w2
    # d phi (Bekker's form), scaled by w so that 1 / q cancels: w dphi/dp0 = -w2 |b2| n1 / (q1 + fade1)
    c0 = -w2 * lb2 / (q1 + fade1)  # f0 = c0 n1
    c3 = w1 * lb2 / (q2 + fade2)  # f3 = c3 n2
    r1, r3 = _dot(b1, b2) / (lb2 * lb2), _dot(b3, b2) / (lb2 * lb2)
    kp = k * psi
    _add_to(g, i - 1, kp * c0, n1)
    _add_to(g, i, kp * (-1.0 - r1) * c0, n1)
    _add_to(g, i, kp * r3 * c3, n2)
    _add_to(g, i + 1, kp * r1 * c0, n1)
    _add_to(g, i + 1, kp * (-1.0 - r3) * c3, n2)
    _add_to(g, i + 2, kp * c3, n2)
    # d w: dq1/db1 = 2 b2 x n1, dq1/db2 = 2 n1 x b1; dq2/db2 = 2 b3 x n2, dq2/db3 = 2 n2 x b2
    h = 0.5 * k * psi * psi
    c1 = 2.0 * h * w2 * fade1 / (q1 + fade1) ** 2
    c2 = 2.0 * h * w1 * fade2 / (q2 + fade2) ** 2
    d_b1 = _cross(b2, n1)  # times c1
    d_b2a, d_b2b = _cross(n1, b1), _cross(b3, n2)  # times c1, c2
    d_b3 = _cross(n2, b2)  # times c2
    _add_to(g, i - 1, -c1, d_b1)
    _add_to(g, i, c1, d_b1)
    _add_to(g, i, -c1, d_b2a)
    _add_to(g, i, -c2, d_b2b)
    _add_to(g, i + 1, c1, d_b2a)
    _add_to(g, i + 1, c2, d_b2b)
    _add_to(g, i + 1, -c2, d_b3)
    _add_to(g, i + 2, c2, d_b3)
    return h * w


@njit
def mass_spring_energy(x, a: MassSpringArrays, grad):
    """Total energy (J) of the points ``x`` (n, 3) and its gradient into ``grad`` (n, 3)."""
    n = x.shape[0]
    grad[:] = 0.0
    energy = 0.0
    for i in range(n - 1):  # stretch (Eqs. 2-3)
        d = _diff(x, i + 1, i)
        length = math.sqrt(_dot(d, d))
        strain = length - a.rest[i]
        energy += 0.5 * a.k_stretch[i] * strain * strain
        c = a.k_stretch[i] * strain / length
        _add_to(grad, i + 1, c, d)
        _add_to(grad, i, -c, d)
    ga, gb = np.zeros(3), np.zeros(3)
    da, db = np.zeros(3), np.zeros(3)
    for i in range(1, n - 1):  # bend (Eqs. 4-6)
        ga[:] = 0.0
        gb[:] = 0.0
        for k in range(3):
            da[k] = x[i, k] - x[i - 1, k]
            db[k] = x[i + 1, k] - x[i, k]
        energy += _angle_gradient(da, db, a.k_bend[i], ga, gb)
        _add_to(grad, i - 1, -1.0, ga)
        _add_to(grad, i, 1.0, ga)
        _add_to(grad, i, -1.0, gb)
        _add_to(grad, i + 1, 1.0, gb)
    if a.k_outlet[0] > 0.0:  # outlet springs (Eqs. 14-15)
        ga[:] = 0.0
        gb[:] = 0.0
        for k in range(3):
            db[k] = x[1, k] - x[0, k]
        energy += _angle_gradient(a.outlet[0], db, a.k_outlet[0], ga, gb)
        _add_to(grad, 1, 1.0, gb)
        _add_to(grad, 0, -1.0, gb)
    if a.k_outlet[1] > 0.0:
        ga[:] = 0.0
        gb[:] = 0.0
        for k in range(3):
            da[k] = x[n - 1, k] - x[n - 2, k]
        energy += _angle_gradient(da, a.outlet[1], a.k_outlet[1], ga, gb)
        _add_to(grad, n - 1, 1.0, ga)
        _add_to(grad, n - 2, -1.0, ga)
    for i in range(1, n - 2):  # torsion of link i (Eqs. 7-12)
        if a.k_twist[i] > 0.0:
            energy += _torsion(x, i, a.k_twist[i], a.twist[i], a.fade[i - 1], a.fade[i], grad)
    for i in range(n):  # dead loads
        f = a.force
        energy -= f[i, 0] * x[i, 0] + f[i, 1] * x[i, 1] + f[i, 2] * x[i, 2]
        grad[i, 0] -= f[i, 0]
        grad[i, 1] -= f[i, 1]
        grad[i, 2] -= f[i, 2]
    for i in range(n - 1):  # a dead moment M on a link: forces (M x u) / l on its ends, moment M
        m = (a.couple[i, 0], a.couple[i, 1], a.couple[i, 2])
        if m[0] != 0.0 or m[1] != 0.0 or m[2] != 0.0:
            d = _diff(x, i + 1, i)
            f = _cross(m, d)
            c = 1.0 / _dot(d, d)
            _add_to(grad, i + 1, -c, f)
            _add_to(grad, i, c, f)
    return energy


@njit
def time_step(a: MassSpringArrays) -> float:
    """The explicit scheme's time step: stable below 2 / omega_max, omega_max^2 from Gershgorin's bound
    of the stiffness (a bend or torsion spring's over a link at most 16 k / l^2 per point, a torsion
    spring's TORSION_BOUND times that) over the mass."""
    n = a.mass.shape[0]
    shortest = a.rest.min()
    per_length2 = 16.0 / (shortest * shortest)
    springs = 3.0 * a.k_bend.max() + a.k_outlet.max() + 4.0 * TORSION_BOUND * a.k_twist.max()
    omega2 = 0.0
    for i in range(n):
        stretch = 0.0
        for j in (i - 1, i):
            if 0 <= j < n - 1:
                stretch += 2.0 * a.k_stretch[j]
        omega2 = max(omega2, (stretch + per_length2 * springs) / a.mass[i])
    # 1.2 rather than 2: a stretched link is stiffer across itself (tension / length) than the bound
    # knows, and a warm step starts with the end links stretched (at 1.8 one ringing at 29 % strain
    # never settled)
    return 1.2 / math.sqrt(omega2)


# why _relax returned
AT_REST, OUT_OF_STEPS, STALLED, NOT_FINITE, SEARCH_AGAIN = 0, 1, 2, 3, 4


@njit
def _relax(x, v, a: MassSpringArrays, c: ChainContact, dt, tolerance, max_steps, progress):
    """Semi-implicit Euler (Lv 2017, Eq. 28) from ``x`` and ``v`` (in place), damped kinetically, until
    the force left on every free point (after the obstacles' support and static friction,
    mass_spring_contact.py) is below ``tolerance`` (N): (steps, largest force, why: AT_REST ..
    SEARCH_AGAIN). ``progress`` (the lowest force, its step, the kinetic energy, the step) carries on
    across calls (a search of the obstacles between them)."""
    n = x.shape[0]
    grad = np.zeros((n, 3))
    motion = np.zeros((n, 3))
    free = a.held == 0
    normals = np.empty((MAX_CONTACTS, 3))
    gaps = np.empty(MAX_CONTACTS)
    f = np.empty(3)
    vel = np.empty(3)
    cp = np.empty(3)
    obstacles = c.plane_point.shape[0] + c.sphere_centre.shape[0] + c.triangles.shape[0] > 0
    friction = c.mu_static > 0.0 or c.mu_dynamic > 0.0
    max_move = MAX_MOVE_RADII * c.radius  # Lv 2017 limit a point's displacement (Eq. 31)
    best, best_at, kinetic_before = progress[0], int(progress[1]), progress[2]
    mass_spring_energy(x, a, grad)
    largest = np.inf
    for step in range(int(progress[3]), max_steps):
        largest = 0.0
        for i in range(n):
            if not free[i]:
                continue
            for k in range(3):
                f[k] = -grad[i, k]
                vel[k] = v[i, k]
            size = math.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])
            if not size <= np.inf:  # NaN or overflow: no rest state to report
                return step, np.nan, NOT_FINITE
            count = touching(x, i, c, normals, gaps, cp) if obstacles else 0
            if count:
                support = supported(f, vel, normals, count)  # Eqs. 32-33
                size = math.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])
                left = max(0.0, size - c.mu_static * support) if friction else size
                largest = max(largest, left)
                if friction and support > 0.0:
                    speed = math.sqrt(vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2])
                    if speed > 0.0:  # sliding: dynamic friction against the motion (Eq. 34)
                        drag = c.mu_dynamic * support / speed
                        ahead = 0.0
                        for k in range(3):
                            ahead += (vel[k] + dt * (f[k] - drag * vel[k]) / a.mass[i]) * vel[k]
                        if ahead > 0.0:
                            for k in range(3):
                                f[k] -= drag * vel[k]
                        else:  # friction stops it within the step
                            speed = 0.0
                            vel[:] = 0.0
                    if speed == 0.0:  # at rest: it sticks while static friction holds it (Eqs. 35-36)
                        if size <= c.mu_static * support:
                            f[:] = 0.0
                        else:  # it slides off: dynamic friction, at most what it pulls with
                            drag = min(c.mu_dynamic * support, size) / size
                            for k in range(3):
                                f[k] -= drag * f[k]
            else:
                largest = max(largest, size)
            for k in range(3):
                v[i, k] = vel[k]
                motion[i, k] = f[k]
        if largest <= tolerance:
            progress[0], progress[1], progress[2], progress[3] = best, best_at, kinetic_before, step
            return step, largest, AT_REST
        if largest < 0.99 * best:
            best, best_at = largest, step
        elif step - best_at > STALL_STEPS:
            return step, largest, STALLED  # no progress: ringing without coming to rest
        kinetic = 0.0
        for i in range(n):
            if free[i]:
                for k in range(3):
                    v[i, k] += dt * motion[i, k] / a.mass[i]
                    kinetic += 0.5 * a.mass[i] * v[i, k] * v[i, k]
        if kinetic < kinetic_before:
            # kinetic damping (Cundall 1976): past a peak of the kinetic energy the points have
            # passed the bottom of the valley they run along; they are stopped there and start again
            v[:] = 0.0
            kinetic = 0.0
        kinetic_before = kinetic
        for i in range(n):
            if free[i]:
                if obstacles:  # no point passes a thin plate between two steps
                    move = dt * math.sqrt(v[i, 0] ** 2 + v[i, 1] ** 2 + v[i, 2] ** 2)
                    if move > max_move:
                        for k in range(3):
                            v[i, k] *= max_move / move
                for k in range(3):
                    x[i, k] += dt * v[i, k]
                if obstacles:
                    put_back(x, i, c, normals, gaps, cp)
        mass_spring_energy(x, a, grad)
        if c.triangles.shape[0] > 0:  # a mesh's candidates hold within the margin only
            for i in range(n):
                d2 = 0.0
                for k in range(3):
                    d2 += (x[i, k] - c.searched_at[i, k]) ** 2
                if d2 > c.margin * c.margin:
                    progress[0], progress[1], progress[2], progress[3] = best, best_at, kinetic_before, step + 1
                    return step + 1, largest, SEARCH_AGAIN
    return max_steps, largest, OUT_OF_STEPS


def relax(x, a: MassSpringArrays, tolerance, max_steps, contact=None):
    """Relax the points ``x`` (in place) from rest until the force left on every free point is below
    ``tolerance`` (N): (steps, largest force; NaN where it blew up, infinity where a link passed
    through a mesh face on the way). ``contact``: None, or (obstacles as kernel_arrays.ObstacleArrays in
    the points' frame, radius, static and dynamic friction factors)."""
    n = x.shape[0]
    v = np.zeros((n, 3))
    progress = np.array([np.inf, 0.0, 0.0, 0.0])
    dt = time_step(a)
    parts = np.zeros(n, dtype=np.int64)
    while True:
        c = no_contact(n, 1.0) if contact is None else chain_contact(x, *contact)
        before = x.copy()
        steps, largest, why = _relax(x, v, a, c, dt, tolerance, max_steps, progress)
        # the points stay off the faces, but a link between two can sweep through a thin bar or plate
        # edge: tested on the straight paths of each stretch between two searches (at most a radius
        # and a step long)
        if contact is not None and step_crosses_triangles(before, x, parts, contact[0]):
            return steps, np.inf
        if why != SEARCH_AGAIN:
            return steps, largest


def arrays_for(model, boundary, positions) -> MassSpringArrays:
    """The springs of a cable's rod model (its nodes, section and loads) held at ``boundary``; the ends'
    twist is measured by carrying the start frame along ``positions`` to the end (Eq. 11)."""
    section = model.cable.section
    rest = model.rest_len.copy()
    n = model.n_nodes
    mass = np.zeros(n)
    mass[:-1] += 0.5 * section.linear_density * rest
    mass[1:] += 0.5 * section.linear_density * rest
    k_bend = np.zeros(n)
    k_bend[1:-1] = 2.0 * section.bend_stiffness / (rest[:-1] + rest[1:])
    k_outlet = np.zeros(2)
    outlet = np.zeros((2, 3))
    held = model.held_nodes().astype(np.uint8)
    if model.start_frame >= 0 and boundary.start is not None:
        outlet[0] = boundary.start.tangent
        k_outlet[0] = 2.0 * section.bend_stiffness / rest[0]
    if model.end_frame >= 0 and boundary.end is not None:
        outlet[1] = boundary.end.tangent
        k_outlet[1] = 2.0 * section.bend_stiffness / rest[-1]
    _state, roll = framed_state(model, boundary, positions)
    twist = roll * rest / model.cable.length
    fade = (math.sin(BEND_FOR_TORSION) * rest[:-1] * rest[1:]) ** 2
    couple = model.rot_couple[: model.n_segments].copy()
    return MassSpringArrays(
        mass,
        rest,
        section.stretch_stiffness / rest,
        k_bend,
        section.twist_stiffness / rest,
        twist,
        np.concatenate([fade, fade[-1:]]) if len(fade) else np.zeros(1),
        held,
        outlet,
        k_outlet,
        model.node_force.copy(),
        couple,
    )


def readings(model, x: np.ndarray, arrays: MassSpringArrays, contact=None) -> dict:
    """What the results report from the springs themselves at points ``x`` (relative to the model's
    origin): the holders' forces and moments (the energy's gradient at a held point; a clamped end's
    outlet spring turns its connector), link tensions, the total energy and, with ``contact`` (as for
    ``relax``), the obstacles' forces on the points resting on them (the springs' pull they balance,
    support and friction together; case format, section Result)."""
    grad = np.zeros_like(x)
    energy = mass_spring_energy(x, arrays, grad)
    ends = {}
    for side, node, other in (("start", 0, 1), ("end", model.n_nodes - 1, model.n_nodes - 2)):
        if side == "end" and model.end_frame < 0:
            continue
        moment = np.zeros(3)
        k = arrays.k_outlet[0 if side == "start" else 1]
        if k > 0.0:  # turning the outlet u by dtheta changes the energy by dtheta . (u x dE/du)
            u = arrays.outlet[0 if side == "start" else 1]
            ga, gb = np.zeros(3), np.zeros(3)
            link = x[other] - x[node] if side == "start" else x[node] - x[other]
            if side == "start":
                _angle_gradient(u, link, k, ga, gb)
                moment = np.cross(u, ga)
            else:
                _angle_gradient(link, u, k, ga, gb)
                moment = np.cross(u, gb)
        ends[side] = {"force": grad[node].copy(), "moment": moment}
    clips = []
    for nodes in model.clip_nodes:
        centre = x[list(nodes)].mean(axis=0) if nodes else np.zeros(3)
        force = sum((grad[k] for k in nodes), np.zeros(3))
        moment = sum((np.cross(x[k] - centre, grad[k]) for k in nodes), np.zeros(3))
        clips.append({"force": force, "moment": moment})
    links = np.diff(x, axis=0)
    tensions = arrays.k_stretch * (np.sqrt(np.einsum("ij,ij->i", links, links)) - arrays.rest)
    out = {"ends": ends, "clips": clips, "tensions": tensions, "energy": float(energy)}
    if contact is not None:
        radius = float(contact[1])
        out["contacts"] = [
            {
                "s": float(model.node_s[i]),
                "point": (x[i] - radius * normals[0] + model.origin).tolist(),
                "normal": normals[0].tolist(),
                "force": grad[i].tolist(),
                "gap": float(gaps.min()),
            }
            for i, normals, gaps in contacts_at(x, chain_contact(x, *contact), arrays.held)
            if normals[0] @ grad[i] > 0.0  # pressed onto it (one pulled away rests on nothing)
        ]
    return out


def is_minimum(x: np.ndarray, arrays: MassSpringArrays, contact=None) -> bool:
    """Whether the rest state ``x`` is a minimum of the springs' energy (minimum_check.is_minimum), along
    the surfaces its points are pressed onto."""
    blocked = None
    if contact is not None:
        # along the surfaces the points are pressed onto (friction, at most mu N, cannot make a
        # negative curvature a minimum: a straight chain compressed on a table buckles sideways)
        grad = np.zeros_like(x)
        mass_spring_energy(x, arrays, grad)
        blocked = {}
        for i, normals, _gaps in contacts_at(x, chain_contact(x, *contact), arrays.held):
            pushing = normals[normals @ grad[i] > 0.0]
            if len(pushing):
                blocked[i] = pushing
    return minimum_check.is_minimum(
        x,
        np.flatnonzero(arrays.held == 0),
        lambda y, out: mass_spring_energy(y, arrays, out),
        1e-7 * float(arrays.rest.min()),
        blocked,
    )


def contacts_at(x: np.ndarray, c: ChainContact, held: np.ndarray) -> list:
    """[(point, normals (k, 3), gaps (k,))] of every free point of ``x`` that touches an obstacle."""
    normals, gaps, cp = np.empty((MAX_CONTACTS, 3)), np.empty(MAX_CONTACTS), np.empty(3)
    out = []
    for i in np.flatnonzero(held == 0):
        count = touching(x, int(i), c, normals, gaps, cp)
        if count:
            out.append((int(i), normals[:count].copy(), gaps[:count].copy()))
    return out
