# SPDX-License-Identifier: GPL-3.0-or-later
"""Potential energy of the discrete Cosserat rod, its gradient and its Hessian.

Staggered grid (Roller et al., Sec. 2): positions x_n at nodes, one unit quaternion per segment,
plus "frame" quaternions at clamped ends and point clips that act like the boundary quaternions
of that paper. All rotational degrees of freedom are body-frame rotation vectors theta about
the current quaternions, q <- q * exp(theta/2), so the gradient and Hessian below are those of
f(theta) = E(q * exp(theta/2)) at theta = 0, which is what a Newton step on SO(3) needs.

Energies:
- stretch/shear per segment, Gamma = R^T (x_{i+1} - x_i) / l - e3 (Chen 2023, Eq. 11),
  E = l/2 * Gamma^T diag(GA, GA, EA) Gamma;
- bend/twist per joint between two rotations a, b, with the discrete Darboux vector
  Omega = (2 / l_bar) vec(conj(q_a) q_b) (Chen 2023, Eqs. 9-10), E = l_bar/2 * (Omega - Omega0)^T
  diag(EI, EI, GJ) (Omega - Omega0), Omega0 that of the unstressed cable (rest_shape.py; zero when
  straight);
- dead loads (gravity, point forces) E = -F . x; world couples enter the gradient only.
"""

import numpy as np

from .._jit import njit
from ..maths.rotations import quat_conj_mul, quat_to_matrix


@njit
def _band_add(band, bw, gi, gj, value):
    # Lower band stored by rows: band[i, bw - (i - j)] = H[i, j] for 0 <= i - j <= bw.
    if gi >= gj:
        band[gi, bw - (gi - gj)] += value


@njit
def _material_edge(pos, quat, i, R, u):
    """R = material frame of segment i, u = R^T (x_{i+1} - x_i): the edge seen from that frame."""
    quat_to_matrix(quat[i], R)
    ex = pos[i + 1, 0] - pos[i, 0]
    ey = pos[i + 1, 1] - pos[i, 1]
    ez = pos[i + 1, 2] - pos[i, 2]
    for k in range(3):
        u[k] = R[0, k] * ex + R[1, k] * ey + R[2, k] * ez


@njit
def rod_energy(pos, quat, rod, load_factor):
    """Elastic energy plus the potential of the dead node forces (scaled by load_factor) of the rod
    ``rod`` (kernel_arrays.RodArrays)."""
    rest_len, stretch_stiff, joint_len, bend_stiff = rod.rest_len, rod.stretch_stiff, rod.joint_len, rod.bend_stiff
    joint_a, joint_b, bend_rest, node_force = rod.joint_a, rod.joint_b, rod.bend_rest, rod.node_force
    R = np.empty((3, 3))
    u = np.empty(3)
    p = np.empty(4)
    energy = 0.0
    for i in range(rest_len.shape[0]):
        _material_edge(pos, quat, i, R, u)
        l = rest_len[i]
        for k in range(3):
            g = u[k] / l - (1.0 if k == 2 else 0.0)
            energy += 0.5 * l * stretch_stiff[i, k] * g * g
    for j in range(joint_a.shape[0]):
        quat_conj_mul(quat[joint_a[j]], quat[joint_b[j]], p)
        sign = -1.0 if p[0] < 0.0 else 1.0  # q and -q are one rotation: the representative with w >= 0
        lb = joint_len[j]
        for k in range(3):
            d = sign * p[1 + k] - bend_rest[j, k]
            energy += (2.0 / lb) * bend_stiff[j, k] * d * d
    for n in range(pos.shape[0]):
        energy -= load_factor * (
            node_force[n, 0] * pos[n, 0] + node_force[n, 1] * pos[n, 1] + node_force[n, 2] * pos[n, 2]
        )
    return energy


@njit
def rod_gradient_hessian(pos, quat, rod, load_factor, grad, band, bw, with_hessian, geometric):
    """Assemble the gradient (and, if with_hessian, the lower band of ``bw`` of the Hessian) of the rod
    ``rod`` (kernel_arrays.RodArrays) in place.

    The Hessian is J^T C J (always positive semi-definite) plus ``geometric`` times the terms
    from the curvature of the strains (geometric stiffness). geometric = 1 gives the exact
    Hessian; geometric = 0 the Gauss-Newton matrix used when the exact one is indefinite.
    """
    node_dof, rot_dof, rest_len, stretch_stiff = rod.node_dof, rod.rot_dof, rod.rest_len, rod.stretch_stiff
    joint_a, joint_b, joint_len, bend_stiff = rod.joint_a, rod.joint_b, rod.joint_len, rod.bend_stiff
    bend_rest, node_force, rot_couple = rod.bend_rest, rod.node_force, rod.rot_couple
    grad[:] = 0.0
    if with_hessian:
        band[:, :] = 0.0
    R = np.empty((3, 3))
    u = np.empty(3)
    n = np.empty(3)
    c = np.empty(3)
    A = np.empty((3, 3))  # [v]x^T diag(C/l)
    Hee = np.empty((3, 3))
    Htt = np.empty((3, 3))
    Hte = np.empty((3, 3))
    loc = np.empty((9, 9))
    idx = np.empty(9, dtype=np.int64)
    p = np.empty(4)
    Ja = np.empty((3, 3))
    Jb = np.empty((3, 3))
    m = np.empty(3)
    kb = np.empty(3)
    loc6 = np.empty((6, 6))
    idx6 = np.empty(6, dtype=np.int64)

    # ---- stretch / shear, one element per segment: dofs x_i, theta_i, x_{i+1} ----
    for i in range(rest_len.shape[0]):
        if stretch_stiff[i, 0] == 0.0 and stretch_stiff[i, 1] == 0.0 and stretch_stiff[i, 2] == 0.0:
            continue  # no stiffness, nothing to assemble (a group's link, rod_group.py: it need not be in the band)
        _material_edge(pos, quat, i, R, u)
        l = rest_len[i]
        for k in range(3):
            c[k] = stretch_stiff[i, k] / l
        # n = dE/du = diag(C) Gamma, the internal force in the material frame (Chen 2023, Eq. 11)
        n[0] = stretch_stiff[i, 0] * (u[0] / l)
        n[1] = stretch_stiff[i, 1] * (u[1] / l)
        n[2] = stretch_stiff[i, 2] * (u[2] / l - 1.0)
        fx = R[0, 0] * n[0] + R[0, 1] * n[1] + R[0, 2] * n[2]
        fy = R[1, 0] * n[0] + R[1, 1] * n[1] + R[1, 2] * n[2]
        fz = R[2, 0] * n[0] + R[2, 1] * n[1] + R[2, 2] * n[2]
        a0 = node_dof[i]
        a1 = node_dof[i + 1]
        r0 = rot_dof[i]
        grad[a0] -= fx
        grad[a0 + 1] -= fy
        grad[a0 + 2] -= fz
        grad[a1] += fx
        grad[a1 + 1] += fy
        grad[a1 + 2] += fz
        # dE/dtheta = n x u, since du/dtheta = [u]x at theta = 0
        grad[r0] += n[1] * u[2] - n[2] * u[1]
        grad[r0 + 1] += n[2] * u[0] - n[0] * u[2]
        grad[r0 + 2] += n[0] * u[1] - n[1] * u[0]
        if not with_hessian:
            continue
        # H_ee = R diag(C/l) R^T
        for r in range(3):
            for s in range(3):
                Hee[r, s] = R[r, 0] * c[0] * R[s, 0] + R[r, 1] * c[1] * R[s, 1] + R[r, 2] * c[2] * R[s, 2]
        # A = [u]x^T diag(c): row r of [u]x^T is -(row r of [u]x)
        A[0, 0] = 0.0
        A[0, 1] = u[2] * c[1]
        A[0, 2] = -u[1] * c[2]
        A[1, 0] = -u[2] * c[0]
        A[1, 1] = 0.0
        A[1, 2] = u[0] * c[2]
        A[2, 0] = u[1] * c[0]
        A[2, 1] = -u[0] * c[1]
        A[2, 2] = 0.0
        nu = geometric * (n[0] * u[0] + n[1] * u[1] + n[2] * u[2])
        # H_tt = [u]x^T diag(c) [u]x + (n u^T + u n^T)/2 - (n.u) I   (second-order term of exp)
        for r in range(3):
            for s in range(3):
                # column s of [u]x = [[0,-u2,u1],[u2,0,-u0],[-u1,u0,0]]
                ux0 = (0.0, -u[2], u[1])[s]
                ux1 = (u[2], 0.0, -u[0])[s]
                ux2 = (-u[1], u[0], 0.0)[s]
                Htt[r, s] = (
                    A[r, 0] * ux0 + A[r, 1] * ux1 + A[r, 2] * ux2 + 0.5 * geometric * (n[r] * u[s] + u[r] * n[s])
                )
            Htt[r, r] -= nu
        # H_te = ([u]x^T diag(c) + [n]x) R^T  (rows theta, columns e)
        for r in range(3):
            nx0 = (0.0, n[2], -n[1])[r]
            nx1 = (-n[2], 0.0, n[0])[r]
            nx2 = (n[1], -n[0], 0.0)[r]
            b0 = A[r, 0] + geometric * nx0
            b1 = A[r, 1] + geometric * nx1
            b2 = A[r, 2] + geometric * nx2
            for s in range(3):
                Hte[r, s] = b0 * R[s, 0] + b1 * R[s, 1] + b2 * R[s, 2]
        # local order: x_i (0..2), theta_i (3..5), x_{i+1} (6..8); e = x_{i+1} - x_i
        for r in range(3):
            for s in range(3):
                loc[r, s] = Hee[r, s]
                loc[6 + r, 6 + s] = Hee[r, s]
                loc[r, 6 + s] = -Hee[r, s]
                loc[6 + r, s] = -Hee[s, r]
                loc[3 + r, 3 + s] = Htt[r, s]
                loc[3 + r, 6 + s] = Hte[r, s]
                loc[6 + s, 3 + r] = Hte[r, s]
                loc[3 + r, s] = -Hte[r, s]
                loc[s, 3 + r] = -Hte[r, s]
        for k in range(3):
            idx[k] = a0 + k
            idx[3 + k] = r0 + k
            idx[6 + k] = a1 + k
        for r in range(9):
            for s in range(9):
                _band_add(band, bw, idx[r], idx[s], loc[r, s])

    # ---- bend / twist, one element per joint: dofs theta_a, theta_b ----
    for j in range(joint_a.shape[0]):
        ia = joint_a[j]
        ib = joint_b[j]
        quat_conj_mul(quat[ia], quat[ib], p)
        if p[0] < 0.0:
            # q and -q are one rotation; use the representative with w >= 0
            for k in range(4):
                p[k] = -p[k]
        w = p[0]
        lb = joint_len[j]
        for k in range(3):
            kb[k] = 4.0 * bend_stiff[j, k] / lb
            m[k] = kb[k] * (p[1 + k] - bend_rest[j, k])  # dE/dvec(p), measured from the rest shape
        vx, vy, vz = p[1], p[2], p[3]
        # d vec(p) / d theta_a = (-w I + [v]x)/2,  d vec(p) / d theta_b = (w I + [v]x)/2
        Ja[0, 0] = -0.5 * w
        Ja[0, 1] = -0.5 * vz
        Ja[0, 2] = 0.5 * vy
        Ja[1, 0] = 0.5 * vz
        Ja[1, 1] = -0.5 * w
        Ja[1, 2] = -0.5 * vx
        Ja[2, 0] = -0.5 * vy
        Ja[2, 1] = 0.5 * vx
        Ja[2, 2] = -0.5 * w
        for r in range(3):
            for s in range(3):
                Jb[r, s] = Ja[r, s]
            Jb[r, r] = 0.5 * w
        ga0 = rot_dof[ia]
        gb0 = rot_dof[ib]
        for k in range(3):
            grad[ga0 + k] += Ja[0, k] * m[0] + Ja[1, k] * m[1] + Ja[2, k] * m[2]
            grad[gb0 + k] += Jb[0, k] * m[0] + Jb[1, k] * m[1] + Jb[2, k] * m[2]
        if not with_hessian:
            continue
        mv = geometric * (m[0] * vx + m[1] * vy + m[2] * vz)
        v = (vx, vy, vz)
        for r in range(3):
            for s in range(3):
                haa = Ja[0, r] * kb[0] * Ja[0, s] + Ja[1, r] * kb[1] * Ja[1, s] + Ja[2, r] * kb[2] * Ja[2, s]
                hbb = Jb[0, r] * kb[0] * Jb[0, s] + Jb[1, r] * kb[1] * Jb[1, s] + Jb[2, r] * kb[2] * Jb[2, s]
                hab = Ja[0, r] * kb[0] * Jb[0, s] + Ja[1, r] * kb[1] * Jb[1, s] + Ja[2, r] * kb[2] * Jb[2, s]
                # second-order terms of vec(conj(dq_a) p dq_b), contracted with m, times 1/4 for theta = 2a
                hab += 0.25 * geometric * (m[r] * v[s] + v[r] * m[s])
                if r == s:
                    haa -= 0.25 * mv
                    hbb -= 0.25 * mv
                    hab -= 0.25 * mv
                loc6[r, s] = haa
                loc6[3 + r, 3 + s] = hbb
                loc6[r, 3 + s] = hab
                loc6[3 + s, r] = hab
        # + w [m]x / 4 in the (a, b) block
        wm = 0.25 * geometric * w
        loc6[0, 4] += -wm * m[2]
        loc6[0, 5] += wm * m[1]
        loc6[1, 3] += wm * m[2]
        loc6[1, 5] += -wm * m[0]
        loc6[2, 3] += -wm * m[1]
        loc6[2, 4] += wm * m[0]
        loc6[4, 0] += -wm * m[2]
        loc6[5, 0] += wm * m[1]
        loc6[3, 1] += wm * m[2]
        loc6[5, 1] += -wm * m[0]
        loc6[3, 2] += -wm * m[1]
        loc6[4, 2] += wm * m[0]
        for k in range(3):
            idx6[k] = ga0 + k
            idx6[3 + k] = gb0 + k
        for r in range(6):
            for s in range(6):
                _band_add(band, bw, idx6[r], idx6[s], loc6[r, s])

    # ---- dead loads: node forces and world couples (gradient of -F.x and -M.(R dtheta)) ----
    for i in range(pos.shape[0]):
        a0 = node_dof[i]
        for k in range(3):
            grad[a0 + k] -= load_factor * node_force[i, k]
    for r in range(quat.shape[0]):
        if rot_couple[r, 0] == 0.0 and rot_couple[r, 1] == 0.0 and rot_couple[r, 2] == 0.0:
            continue
        quat_to_matrix(quat[r], R)
        g0 = rot_dof[r]
        for k in range(3):
            grad[g0 + k] -= load_factor * (
                R[0, k] * rot_couple[r, 0] + R[1, k] * rot_couple[r, 1] + R[2, k] * rot_couple[r, 2]
            )


@njit
def rod_strains(pos, quat, rod, stretch_strain, bend_strain):
    """Strain vectors: Gamma per segment (material frame) and vec(conj(q_a) q_b) per joint."""
    rest_len, joint_a, joint_b = rod.rest_len, rod.joint_a, rod.joint_b
    R = np.empty((3, 3))
    u = np.empty(3)
    p = np.empty(4)
    for i in range(rest_len.shape[0]):
        _material_edge(pos, quat, i, R, u)
        for k in range(3):
            stretch_strain[i, k] = u[k] / rest_len[i]
        stretch_strain[i, 2] -= 1.0
    for j in range(joint_a.shape[0]):
        quat_conj_mul(quat[joint_a[j]], quat[joint_b[j]], p)
        sign = -1.0 if p[0] < 0.0 else 1.0
        for k in range(3):
            bend_strain[j, k] = sign * p[1 + k]


@njit
def strain_jacobian_transpose(pos, quat, rod, stretch_strain, bend_strain, out):
    """out = J^T W r for strain-shaped vectors r: the gradient the energy would have if its strains were r.

    W holds the element weights (l diag(GA, GA, EA) for stretch, 4/l_bar diag(EI, EI, GJ) for
    bend/twist) and J the strain derivatives at the current state, the same ones that make up
    the Gauss-Newton matrix J^T W J.
    """
    node_dof, rot_dof, rest_len, stretch_stiff = rod.node_dof, rod.rot_dof, rod.rest_len, rod.stretch_stiff
    joint_a, joint_b, joint_len, bend_stiff = rod.joint_a, rod.joint_b, rod.joint_len, rod.bend_stiff
    out[:] = 0.0
    R = np.empty((3, 3))
    u = np.empty(3)
    p = np.empty(4)
    for i in range(rest_len.shape[0]):
        _material_edge(pos, quat, i, R, u)
        u0, u1, u2 = u[0], u[1], u[2]
        # dGamma/de = R^T / l and dGamma/dtheta = [u]x / l, weighted by l C
        n0 = stretch_stiff[i, 0] * stretch_strain[i, 0]
        n1 = stretch_stiff[i, 1] * stretch_strain[i, 1]
        n2 = stretch_stiff[i, 2] * stretch_strain[i, 2]
        a0 = node_dof[i]
        a1 = node_dof[i + 1]
        r0 = rot_dof[i]
        for k in range(3):
            f = R[k, 0] * n0 + R[k, 1] * n1 + R[k, 2] * n2
            out[a0 + k] -= f
            out[a1 + k] += f
        out[r0] += n1 * u2 - n2 * u1
        out[r0 + 1] += n2 * u0 - n0 * u2
        out[r0 + 2] += n0 * u1 - n1 * u0
    for j in range(joint_a.shape[0]):
        quat_conj_mul(quat[joint_a[j]], quat[joint_b[j]], p)
        w = abs(p[0])
        sign = -1.0 if p[0] < 0.0 else 1.0
        vx, vy, vz = sign * p[1], sign * p[2], sign * p[3]
        c = 4.0 / joint_len[j]
        m0 = c * bend_stiff[j, 0] * bend_strain[j, 0]
        m1 = c * bend_stiff[j, 1] * bend_strain[j, 1]
        m2 = c * bend_stiff[j, 2] * bend_strain[j, 2]
        ga = rot_dof[joint_a[j]]
        gb = rot_dof[joint_b[j]]
        # J_a^T m = (-w m - v x m) / 2,  J_b^T m = (w m - v x m) / 2
        cx = vy * m2 - vz * m1
        cy = vz * m0 - vx * m2
        cz = vx * m1 - vy * m0
        out[ga] += 0.5 * (-w * m0 - cx)
        out[ga + 1] += 0.5 * (-w * m1 - cy)
        out[ga + 2] += 0.5 * (-w * m2 - cz)
        out[gb] += 0.5 * (w * m0 - cx)
        out[gb + 1] += 0.5 * (w * m1 - cy)
        out[gb + 2] += 0.5 * (w * m2 - cz)
