# SPDX-License-Identifier: GPL-3.0-or-later
"""The Cosserat rod of Chen, Zhang, Zhu and Zuo (seed 002) solved by position-based dynamics
(solver.model "cosserat_pbd").

The unknowns are the rod model's: node positions and one unit quaternion per segment (plus the
clamped ends' boundary quaternions, held). The constraints are the paper's, with XPBD compliance
(Macklin et al. 2016) so that the stiffness is the material's and not the iteration count's:

- stretch-shear per segment, C_s = R(q)^T (p2 - p1) / l - e3 (Chen 2023, Eq. 12, in the material
  frame), compliance 1 / (l diag(GA, GA, EA));
- bend-twist per joint between two quaternions, C_b = Im(conj(q) u) - Im(conj(q0) u0) (Eq. 13, the
  representative with a non-negative real part), compliance l^ / (4 diag(EI, EI, GJ)) (the energy
  l^/2 |Omega|^2 K with Omega = 2/l^ Im(conj(q) u), Eq. 9).

Their energy is rod_energy.py's (the same discrete rod), which is what lets every state be judged
by the rod's own gradient and Hessian.

Each time step predicts the positions from the velocities and the dead loads (Eqs. 14-15) and
projects the constraints (Eqs. 16-17). Eq. 17 is the projection on all constraints at once,
dp = -W grad C^T (grad C W grad C^T)^-1 C; the paper sweeps it constraint by constraint
(Gauss-Seidel). For a cable the sweeps do not converge within a step (the stretch-shear
constraints are some (L/d)^2 stiffer than bending; measured on a 0.3 m, 4 mm cantilever at
20 segments: 20 s of sweeps left the forces 1e6 times the tolerance), and an XPBD step whose
projection has not converged is softer than the material by an amount that depends on the
iteration count. Here each step's projection is solved as the direct position-based solver of
Deul, Kugelstadt, Weiler and Bender (2018) does: Eq. 17 with the matrix grad C W grad C^T + a~
assembled over all constraints (banded: a constraint touches its neighbours' only) and factored,
repeated with XPBD's primal residual g = M (x - x~) - grad C^T lambda kept in the right-hand side
(Macklin et al. 2016, Eq. 8 with g), so the step converges to the implicit step exactly.

A rest state is reached by the paper's dynamics damped to rest (solve_pbd), until every free
degree of freedom's force is within the rod model's tolerance; the rest state is then tested for a
minimum with the rod's Hessian (stability.py) and a saddle is left along its lowest mode. The
projections leave out the constraints' geometric stiffness (XPBD's approximation): they converge
linearly, and only for time steps short enough that the masses dominate it, which is what bounds
the time step on stiff cables. Where that bound stops the steps from growing, implicit Euler steps
with the whole Hessian finish the rest search (pbd_implicit.py). Dynamic cases step the XPBD loop
at the case's time step (pbd_dynamics.py).
"""

import math
import time
from typing import NamedTuple

import numpy as np

from .._jit import njit
from ..kernel_arrays import LowRankCoupling
from ..maths.banded import band_cholesky, band_cholesky_solve
from ..maths.rotations import quat_retract, quat_to_matrix
from ..rod.rod_state import RodState
from ..solve.diagnostics import elastic_and_load_energy
from ..solve.end_stiffness import hessian_band
from ..solve.newton import rod_gradient
from ..solve.newton_assembly import constrained_residual, prepare_system, retract
from ..solve.stability import factor_shifted, negative_curvature_direction, stability_shift
from .pbd_implicit import implicit_steps, lumped_inertia

MAX_STEPS = 400  # time steps per solve (the harness passes its own budget)
STEP_ITERATIONS = 60  # projections per step before the step is taken again with half the time step
QUICK_STEP = 12  # a step that converged within this many projections doubles the next one
MOVE_LIMIT = 0.5  # a projection moving a node by more than this many segment lengths (or a
# rotation by more radians) has left the region where its linearisation holds: the step is halved
MOVE_TOLERANCE = 1e-10  # a step has converged when no projection moves anything more (relative)
STEP_REDUCTION = 1e-3
DIVERGED_AFTER = 8  # projections after which a step whose moves have not shrunk is given up
LONGEST_STEP = 1e6  # the longest time step, in first time steps (FIRST_STEP_PERIODS)
GROW_AFTER = 8  # quick steps in a row after a failed one before the time step is doubled again
FIRST_STEP_PERIODS = 0.05  # the first time step, in periods of the cantilever's first bending mode
SADDLE_ESCAPES = 5


class PbdArrays(NamedTuple):
    """The constraints of one cable, their compliances and the masses (rod model's numbering)."""

    rest: np.ndarray  # (m,) segment rest lengths [m]
    stretch_compliance: np.ndarray  # (m, 3) 1 / (l GA), 1 / (l GA), 1 / (l EA) [1/N]
    joint_a: np.ndarray  # (j,) rotation before each joint
    joint_b: np.ndarray  # (j,) rotation after it
    bend_compliance: np.ndarray  # (j, 3) l^ / (4 EI), l^ / (4 EI), l^ / (4 GJ) [1/(N m)]
    bend_rest: np.ndarray  # (j, 3) Im(conj(q0) u0) of the unstressed cable
    node_weight: np.ndarray  # (n,) 1 / mass [1/kg], 0 where held
    rot_weight: np.ndarray  # (r, 3) 1 / rotary inertia about each body axis [1/(kg m^2)], 0 where held
    force: np.ndarray  # (n, 3) weight and point loads [N]
    block: np.ndarray  # (m + j,) band position of each constraint (stretch first, then joints)
    touch: np.ndarray  # (n + r, 3, 2) per dof block: (constraint, slot) pairs acting on it, -1 unused
    slot_dof: np.ndarray  # (m + j, 3) dof block of each constraint's Jacobian slot, -1 unused
    bw: int  # half band width of grad C W grad C^T (scalar rows)
    weight: np.ndarray  # (n + r, 3) per dof block and component: node_weight, then rot_weight


class Workspace(NamedTuple):
    jac: np.ndarray  # (m + j, 3, 3, 3) per constraint and slot: dC / d(dof), rows the components
    value: np.ndarray  # (m + j, 3) C
    lam: np.ndarray  # (m + j, 3) multipliers of this step
    wg: np.ndarray  # (n + r, 3) W g per dof block
    band: np.ndarray  # (3 (m + j), bw + 1)
    rhs: np.ndarray
    dlam: np.ndarray
    move: np.ndarray  # (n + r, 3)


@njit
def _constraints(x, q, a, ws):
    """C and its Jacobians: positions in world coordinates, rotations as body-frame rotation vectors
    (q <- q exp(theta / 2), as rod_energy.py)."""
    m = a.rest.shape[0]
    R = np.empty((3, 3))
    p = np.empty(4)
    for i in range(m):
        quat_to_matrix(q[i], R)
        length = a.rest[i]
        e0, e1, e2 = x[i + 1, 0] - x[i, 0], x[i + 1, 1] - x[i, 1], x[i + 1, 2] - x[i, 2]
        u0 = (R[0, 0] * e0 + R[1, 0] * e1 + R[2, 0] * e2) / length
        u1 = (R[0, 1] * e0 + R[1, 1] * e1 + R[2, 1] * e2) / length
        u2 = (R[0, 2] * e0 + R[1, 2] * e1 + R[2, 2] * e2) / length
        ws.value[i, 0], ws.value[i, 1], ws.value[i, 2] = u0, u1, u2 - 1.0
        for k in range(3):
            for c in range(3):
                ws.jac[i, 0, k, c] = -R[c, k] / length  # p1
                ws.jac[i, 1, k, c] = R[c, k] / length  # p2
        # d u / d theta = [u]x (the edge seen from a turned frame): row k is e_k x u
        J = ws.jac[i, 2]
        J[0, 0], J[0, 1], J[0, 2] = 0.0, -u2, u1
        J[1, 0], J[1, 1], J[1, 2] = u2, 0.0, -u0
        J[2, 0], J[2, 1], J[2, 2] = -u1, u0, 0.0
    for j in range(a.joint_a.shape[0]):
        c_ = m + j
        qa, qb = q[a.joint_a[j]], q[a.joint_b[j]]
        p[0] = qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2] + qa[3] * qb[3]
        p[1] = qa[0] * qb[1] - qa[1] * qb[0] - qa[2] * qb[3] + qa[3] * qb[2]
        p[2] = qa[0] * qb[2] + qa[1] * qb[3] - qa[2] * qb[0] - qa[3] * qb[1]
        p[3] = qa[0] * qb[3] - qa[1] * qb[2] + qa[2] * qb[1] - qa[3] * qb[0]
        s = -1.0 if p[0] < 0.0 else 1.0
        rw, r0, r1, r2 = s * p[0], s * p[1], s * p[2], s * p[3]
        for k in range(3):
            ws.value[c_, k] = (r0, r1, r2)[k] - a.bend_rest[j, k]
        # d Im(conj(qa) qb): turning qb by theta gives (rw I + [r]x) theta / 2, turning qa
        # gives (-rw I + [r]x) theta / 2
        Ja, Jb = ws.jac[c_, 0], ws.jac[c_, 1]
        Ja[0, 0], Ja[0, 1], Ja[0, 2] = -0.5 * rw, -0.5 * r2, 0.5 * r1
        Ja[1, 0], Ja[1, 1], Ja[1, 2] = 0.5 * r2, -0.5 * rw, -0.5 * r0
        Ja[2, 0], Ja[2, 1], Ja[2, 2] = -0.5 * r1, 0.5 * r0, -0.5 * rw
        Jb[0, 0], Jb[0, 1], Jb[0, 2] = 0.5 * rw, -0.5 * r2, 0.5 * r1
        Jb[1, 0], Jb[1, 1], Jb[1, 2] = 0.5 * r2, 0.5 * rw, -0.5 * r0
        Jb[2, 0], Jb[2, 1], Jb[2, 2] = -0.5 * r1, 0.5 * r0, 0.5 * rw


@njit
def _compliance(a, c, k, inv_h2):
    m = a.rest.shape[0]
    if c < m:
        return a.stretch_compliance[c, k] * inv_h2
    return a.bend_compliance[c - m, k] * inv_h2


@njit
def _offset(x, q, x_pred, q_pred, d, n, out):
    """x - x~ of dof block d: a position's difference, a rotation's body-frame rotation vector from
    the predicted quaternion (2 Im(conj(q~) q), the representative with a non-negative real part)."""
    if d < n:
        for k in range(3):
            out[k] = x[d, k] - x_pred[d, k]
        return
    r = d - n
    qa, qb = q_pred[r], q[r]
    w = qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2] + qa[3] * qb[3]
    s = -2.0 if w < 0.0 else 2.0
    out[0] = s * (qa[0] * qb[1] - qa[1] * qb[0] - qa[2] * qb[3] + qa[3] * qb[2])
    out[1] = s * (qa[0] * qb[2] + qa[1] * qb[3] - qa[2] * qb[0] - qa[3] * qb[1])
    out[2] = s * (qa[0] * qb[3] - qa[1] * qb[2] + qa[2] * qb[1] - qa[3] * qb[0])


@njit
def project(x, q, x_pred, q_pred, a, ws, inv_h2):
    """One projection of all constraints at once (Chen 2023, Eq. 17, with XPBD's compliance and
    primal residual): solve (grad C W grad C^T + a~) dlam = -(C + a~ lam) + grad C W g, move the
    dofs by W (grad C^T dlam - g). Returns (the largest move relative to the shortest segment or a
    radian, whether the matrix factored)."""
    n = x.shape[0]
    nb = ws.wg.shape[0]
    nc = ws.value.shape[0]
    _constraints(x, q, a, ws)
    weight = a.weight
    off = np.empty(3)
    # W g = (x - x~) - W grad C^T lam, per dof block (zero in held components)
    for d in range(nb):
        ws.wg[d, 0] = ws.wg[d, 1] = ws.wg[d, 2] = 0.0
        if weight[d, 0] == 0.0 and weight[d, 1] == 0.0 and weight[d, 2] == 0.0:
            continue
        _offset(x, q, x_pred, q_pred, d, n, off)
        for k in range(3):
            if weight[d, k] > 0.0:
                ws.wg[d, k] = off[k]
        for t in range(3):
            c = a.touch[d, t, 0]
            if c < 0:
                continue
            J = ws.jac[c, a.touch[d, t, 1]]
            for k in range(3):
                ws.wg[d, k] -= weight[d, k] * (J[0, k] * ws.lam[c, 0] + J[1, k] * ws.lam[c, 1] + J[2, k] * ws.lam[c, 2])
    bw = a.bw
    ws.band[:, :] = 0.0
    for c in range(nc):
        rb = 3 * a.block[c]
        for k in range(3):
            alpha = _compliance(a, c, k, inv_h2)
            ws.rhs[rb + k] = -(ws.value[c, k] + alpha * ws.lam[c, k])
            ws.band[rb + k, bw] += alpha
        for s in range(3):
            d = a.slot_dof[c, s]
            if d < 0:
                continue
            J = ws.jac[c, s]
            for k in range(3):
                ws.rhs[rb + k] += J[k, 0] * ws.wg[d, 0] + J[k, 1] * ws.wg[d, 1] + J[k, 2] * ws.wg[d, 2]
    # grad C W grad C^T: every pair of constraints acting on one dof block
    for d in range(nb):
        w0, w1, w2 = weight[d, 0], weight[d, 1], weight[d, 2]
        if w0 == 0.0 and w1 == 0.0 and w2 == 0.0:
            continue
        for t1 in range(3):
            c1 = a.touch[d, t1, 0]
            if c1 < 0:
                continue
            J1 = ws.jac[c1, a.touch[d, t1, 1]]
            for t2 in range(3):
                c2 = a.touch[d, t2, 0]
                if c2 < 0:
                    continue
                J2 = ws.jac[c2, a.touch[d, t2, 1]]
                r1, r2 = 3 * a.block[c1], 3 * a.block[c2]
                for k1 in range(3):
                    for k2 in range(3):
                        gi, gj = r1 + k1, r2 + k2
                        if gi >= gj:
                            ws.band[gi, bw - (gi - gj)] += (
                                w0 * J1[k1, 0] * J2[k2, 0] + w1 * J1[k1, 1] * J2[k2, 1] + w2 * J1[k1, 2] * J2[k2, 2]
                            )
    if not band_cholesky(ws.band, bw):
        return np.inf, False
    band_cholesky_solve(ws.band, bw, ws.rhs, ws.dlam)
    for c in range(nc):
        rb = 3 * a.block[c]
        for k in range(3):
            ws.lam[c, k] += ws.dlam[rb + k]
    largest = 0.0
    theta = np.empty(3)
    moved = np.empty(4)
    scale = 1.0 / a.rest.min()
    for d in range(nb):
        if weight[d, 0] == 0.0 and weight[d, 1] == 0.0 and weight[d, 2] == 0.0:
            continue
        for k in range(3):
            ws.move[d, k] = -ws.wg[d, k]
        for t in range(3):
            c = a.touch[d, t, 0]
            if c < 0:
                continue
            J = ws.jac[c, a.touch[d, t, 1]]
            rb = 3 * a.block[c]
            for k in range(3):
                ws.move[d, k] += weight[d, k] * (
                    J[0, k] * ws.dlam[rb] + J[1, k] * ws.dlam[rb + 1] + J[2, k] * ws.dlam[rb + 2]
                )
        size = math.sqrt(ws.move[d, 0] ** 2 + ws.move[d, 1] ** 2 + ws.move[d, 2] ** 2)
        if d < n:
            for k in range(3):
                x[d, k] += ws.move[d, k]
            size *= scale
        else:
            for k in range(3):
                theta[k] = ws.move[d, k]
            quat_retract(q[d - n], theta, moved)
            q[d - n, :] = moved
        if not (size <= largest):
            largest = size
    return largest, True


@njit
def time_step(x, q, v, a, ws, h, max_iterations, move_tolerance, reduction=STEP_REDUCTION):
    """One XPBD step of length h from (x, q) with node velocities v (Chen 2023, Eqs. 14-19; the
    quaternions predicted at rest: the rotary inertia of a cable's section is some (d/l)^2 of its
    translational one, their angular velocities are not carried): x, q, v updated in place.
    The projections start from x + h v, the loads entering through the predicted x~ (Eq. 15)
    rather than as a first move of h^2 W f (the same step, reached from nearer). Returns
    (projections used, converged); on failure x, q, v are as they were."""
    n = x.shape[0]
    x0 = x.copy()
    q0 = q.copy()
    x_pred = x.copy()
    for i in range(n):
        if a.node_weight[i] > 0.0:
            for k in range(3):
                x[i, k] += h * v[i, k]
                x_pred[i, k] += h * v[i, k] + h * h * a.node_weight[i] * a.force[i, k]
    ws.lam[:, :] = 0.0
    inv_h2 = 1.0 / (h * h)
    first = 0.0
    it = 0
    for it in range(max_iterations):
        largest, ok = project(x, q, x_pred, q0, a, ws, inv_h2)
        if not ok or not (largest < MOVE_LIMIT):
            break
        if it == 0:
            first = largest
        elif it >= DIVERGED_AFTER and largest > first:
            break  # not contracting: the step is too long for the linearisation
        # a step's projections are done when they have cut its first move by ``reduction``: near
        # rest the first move vanishes with the step, so the state at rest is the exact one
        if largest <= move_tolerance or largest <= reduction * first:
            for i in range(n):
                for k in range(3):
                    v[i, k] = (x[i, k] - x0[i, k]) / h
            return it + 1, True
    x[:, :] = x0
    q[:, :] = q0
    return it + 1, False


def arrays_for(model) -> PbdArrays:
    """The constraints of a cable's rod model (no clips: model_features.py refuses them for this model)."""
    section = model.cable.section
    rest = model.rest_len.copy()
    n, m, r = model.n_nodes, model.n_segments, model.n_rotations
    ja, jb = model.joint_a.astype(np.int64), model.joint_b.astype(np.int64)
    stretch_compliance = 1.0 / (rest[:, None] * model.stretch_stiff)
    bend_compliance = model.joint_len[:, None] / (4.0 * model.bend_stiff)
    mass = np.zeros(n)
    rho_a = section.linear_density
    mass[:-1] += 0.5 * rho_a * rest
    mass[1:] += 0.5 * rho_a * rest
    held = model.held_nodes()
    node_weight = np.where(held, 0.0, 1.0 / mass)
    # the section's rotary inertia about a diameter, rho A d^2 / 16 per length, for every axis; an end
    # frame (held, perhaps but for its roll) takes that of the last segment
    beside = np.minimum(np.arange(r), m - 1)
    inertia = rho_a * model.cable.diameter**2 / 16.0 * rest[beside]
    rot_fixed = model.fixed[model.rot_dof[:, None] + np.arange(3)]
    rot_weight = np.where(rot_fixed, 0.0, (1.0 / inertia)[:, None])
    # band order along the cable: the start's joint, stretch 0, joint (0, 1), stretch 1, ...
    key = np.empty(m + len(ja))
    key[:m] = 2 * np.arange(m) + 1
    for j, (p, s) in enumerate(zip(ja, jb, strict=True)):
        segs = [k for k in (p, s) if k < m]
        key[m + j] = 2 * max(segs) if len(segs) == 2 else (0 if segs[0] == 0 else 2 * m)
    block = np.argsort(np.argsort(key, kind="stable"), kind="stable").astype(np.int64)
    slot_dof = -np.ones((m + len(ja), 3), dtype=np.int64)
    slot_dof[:m, 0], slot_dof[:m, 1], slot_dof[:m, 2] = np.arange(m), np.arange(1, m + 1), n + np.arange(m)
    slot_dof[m:, 0], slot_dof[m:, 1] = n + ja, n + jb
    touch = -np.ones((n + r, 3, 2), dtype=np.int64)
    filled = np.zeros(n + r, dtype=np.int64)
    spread = 0
    for c in range(m + len(ja)):
        for s in range(3):
            d = slot_dof[c, s]
            if d < 0:
                continue
            touch[d, filled[d]] = (c, s)
            filled[d] += 1
    for d in range(n + r):
        blocks = [block[c] for c in touch[d, : filled[d], 0]]
        if blocks:
            spread = max(spread, max(blocks) - min(blocks))
    return PbdArrays(
        rest,
        stretch_compliance,
        ja,
        jb,
        bend_compliance,
        model.bend_rest.copy(),
        node_weight,
        rot_weight,
        model.node_force.copy(),
        block,
        touch,
        slot_dof,
        int(3 * spread + 2),
        np.vstack([np.repeat(node_weight[:, None], 3, axis=1), rot_weight]),
    )


def pieces_for(model) -> tuple:
    """(constraints, workspace) of a rod model, formed once and kept with it (RodModel.derived)."""
    pieces = model.derived.get("pbd")
    if pieces is None:
        arrays = arrays_for(model)
        pieces = model.derived["pbd"] = (arrays, workspace(arrays))
    return pieces


def workspace(a: PbdArrays) -> Workspace:
    nc = a.rest.shape[0] + a.joint_a.shape[0]
    nb = a.node_weight.shape[0] + a.rot_weight.shape[0]
    return Workspace(
        np.zeros((nc, 3, 3, 3)),
        np.zeros((nc, 3)),
        np.zeros((nc, 3)),
        np.zeros((nb, 3)),
        np.zeros((3 * nc, a.bw + 1)),
        np.zeros(3 * nc),
        np.zeros(3 * nc),
        np.zeros((nb, 3)),
    )


def first_time_step(model) -> float:
    """FIRST_STEP_PERIODS of the first bending mode of the cable held as a cantilever (1.875^2
    sqrt(EI / (mu L^4)) rad/s): a step that short is close to the state it starts from."""
    section = model.cable.section
    omega = 1.875**2 * math.sqrt(section.bend_stiffness / (section.linear_density * model.cable.length**4))
    return FIRST_STEP_PERIODS * 2.0 * math.pi / omega


def force_residual(model, x, q) -> float:
    """The largest force (moment) on a free dof relative to the rod model's tolerance for it."""
    return float(constrained_residual(rod_gradient(model, x, q), model.fixed, model.dof_tol))


def _lowest_mode(model, x, q, inertia=None):
    """(whether the rod's Hessian at (x, q), plus the diagonal ``inertia`` per dof where given, is
    positive definite on the free dofs, its direction of most negative curvature where it is not)."""
    n_dof, bw = model.n_dof, model.bw
    _grad, band = hessian_band(model, RodState(x, q))
    if inertia is not None:
        band[:, bw] += inertia
    damping = np.zeros(n_dof)
    prepare_system(band, bw, model.fixed, damping)
    work = np.empty_like(band)
    Ut, k_c, k_s = np.zeros((0, n_dof)), np.zeros(0), np.zeros(0)
    S, piv, spans = np.empty((0, 0)), np.empty(0, dtype=np.int64), np.empty((0, 4), dtype=np.int64)
    shift = stability_shift(model.rest_len)
    stable, _p = factor_shifted(band, bw, damping, shift, work, Ut, k_c, k_s, S, piv, spans)
    if stable:
        return True, None
    direction = np.zeros(n_dof)
    coupling = LowRankCoupling(Ut, k_c, k_s, S, piv, spans)
    curvature = negative_curvature_direction(band, bw, damping, model.fixed, coupling, work, shift, direction)
    return False, (direction if curvature < 0.0 else None)


def incremental_minimum(model, x, q, a: PbdArrays, h: float) -> bool:
    """Whether (x, q) is a minimum of what an XPBD step of length h minimises, the rod's energy plus
    the lumped masses' M |x - x~|^2 / 2 h^2 (the Hessian of the sum positive definite)."""
    return _lowest_mode(model, x, q, lumped_inertia(model, a.node_weight, a.rot_weight) / (h * h))[0]


def _leave_saddle(model, x, q, direction) -> bool:
    """Move (x, q) in place along ``direction`` (either way) until the rod's energy is below the
    saddle's; False where no length does it."""

    def energy(pos, quat):
        return elastic_and_load_energy(model, RodState(pos, quat))

    here = energy(x, q)
    size = float(np.abs(direction).max())
    pos, quat, step = np.empty_like(x), np.empty_like(q), np.empty(3)
    for length in 0.3 * float(model.rest_len.min()) * 0.5 ** np.arange(14):
        for sign in (1.0, -1.0):
            retract(x, q, model.node_dof, model.rot_dof, sign * length / size * direction, 1.0, pos, quat, step)
            if energy(pos, quat) < here - 1e-12 * abs(here):
                x[:], q[:] = pos, quat
                return True
    return False


def solve_pbd(model, start, max_steps: int = MAX_STEPS, implicit: bool = True):
    """XPBD steps from ``start`` (a RodState with the boundary applied) to a rest state:
    (state, converged, a verified minimum, steps, projections, largest force relative to the
    tolerance, milliseconds). With ``implicit``, once a step is refused after one was taken (the
    projections' missing geometric stiffness: the step cannot grow), the rest is reached by implicit
    Euler steps with the rod's whole Hessian from there (pbd_implicit.py); without, by XPBD steps alone
    (the paper's scheme). ``projections`` counts the implicit steps' systems too.

    The steps are the paper's dynamics, damped to rest: velocities decay at the cantilever's
    first angular frequency (critical damping of the softest mode a held cable has) and are
    discarded whenever the kinetic energy has passed a peak (kinetic damping: the state is then
    nearest a minimum along its motion). The time step starts at FIRST_STEP_PERIODS of that mode,
    doubles after a step whose projections converged quickly and halves (velocities discarded)
    after one whose projections did not converge."""
    t0 = time.perf_counter()
    a, ws = pieces_for(model)
    x = np.ascontiguousarray(start.positions, dtype=float).copy()
    q = np.ascontiguousarray(start.quats, dtype=float).copy()
    v = np.zeros_like(x)
    h = first_time_step(model)
    longest = LONGEST_STEP * h  # beyond it the masses no longer weigh: the steps are Newton's
    decay_rate = FIRST_STEP_PERIODS * 2.0 * math.pi / h  # the first mode's angular frequency
    mass = np.where(a.node_weight > 0.0, 1.0 / np.where(a.node_weight > 0.0, a.node_weight, 1.0), 0.0)
    kinetic_before = 0.0
    quick = 0  # > 0: quick steps in a row since the last failure, GROW_AFTER of them allowed growth
    steps = projections = escapes = 0
    stable = False
    residual = force_residual(model, x, q)
    judged = False  # whether ``stable`` is the minimum test of the state as it is
    taken = 0  # XPBD steps taken
    while steps < max_steps:
        if residual <= 1.0:
            stable, direction = _lowest_mode(model, x, q)
            judged = True
            if stable or escapes >= SADDLE_ESCAPES or direction is None or not _leave_saddle(model, x, q, direction):
                break
            escapes += 1
            judged = False
            v[:] = 0.0
            residual = force_residual(model, x, q)
            continue
        used, ok = time_step(x, q, v, a, ws, h, STEP_ITERATIONS, MOVE_TOLERANCE)
        projections += used
        steps += 1
        if not ok and implicit and taken > 0:
            inertia = lumped_inertia(model, a.node_weight, a.rot_weight)
            solves, residual = implicit_steps(model, x, q, inertia, h, max_steps - steps)
            steps += solves
            projections += solves
            v[:] = 0.0
            kinetic_before = 0.0
            judged = False
            if residual <= 1.0:
                continue  # at rest: judged at the top of the loop
            implicit = False  # the implicit steps stopped short of rest: XPBD steps go on, as without
        if not ok:
            h *= 0.5
            v[:] = 0.0
            kinetic_before = 0.0
            quick = -GROW_AFTER  # the step that failed is not tried again at once
            if h < 1e-9:
                break
            continue
        judged = False
        taken += 1
        v *= math.exp(-decay_rate * h)
        kinetic = float(np.sum(mass[:, None] * v * v))
        if kinetic < kinetic_before:
            v[:] = 0.0
            kinetic = 0.0
        kinetic_before = kinetic
        quick = quick + 1 if used <= QUICK_STEP else min(quick, 0)
        if quick > 0:
            h = min(2.0 * h, longest)
        residual = force_residual(model, x, q)
    residual = force_residual(model, x, q)  # what is reported is judged on the state returned
    converged = bool(residual <= 1.0 and np.isfinite(x).all())
    if converged and not judged:  # the budget ran out on the step that came to rest
        stable = _lowest_mode(model, x, q)[0]
    state = RodState(x, q)
    return state, converged, converged and stable, steps, projections, residual, (time.perf_counter() - t0) * 1e3
