# SPDX-License-Identifier: GPL-3.0-or-later
"""The mass-spring chain's rest beside obstacles by Newton steps, its points' contacts as constraints.

Lv 2017 meet obstacles within their explicit relaxation (Sec. 3.2, mass_spring_contact.py), which
stalled short of rest from 50 links on (a cable on an incline: 1e-3 N left after 120,000-180,000
steps). Without friction, the contacts of that model are here the constraints of the damped Newton
steps of mass_spring_newton.py, as an active set (Nocedal & Wright, Numerical Optimization, Sec.
16.5): a point resting on a surface moves along it only (its stiffness along each normal raised to
CONSTRAINT times the largest entry, the normal part of its step removed), a free point whose step
would take it into an obstacle stops where it touches, and no point moves more than MAX_MOVE_RADII
radii a step, so that none passes a thin plate or leaves its candidate triangles. Once Newton has
converged on a set (contact_rest), the points the springs pull off a surface are freed, until the
paper's rest holds: on every free point, the force left after its surfaces' support is within the
tolerance. Friction stays with the explicit relaxation (mass_spring_rest.py): as a quasi-static
dissipation at each point (mu_d N |slip|, regularised) Newton converged only linearly, 1.6e-8 N
after 2000 iterations on the incline.
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit
from ..contact.crossing import step_crosses_triangles
from ..geometry.contact_geometry import closest_point_on_triangle
from .mass_spring import AT_REST, NOT_FINITE, OUT_OF_STEPS, SEARCH_AGAIN, STALLED, MassSpringArrays, mass_spring_energy
from .mass_spring_contact import CONTACT_BAND, MAX_CONTACTS, ChainContact, chain_contact, put_back, touching
from .mass_spring_newton import (
    ACCEPT,
    BAND,
    DAMPING_FIRST,
    DAMPING_LARGEST,
    DIFFERENCE_STEP,
    NewtonScratch,
    _stiffness_band,
    damped_solve,
    gain_and_work,
    newton_scratch,
)

FREE, ON = 0, 1  # a point's contact state
# a resting point's stiffness along its normals, relative to the largest diagonal entry: its step
# along them is then some 1e-9 of the rest (and removed)
CONSTRAINT = 1e9
MAX_MOVE_RADII = 0.5  # a point's move per Newton step: a thin plate is passed only beyond one radius
# a resting point that a step along a curved surface lifted off it by less than this (radii) is put
# back onto it (a move d along a sphere of radius R lifts it by d^2 / 2R)
LIFT_RADII = 0.05
MAX_SETS = 200  # contact sets tried (points pulled off and freed) before the solve gives up


class ContactSet(NamedTuple):
    """Per point: its contact state (FREE, ON) and the orthonormal normals of what it rests on."""

    modes: np.ndarray  # (n,) int64
    normals: np.ndarray  # (n, 3, 3)
    counts: np.ndarray  # (n,) int64
    touch: np.ndarray  # (MAX_CONTACTS, 3) scratch
    gaps: np.ndarray  # (MAX_CONTACTS,) scratch
    cp: np.ndarray  # (3,) scratch


def contact_set(n: int) -> ContactSet:
    return ContactSet(
        np.zeros(n, np.int64),
        np.zeros((n, 3, 3)),
        np.zeros(n, np.int64),
        np.zeros((MAX_CONTACTS, 3)),
        np.zeros(MAX_CONTACTS),
        np.zeros(3),
    )


@njit
def _nearest(x, i, c: ChainContact, normal):
    """The smallest gap (distance less the radius, m) of point i to the obstacles it may touch, and
    that obstacle's unit normal towards the point into ``normal``."""
    gap = np.inf
    cp = np.empty(3)
    for p in range(c.plane_point.shape[0]):
        d = 0.0
        for k in range(3):
            d += (x[i, k] - c.plane_point[p, k]) * c.plane_normal[p, k]
        if d - c.radius < gap:
            gap = d - c.radius
            normal[:] = c.plane_normal[p]
    for s in range(c.sphere_centre.shape[0]):
        d = math.sqrt(
            (x[i, 0] - c.sphere_centre[s, 0]) ** 2
            + (x[i, 1] - c.sphere_centre[s, 1]) ** 2
            + (x[i, 2] - c.sphere_centre[s, 2]) ** 2
        )
        if d > 0.0 and d - c.sphere_radius[s] - c.radius < gap:
            gap = d - c.sphere_radius[s] - c.radius
            for k in range(3):
                normal[k] = (x[i, k] - c.sphere_centre[s, k]) / d
    for j in range(c.candidate_start[i], c.candidate_start[i + 1]):
        d = math.sqrt(closest_point_on_triangle(x[i], c.triangles, c.candidates[j], cp))
        if d > 0.0 and d - c.radius < gap:
            gap = d - c.radius
            for k in range(3):
                normal[k] = (x[i, k] - cp[k]) / d
    return gap


@njit
def _project_row(v, row, normals, count):
    """Row ``row`` of ``v`` without its parts along the first ``count`` (orthonormal) ``normals``."""
    for q in range(count):
        d = v[row, 0] * normals[q, 0] + v[row, 1] * normals[q, 1] + v[row, 2] * normals[q, 2]
        for k in range(3):
            v[row, k] -= d * normals[q, k]


@njit
def _rest_on_surfaces(x, c: ChainContact, s: ContactSet, held):
    """Each resting point (ON) put back onto the surface a step along it lifted it from, and the normals
    of what it touches, orthonormalised (corners: 2 or 3), into s.normals and s.counts. A resting
    point that touches nothing within LIFT_RADII is FREE again."""
    normal = np.empty(3)
    for i in range(x.shape[0]):
        s.counts[i] = 0
        if s.modes[i] == FREE or held[i]:
            continue
        gap = _nearest(x, i, c, normal)
        if CONTACT_BAND * c.radius <= gap < LIFT_RADII * c.radius:
            for k in range(3):
                x[i, k] -= gap * normal[k]
        count = touching(x, i, c, s.touch, s.gaps, s.cp)
        kept = 0
        for m in range(count):  # Gram-Schmidt
            for q in range(kept):
                d = 0.0
                for k in range(3):
                    d += s.touch[m, k] * s.normals[i, q, k]
                for k in range(3):
                    s.touch[m, k] -= d * s.normals[i, q, k]
            size = math.sqrt(s.touch[m, 0] ** 2 + s.touch[m, 1] ** 2 + s.touch[m, 2] ** 2)
            if size > 1e-6 and kept < 3:
                for k in range(3):
                    s.normals[i, kept, k] = s.touch[m, k] / size
                kept += 1
        s.counts[i] = kept
        if kept == 0:
            s.modes[i] = FREE


@njit
def _residual(grad, w: NewtonScratch, s: ContactSet):
    """The inner solve's residual: the largest force along what each point may move along (N); its
    negative into w.rhs."""
    largest = 0.0
    f = np.empty((1, 3))
    for i in range(grad.shape[0]):
        if w.dof[i] < 0:
            continue
        for k in range(3):
            f[0, k] = -grad[i, k]
        _project_row(f, 0, s.normals[i], s.counts[i])
        for k in range(3):
            w.rhs[w.dof[i] + k] = f[0, k]
        size = math.sqrt(f[0, 0] ** 2 + f[0, 1] ** 2 + f[0, 2] ** 2)
        if not size <= np.inf:
            return np.nan
        largest = max(largest, size)
    return largest


@njit
def _constrain(w: NewtonScratch, s: ContactSet, top):
    """The band with each resting point's normals made stiff."""
    big = CONSTRAINT * top
    for i in range(s.modes.shape[0]):
        r0 = w.dof[i]
        if r0 < 0 or s.modes[i] == FREE:
            continue
        for k in range(3):
            for m in range(k + 1):
                add = 0.0
                for q in range(s.counts[i]):
                    add += big * s.normals[i, q, k] * s.normals[i, q, m]
                w.band[r0 + k, BAND - (k - m)] += add


@njit
def _constrained_step(x, w: NewtonScratch, s: ContactSet, c: ChainContact):
    """The solved w.p made a move of the points into w.trial: resting points along their surfaces only,
    none farther than MAX_MOVE_RADII radii, each free point stopped where it touches (gaps taken as
    linear along the move), points put back out of any obstacle. w.p is left as the move; returns
    the fraction of it taken."""
    n = x.shape[0]
    move = w.middle  # scratch
    longest = 0.0
    normal = np.empty(3)
    for i in range(n):
        for k in range(3):
            move[i, k] = w.p[w.dof[i] + k] if w.dof[i] >= 0 else 0.0
        _project_row(move, i, s.normals[i], s.counts[i])
        longest = max(longest, math.sqrt(move[i, 0] ** 2 + move[i, 1] ** 2 + move[i, 2] ** 2))
    fraction = min(1.0, MAX_MOVE_RADII * c.radius / longest) if longest > 0.0 else 1.0
    for i in range(n):
        if s.modes[i] != FREE or w.dof[i] < 0:
            continue
        before = _nearest(x, i, c, normal)
        for k in range(3):
            w.trial[i, k] = x[i, k] + fraction * move[i, k]
        after = _nearest(w.trial, i, c, normal)
        if after < 0.0 and before > after:
            # this point stops where it touches, the others go on: scaling the whole step instead
            # left none of it where a point lay a hair above a surface (a first guess sagged until
            # it touched a sphere: the first step refused until the damping gave up)
            clip = max(0.0, before) / (before - after)
            for k in range(3):
                move[i, k] *= clip
    for i in range(n):
        for k in range(3):
            w.trial[i, k] = x[i, k] + fraction * move[i, k]
        if w.dof[i] >= 0:
            for k in range(3):
                w.p[w.dof[i] + k] = move[i, k]
            put_back(w.trial, i, c, s.touch, s.gaps, s.cp)
    return fraction


@njit
def _try_step(x, a: MassSpringArrays, w: NewtonScratch, s: ContactSet, c: ChainContact, damping, top):
    """(factored, predicted gain, the forces' work along the move, fraction taken); w.trial and
    w.grad_end hold the move's end."""
    if not damped_solve(w, damping, top):
        return False, 0.0, 0.0, 0.0
    fraction = _constrained_step(x, w, s, c)
    for i in range(x.shape[0]):
        for k in range(3):
            w.middle[i, k] = 0.5 * (x[i, k] + w.trial[i, k])
    predicted, change = gain_and_work(a, w, fraction)
    return True, predicted, change, fraction


@njit
def _touch_down(x, s: ContactSet, c: ChainContact, held):
    """Free points that now touch an obstacle rest on it from here."""
    normal = np.empty(3)
    for i in range(x.shape[0]):
        if s.modes[i] == FREE and not held[i] and _nearest(x, i, c, normal) < CONTACT_BAND * c.radius:
            s.modes[i] = ON


@njit
def contact_newton(x, a: MassSpringArrays, w: NewtonScratch, s: ContactSet, c: ChainContact, tolerance, budget):
    """Newton steps from ``x`` (in place) on the contact set ``s`` (points touching down join it) until
    the largest force along what each point may move along is within ``tolerance`` (N): (iterations,
    that force, why: AT_REST .. SEARCH_AGAIN, where a point has moved beyond its candidate triangles)."""
    step = DIFFERENCE_STEP * a.rest.min()
    damping = 0.0
    held = a.held != 0
    for iteration in range(budget + 1):
        _rest_on_surfaces(x, c, s, held)
        mass_spring_energy(x, a, w.grad)
        largest = _residual(w.grad, w, s)
        if not largest <= np.inf:
            return iteration, largest, NOT_FINITE
        if largest <= tolerance:
            return iteration, largest, AT_REST
        if iteration == budget:
            return iteration, largest, OUT_OF_STEPS
        if c.triangles.shape[0] > 0:
            for i in range(x.shape[0]):
                far = (x[i, 0] - c.searched_at[i, 0]) ** 2 + (x[i, 1] - c.searched_at[i, 1]) ** 2
                if far + (x[i, 2] - c.searched_at[i, 2]) ** 2 > c.margin * c.margin:
                    return iteration, largest, SEARCH_AGAIN
        top = _stiffness_band(x, a, w, step)
        _constrain(w, s, top)
        while True:
            factored, predicted, change, fraction = _try_step(x, a, w, s, c, damping, top)
            if factored and predicted > 0.0 and change < 0.0 and -change >= ACCEPT * predicted:
                break
            damping = max(4.0 * damping, DAMPING_FIRST)
            if damping > DAMPING_LARGEST:
                return iteration, largest, STALLED
        x[:] = w.trial
        _touch_down(x, s, c, held)
        ratio = -change / predicted
        if fraction == 1.0 and ratio > 0.75:
            damping = damping / 3.0 if damping > 3.0 * DAMPING_FIRST else 0.0
        elif ratio < 0.25:
            damping = max(2.0 * damping, DAMPING_FIRST)
    return budget, np.inf, OUT_OF_STEPS


@njit
def next_set(x, a: MassSpringArrays, s: ContactSet):
    """After Newton converged on ``s``: the points the springs pull off a surface are freed. Returns (the
    paper's force left on a free point after its surfaces' support (N), whether a point was freed)."""
    grad = np.zeros_like(x)
    mass_spring_energy(x, a, grad)
    f = np.empty((1, 3))
    largest, freed = 0.0, False
    for i in range(x.shape[0]):
        if a.held[i]:
            continue
        for k in range(3):
            f[0, k] = -grad[i, k]
        for q in range(s.counts[i] if s.modes[i] == ON else 0):
            fn = f[0, 0] * s.normals[i, q, 0] + f[0, 1] * s.normals[i, q, 1] + f[0, 2] * s.normals[i, q, 2]
            if fn > 0.0:  # pulled off this surface
                s.modes[i] = FREE
                freed = True
                for k in range(3):
                    f[0, k] = -grad[i, k]
                break
            for k in range(3):
                f[0, k] -= fn * s.normals[i, q, k]
        largest = max(largest, math.sqrt(f[0, 0] ** 2 + f[0, 1] ** 2 + f[0, 2] ** 2))
    return largest, freed


def contact_rest(x, arrays: MassSpringArrays, tolerance: float, contact, budget: int) -> tuple:
    """The chain's rest from ``x`` (in place) beside frictionless ``contact`` (as mass_spring.relax's):
    Newton on a contact set, then the points pulled off freed, until the paper's rest holds: (Newton
    iterations, the force left on a free point (N); infinite where a link passed through a mesh face
    between two searches of the triangles)."""
    n = x.shape[0]
    s = contact_set(n)
    w = newton_scratch(n, arrays.held)
    c = chain_contact(x, *contact)
    _touch_down(x, s, c, arrays.held != 0)
    spent, largest = 0, np.inf
    parts = np.zeros(n, dtype=np.int64)
    for _set in range(MAX_SETS):
        while True:
            before = x.copy()
            iterations, largest, why = contact_newton(x, arrays, w, s, c, tolerance, max(0, budget - spent))
            spent += iterations
            # the points stay off the faces, but a link between two can sweep through a thin bar or
            # plate edge: tested on the straight paths between two searches (as mass_spring.relax)
            if len(contact[0].triangles) and step_crosses_triangles(before, x, parts, contact[0]):
                return spent, np.inf
            if why != SEARCH_AGAIN:
                break
            c = chain_contact(x, *contact)
        if why != AT_REST:
            return spent, largest
        largest, freed = next_set(x, arrays, s)
        if largest <= tolerance and not freed:
            return spent, largest
    return spent, largest
