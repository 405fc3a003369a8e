# SPDX-License-Identifier: GPL-3.0-or-later
"""Clips that do not simply hold nodes: sliding clips and compliant (flexible) clips.

Sliding clip (Lv 2017, Eqs. 16-17, with the cable free to slide): at both end planes of the clip,
xi = (x - c) . a = +-h (a the axis, h half the clip length), the point where the cable crosses the
plane, p = x_i + t (x_j - x_i), is pulled onto the axis line by a stiff penalty k/2 |v|^2,
v = P (p - c_h), P = I - a a^T. The crossing (segment i and parameter t) is found anew at every
Newton iteration and held fixed within it, so the penalty force P v is normal to the axis; at
convergence the held crossing is the true one: the clip transmits no force along its axis, lets
the cable slide through and leaves the roll free.

Compliant clip (Roller, Schneider-Jung, Linn, Eqs. 1-3 with the reduced stiffness matrix K of the
clip): the cable's node and frame at the clip are free and tied to the clip frame (R_c, c) by the
energy 1/2 D^T K D, D = (R_c^T (x - c), 2 vec(conj(q_c) q)); rows and columns of K act in the clip
frame (translation x, y, z, then rotation x, y, z).
"""

import math

import numpy as np

from ._jit import njit
from .rod_energy import _band_add
from .rotations import quat_conj_mul, quat_to_matrix


@njit
def sliding_crossings(pos, node_part, plane_point, plane_axis, plane_part, seg, tpar):
    """For every sliding-clip plane: the segment crossing it nearest to the axis and the parameter of
    the crossing (seg = -1 where the cable does not cross the plane). Only segments of the plane's
    own cable count (``node_part`` / ``plane_part`` number the cables of a group)."""
    n_nodes = pos.shape[0]
    for m in range(plane_point.shape[0]):
        a0, a1, a2 = plane_axis[m, 0], plane_axis[m, 1], plane_axis[m, 2]
        c = plane_point[m]
        best_i = -1
        best_t = 0.0
        best_off = np.inf
        xi_prev = (pos[0, 0] - c[0]) * a0 + (pos[0, 1] - c[1]) * a1 + (pos[0, 2] - c[2]) * a2
        for i in range(n_nodes - 1):
            xi_next = (pos[i + 1, 0] - c[0]) * a0 + (pos[i + 1, 1] - c[1]) * a1 + (pos[i + 1, 2] - c[2]) * a2
            own = node_part[i] == plane_part[m] and node_part[i + 1] == plane_part[m]
            if own and ((xi_prev <= 0.0 < xi_next) or (xi_next <= 0.0 < xi_prev)):
                t = xi_prev / (xi_prev - xi_next)
                off = 0.0
                for k in range(3):
                    w = pos[i, k] + t * (pos[i + 1, k] - pos[i, k]) - c[k]
                    off += w * w
                if off < best_off:
                    best_off, best_i, best_t = off, i, t
            xi_prev = xi_next
        seg[m] = best_i
        tpar[m] = best_t


@njit
def sliding_energy(pos, node_dof, plane_point, plane_axis, stiffness, seg, tpar, grad, band, bw, mode, offset):
    """Penalty of all sliding-clip planes at their (frozen) crossings; offset[m] = |P (p - c)|."""
    energy = 0.0
    v = np.empty(3)
    for m in range(plane_point.shape[0]):
        i = seg[m]
        if i < 0:
            offset[m] = np.inf
            continue
        j = i + 1
        t = tpar[m]
        c = plane_point[m]
        w0 = pos[i, 0] + t * (pos[j, 0] - pos[i, 0]) - c[0]
        w1 = pos[i, 1] + t * (pos[j, 1] - pos[i, 1]) - c[1]
        w2 = pos[i, 2] + t * (pos[j, 2] - pos[i, 2]) - c[2]
        wa = w0 * plane_axis[m, 0] + w1 * plane_axis[m, 1] + w2 * plane_axis[m, 2]
        v[0] = w0 - wa * plane_axis[m, 0]
        v[1] = w1 - wa * plane_axis[m, 1]
        v[2] = w2 - wa * plane_axis[m, 2]
        k_m = stiffness[m]
        vv = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
        energy += 0.5 * k_m * vv
        offset[m] = math.sqrt(vv)
        if mode == 0:
            continue
        for k in range(3):
            grad[node_dof[i] + k] += k_m * (1.0 - t) * v[k]
            grad[node_dof[j] + k] += k_m * t * v[k]
        if mode < 2:
            continue
        for r in range(3):
            for s in range(3):
                P = k_m * ((1.0 if r == s else 0.0) - plane_axis[m, r] * plane_axis[m, s])
                _band_add(band, bw, node_dof[i] + r, node_dof[i] + s, (1.0 - t) * (1.0 - t) * P)
                _band_add(band, bw, node_dof[j] + r, node_dof[j] + s, t * t * P)
                _band_add(band, bw, node_dof[j] + r, node_dof[i] + s, t * (1.0 - t) * P)
                _band_add(band, bw, node_dof[i] + r, node_dof[j] + s, t * (1.0 - t) * P)
    return energy


@njit
def compliant_energy(
    pos, quat, node_dof, rot_dof, clip_node, clip_rot, clip_centre, clip_quat, clip_K, grad, band, bw, mode, deflection
):
    """Spring energy of compliant clips; deflection[c] = (D_translation, D_rotation) in the clip frame."""
    energy = 0.0
    Rc = np.empty((3, 3))
    p = np.empty(4)
    D = np.empty(6)
    J = np.zeros((6, 6))  # dD / (x, theta)
    for c in range(clip_node.shape[0]):
        quat_to_matrix(clip_quat[c], Rc)
        n = clip_node[c]
        r = clip_rot[c]
        for k in range(3):
            D[k] = (
                Rc[0, k] * (pos[n, 0] - clip_centre[c, 0])
                + Rc[1, k] * (pos[n, 1] - clip_centre[c, 1])
                + Rc[2, k] * (pos[n, 2] - clip_centre[c, 2])
            )
        quat_conj_mul(clip_quat[c], quat[r], p)
        if p[0] < 0.0:
            for k in range(4):
                p[k] = -p[k]
        w = p[0]
        for k in range(3):
            D[3 + k] = 2.0 * p[1 + k]
        for k in range(6):
            deflection[c, k] = D[k]
        KD = clip_K[c] @ D
        energy += 0.5 * (D[0] * KD[0] + D[1] * KD[1] + D[2] * KD[2] + D[3] * KD[3] + D[4] * KD[4] + D[5] * KD[5])
        if mode == 0:
            continue
        # dD_t/dx = R_c^T;  dD_r/dtheta = w I + [v]x  (body-frame perturbation of q)
        for a in range(3):
            for b in range(3):
                J[a, b] = Rc[b, a]
        vx, vy, vz = p[1], p[2], p[3]
        J[3, 3], J[3, 4], J[3, 5] = w, -vz, vy
        J[4, 3], J[4, 4], J[4, 5] = vz, w, -vx
        J[5, 3], J[5, 4], J[5, 5] = -vy, vx, w
        for col in range(6):
            g = 0.0
            for row in range(6):
                g += J[row, col] * KD[row]
            dof = node_dof[n] + col if col < 3 else rot_dof[r] + col - 3
            grad[dof] += g
        if mode < 2:
            continue
        JKJ = J.T @ clip_K[c] @ J
        for a in range(6):
            da = node_dof[n] + a if a < 3 else rot_dof[r] + a - 3
            for b in range(6):
                db = node_dof[n] + b if b < 3 else rot_dof[r] + b - 3
                _band_add(band, bw, da, db, JKJ[a, b])
    return energy
