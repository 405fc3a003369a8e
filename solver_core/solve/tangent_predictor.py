# SPDX-License-Identifier: GPL-3.0-or-later
"""The tangent predictor: a cable's first-order response to a move of its holders, from its last
equilibrium.

With the free dofs f balanced for the held ones h (g_f(f, h) = 0), a move dh of the holders moves the
equilibrium by df = -H_ff^-1 (g_f + H_fh dh) + O(dh^2) (the implicit function theorem; the tangent
predictor of continuation methods, Allgower & Georg 1990, Sec. 2.2), H the exact Hessian at the last
equilibrium and g_f its residual there. H_fh dh is formed as a product with the held dofs' own move,
not as the gradient at the holders moved alone (a chord step): that gradient carries the second-order
strain of a held frame turned against its segment (GA theta^2 / 2), and a 100-segment cable started
from it took 3-4 Newton iterations for a 1 mm, 2 degree move instead of 2.

Started there instead of at the free span carried along with its holders
(rod_state.carry_boundary_motion), a 100-segment cable whose end moves 1 mm and turns 2 degrees
converges in 2 Newton iterations instead of 5, a 1000-segment one in 2 instead of 4, and a drag, a
rigid turn of both ends, a 5 cm move or a twist in 3-5 instead of 5-10, to the same equilibria
(docs/performance.md). The rod's own energy only: used where nothing else acts on the cable about its
state (end_stiffness.exact_for).
"""

import math

import numpy as np

from .._jit import njit
from ..maths.banded import band_cholesky, band_cholesky_solve
from ..maths.rotations import quat_conj_mul
from ..rod.rod_energy import rod_gradient_hessian
from ..rod.rod_state import RodState, apply_boundary
from .newton_assembly import MAX_ROTATION_STEP, largest_turn, prepare_system, retract
from .stability import band_matvec

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
def _free_response(factor, bw, fixed, load, delta) -> bool:
    """``delta`` = -H_ff^-1 ``load`` on the free dofs from the factor of H_ff (held rows the identity),
    the held entries 0; False where it is not finite."""
    for i in range(fixed.shape[0]):
        if fixed[i]:
            load[i] = 0.0
        else:
            load[i] = -load[i]
    band_cholesky_solve(factor, bw, load, delta)
    for i in range(delta.shape[0]):
        if not math.isfinite(delta[i]):
            return False
    return True


@njit
def tangent_step(pos, quat, moved_pos, moved_quat, rod, bw, delta) -> tuple:
    """``delta`` = the free dofs' first-order response -H_ff^-1 (g_f + H_fh dh) at (pos, quat) for the
    move dh of the held dofs to (moved_pos, moved_quat) (held_move), H the exact Hessian of the rod's
    energy and g its gradient there; the held dofs' entries 0. Returns (whether the step was formed,
    held_move's shift and turn); not formed where H_ff is not positive definite (no strict minimum to
    continue from) or the step is not finite."""
    n = rod.fixed.shape[0]
    held = np.empty(n)
    shift, turned = held_move(pos, quat, moved_pos, moved_quat, rod, held)
    band, grad, damping = np.zeros((n, bw + 1)), np.zeros(n), np.empty(n)
    rod_gradient_hessian(pos, quat, rod, 1.0, grad, band, bw, np.bool_(True), 1.0)
    load = np.empty(n)
    band_matvec(band, bw, held, load)  # H dh, before the held rows and columns are cleared
    prepare_system(band, bw, rod.fixed, damping)  # held rows and columns the identity
    if not band_cholesky(band, bw):
        return False, shift, turned
    for i in range(n):
        load[i] += grad[i]
    return _free_response(band, bw, rod.fixed, load, delta), shift, turned


@njit
def tangent_step_factored(pos, quat, moved_pos, moved_quat, rod, factor, delta) -> tuple:
    """tangent_step with the factor of H_ff the last solve's stability test formed at (pos, quat)
    (SolveReport.free_factor), and H_fh dh as the central difference of the gradient over the held
    dofs' move, (g(x + dh) - g(x - dh)) / 2 (exact to third order in the move; the held frames turned
    by +-theta, free ones not, so the free rows' gradients are in the same frames): two gradients and
    one solve where tangent_step assembles and factors the Hessian. g_f at (pos, quat), the last solve's
    residual, is within its tolerance and left out."""
    n = rod.fixed.shape[0]
    bw = factor.shape[1] - 1
    held = np.empty(n)
    shift, turned = held_move(pos, quat, moved_pos, moved_quat, rod, held)
    side_pos, side_quat, rot_step = np.empty_like(pos), np.empty_like(quat), np.empty(3)
    ahead, behind = np.zeros(n), np.zeros(n)
    no_band = np.zeros((1, 1))
    retract(pos, quat, rod.node_dof, rod.rot_dof, held, 1.0, side_pos, side_quat, rot_step)
    rod_gradient_hessian(side_pos, side_quat, rod, 1.0, ahead, no_band, np.int64(0), np.bool_(False), 1.0)
    retract(pos, quat, rod.node_dof, rod.rot_dof, held, -1.0, side_pos, side_quat, rot_step)
    rod_gradient_hessian(side_pos, side_quat, rod, 1.0, behind, no_band, np.int64(0), np.bool_(False), 1.0)
    for i in range(n):
        ahead[i] = 0.5 * (ahead[i] - behind[i])
    return _free_response(factor, bw, rod.fixed, ahead, delta), shift, turned


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
        formed, shift, turned = tangent_step_factored(P, Q, moved.positions, moved.quats, rod, factor, delta)
    else:
        formed, shift, turned = tangent_step(P, Q, moved.positions, moved.quats, rod, model.bw, delta)
    if not formed:
        return None
    free_move = float(np.abs(delta[model.node_dof[:, None] + np.arange(3)]).max(initial=0.0))
    if not free_move <= MAX_AMPLIFICATION * (shift + turned * float(model.rest_len.sum())):
        return None
    out = retracted(model, state, delta, 1.0)
    if out is not None:
        apply_boundary(model, out, boundary)
    return out


def retracted(model, state, delta, alpha):
    """``state`` moved by ``alpha`` ``delta`` (positions linearly, frames by body rotations), or None
    where that turns a frame further than a Newton step may (newton_assembly.MAX_ROTATION_STEP)."""
    if not alpha * largest_turn(delta, model.rot_dof) <= MAX_ROTATION_STEP:
        return None
    out = state.copy()
    retract(
        state.positions, state.quats, model.node_dof, model.rot_dof, delta, alpha, out.positions, out.quats, np.empty(3)
    )
    return out
