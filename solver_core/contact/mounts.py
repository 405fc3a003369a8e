# SPDX-License-Identifier: GPL-3.0-or-later
"""Clips that do not simply hold nodes: sliding clips and compliant (flexible) clips.

Sliding clip (the clip of Lv 2017, Sec. 2.3, with the cable free to slide): at both end planes of the
clip, xi = (x - c) . a = +-h (a the axis, h half the clip length), the point where the cable crosses
the plane, p = x_i + t (x_j - x_i) with t = xi_i / (xi_i - xi_j), is pulled onto the axis line by a
stiff penalty k/2 |v|^2, v = P (p - c_h), P = I - a a^T. The crossing segment is found anew at every
Newton iteration and held within it; t follows the nodes, so the penalty is an energy of the state.
The force it puts on the crossing segment is normal to that segment (the derivative of p along the
segment vanishes): a frictionless ring, which lets the cable slide through and leaves the roll free,
and where the cable leaves the clip bent holds it along the axis by as much as such a ring does.

Compliant clip (Roller, Schneider-Jung, Linn, Eqs. 1-3 with the reduced stiffness matrix K of the
clip): the cable's node and frame at the clip are free and tied to the clip frame (R_c, c) by the
energy 1/2 D^T K D, D = (R_c^T (x - c), 2 vec(conj(q_c) q)); rows and columns of K act in the clip
frame (translation x, y, z, then rotation x, y, z).
"""

import math

import numpy as np

from .._jit import njit
from ..maths.rotations import quat_conj_mul, quat_to_matrix
from ..maths.small_dense import congruence, mat_vec
from ..rod.rod_energy import _band_add


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
    """Penalty of all sliding-clip planes at the segments (frozen) that cross them; offset[m] = |p - c|.

    The crossing parameter follows the nodes, t = xi_i / (xi_i - xi_j) with xi = (x - c) . a, so that
    p = x_i + t (x_j - x_i) lies on the plane and the energy k/2 |p - c|^2 is the energy of the state
    (with t frozen within an iteration, the energy at the next iteration's true crossing jumped: a
    cable paid out through a grommet rose from 3.7 to 12.6 kJ between two accepted steps).
    dp/dx_i = (1 - t) I + e (dt/dxi_i) a^T, dp/dx_j = t I + e (dt/dxi_j) a^T, e = x_j - x_i,
    dt/dxi_i = -xi_j / (xi_i - xi_j)^2, dt/dxi_j = xi_i / (xi_i - xi_j)^2. The Hessian is k J^T J
    (mode 3, the Gauss-Newton model) plus, in mode 2, k sum_r v_r d2p_r (v = p - c): the clip's force
    k v turning the crossing point, as large as the bending terms near a loaded clip (left out, the
    equipment bay's signal cable took 112 Newton iterations instead of 24). ``tpar`` is written with
    the current t."""
    energy = 0.0
    v = np.empty(3)
    e = np.empty(3)
    J = np.empty((3, 6))
    for m in range(plane_point.shape[0]):
        i = seg[m]
        if i < 0:
            offset[m] = np.inf
            continue
        j = i + 1
        c = plane_point[m]
        a = plane_axis[m]
        xi_i = (pos[i, 0] - c[0]) * a[0] + (pos[i, 1] - c[1]) * a[1] + (pos[i, 2] - c[2]) * a[2]
        xi_j = (pos[j, 0] - c[0]) * a[0] + (pos[j, 1] - c[1]) * a[1] + (pos[j, 2] - c[2]) * a[2]
        den = xi_i - xi_j
        if abs(den) < 1e-300:
            # the segment lies in the plane: the frozen parameter, as a point pulled onto the axis
            t = tpar[m]
            dti = 0.0
            dtj = 0.0
        else:
            t = xi_i / den
            dti = -xi_j / (den * den)
            dtj = xi_i / (den * den)
        tpar[m] = t
        for k in range(3):
            e[k] = pos[j, k] - pos[i, k]
            v[k] = pos[i, k] + t * e[k] - c[k]
        # the point is on the plane up to round-off; its axial part is taken off as before
        va = v[0] * a[0] + v[1] * a[1] + v[2] * a[2]
        for k in range(3):
            v[k] -= va * a[k]
        k_m = stiffness[m]
        vv = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
        energy += 0.5 * k_m * vv
        offset[m] = math.sqrt(vv)
        if mode == 0:
            continue
        for r in range(3):
            for s_ in range(3):
                ident = 1.0 if r == s_ else 0.0
                J[r, s_] = (1.0 - t) * ident + e[r] * dti * a[s_]
                J[r, 3 + s_] = t * ident + e[r] * dtj * a[s_]
        for col in range(6):
            g = k_m * (J[0, col] * v[0] + J[1, col] * v[1] + J[2, col] * v[2])
            node = i if col < 3 else j
            grad[node_dof[node] + col % 3] += g
        if mode < 2:
            continue
        for c1 in range(6):
            n1 = i if c1 < 3 else j
            for c2 in range(6):
                n2 = i if c2 < 3 else j
                h = k_m * (J[0, c1] * J[0, c2] + J[1, c1] * J[1, c2] + J[2, c1] * J[2, c2])
                _band_add(band, bw, node_dof[n1] + c1 % 3, node_dof[n2] + c2 % 3, h)
        if mode != 2 or abs(den) < 1e-300:
            continue
        # d2p_r / dx_alpha,s dx_beta,u = sigma_alpha delta_rs dt_beta,u + sigma_beta delta_ru dt_alpha,s
        # + e_r d2t (sigma_i = -1, sigma_j = 1: from dp = (1 - t) dx_i + t dx_j + e dt); t = xi_i / den
        # has d2t/dxi_i2 = 2 xi_j / den^3, d2t/dxi_i dxi_j = -(xi_i + xi_j) / den^3, d2t/dxi_j2 = 2 xi_i / den^3
        ve = v[0] * e[0] + v[1] * e[1] + v[2] * e[2]
        inv3 = 1.0 / (den * den * den)
        for alpha in range(2):
            n1 = i if alpha == 0 else j
            s1 = -1.0 if alpha == 0 else 1.0
            dt1 = dti if alpha == 0 else dtj
            for beta in range(2):
                n2 = i if beta == 0 else j
                s2 = -1.0 if beta == 0 else 1.0
                dt2 = dti if beta == 0 else dtj
                if alpha == 0 and beta == 0:
                    d2t = 2.0 * xi_j * inv3
                elif alpha == 1 and beta == 1:
                    d2t = 2.0 * xi_i * inv3
                else:
                    d2t = -(xi_i + xi_j) * inv3
                for r in range(3):
                    for u in range(3):
                        h = k_m * (s1 * v[r] * dt2 * a[u] + s2 * v[u] * dt1 * a[r] + ve * d2t * a[r] * a[u])
                        _band_add(band, bw, node_dof[n1] + r, node_dof[n2] + u, h)
    return energy


@njit
def compliant_energy(pos, quat, node_dof, rot_dof, clips, grad, band, bw, mode, deflection):
    """Spring energy of the compliant clips ``clips`` (kernel_arrays.CompliantClips); deflection[c] =
    (D_translation, D_rotation) in the clip frame. Mode 2 adds the Hessian's second-order term of the
    rotation, mode 3 is k J^T J alone."""
    clip_node, clip_rot, clip_centre, clip_quat, clip_K = clips.node, clips.rot, clips.centre, clips.quat, clips.K
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
        KD = mat_vec(clip_K[c], D)
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
        JKJ = congruence(J, clip_K[c])
        if mode == 2:
            # exact: the vector part of p exp(theta / 2) has the second-order term -|theta|^2 v / 8, so
            # D_r has -|theta|^2 v / 4 and the Hessian -(K D)_r . v / 2 on the rotation block. A clip
            # carrying the cable's bending moment is tilted by it, and this term is then of the size of
            # the cable's softest stiffness near a soft clip
            vk = 0.5 * (vx * KD[3] + vy * KD[4] + vz * KD[5])
            for a in range(3, 6):
                JKJ[a, a] -= vk
        for a in range(6):
            da = node_dof[n] + a if a < 3 else rot_dof[r] + a - 3
            for b in range(6):
                db = node_dof[n] + b if b < 3 else rot_dof[r] + b - 3
                # zero blocks are skipped: the proximal springs of pseudo-time hold nodes only
                if JKJ[a, b] != 0.0:
                    _band_add(band, bw, da, db, JKJ[a, b])
    return energy
