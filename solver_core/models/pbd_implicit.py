# SPDX-License-Identifier: GPL-3.0-or-later
"""Linearly implicit steps that finish a cosserat_pbd rest search once XPBD's steps stop growing.

XPBD's projection (cosserat_pbd.project) leaves out the constraints' geometric stiffness, so a
step converges only while the lumped masses outweigh it: M / h^2 > T / l for a cable under tension
T with segments l long. A heavy cable (Chen et al.'s: 50 kg/m, EA 2e8 N) is held there to steps
some 1e-4 of its slowest period, and damping its fall to rest takes 300-1,500 such steps. Chen et
al. (2023, Sec. 5) sweep a fixed number of projections per frame and stop before the forces vanish.

Past that length the same step of implicit Euler is taken with the whole Hessian: the velocities
discarded, (K + M / h^2) dx = -grad E (one Newton iteration on E + |x - x_n|^2_M / 2 h^2, Baraff
and Witkin 1998, Eq. 6 with v = 0), K the rod's exact Hessian (rod_energy.py), the same energy
the constraints' compliances express. A step that lowers the energy is kept and the next is twice
as long (after a refused one, from the second kept step on); one that does not, or whose matrix is
not positive definite, is taken again half as long.
As h grows the steps become Newton's on the rod's energy and converge quadratically: the rest state
is the one the XPBD steps damp towards, reached in tens of steps instead of hundreds.
"""

import numpy as np

from ..maths.banded import band_cholesky, band_cholesky_solve
from ..rod.rod_state import RodState
from ..solve.diagnostics import elastic_and_load_energy
from ..solve.end_stiffness import hessian_band
from ..solve.newton_assembly import MAX_ROTATION_STEP, constrained_residual, prepare_system, retract

LONGEST = 1e12  # times the first implicit step: beyond it M / h^2 no longer weighs against K
SHORTEST = 1e-6  # times the first implicit step: shorter steps would not move anything
# An energy difference near rest is round-off: a step that raises the energy by less than this much
# of it is kept if it lowers the forces (the residual is then what is judged)
ENERGY_ROUND_OFF = 1e-13
# kept steps after a refused one before the step grows again: growing at once, a falling chain's steps
# alternated between a kept length and its refused double
GROW_AFTER = 2


def lumped_inertia(model, node_weight: np.ndarray, rot_weight: np.ndarray) -> np.ndarray:
    """Per dof of the rod model, the lumped mass (node) or rotary inertia (frame) of
    cosserat_pbd.arrays_for's inverse weights; 0 where held."""
    inertia = np.zeros(model.n_dof)
    for weights, dofs in ((np.repeat(node_weight[:, None], 3, axis=1), model.node_dof), (rot_weight, model.rot_dof)):
        for k in range(3):
            moving = weights[:, k] > 0.0
            inertia[dofs[moving] + k] = 1.0 / weights[moving, k]
    return inertia


def implicit_steps(model, x: np.ndarray, q: np.ndarray, inertia: np.ndarray, h: float, budget: int) -> tuple:
    """Implicit Euler steps at rest from (x, q), moved in place, starting h long: (systems tried, each
    factored or refused, residual relative to the rod model's tolerance). Stops at rest (residual <= 1),
    after ``budget`` systems, or when no step length down to SHORTEST h lowers the energy."""
    energy = elastic_and_load_energy(model, RodState(x, q))
    longest, shortest = LONGEST * h, SHORTEST * h
    grad, band = hessian_band(model, RodState(x, q))
    residual = constrained_residual(grad, model.fixed, model.dof_tol)  # fixed entries zeroed
    solves = 0
    calm = 0  # steps kept since the last refused one
    while residual > 1.0 and solves < budget and h >= shortest:
        solves += 1
        kept = _step(model, x, q, inertia, h, grad, band, energy, residual)
        if kept is None:
            h *= 0.5
            calm = 0
            continue
        trial, energy, grad, band, residual = kept
        x[:], q[:] = trial.positions, trial.quats
        calm += 1
        if calm >= GROW_AFTER:
            h = min(2.0 * h, longest)
    return solves, float(residual)


def _step(model, x, q, inertia, h, grad, band, energy, residual):
    """One implicit Euler step h long from (x, q), whose energy, gradient, Hessian band and residual are
    given: (state, its energy, gradient, band, residual) where it is kept, None where it is refused (the
    matrix not positive definite, a frame turned more than MAX_ROTATION_STEP, the energy raised beyond
    round-off, or within it without lowering the forces)."""
    n_dof, bw = model.n_dof, model.bw
    system = band.copy()
    system[:, bw] += inertia / (h * h)
    prepare_system(system, bw, model.fixed, np.zeros(n_dof))
    if not band_cholesky(system, bw):
        return None
    delta = np.zeros(n_dof)
    band_cholesky_solve(system, bw, -grad, delta)
    delta[model.fixed] = 0.0
    turns = np.linalg.norm(delta[model.rot_dof[:, None] + np.arange(3)], axis=1)
    if turns.max(initial=0.0) > MAX_ROTATION_STEP:
        return None  # beyond a radian the retraction leaves the quadratic model (newton_assembly)
    trial = RodState(np.empty_like(x), np.empty_like(q))
    retract(x, q, model.node_dof, model.rot_dof, delta, 1.0, trial.positions, trial.quats, np.empty(3))
    after = elastic_and_load_energy(model, trial)
    change = after - energy
    if not (change <= ENERGY_ROUND_OFF * abs(energy)):  # NaN too
        return None
    trial_grad, trial_band = hessian_band(model, trial)
    trial_residual = constrained_residual(trial_grad, model.fixed, model.dof_tol)
    if not (change < 0.0 or trial_residual < residual):
        return None
    return trial, after, trial_grad, trial_band, trial_residual
