# SPDX-License-Identifier: GPL-3.0-or-later
"""A route drawn onto a surface, moved off it by the cable's radius.

A user who routes a cable over a part snaps the route's points onto the part's faces: the route is
where the cable lies, but its centre line belongs one radius out. Started on the snapped line, the
cable starts inside the part by up to its radius, and a solve that must first push it out can push
it either way (a 77-segment cable snapped over a 47 mm plate with 4 % slack never converged; drawn
one diameter clear it converged in 6 iterations). ``lifted_route`` gives the route the cable was
meant to follow: points every half radius along it, each within a radius of an obstacle moved out
along the obstacle's normal until the cable clears it by a radius (as a route drawn one diameter out:
the segments of a coarse cable laid along it cut its corners less deep than the surface). A point
exactly on a closed mesh's face, or just under it, is first moved out along its outward normal. A
route whose centre line still runs on or through a mesh's face is drawn through, not onto: it is not
lifted (which side was meant cannot be told from the face of an open mesh: a plate has two).
"""

import numpy as np

from .contact import PLANE, SPHERE, TRI_EDGE, TRI_NODE, TRI_SEG
from .crossing import step_crosses_triangles
from .obstacles import ObstacleSet
from .pair_geometry import pair_gaps
from .pair_search import find_pairs, segment_penetration

SPACING = 0.5  # the densified route's points at most this many radii apart
MAX_POINTS = 4000  # nor more of them than this (each point is a corner of the route the cable follows)
CLEARANCE = 1.0  # lifted until the cable is this many radii clear (as a route drawn one diameter out)
THROUGH = 0.99  # a point this many radii deep has its centre line on or in a face: drawn through
SPHERE_THROUGH = 0.1  # a centre line this deep in a sphere, in sphere radii, was drawn through it
NODE_CLEARANCE = 0.01  # a cable's nodes laid along a lifted route are lifted only clear (no strain)
ON_FACE = 1e-3  # a point this many radii from a mesh's face lies on it (snapped exactly)
OFF_FACE = 0.5  # such a point on a closed mesh is first moved this many radii out of its face (so that
# the chords between points moved off two faces of a convex edge clear the edge)
MAX_ROUNDS = 8  # a point lifted off one face can meet the next (an inside corner)
HELD_REACH = 2.0  # route points this many radii from a holder on a surface take their whole lift

_NODE_KINDS = (PLANE, TRI_NODE)
_OBSTACLE_KINDS = (PLANE, SPHERE, TRI_NODE, TRI_SEG, TRI_EDGE)


def densified(route: np.ndarray, spacing: float) -> np.ndarray:
    """The polyline ``route`` with points added so that no two consecutive ones are more than
    ``spacing`` apart (its own points kept)."""
    out = [route[:1]]
    for a, b in zip(route[:-1], route[1:]):
        pieces = max(1, int(np.ceil(np.linalg.norm(b - a) / spacing)))
        u = np.arange(1, pieces + 1)[:, None] / pieces
        out.append(a + u * (b - a))
    return np.concatenate(out)


def _drawn_through(kind, prim, gap, radius: float, arrays) -> bool:
    """Whether pairs of the route's first points say it was drawn through rather than onto: its centre
    line within a hundredth of a radius of a mesh's face (no side to lift it to), or inside a sphere
    deeper than a tenth of the sphere's radius (the chords of points snapped onto it are not). Planes
    have one outside: a route under the floor is lifted onto it."""
    meshes = (kind != PLANE) & (kind != SPHERE)
    if np.any(meshes & (-gap >= THROUGH * radius)):
        return True
    spheres = kind == SPHERE
    inside = -gap[spheres] - radius
    return bool(np.any(inside > SPHERE_THROUGH * arrays.sphere_radius[prim[spheres]]))


def lifted_route(route, radius: float, obstacles: ObstacleSet, held) -> np.ndarray | None:
    """The route (world points, first and last at the connectors) lifted off the obstacles' surfaces
    it was drawn onto, or None where nothing needs lifting or the route is drawn through a face.
    ``held``: positions of the holders (connectors, clips); points near them stay put, since a
    holder mounted on a surface holds the cable against it."""
    route = np.asarray(route, dtype=np.float64)
    if len(route) < 2 or radius <= 0.0:
        return None
    # at most MAX_POINTS points: a 5 m route of a 1 mm cable is 20,000 points half a radius apart
    length = float(np.linalg.norm(np.diff(route, axis=0), axis=1).sum())
    spacing = max(SPACING * radius, length / MAX_POINTS)
    return lifted_points(densified(route, spacing), radius, obstacles, held)


def _gaps(points, radius: float, reach: float, arrays, part):
    """The obstacle pairs of the polyline ``points`` within ``reach`` of the cable's surface: (kind,
    elem, prim, gap, normal) of each."""
    node_radius = np.full(len(points), radius)
    kind, elem, prim = find_pairs(points, node_radius, part, reach, arrays, 0)
    keep = np.flatnonzero(np.isin(kind, _OBSTACLE_KINDS))
    n = len(kind)
    gap, t, u = np.zeros(n), np.zeros(n), np.zeros(n)
    normal, point = np.zeros((n, 3)), np.zeros((n, 3))
    pair_gaps(keep, points, kind, elem, prim, arrays, node_radius, gap, t, normal, point, u)
    return kind[keep], elem[keep], prim[keep], gap[keep], normal[keep]


def _outward(obstacles: ObstacleSet, owner: int) -> float:
    """+1 where the mesh ``owner`` is closed with its faces wound outwards, -1 where wound inwards
    (the sign of its volume by the divergence theorem), 0 where it is open: a plate has two sides and
    neither is its outside."""
    tris = obstacles.triangles[obstacles.triangle_owner == owner]
    _corners, index = np.unique(tris.reshape(-1, 3), axis=0, return_inverse=True)
    index = index.reshape(-1, 3)
    edges = np.sort(np.concatenate((index[:, [0, 1]], index[:, [1, 2]], index[:, [2, 0]])), axis=1)
    _edges, uses = np.unique(edges, axis=0, return_counts=True)
    if np.any(uses != 2):
        return 0.0
    volume = np.einsum("ij,ij->", tris[:, 0], np.cross(tris[:, 1], tris[:, 2])) / 6.0
    return float(np.sign(volume))


def _off_closed_faces(points, radius: float, obstacles: ObstacleSet, arrays, part) -> np.ndarray:
    """``points``, those on a face of a closed mesh (snapped exactly onto it) or just inside it (the
    chord between points snapped onto two facets of a convex edge cuts under the edge) moved out
    along the outward normal to OFF_FACE radii outside, so that the lift sees which side they are
    on. Points on an open mesh's face stay there, to be taken as drawn through; points inside
    further than a radius from every face are not seen here (a route drawn through)."""
    kind, elem, prim, gap, normal = _gaps(points, radius, 0.0, arrays, part)
    inner = (elem > 0) & (elem < len(points) - 1)  # the ends are at the connectors
    near = np.flatnonzero((kind == TRI_NODE) & inner & (gap < 0.0))
    if not len(near):
        return points
    # only a point's nearest faces tell its side: beside a part thinner than a radius, the far face
    # is within reach too, and seen from it the point is behind
    nearest = np.full(len(points), np.inf)
    np.minimum.at(nearest, elem[near], gap[near])
    near = near[gap[near] <= nearest[elem[near]] + ON_FACE * radius]
    # a point on an edge or corner lies on several faces: it moves along the sum of their normals
    direction = np.zeros_like(points)
    depth = np.zeros(len(points))
    outward = {}
    for p in near:
        owner = int(obstacles.triangle_owner[prim[p]])
        if owner not in outward:
            outward[owner] = _outward(obstacles, owner)
        a, b, c = obstacles.triangles[prim[p]]
        n = np.cross(b - a, c - a)
        if outward[owner] == 0.0 or n @ n <= 0.0:
            continue
        n *= outward[owner] / np.sqrt(n @ n)
        on_face = gap[p] <= -(1.0 - ON_FACE) * radius  # (its normal is no direction)
        if not on_face and normal[p] @ n >= 0.0:
            continue  # outside: the lift sees it
        direction[elem[p]] += n
        depth[elem[p]] = max(depth[elem[p]], 0.0 if on_face else gap[p] + radius)
    length = np.linalg.norm(direction, axis=1)
    moving = length > 0.0
    out = points.copy()
    out[moving] += ((depth[moving] + OFF_FACE * radius) / length[moving])[:, None] * direction[moving]
    return out


def _lift_weights(points, radius: float, arrays, held) -> np.ndarray:
    """Per point, the part of its lift it takes: none at the two ends, and rising from none to all
    over HELD_REACH radii from a holder mounted on a surface (within half a radius of touching it):
    such a holder holds the cable against the surface, and its neighbours follow it."""
    weight = np.ones(len(points))
    weight[0] = weight[-1] = 0.0
    held = np.asarray(held, dtype=np.float64).reshape(-1, 3)
    if not len(held):
        return weight
    # each holder as a segment of a thousandth of a radius (sphere pairs are found for segments)
    ends = np.repeat(held, 2, axis=0)
    ends[1::2, 0] += 1e-3 * radius
    _kind, elem, _prim, gap, _normal = _gaps(ends, radius, 0.5 * radius, arrays, np.repeat(np.arange(len(held)), 2))
    mounted = held[np.unique(elem[gap < 0.5 * radius] // 2)]
    for h in mounted:
        weight = np.minimum(weight, np.linalg.norm(points - h, axis=1) / (HELD_REACH * radius))
    return np.clip(weight, 0.0, 1.0)


def lifted_points(
    points, radius: float, obstacles: ObstacleSet, held, clearance: float = CLEARANCE
) -> np.ndarray | None:
    """The polyline ``points`` (a densified route, or a cable's nodes laid along a lifted one, whose
    chords can still cut a corner) lifted off the surfaces it lies within ``radius`` of, until the
    cable is ``clearance`` radii clear; None as for lifted_route. Its first and last points stay, and
    those near a holder in ``held`` mounted on a surface follow it (_lift_weights)."""
    points = np.asarray(points, dtype=np.float64)
    if obstacles.empty or len(points) < 2:
        return None
    arrays = obstacles.kernel_arrays()
    node_radius = np.full(len(points), radius)
    part = np.zeros(len(points), dtype=np.int64)
    faces = arrays._replace(
        plane_point=np.zeros((0, 3)),
        plane_normal=np.zeros((0, 3)),
        sphere_centre=np.zeros((0, 3)),
        sphere_radius=np.zeros(0),
    )
    points = _off_closed_faces(points, radius, obstacles, arrays, part)
    if segment_penetration(points, node_radius, part, faces) >= THROUGH * radius:
        return None  # a stretch of the route's centre line meets a mesh's face: which side is meant?
    weight = _lift_weights(points, radius, arrays, held)
    drawn = points
    moved = False
    for round_ in range(MAX_ROUNDS):
        kind, elem, prim, gap, normal = _gaps(points, radius, clearance * radius, arrays, part)
        deep = np.flatnonzero(gap < 0.5 * clearance * radius)
        if len(deep) == 0:
            break
        if round_ == 0 and _drawn_through(kind[deep], prim[deep], gap[deep], radius, arrays):
            return None
        # each point moves out along the normal of its deepest pair (a segment pair moves both its
        # ends: the points are half a radius apart, so that is the segment moved as a whole)
        shift = np.zeros_like(points)
        for p in deep:
            d = (clearance * radius - gap[p]) * normal[p]
            ends = (elem[p],) if kind[p] in _NODE_KINDS else (elem[p], elem[p] + 1)
            for j in ends:
                if d @ d > shift[j] @ shift[j]:
                    shift[j] = d
        shift[[0, -1]] = 0.0
        if not shift.any():
            break
        points = points + shift
        moved = True
    points = drawn + weight[:, None] * (points - drawn)  # (of the whole lift: rounds add up)
    if not moved or step_crosses_triangles(drawn, points, part, arrays):
        return None  # moved along normals, no point crosses a face: this guards inside corners
    return points
