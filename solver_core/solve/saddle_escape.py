# SPDX-License-Identifier: GPL-3.0-or-later
"""Leaving a saddle: a line search along a direction of negative curvature (stability.py finds it)
that doubles the move while the energy keeps falling."""

import math

import numpy as np

from .._jit import njit
from ..contact.crossing import step_crosses_triangles
from ..contact.step_limits import approach_fraction, evaluate_reachable, lower_gaps, pair_moves
from .newton_assembly import MAX_ROTATION_STEP, energy_after_step, node_distances, node_moves, retract

# Leaving a saddle: the first trial along the negative-curvature direction moves the farthest node by
# this fraction of the cable's length (or turns a section by ESCAPE_FIRST_TURN rad), later trials
# double it while the energy keeps falling.
ESCAPE_FIRST_MOVE = 1e-3
ESCAPE_FIRST_TURN = 0.01
ESCAPE_LARGEST_MOVE = 0.25


@njit
def contact_fraction(pos, rod, extra, pairs, step):
    """The fraction of ``step`` that carries no contact point through its gap (step_limits), the pairs it
    could reach evaluated at their true normals first: the limit every trial step (Newton's, its
    geodesic correction's, a saddle escape's) is held to."""
    pair_moves(pairs.nodes, node_moves(step, rod.node_dof), pairs.moves)
    evaluate_reachable(pos, pairs, extra)
    return approach_fraction(step, rod.node_dof, pairs, extra)


@njit
def saddle_trial(pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t, step, trial_pos, trial_quat):
    """Energy after ``step``, cut (in place) where a contact point would pass its gap, infinite where it
    sinks a contact deeper than a Newton step may; returns (energy, the fraction of the step kept)."""
    fraction = 1.0
    if extra.contact.uses_contact and pairs.kind.shape[0] > 0:
        fraction = contact_fraction(pos, rod, extra, pairs, step)
        for i in range(step.shape[0]):
            step[i] *= fraction
    trial, work, _extra_energy, too_deep = energy_after_step(
        pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t, step, trial_pos, trial_quat
    )
    if too_deep > 0.0:
        return np.inf, fraction  # sinks a contact deeper than a Newton step may (step_limits.depth_limit)
    return trial - work, fraction


@njit
def _scaled(direction, scale, step):
    for i in range(step.shape[0]):
        step[i] = scale * direction[i]
    return step


@njit
def _first_escape(grad, direction, rod):
    """Turn ``direction`` downhill (in place) and size its first trial: (the scale of the first step, the
    cable's length, the largest node move and frame turn of ``direction``). The first step moves a node
    by ESCAPE_FIRST_MOVE of the length or turns a frame by ESCAPE_FIRST_TURN, whichever comes first."""
    slope = 0.0
    for i in range(grad.shape[0]):
        slope += grad[i] * direction[i]
    if slope > 0.0:
        for i in range(grad.shape[0]):
            direction[i] = -direction[i]
    length = 0.0
    for i in range(rod.rest_len.shape[0]):
        length += rod.rest_len[i]
    largest_move = 0.0
    for m in node_moves(direction, rod.node_dof):
        largest_move = max(largest_move, m)
    largest_turn = 0.0
    for r in range(rod.rot_dof.shape[0]):
        g0 = rod.rot_dof[r]
        largest_turn = max(
            largest_turn, math.sqrt(direction[g0] ** 2 + direction[g0 + 1] ** 2 + direction[g0 + 2] ** 2)
        )
    scale = np.inf
    if largest_move > 0.0:
        scale = ESCAPE_FIRST_MOVE * length / largest_move
    if largest_turn > 0.0:
        scale = min(scale, ESCAPE_FIRST_TURN / largest_turn)
    return scale, length, largest_move, largest_turn


@njit
def leave_saddle(pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t, grad, direction, energy):
    """Move the state (in place) downhill along a direction of negative curvature; returns whether
    the energy fell.

    The direction's sign follows the slope; a symmetric saddle (slope zero) is left the way the
    direction came out of stability.negative_curvature_direction, which does not depend on
    round-off. Trial steps double from a small one while the energy keeps falling; each is cut
    where it would carry a contact point through its gap, as Newton steps are."""
    node_dof, rot_dof = rod.node_dof, rod.rot_dof
    use_contact = extra.contact.uses_contact
    n_dof = grad.shape[0]
    scale, length, largest_move, largest_turn = _first_escape(grad, direction, rod)
    if not (scale < np.inf):
        return False
    step = np.empty(n_dof)
    trial_pos = np.empty_like(pos)
    trial_quat = np.empty_like(quat)
    best_scale, best_energy = 0.0, energy
    noise = 1e-13 * abs(energy)
    for sign in (1.0, -1.0):
        # larger steps while the energy keeps falling; if the first does not lower it, the quartic
        # terms (a buckle that must stretch the cable) already dominate there: smaller ones
        first = saddle_trial(
            pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t, _scaled(direction, sign * scale, step),
            trial_pos, trial_quat,
        )  # fmt: skip
        growing = first[0] < energy - noise
        trial_scale = scale
        if not growing:
            for _k in range(40):
                trial_scale *= 0.5
                trial_energy, fraction = saddle_trial(
                    pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t,
                    _scaled(direction, sign * trial_scale, step), trial_pos, trial_quat,
                )  # fmt: skip
                if trial_energy < energy - noise:
                    break
            else:
                continue
        # then as far along the ray as the energy keeps falling (finer once the first trial overshot)
        factor = 2.0 if growing else math.sqrt(2.0)
        for _k in range(40):
            trial_energy, fraction = saddle_trial(
                pos, quat, rod, load_factor, extra, pairs, sl_seg, sl_t,
                _scaled(direction, sign * trial_scale, step), trial_pos, trial_quat,
            )  # fmt: skip
            if not (trial_energy < best_energy):
                break
            best_scale, best_energy = sign * trial_scale * fraction, trial_energy
            if fraction < 1.0:
                break
            trial_scale *= factor
            if (
                trial_scale * largest_move > ESCAPE_LARGEST_MOVE * length
                or trial_scale * largest_turn > MAX_ROTATION_STEP
            ):
                break
        if best_energy < energy - noise:
            break
    if not (best_energy < energy - noise):
        return False
    rot_step = np.empty(3)
    _scaled(direction, best_scale, step)
    retract(pos, quat, node_dof, rot_dof, step, 1.0, trial_pos, trial_quat, rot_step)
    if use_contact and step_crosses_triangles(pos, trial_pos, extra.node_part, extra.obstacles):
        return False
    if use_contact and pairs.kind.shape[0] > 0:
        node_move = np.empty(pos.shape[0])
        node_distances(trial_pos, pos, node_move)
        pair_moves(pairs.nodes, node_move, pairs.moves)
        lower_gaps(pairs.moves, pairs.gap, pairs.fresh)
    pos[:, :] = trial_pos
    quat[:, :] = trial_quat
    return True
