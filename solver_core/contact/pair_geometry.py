# SPDX-License-Identifier: GPL-3.0-or-later
"""The geometry of one contact pair: its closest points, distance and normal, and the curvature of
that distance (contact.py has the pair kinds)."""

import math

import numpy as np

from .._jit import njit, njit_inline
from ..geometry.contact_geometry import (
    closest_point_on_segment,
    closest_point_on_triangle,
    segment_segment,
    segment_triangle,
)
from ..maths.small_dense import dot
from ..rod.rod_energy import _band_add
from .contact import (
    CAP_NODE,
    CAP_SEG,
    PLANE,
    SELF_NODE,
    SELF_SEG,
    SPHERE,
    TRI_EDGE,
    TRI_NODE,
    TRI_SEG,
)


@njit_inline
def pair_geometry(pos, kind, elem, prim, obstacles, cp, cq, normal):
    """(t, distance to the primitive's surface, u) for one pair (u: parameter on the cable's own other
    segment, for self pairs; their radius is the caller's); cp = point on the cable centre line (t = 0
    for node pairs), cq = closest point of the primitive, normal = unit vector from cq towards cp."""
    plane_p, plane_n, sph_c, sph_r = (
        obstacles.plane_point,
        obstacles.plane_normal,
        obstacles.sphere_centre,
        obstacles.sphere_radius,
    )
    tris, cap_a, cap_b, cap_r = obstacles.triangles, obstacles.capsule_a, obstacles.capsule_b, obstacles.capsule_radius
    i = elem
    if kind == PLANE:
        d = (
            (pos[i, 0] - plane_p[prim, 0]) * plane_n[prim, 0]
            + (pos[i, 1] - plane_p[prim, 1]) * plane_n[prim, 1]
            + (pos[i, 2] - plane_p[prim, 2]) * plane_n[prim, 2]
        )
        for k in range(3):
            cp[k] = pos[i, k]
            cq[k] = pos[i, k] - d * plane_n[prim, k]
            normal[k] = plane_n[prim, k]
        return 0.0, d, 0.0
    t = 0.0
    u = 0.0  # parameter of the closest point on the other segment (self pairs)
    extra = 0.0
    if kind == TRI_NODE:
        for k in range(3):
            cp[k] = pos[i, k]
        closest_point_on_triangle(pos[i], tris, prim, cq)
    elif kind == CAP_NODE:
        for k in range(3):
            cp[k] = pos[i, k]
        closest_point_on_segment(cap_a[prim], cap_b[prim], pos[i], cq)
        extra = cap_r[prim]
    elif kind == SPHERE:
        t = closest_point_on_segment(pos[i], pos[i + 1], sph_c[prim], cp)
        for k in range(3):
            cq[k] = sph_c[prim, k]
        extra = sph_r[prim]
    elif kind == TRI_SEG:
        t, _d = segment_triangle(pos[i], pos[i + 1], tris, prim, cp, cq)
    elif kind == TRI_EDGE:
        tri, k = prim // 3, prim % 3
        t, _u, _d = segment_segment(pos[i], pos[i + 1], tris[tri, k], tris[tri, (k + 1) % 3], cp, cq)
    elif kind == CAP_SEG:
        t, _u, _d = segment_segment(pos[i], pos[i + 1], cap_a[prim], cap_b[prim], cp, cq)
        extra = cap_r[prim]
    elif kind == SELF_NODE:
        for k in range(3):
            cp[k] = pos[i, k]
        u = closest_point_on_segment(pos[prim], pos[prim + 1], pos[i], cq)
    else:  # SELF_SEG
        t, u, _d = segment_segment(pos[i], pos[i + 1], pos[prim], pos[prim + 1], cp, cq)
    dx, dy, dz = cp[0] - cq[0], cp[1] - cq[1], cp[2] - cq[2]
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d > 1e-14:
        normal[0], normal[1], normal[2] = dx / d, dy / d, dz / d
    elif kind == TRI_NODE or kind == TRI_SEG or kind == TRI_EDGE:
        # on the face: its normal, by the triangle's winding (outward for closed meshes)
        tri = prim // 3 if kind == TRI_EDGE else prim
        e1 = tris[tri, 1] - tris[tri, 0]
        e2 = tris[tri, 2] - tris[tri, 0]
        nx = e1[1] * e2[2] - e1[2] * e2[1]
        ny = e1[2] * e2[0] - e1[0] * e2[2]
        nz = e1[0] * e2[1] - e1[1] * e2[0]
        ln = math.sqrt(nx * nx + ny * ny + nz * nz) + 1e-300
        normal[0], normal[1], normal[2] = nx / ln, ny / ln, nz / ln
    else:
        normal[0], normal[1], normal[2] = 0.0, 0.0, 1.0
    return t, d - extra, u


@njit
def _feature_projector(q, tris, tri, J):
    """J = dq/dx for the closest point q of triangle ``tris[tri]``: the face's tangent projector on the
    face, e e^T along an edge, 0 at a vertex (how the closest point follows the node)."""
    a = tris[tri, 0]
    ab = tris[tri, 1] - a
    ac = tris[tri, 2] - a
    n = np.cross(ab, ac)
    nn = dot(n, n)
    J[:, :] = 0.0
    if nn <= 0.0:
        return
    # barycentric coordinates of q
    v = dot(np.cross(q - a, ac), n) / nn
    w = dot(np.cross(ab, q - a), n) / nn
    u = 1.0 - v - w
    tol = 1e-9
    zeros = (1 if u <= tol else 0) + (1 if v <= tol else 0) + (1 if w <= tol else 0)
    if zeros == 0:
        for r in range(3):
            for s in range(3):
                J[r, s] = (1.0 if r == s else 0.0) - n[r] * n[s] / nn
    elif zeros == 1:
        if u <= tol:
            e = tris[tri, 2] - tris[tri, 1]
        elif v <= tol:
            e = ac
        else:
            e = ab
        ee = dot(e, e)
        for r in range(3):
            for s in range(3):
                J[r, s] = e[r] * e[s] / ee


@njit
def _curvature_hessian(kind, prim, obstacles, cp, cq, normal, H):
    """Second derivative of the node-to-primitive distance, (I - dq/dx - n n^T) / |x - q|."""
    tris, cap_a, cap_b = obstacles.triangles, obstacles.capsule_a, obstacles.capsule_b
    J = np.zeros((3, 3))
    if kind == TRI_NODE:
        _feature_projector(cq, tris, prim, J)
    else:  # CAP_NODE: along the capsule axis unless the closest point is an end
        e = cap_b[prim] - cap_a[prim]
        ee = dot(e, e)
        t = dot(cq - cap_a[prim], e) / ee if ee > 0.0 else 0.0
        if 1e-12 < t < 1.0 - 1e-12:
            for r in range(3):
                for s in range(3):
                    J[r, s] = e[r] * e[s] / ee
    dist = math.sqrt((cp[0] - cq[0]) ** 2 + (cp[1] - cq[1]) ** 2 + (cp[2] - cq[2]) ** 2)
    for r in range(3):
        for s in range(3):
            H[r, s] = ((1.0 if r == s else 0.0) - J[r, s] - normal[r] * normal[s]) / max(dist, 1e-12)


@njit
def pair_gaps(live, pos, kind, elem, prim, obstacles, node_radius, pair_gap, pair_t, pair_normal, pair_point, pair_u):
    """Geometry of the pairs ``live``: gap d - r (negative: penetration), segment parameter, normal,
    contact point on the cable and the parameter on the other segment (self pairs)."""
    cp = np.empty(3)
    cq = np.empty(3)
    nrm = np.empty(3)
    for idx in range(live.shape[0]):
        p = live[idx]
        t, d, u = pair_geometry(pos, kind[p], elem[p], prim[p], obstacles, cp, cq, nrm)
        self_pair = kind[p] == SELF_NODE or kind[p] == SELF_SEG
        pair_gap[p] = d - node_radius[elem[p]] - (node_radius[prim[p]] if self_pair else 0.0)
        pair_t[p] = t
        pair_u[p] = u
        for k in range(3):
            pair_normal[p, k] = nrm[k]
            pair_point[p, k] = cp[k]


@njit_inline
def is_obstacle_pair(kind):
    """Whether a pair of this kind meets an obstacle (not another cable or the cable itself)."""
    return kind == PLANE or kind == SPHERE or kind == TRI_NODE or kind == TRI_SEG or kind == TRI_EDGE


@njit
def pair_nodes(kind, elem, prim):
    """The nodes each pair's gap depends on: (a, b) on the cable's side, (c, d) on the other side for
    a cable's own segments (-1 where there is none)."""
    nodes = np.full((kind.shape[0], 4), -1, dtype=np.int64)
    for p in range(kind.shape[0]):
        i = elem[p]
        nodes[p, 0] = i
        is_node = kind[p] == PLANE or kind[p] == TRI_NODE or kind[p] == CAP_NODE or kind[p] == SELF_NODE
        nodes[p, 1] = i if is_node else i + 1
        if kind[p] == SELF_NODE or kind[p] == SELF_SEG:
            nodes[p, 2] = prim[p]
            nodes[p, 3] = prim[p] + 1
    return nodes


@njit
def _sphere_segment_curvature(pos, i, centre, f, node_dof, band, bw):
    """Adds -f grad^2(d) of the distance d(x_i, x_i+1) = min_t |(1 - t) x_i + t x_i+1 - c| to a sphere's
    centre (the radius is a constant). With the closest point p at t, n = (p - c) / r, e = x_i+1 - x_i
    and W = [(1 - t) I, t I]: grad^2(d) = W^T (I - n n^T) W / r - g g^T r / |e|^2, the second term
    the minimisation over t (a Schur complement), g = [(1 - t) e / r - n, t e / r + n]; at an end of
    the segment (t clamped) only the first term, on that node."""
    e = pos[i + 1] - pos[i]
    ee = dot(e, e)
    t = dot(centre - pos[i], e) / ee if ee > 0.0 else 0.0
    interior = 0.0 < t < 1.0
    t = min(max(t, 0.0), 1.0)
    q = (1.0 - t) * pos[i] + t * pos[i + 1] - centre
    r = math.sqrt(dot(q, q))
    if r <= 0.0:
        return
    n = q / r
    w = (1.0 - t, t)
    g = np.empty((2, 3))
    for k in range(3):
        g[0, k] = (1.0 - t) * e[k] / r - n[k]
        g[1, k] = t * e[k] / r + n[k]
    for a in range(2):
        for b in range(2):
            for u in range(3):
                for v in range(3):
                    h = w[a] * w[b] * ((1.0 if u == v else 0.0) - n[u] * n[v]) / r
                    if interior:
                        h -= g[a, u] * g[b, v] * r / ee
                    if h != 0.0:
                        _band_add(band, bw, node_dof[i + a] + u, node_dof[i + b] + v, -f * h)


@njit
def segment_pair_curvature(pos, i, c, t, u, f, vecs, coefs):
    """The curvature -f grad^2(d) of a segment pair between two cables (d: distance of the closest
    points at t on segment i and u on segment c; f = k depth, the pair's force), as rank-one terms
    coefs[m] vecs[m] vecs[m]^T over (i, i + 1, c, c + 1), three coordinates each. Returns how many.

    d = min over the segment parameters s of |w(x, s)|; with h = d^2 / 2 its Hessian is
    J^T J - B A^-1 B^T (J = dw/dx, A = h_ss, B = h_xs: the closest points slide along the
    segments), so grad^2 d = (J^T P J - B A^-1 B^T) / d with P the projector across the normal.
    The sliding term stiffens, the other softens; both are f / d in size, tiny beside k n n^T but
    alone in the directions the cables slide over each other, where a pressed crossing shifts its
    load between a segment's nodes. (Without them Newton crept to a pile's equilibrium by a factor
    ~0.65 per iteration, rho ~ 0.32: the matrix ~1.7 times too soft along the cables' sliding.)"""
    w = np.empty(3)
    e1 = np.empty(3)
    e2 = np.empty(3)
    for k in range(3):
        w[k] = (1.0 - t) * pos[i, k] + t * pos[i + 1, k] - (1.0 - u) * pos[c, k] - u * pos[c + 1, k]
        e1[k] = pos[i + 1, k] - pos[i, k]
        e2[k] = pos[c + 1, k] - pos[c, k]
    d = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if not (d > 0.0 and f > 0.0):
        return 0
    n = w / d
    # -f/d J^T P J: two unit vectors across the normal
    a = np.zeros(3)
    a[np.argmin(np.abs(n))] = 1.0
    t1 = a - dot(a, n) * n
    t1 /= math.sqrt(dot(t1, t1))
    t2 = np.array([n[1] * t1[2] - n[2] * t1[1], n[2] * t1[0] - n[0] * t1[2], n[0] * t1[1] - n[1] * t1[0]])
    m = 0
    for tm in (t1, t2):
        for k in range(3):
            vecs[m, k] = (1.0 - t) * tm[k]
            vecs[m, 3 + k] = t * tm[k]
            vecs[m, 6 + k] = -(1.0 - u) * tm[k]
            vecs[m, 9 + k] = -u * tm[k]
        coefs[m] = -f / d
        m += 1
    # +f/d B A^-1 B^T over the parameters not held at a segment's end
    t_free, u_free = 0.0 < t < 1.0, 0.0 < u < 1.0
    e11, e22, e12 = dot(e1, e1), dot(e2, e2), dot(e1, e2)
    if t_free and u_free and not (e11 * e22 - e12 * e12 > 1e-4 * e11 * e22):
        return m  # nearly parallel: where the closest points lie is all but undetermined
    B = np.zeros((12, 2))
    A = np.zeros((2, 2))
    n_s = 0
    if t_free:
        for k in range(3):
            B[k, 0] = -w[k] + (1.0 - t) * e1[k]
            B[3 + k, 0] = w[k] + t * e1[k]
            B[6 + k, 0] = -(1.0 - u) * e1[k]
            B[9 + k, 0] = -u * e1[k]
        A[0, 0] = e11
        n_s = 1
    if u_free:
        for k in range(3):
            B[k, n_s] = -(1.0 - t) * e2[k]
            B[3 + k, n_s] = -t * e2[k]
            B[6 + k, n_s] = (1.0 - u) * e2[k] + w[k]
            B[9 + k, n_s] = u * e2[k] - w[k]
        A[n_s, n_s] = e22
        if n_s == 1:
            A[0, 1] = A[1, 0] = -e12
        n_s += 1
    if n_s == 0:
        return m
    # B A^-1 B^T = (B L^-T)(B L^-T)^T with A = L L^T
    l00 = math.sqrt(A[0, 0])
    for r in range(12):
        vecs[m, r] = B[r, 0] / l00
    coefs[m] = f / d
    m += 1
    if n_s == 2:
        l10 = A[1, 0] / l00
        l11 = math.sqrt(A[1, 1] - l10 * l10)
        for r in range(12):
            vecs[m, r] = (B[r, 1] - l10 * B[r, 0] / l00) / l11
        coefs[m] = f / d
        m += 1
    return m
