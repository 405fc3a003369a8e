# SPDX-License-Identifier: GPL-3.0-or-later
"""The mass-spring chain's contact with obstacles (Lv 2017, Sec. 3.2), applied at its points.

A point closer to a plane, a sphere or a mesh triangle than the cable's radius touches it, with the
unit normal n from the obstacle's nearest point towards the point. (The paper detects a collision per
link and hands its force to the link's two points; here the points' own distances decide, so that
each force is the gradient-free projection of Eqs. 32-33 at one point, and a link that rests across
an edge or bar is found by the exact test on the result instead.) At every relaxation step
(mass_spring.relax) the inward part of its force and of its velocity is taken away (the support
force, Eqs. 32-33), it slides against Coulomb friction mu_d N opposite its velocity (Eq. 34) or
sticks while the force along the surface stays within mu_s N (Eqs. 35-36), and after the step it is
put back on the surface along n (the paper leaves a point where the step took it; put back, no
state the relaxation ends in sinks into an obstacle at its points). Steps are short
(MAX_MOVE_RADII of the radius) so a point cannot pass through a thin plate between two steps.

Contact acts at the points only, as in the paper: a link between two points can still cut an edge or
a thin plate, which the model solve finds afterwards (Interactions.deepest_penetration) and reports
as a failure. Mesh triangles are searched near each point (pair_search.find_pairs) and searched
again once a point has moved SEARCH_MARGIN radii from where they were searched.
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit_inline
from ..contact.contact import TRI_NODE
from ..contact.pair_search import find_pairs
from ..geometry.contact_geometry import closest_point_on_triangle

MAX_CONTACTS = 8  # obstacles one point touches at once (a corner of a box: 3)
SEARCH_MARGIN = 2.0  # radii: triangles within the radius plus this of a point are its candidates
MAX_MOVE_RADII = 0.25  # no point moves farther in one step beside obstacles (Lv 2017, Eq. 31)
CONTACT_BAND = 1e-6  # of the radius: a point put back on a surface (gap 0 up to round-off) touches it


class ChainContact(NamedTuple):
    """The obstacles as the chain's relaxation reads them (relative to the model's origin)."""

    plane_point: np.ndarray  # (planes, 3)
    plane_normal: np.ndarray
    sphere_centre: np.ndarray  # (spheres, 3)
    sphere_radius: np.ndarray
    triangles: np.ndarray  # (triangles, 3, 3)
    candidate_start: np.ndarray  # (n + 1,): point i's candidate triangles are candidates[start[i]:start[i+1]]
    candidates: np.ndarray
    searched_at: np.ndarray  # (n, 3) where the candidates were searched
    radius: float  # m
    margin: float  # m a point may move from searched_at before the candidates are searched again
    mu_static: float
    mu_dynamic: float


def no_contact(n: int, radius: float) -> ChainContact:
    """Nothing to touch (the relaxation then runs as without contact)."""
    return ChainContact(
        np.zeros((0, 3)),
        np.zeros((0, 3)),
        np.zeros((0, 3)),
        np.zeros(0),
        np.zeros((0, 3, 3)),
        np.zeros(n + 1, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros((n, 3)),
        float(radius),
        np.inf,
        0.0,
        0.0,
    )


def chain_contact(x: np.ndarray, obstacles, radius: float, mu_static: float, mu_dynamic: float) -> ChainContact:
    """The contact of points ``x`` (n, 3) of radius ``radius`` with ``obstacles`` (kernel_arrays.
    ObstacleArrays, in the points' frame), triangles searched near the points now."""
    n = x.shape[0]
    margin = SEARCH_MARGIN * radius
    start = np.zeros(n + 1, dtype=np.int64)
    candidates = np.zeros(0, dtype=np.int64)
    if len(obstacles.triangles):
        kind, elem, prim = find_pairs(x, np.full(n, radius), np.zeros(n, dtype=np.int64), margin, obstacles, 0)
        mine = kind == TRI_NODE
        elem, candidates = elem[mine], prim[mine]
        order = np.argsort(elem, kind="stable")
        elem, candidates = elem[order], np.ascontiguousarray(candidates[order])
        start = np.searchsorted(elem, np.arange(n + 1)).astype(np.int64)
    return ChainContact(
        obstacles.plane_point,
        obstacles.plane_normal,
        obstacles.sphere_centre,
        obstacles.sphere_radius,
        obstacles.triangles,
        start,
        candidates,
        x.copy(),
        float(radius),
        0.5 * margin,
        # a point that dynamic friction stops is held by it: the static factor is at least the dynamic
        # one (mu_s < mu_d, which no surface has, left points at rest with an unbalanced force)
        float(max(mu_static, mu_dynamic)),
        float(mu_dynamic),
    )


@njit_inline
def touching(x, i, c: ChainContact, normals, gaps, cp) -> int:
    """The obstacles point i of ``x`` touches: writes their unit normals (towards the point) and gaps
    (distance minus radius, < 0 inside, within CONTACT_BAND of 0 on the surface); their number. ``cp``:
    scratch (3,)."""
    r = c.radius
    band = CONTACT_BAND * r
    count = 0
    for p in range(c.plane_point.shape[0]):
        d = 0.0
        for k in range(3):
            d += (x[i, k] - c.plane_point[p, k]) * c.plane_normal[p, k]
        if d - r < band and count < MAX_CONTACTS:
            for k in range(3):
                normals[count, k] = c.plane_normal[p, k]
            gaps[count] = d - r
            count += 1
    for s in range(c.sphere_centre.shape[0]):
        d2 = 0.0
        for k in range(3):
            d2 += (x[i, k] - c.sphere_centre[s, k]) ** 2
        d = math.sqrt(d2)
        if d - c.sphere_radius[s] - r < band and d > 0.0 and count < MAX_CONTACTS:
            for k in range(3):
                normals[count, k] = (x[i, k] - c.sphere_centre[s, k]) / d
            gaps[count] = d - c.sphere_radius[s] - r
            count += 1
    for j in range(c.candidate_start[i], c.candidate_start[i + 1]):
        d2 = closest_point_on_triangle(x[i], c.triangles, c.candidates[j], cp)
        d = math.sqrt(d2)
        if d - r < band and d > 0.0 and count < MAX_CONTACTS:
            same = False  # triangles meeting at the nearest edge or corner: one contact
            for m in range(count):
                dot = 0.0
                for k in range(3):
                    dot += normals[m, k] * (x[i, k] - cp[k]) / d
                if dot > 1.0 - 1e-12:
                    same = True
            if not same:
                for k in range(3):
                    normals[count, k] = (x[i, k] - cp[k]) / d
                gaps[count] = d - r
                count += 1
    return count


@njit_inline
def supported(force, velocity, normals, count):
    """Takes the inward part of ``force`` and ``velocity`` (3,) away at each of ``count`` contacts (Lv
    2017, Eqs. 32-33); the support's magnitude N (N)."""
    support = 0.0
    for m in range(count):
        fn = force[0] * normals[m, 0] + force[1] * normals[m, 1] + force[2] * normals[m, 2]
        if fn < 0.0:
            support -= fn
            for k in range(3):
                force[k] -= fn * normals[m, k]
        vn = velocity[0] * normals[m, 0] + velocity[1] * normals[m, 1] + velocity[2] * normals[m, 2]
        if vn < 0.0:
            for k in range(3):
                velocity[k] -= vn * normals[m, k]
    return support


@njit_inline
def put_back(x, i, c: ChainContact, normals, gaps, cp) -> None:
    """Point i moved out of every obstacle it sank into, along the normal of the deepest, until none is
    deeper than half the contact band (a few passes: corners)."""
    for _pass in range(4):
        count = touching(x, i, c, normals, gaps, cp)
        deepest, which = -0.5 * CONTACT_BAND * c.radius, -1  # within the band it is on the surface
        for m in range(count):
            if gaps[m] < deepest:
                deepest, which = gaps[m], m
        if which < 0:
            return
        for k in range(3):
            x[i, k] -= deepest * normals[which, k]
