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
as long (after a refused one, from the second kept step on); one that does not is tried shorter
along its own direction (a line search), and failing that, or where neither the exact matrix nor
its Gauss-Newton form is positive definite, taken again from a system half as long. A step of a
cable held at one end only that raises the energy as it is is laid out again from that end
(_laid_out_from_clamp), without the stretch a linear step adds to every segment it turns, and its
shorter tries are laid out so too.
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
# a step that raises the energy is tried again along its own direction at half its length, this many
# times (down to an eighth), before a new system half as long is solved (an energy costs some tenth of
# a system's assembly and factorisation)
HALVINGS = 3


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
    after ``budget`` systems, or when no step length down to SHORTEST h lowers the energy. A step
    taken only in part says that h was too long: the next is half as long."""
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
        trial, energy, grad, band, residual, scale = kept
        x[:], q[:] = trial.positions, trial.quats
        if scale < 1.0:
            h *= 0.5
            calm = 0
            continue
        calm += 1
        if calm >= GROW_AFTER:
            h = min(2.0 * h, longest)
    return solves, float(residual)


def _step(model, x, q, inertia, h, grad, band, energy, residual):
    """One implicit Euler step h long from (x, q), whose energy, gradient, Hessian band and residual are
    given: (state, its energy, gradient, band, residual) where it is kept, None where it is refused (the
    matrix not positive definite even in Gauss-Newton form, a frame turned more than
    MAX_ROTATION_STEP, the energy raised beyond round-off, or within it without lowering the forces;
    a step that raised the energy is tried again laid out from the held end of a cable held at one end
    only (_laid_out_from_clamp), and shorter, HALVINGS times). The last entry is the part of the
    step taken."""
    n_dof, bw = model.n_dof, model.bw
    system = _system(band, inertia, h, model)
    if system is None:
        # The exact Hessian is indefinite where segments are compressed (their geometric stiffness is
        # negative, -T / l, some 1e5 N/m on Chen's cable against M / h^2 of 170 N/m at h = 30 ms):
        # the Gauss-Newton matrix, J^T C J, is not, and its step still goes down (rod_energy.py).
        system = _system(hessian_band(model, RodState(x, q), 0.0)[1], inertia, h, model)
        if system is None:
            return None
    delta = np.zeros(n_dof)
    band_cholesky_solve(system, bw, -grad, delta)
    delta[model.fixed != 0] = 0.0  # (fixed is a 0/1 array, not indices)
    turns = np.linalg.norm(delta[model.rot_dof[:, None] + np.arange(3)], axis=1)
    if turns.max(initial=0.0) > MAX_ROTATION_STEP:
        return None  # beyond a radian the retraction leaves the quadratic model (newton_assembly)
    # As it is; laid out again from the clamp (only where it raised the energy as it is: near rest the
    # exact Hessian's step anticipates its second-order stretch, and leaving that out there stopped
    # the quadratic convergence, a hanging cable's rest 8.6e-7 m from the rod's instead of 5e-12);
    # then shorter along the same direction (laid out too where the cable has a clamp).
    clamp = clamped_end(model)
    has_clamp = clamp is not None
    tries = [(1.0, False)] + [(1.0, True)] * has_clamp
    tries += [(0.5**k, has_clamp) for k in range(1, HALVINGS + 1)]
    for scale, lay_out in tries:
        trial = RodState(np.empty_like(x), np.empty_like(q))
        retract(x, q, model.node_dof, model.rot_dof, delta, scale, trial.positions, trial.quats, np.empty(3))
        if lay_out:
            trial.positions[:] = _laid_out_from_clamp(x, trial.positions, clamp)
        after = elastic_and_load_energy(model, trial)
        if after - energy <= ENERGY_ROUND_OFF * abs(energy):
            break
    change = after - energy
    if not (change <= ENERGY_ROUND_OFF * abs(energy)):  # NaN too
        return None
    trial_grad, trial_band = hessian_band(model, trial)
    trial_residual = constrained_residual(trial_grad, model.fixed, model.dof_tol)
    if not (change < 0.0 or trial_residual < residual):
        return None
    return trial, after, trial_grad, trial_band, trial_residual, scale


def _system(band, inertia, h, model):
    """The factored matrix K + M / h^2 of a step (``band``: K's), or None where it is not positive definite."""
    system = band.copy()
    system[:, model.bw] += inertia / (h * h)
    prepare_system(system, model.bw, model.fixed, np.zeros(model.n_dof))
    return system if band_cholesky(system, model.bw) else None


def clamped_end(model) -> int | None:
    """The end node (0 or the last) whose position is the cable's only held one, or None where any
    other node has a held dof (or none is held). cosserat_pbd refuses clips, and every cable's start
    is held: the start where the end is free."""
    held = model.fixed[model.node_dof[:, None] + np.arange(3)].any(axis=1)
    nodes = np.flatnonzero(held)
    if len(nodes) == 1 and nodes[0] in (0, model.n_nodes - 1):
        return int(nodes[0])
    return None


def _laid_out_from_clamp(x: np.ndarray, trial: np.ndarray, clamp: int) -> np.ndarray:
    """The trial's nodes laid out again from the ``clamp`` node: each segment along its direction in
    the trial, as long as it was at ``x`` plus the step's change of its length to first order (where
    that is not positive, as long as in the trial; a segment of no length in either stays as it is).

    A linear step turns a segment along the tangent of its arc and lengthens it by (theta l)^2 / 2l,
    which a stiff cable's stretch turns into more energy than the turn gains (Chen's cable, EA 2e8 N:
    a strain of 4e-4 along it holds 16 J). Laid out again from the clamp (as the follow-the-leader
    projection of Mueller et al. 2012 lays out hair, but along the step's own directions, so that the
    frames still match), the step keeps its turns and its first-order stretch and loses the
    second-order one."""
    before = np.diff(x, axis=0)
    length = np.sqrt(np.einsum("ij,ij->i", before, before))
    after = np.diff(trial, axis=0)
    now = np.sqrt(np.einsum("ij,ij->i", after, after))
    with np.errstate(divide="ignore", invalid="ignore"):
        length = length + np.einsum("ij,ij->i", before, after - before) / length
        length = np.where(length > 0.0, length, now)  # a step shortening a segment past nothing: as it is
        scale = np.where(now > 0.0, length / now, 1.0)
    segments = after * scale[:, None]
    out = np.empty_like(trial)
    if clamp == 0:
        out[0] = trial[0]
        out[1:] = trial[0] + np.cumsum(segments, axis=0)
    else:
        out[-1] = trial[-1]
        out[:-1] = trial[-1] - np.cumsum(segments[::-1], axis=0)[::-1]
    return out
