# SPDX-License-Identifier: GPL-3.0-or-later
"""The tangent predictor: a cable's first-order response to a move of its holders, from its last
equilibrium.

With the free dofs f balanced for the held ones h (g_f(f, h) = 0), a move dh of the holders moves the
equilibrium by df = -H_ff^-1 dg_f + O(dh^2), dg_f the change of the free rows of the gradient along
the move (the implicit function theorem; the tangent predictor of continuation methods, Allgower &
Georg 1990, Sec. 2.2), H the exact Hessian at the last equilibrium. dg_f is the derivative along the
move (a central difference, _held_load), not the gradient at the holders moved alone: that chord step
carries the second-order strain of a held frame turned against its segment (GA theta^2 / 2).

A warm step started there, instead of at the free span carried with its holders
(rod_state.carry_boundary_motion), starts off its equilibrium by the square of the move where the
carried start is off by the move itself (docs/performance.md). The rod's own energy only: used where
nothing else acts on the cable about its state (session.predictor.tangent_start).
"""

import math

import numpy as np

from .._jit import njit
from ..maths.banded import band_cholesky, band_cholesky_solve
from ..maths.rotations import quat_conj_mul
from ..rod.rod_energy import rod_gradient_hessian
from ..rod.rod_state import RodState, apply_boundary
from .newton_assembly import largest_turn, prepare_system, retract, retracted

# Largest move of a free node the prediction may make, in multiples of the holders' motion (their
# largest shift plus their largest turn times the cable's length): a hanging U whose ends move apart
# lifts its bottom by a few times their move; near a fold the linear response grows without bound.
MAX_AMPLIFICATION = 10.0


@njit
def held_move(pos, quat, moved_pos, moved_quat, rod, held) -> tuple:
    """``held`` = the move of the held dofs from (pos, quat) to (moved_pos, moved_quat): positions, and
    body rotation vectors theta with moved = q exp(theta / 2) (newton_assembly.retract); the free dofs'
    entries 0. Returns (the held nodes' largest shift, the held frames' largest turn), per component."""
    fixed, node_dof, rot_dof = rod.fixed, rod.node_dof, rod.rot_dof
    shift, turned = 0.0, 0.0
    held[:] = 0.0
    for k in range(pos.shape[0]):
        for c in range(3):
            i = node_dof[k] + c
            if fixed[i]:
                held[i] = moved_pos[k, c] - pos[k, c]
                shift = max(shift, abs(held[i]))
    turn = np.empty(4)
    for r in range(quat.shape[0]):
        quat_conj_mul(quat[r], moved_quat[r], turn)
        sign = -1.0 if turn[0] < 0.0 else 1.0  # the shorter way round
        sine = math.sqrt(turn[1] * turn[1] + turn[2] * turn[2] + turn[3] * turn[3])
        # theta = angle * axis, angle = 2 atan2(|v|, w) (exact for small turns too)
        scale = 2.0 * math.atan2(sine, sign * turn[0]) / sine if sine > 0.0 else 2.0
        for c in range(3):
            i = rot_dof[r] + c
            if fixed[i]:
                held[i] = sign * scale * turn[1 + c]
                turned = max(turned, abs(held[i]))
    return shift, turned


@njit
def _held_load(pos, quat, held, rod, load):
    """``load`` = d/dt g(x + t dh) at t = 0 by the central difference (g(x + dh) - g(x - dh)) / 2 (error of
    third order in the move), g the rod's energy gradient, x + dh the held dofs moved by ``held``
    (newton_assembly.retract). The derivative of the gradient Newton drives to zero: at a frame held in
    part (an end free to roll, a rotating clip) its free rows turn with the held ones, and there this
    differs from the symmetric Hessian's H_fh dh by a term in the held reaction moment."""
    n = rod.fixed.shape[0]
    side_pos, side_quat, rot_step = np.empty_like(pos), np.empty_like(quat), np.empty(3)
    behind, no_band = np.zeros(n), np.zeros((1, 1))
    retract(pos, quat, rod.node_dof, rod.rot_dof, held, 1.0, side_pos, side_quat, rot_step)
    rod_gradient_hessian(side_pos, side_quat, rod, 1.0, load, no_band, np.int64(0), np.bool_(False), 1.0)
    retract(pos, quat, rod.node_dof, rod.rot_dof, held, -1.0, side_pos, side_quat, rot_step)
    rod_gradient_hessian(side_pos, side_quat, rod, 1.0, behind, no_band, np.int64(0), np.bool_(False), 1.0)
    for i in range(n):
        load[i] = 0.5 * (load[i] - behind[i])


@njit
def _free_response(factor, bw, rod, load, delta) -> float:
    """``delta`` = -H_ff^-1 ``load`` on the free dofs from the factor of H_ff (held rows the identity),
    the held entries 0, and entries below the round-off of the largest of their kind (positions,
    rotations) 0: a symmetric path stays symmetric, as from the carried start (a step amplifying
    noise of 1e-151 across a plane can choose the side of a later snap). Returns the largest node
    move in ``delta``, -1 where it is not finite."""
    fixed, node_dof, rot_dof = rod.fixed, rod.node_dof, rod.rot_dof
    for i in range(fixed.shape[0]):
        load[i] = 0.0 if fixed[i] else -load[i]
    band_cholesky_solve(factor, bw, load, delta)
    for i in range(delta.shape[0]):
        if not math.isfinite(delta[i]):
            return -1.0
    largest_move = 0.0
    for k in range(node_dof.shape[0]):
        for c in range(3):
            largest_move = max(largest_move, abs(delta[node_dof[k] + c]))
    move_floor = 16.0 * np.finfo(np.float64).eps * largest_move
    turn_floor = 16.0 * np.finfo(np.float64).eps * largest_turn(delta, rot_dof)
    for k in range(node_dof.shape[0]):
        for c in range(3):
            if abs(delta[node_dof[k] + c]) <= move_floor:
                delta[node_dof[k] + c] = 0.0
    for r in range(rot_dof.shape[0]):
        for c in range(3):
            if abs(delta[rot_dof[r] + c]) <= turn_floor:
                delta[rot_dof[r] + c] = 0.0
    return largest_move


@njit
def tangent_step(pos, quat, moved_pos, moved_quat, rod, bw, delta) -> tuple:
    """``delta`` = the free dofs' first-order response -H_ff^-1 dg_f at (pos, quat) to the move dh of the
    held dofs to (moved_pos, moved_quat) (held_move), H the exact Hessian of the rod's energy there and
    dg_f the gradient's change along the move (_held_load); the held dofs' entries 0. Returns (the
    step's largest node move, held_move's shift and turn); the move -1 where no step was formed: H_ff
    not positive definite (no strict minimum to continue from) or the step not finite. g_f at (pos,
    quat), the last solve's residual, is within its tolerance and left out."""
    n = rod.fixed.shape[0]
    held = np.empty(n)
    shift, turned = held_move(pos, quat, moved_pos, moved_quat, rod, held)
    band, grad, damping = np.zeros((n, bw + 1)), np.zeros(n), np.empty(n)
    rod_gradient_hessian(pos, quat, rod, 1.0, grad, band, bw, np.bool_(True), 1.0)
    prepare_system(band, bw, rod.fixed, damping)  # held rows and columns the identity
    if not band_cholesky(band, bw):
        return -1.0, shift, turned
    _held_load(pos, quat, held, rod, grad)
    return _free_response(band, bw, rod, grad, delta), shift, turned


@njit
def tangent_step_factored(pos, quat, moved_pos, moved_quat, rod, factor, delta) -> tuple:
    """tangent_step with the factor of H_ff + shift D that the last solve's stability test formed at
    (pos, quat) (SolveReport.free_factor; shift 1e-9 to 1e-11 of the diagonal): two gradients and a
    solve, where tangent_step also assembles and factors the Hessian."""
    n = rod.fixed.shape[0]
    held = np.empty(n)
    shift, turned = held_move(pos, quat, moved_pos, moved_quat, rod, held)
    load = np.zeros(n)
    _held_load(pos, quat, held, rod, load)
    return _free_response(factor, factor.shape[1] - 1, rod, load, delta), shift, turned


def tangent_guess(model, state: RodState, boundary, factor: np.ndarray | None = None) -> RodState | None:
    """The state predicted for ``boundary`` from ``state``, an equilibrium of ``model`` for other
    holders (module docstring), with ``boundary`` applied; None where the prediction may not be used:
    no strict minimum at ``state``; a free node moved more than MAX_AMPLIFICATION times the holders'
    motion (near a fold, where H_ff is nearly singular and the linearisation says nothing of the
    branch); or a frame turned beyond what one Newton step may turn it (newton_assembly.MAX_ROTATION_STEP).
    ``factor``: that of H_ff kept from the solve that ended at ``state`` (SolveReport.free_factor), if
    any (tangent_step_factored: no assembly or factorisation)."""
    moved = state.copy()
    apply_boundary(model, moved, boundary)
    delta = np.empty(model.n_dof)
    P, Q, rod = state.positions, state.quats, model.arrays()
    if factor is not None and factor.shape == (model.n_dof, model.bw + 1):
        free_move, shift, turned = tangent_step_factored(P, Q, moved.positions, moved.quats, rod, factor, delta)
    else:
        free_move, shift, turned = tangent_step(P, Q, moved.positions, moved.quats, rod, model.bw, delta)
    if not 0.0 <= free_move <= MAX_AMPLIFICATION * (shift + turned * float(model.rest_len.sum())):
        return None
    out = retracted(model, state, delta, 1.0)
    if out is not None:
        apply_boundary(model, out, boundary)
    return out
