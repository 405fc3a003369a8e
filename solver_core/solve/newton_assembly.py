# SPDX-License-Identifier: GPL-3.0-or-later
"""The pieces of one Newton iteration: the gradient and banded matrix of the rod plus everything else
in its energy (contact, friction, mounts), a trial step's energy, the retraction of a step onto
positions and unit quaternions, and the residual on free degrees of freedom."""

import math

import numpy as np

from .._jit import njit
from ..contact.contact_energy import contact_energy_of, friction_energy
from ..contact.mounts import compliant_energy, sliding_energy
from ..contact.pair_geometry import pair_nodes
from ..contact.step_limits import allowed_depth, depth_limit, is_depth_limited, pair_moves
from ..kernel_arrays import CompliantClips, PairBuffers
from ..maths.rotations import quat_retract, quat_to_matrix
from ..rod.rod_energy import rod_energy, rod_gradient_hessian

# Largest rotation increment of one Newton step (rad); beyond it the quadratic model of the
# rotation retraction is poor, so the step is refused and the trust region shrinks.
MAX_ROTATION_STEP = 1.0


@njit
def largest_turn(delta, rot_dof) -> float:
    """The largest component of the frames' rotation vectors in the step ``delta``."""
    out = 0.0
    for r in range(rot_dof.shape[0]):
        for c in range(3):
            out = max(out, abs(delta[rot_dof[r] + c]))
    return out


@njit
def constrained_residual(grad, fixed, dof_tol):
    """The largest free entry of ``grad`` over its tolerance (inf where one is not a number); the fixed
    entries are zeroed."""
    worst = 0.0
    for i in range(grad.shape[0]):
        if fixed[i]:
            grad[i] = 0.0
        else:
            r = abs(grad[i]) / dof_tol[i]
            if r != r:
                return np.inf
            if r > worst:
                worst = r
    return worst


@njit
def couple_work(quat, rot_dof, rot_couple, load_factor, delta, R):
    """Work of the world couples over a body-frame rotation step: sum M . (R dtheta)."""
    work = 0.0
    for r in range(quat.shape[0]):
        if rot_couple[r, 0] == 0.0 and rot_couple[r, 1] == 0.0 and rot_couple[r, 2] == 0.0:
            continue
        quat_to_matrix(quat[r], R)
        g0 = rot_dof[r]
        for k in range(3):
            spatial = R[k, 0] * delta[g0] + R[k, 1] * delta[g0 + 1] + R[k, 2] * delta[g0 + 2]
            work += load_factor * rot_couple[r, k] * spatial
    return work


@njit
def prepare_system(band, bw, fixed, damping):
    """Dirichlet rows and columns for fixed dofs; Marquardt scaling from the diagonal."""
    n_dof = fixed.shape[0]
    dmax = 0.0
    for i in range(n_dof):
        if fixed[i]:
            for c in range(bw + 1):
                band[i, c] = 0.0
            band[i, bw] = 1.0
        else:
            d = abs(band[i, bw])
            if d > dmax:
                dmax = d
    for i in range(n_dof):
        if fixed[i]:
            damping[i] = 0.0
            continue
        for c in range(bw):
            j = i - (bw - c)
            if j >= 0 and fixed[j]:
                band[i, c] = 0.0
        damping[i] = max(abs(band[i, bw]), 1e-10 * dmax)


@njit
def retract(pos, quat, node_dof, rot_dof, delta, scale, out_pos, out_quat, rot_step):
    """out = state moved by scale * delta: positions linearly, rotations by q * exp(theta / 2)."""
    for n in range(pos.shape[0]):
        a0 = node_dof[n]
        for k in range(3):
            out_pos[n, k] = pos[n, k] + scale * delta[a0 + k]
    for r in range(quat.shape[0]):
        g0 = rot_dof[r]
        for k in range(3):
            rot_step[k] = scale * delta[g0 + k]
        quat_retract(quat[r], rot_step, out_quat[r])


@njit
def extra_terms(pos, quat, rod, extra, pairs, live, sl_seg, sl_t, grad, band, bw, mode):
    """Energy (and in mode 1/2 gradient and Gauss-Newton Hessian, in a band of ``bw``) of contact (the
    pairs ``live`` of ``pairs``, kernel_arrays.PairBuffers), friction and mounts."""
    node_dof, rot_dof = rod.node_dof, rod.rot_dof
    contact = extra.contact
    fr_active, fr_normal, fr_force, fr_anchor, fr_mu = (
        extra.fr_active,
        extra.fr_normal,
        extra.fr_force,
        extra.fr_anchor,
        extra.fr_mu,
    )
    sl_point, sl_axis, sl_stiff = extra.sl_point, extra.sl_axis, extra.sl_stiff
    energy = 0.0
    if live.shape[0] > 0:
        energy += contact_energy_of(live, pos, pairs, extra, node_dof, grad, band, bw, mode)
    if fr_active.shape[0] > 0:
        energy += friction_energy(
            pos, node_dof, fr_active, fr_normal, fr_force, fr_anchor, fr_mu, contact.stick_width, grad, band, bw, mode
        )
    if sl_point.shape[0] > 0:
        offset = np.empty(sl_point.shape[0])
        energy += sliding_energy(pos, node_dof, sl_point, sl_axis, sl_stiff, sl_seg, sl_t, grad, band, bw, mode, offset)
    if extra.cc_node.shape[0] > 0:
        clips = CompliantClips(extra.cc_node, extra.cc_rot, extra.cc_centre, extra.cc_quat, extra.cc_K)
        deflection = np.empty((extra.cc_node.shape[0], 6))
        energy += compliant_energy(pos, quat, node_dof, rot_dof, clips, grad, band, bw, mode, deflection)
    return energy


@njit
def assemble(pos, quat, rod, load_factor, grad, band, geometric, extra, pairs, live, sl_seg, sl_t):
    """Gradient and Hessian of everything; returns the energy of the terms beyond the rod's own."""
    rod_gradient_hessian(pos, quat, rod, load_factor, grad, band, rod.bw, np.bool_(True), geometric)
    mode = 2 if geometric > 0.0 else 3
    return extra_terms(pos, quat, rod, extra, pairs, live, sl_seg, sl_t, grad, band, rod.bw, mode)


@njit
def node_moves(delta, node_dof):
    node_move = np.empty(node_dof.shape[0])
    for n in range(node_dof.shape[0]):
        a = node_dof[n]
        node_move[n] = math.sqrt(delta[a] ** 2 + delta[a + 1] ** 2 + delta[a + 2] ** 2)
    return node_move


@njit
def pair_buffers(kind, elem, prim):
    """The candidate pairs (kind, elem, prim) with zeroed buffers (kernel_arrays.PairBuffers), every
    pair fresh. Pairs handed on with a gap bound are evaluated once they may touch or a step could
    reach them; until then the step filter sees a zero normal (no approach), which is all it may
    conclude."""
    n_pairs = kind.shape[0]
    return PairBuffers(
        kind,
        elem,
        prim,
        pair_nodes(kind, elem, prim),
        np.zeros(n_pairs),
        np.zeros(n_pairs),
        np.zeros((n_pairs, 3)),
        np.zeros((n_pairs, 3)),
        np.zeros(n_pairs),
        np.zeros((n_pairs, 3)),
        np.ones(n_pairs, dtype=np.bool_),
        np.zeros(n_pairs),
        np.zeros(n_pairs),
        np.zeros((n_pairs, 12)),
    )


@njit
def trial_extra(pos, quat, rod, extra, pairs, sl_seg, sl_t, delta):
    """(energy beyond the rod's, how far the deepest obstacle pair sinks beyond what a step may
    (step_limits.depth_limit) [m], 0 if none does)
    at a trial state pos = current + delta, over the pairs that can act there.

    A pair whose gap at the current state exceeds the move of its nodes in the step (of both sides'
    nodes for self-contact) is still open at the trial state and adds nothing, so only the others
    are evaluated: near convergence the step is tiny and that is a few pairs per node instead of
    every triangle within the search reach. (``pairs.gap`` may hold lower bounds of gaps: see
    minimise_rod_energy.)
    """
    kind, elem, prim, pair_gap = pairs.kind, pairs.elem, pairs.prim, pairs.gap
    moves = np.empty(kind.shape[0])
    pair_moves(pairs.nodes, node_moves(delta, rod.node_dof), moves)
    acts = np.zeros(kind.shape[0], dtype=np.bool_)
    n_live = 0
    for p in range(kind.shape[0]):
        if not (pair_gap[p] >= moves[p]):
            acts[p] = True
            n_live += 1
    kind_l = np.empty(n_live, dtype=np.int64)
    elem_l = np.empty(n_live, dtype=np.int64)
    prim_l = np.empty(n_live, dtype=np.int64)
    j = 0
    for p in range(kind.shape[0]):
        if acts[p]:
            kind_l[j], elem_l[j], prim_l[j] = kind[p], elem[p], prim[p]
            j += 1
    # what extra_terms reads of the acting pairs, with buffers of their own; a trial needs neither
    # their nodes nor the step filter's per-pair arrays (left empty)
    acting = PairBuffers(
        kind_l,
        elem_l,
        prim_l,
        np.empty((0, 4), dtype=np.int64),
        np.empty(n_live),
        np.empty(n_live),
        np.empty((n_live, 3)),
        np.empty((n_live, 3)),
        np.empty(n_live),
        np.empty((n_live, 3)),
        np.empty(0, dtype=np.bool_),
        np.empty(0),
        np.empty(0),
        np.empty((0, 12)),
    )
    energy = extra_terms(
        pos,
        quat,
        rod,
        extra,
        acting,
        np.arange(n_live),
        sl_seg,
        sl_t,
        np.zeros(1),
        np.zeros((1, 1)),
        np.int64(0),
        np.int64(0),
    )
    allowed = allowed_depth(extra.node_radius)
    excess = 0.0
    j = 0
    for p in range(kind.shape[0]):
        if acts[p]:
            if is_depth_limited(kind[p]):
                limit = depth_limit(allowed, -pair_gap[p])
                excess = max(excess, -acting.gap[j] - limit)
            j += 1
    return energy, excess


@njit
def energy_after_step(pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t, step, trial_pos, trial_quat):
    """Move the state by ``step`` into (trial_pos, trial_quat); returns (the energy there, the dead
    couples' work over the step, the part of the energy beyond the rod's own, how far the deepest
    obstacle pair sinks beyond what a step may [m]). The trial of a Newton step and of a step off a
    saddle alike: the step gains (energy before) - (energy - work)."""
    rot_step = np.empty(3)
    retract(pos, quat, rod.node_dof, rod.rot_dof, step, 1.0, trial_pos, trial_quat, rot_step)
    extra_energy, too_deep_by = trial_extra(trial_pos, trial_quat, rod, extra, pairs, sl_seg, sl_t, step)
    energy = extra_energy + rod_energy(trial_pos, trial_quat, rod, load_factor)
    work = couple_work(quat, rod.rot_dof, rod.rot_couple, load_factor, step, np.empty((3, 3)))
    return energy, work, extra_energy, too_deep_by


@njit
def node_distances(a, b, out):
    for n in range(a.shape[0]):
        out[n] = math.sqrt((a[n, 0] - b[n, 0]) ** 2 + (a[n, 1] - b[n, 1]) ** 2 + (a[n, 2] - b[n, 2]) ** 2)


def retracted(model, state, delta, alpha):
    """``state`` moved by ``alpha`` ``delta`` (positions linearly, frames by body rotations), or None
    where that turns a frame further than a Newton step may (MAX_ROTATION_STEP)."""
    if not alpha * largest_turn(delta, model.rot_dof) <= MAX_ROTATION_STEP:
        return None
    out = state.copy()
    retract(
        state.positions, state.quats, model.node_dof, model.rot_dof, delta, alpha, out.positions, out.quats, np.empty(3)
    )
    return out
