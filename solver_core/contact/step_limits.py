# SPDX-License-Identifier: GPL-3.0-or-later
"""How far a Newton step may go near contacts: the filter of continuous collision detection with a
minimum separation, and the step length that balances the penalty of the pairs a step closes."""

import math

import numpy as np

from .._jit import njit, njit_inline
from .contact import (
    CABLE_SEGMENT_APPROACH,
    CAP_NODE,
    CAP_SEG,
    ITERATE_PENETRATION,
    MIN_SEPARATION,
    PLANE,
    SELF_NODE,
    SELF_SEG,
    SPHERE,
    TRI_EDGE,
    TRI_NODE,
)
from .pair_geometry import is_obstacle_pair, pair_gaps


@njit
def pair_moves(nodes, node_move, out):
    """How far each pair's gap can shrink when node n moves ``node_move[n]``: a gap is 1-Lipschitz in
    the positions of the nodes it depends on (pair_nodes)."""
    for p in range(nodes.shape[0]):
        move = max(node_move[nodes[p, 0]], node_move[nodes[p, 1]])
        if nodes[p, 2] >= 0:
            move += max(node_move[nodes[p, 2]], node_move[nodes[p, 3]])
        out[p] = move


@njit
def allowed_depth(node_radius):
    """How deep a step may sink an obstacle pair [m] (contact.ITERATE_PENETRATION; depth_limit).
    Pairs between cables are left to the filter: a cable solved alone against another frozen where
    that one was solved may have to press into it. So are planes: the filter's bound is exact for
    them (a node's gap is linear in the step), and the ten crossed cables of bench_contact, pressed
    onto a plane, took 35-45 iterations per step under this limit instead of 26-29."""
    return ITERATE_PENETRATION * node_radius.min()


@njit_inline
def depth_limit(allowed, depth_before):
    """How deep a step may sink a depth-limited pair that was ``depth_before`` deep [m]: to
    ``allowed``, and one already deeper (a cold route drawn into an obstacle) no deeper than it was.
    Limiting the increment instead let iterates sink 1 % of the radius per step: on random drapes
    over tessellated cylinders and boxes, falling cables reached 8 % over a few dozen steps while
    the penalty's own depth under their weight is some 0.01 %. No slack either: a hundredth of
    ``allowed`` per step let a cable held on top of a sphere creep from 1 % to 2.8 % in some 180
    steps."""
    return max(allowed, depth_before)


@njit_inline
def is_depth_limited(kind):
    """Whether ``allowed_depth`` applies to a pair of this kind: obstacles other than planes."""
    return is_obstacle_pair(kind) and kind != PLANE


@njit
def evaluate_reachable(pos, pairs, extra):
    """Evaluates at ``pos`` the pairs (kernel_arrays.PairBuffers) not evaluated there yet whose gap
    bound a step moving each pair by ``pairs.moves`` (pair_moves) could close: the step filter needs
    their true normal (the others cannot be reached)."""
    kind, moves, pair_gap, fresh = pairs.kind, pairs.moves, pairs.gap, pairs.fresh
    n = 0
    for p in range(kind.shape[0]):
        if not fresh[p] and not (pair_gap[p] >= moves[p]):
            n += 1
    if n == 0:
        return
    reachable = np.empty(n, dtype=np.int64)
    j = 0
    for p in range(kind.shape[0]):
        if not fresh[p] and not (pair_gap[p] >= moves[p]):
            reachable[j] = p
            fresh[p] = True
            j += 1
    pair_gaps(
        reachable,
        pos,
        kind,
        pairs.elem,
        pairs.prim,
        extra.obstacles,
        extra.node_radius,
        pair_gap,
        pairs.t,
        pairs.normal,
        pairs.point,
        pairs.u,
    )


@njit
def lower_gaps(moves, pair_gap, fresh):
    """After a step moving each pair by ``moves`` (pair_moves): every gap becomes a lower bound of the
    new gap, and no pair is evaluated at the new positions yet."""
    for p in range(pair_gap.shape[0]):
        pair_gap[p] -= moves[p]
        fresh[p] = False


@njit
def pairs_that_may_touch(pair_gap):
    """The pairs whose gap (or lower bound of it) is not positive: all others are open."""
    n = 0
    for p in range(pair_gap.shape[0]):
        if not (pair_gap[p] > 0.0):
            n += 1
    live = np.empty(n, dtype=np.int64)
    j = 0
    for p in range(pair_gap.shape[0]):
        if not (pair_gap[p] > 0.0):
            live[j] = p
            j += 1
    return live


@njit
def plunge_step_length(pairs, scale, extra, slope, curvature):
    """(alpha, penalty): how far along a Newton step to go when it closes open facet pairs
    (kernel_arrays.PairBuffers, their ``approach`` from approach_fraction).

    Open pairs are not in the Newton model, so a step sliding a cable over a tessellated surface
    pushes nodes into the next facets, which they did not touch yet (the normal jumps at every facet
    edge); the penalty then costs up to ten thousand times the gain the model predicted, and raising
    the damping until a step passed took several factorisations per iteration. Along the step, with
    the pairs' gaps linearised (a_p: approach per unit step, g_p: gap), the energy is the model plus
    the penalty of the facet pairs it closes,
        phi(alpha) = -G alpha + C alpha^2 / 2 + sum_p k_p / 2 (alpha a_p - g_p)_+^2,
    G = -grad . delta, C = delta . H . delta: a convex piecewise quadratic, whose minimum is found
    exactly by walking its breakpoints g_p / a_p in order. ``penalty`` is the last sum at that alpha
    (the caller's predicted gain includes it). A step that closes no open facet pair is not this
    function's business: (1, 0), and the caller damps it as before. ``approach``: per pair, from
    approach_fraction for the step before it was cut to ``scale`` of its length.

    Node-facet pairs, segments against mesh edges and spheres, and node and segment pairs between
    cables count. A pile of crossed cables solved together has the same trouble: near equilibrium a
    step slides cables over each other into pairs just open, mostly segments crossing between nodes
    (measured on the ten crossing cables of the contact benchmark: 0.51-0.53 s per step with node
    pairs only, 0.37 s with both, cold 4.8 -> 2.7 s); so does a cable lifting off and landing on a
    sphere, its one pair switching on and off every other iteration (a drape of 7 segments spent its
    whole budget of 10,000 iterations so). A segment pair between cables is counted with its full
    depth (k l_segment); near a node it carries only what reaches beyond its ends, so the step is cut
    somewhat shorter there than it need be. Planes have no edges to slide into (counting them sent
    the pile of the contact benchmark into another of its equilibria, 35-45 iterations per step
    instead of 26-29); segments piercing a face and pairs against capsules are left to the step
    filter and the trust region."""
    approach, kind, elem, pair_gap, fresh = pairs.approach, pairs.kind, pairs.elem, pairs.gap, pairs.fresh
    stiffness, node_len, seg_len = extra.contact.stiffness, extra.node_len, extra.seg_len
    n = kind.shape[0]
    count = 0
    touch_at = np.empty(n)
    ka2 = np.empty(n)
    kag = np.empty(n)
    for p in range(n):
        if not fresh[p] or not (pair_gap[p] > 0.0):
            continue  # touching pairs are in the model; pairs not evaluated here cannot be reached
        if kind[p] != TRI_NODE and kind[p] != TRI_EDGE and kind[p] != SPHERE and kind[p] != SELF_NODE:
            if kind[p] != SELF_SEG:
                continue
        a = scale * approach[p]
        if not (a > pair_gap[p]):
            continue
        is_node = kind[p] == PLANE or kind[p] == TRI_NODE or kind[p] == CAP_NODE or kind[p] == SELF_NODE
        k = stiffness * (node_len[elem[p]] if is_node else seg_len[elem[p]])
        touch_at[count] = pair_gap[p] / a
        ka2[count] = k * a * a
        kag[count] = k * a * pair_gap[p]
        count += 1
    if count == 0 or not (curvature > 0.0) or not (slope > 0.0):
        return 1.0, 0.0
    order = np.argsort(touch_at[:count])
    # phi'(alpha) = -G + alpha (C + sum k a^2) - sum k a g over the pairs touched before alpha
    A = 0.0
    B = 0.0
    alpha = 1.0
    for idx in range(count + 1):
        upto = touch_at[order[idx]] if idx < count else 1.0
        root = (slope + B) / (curvature + A)
        if root <= upto:
            alpha = root
            break
        if idx < count:
            A += ka2[order[idx]]
            B += kag[order[idx]]
    penalty = 0.0
    for idx in range(count):
        q = order[idx]
        if touch_at[q] < alpha:
            penalty += 0.5 * (ka2[q] * alpha - kag[q]) ** 2 / ka2[q]
    return min(alpha, 1.0), penalty


@njit
def approach_fraction(delta, node_dof, pairs, extra):
    """The largest fraction (at most 1) of a step that carries no node farther than ``reach`` (beyond
    the pairs searched) and no contact point farther towards its primitive than its gap (at least
    half a radius): sliding along a surface is free, approaching it is not, so no step can jump
    through an obstacle. A Newton step that would push a free node deep into a surface it does not
    touch yet is cut short where it touches (the filter of continuous collision detection), keeping
    its direction; the next iteration sees the contact.

    Where a segment would cross another cable's segment between nodes (CAP_SEG, SELF_SEG), only a
    tenth of a radius is allowed: a segment plunged across another cable there is pushed out by a
    force the Gauss-Newton model of segment pairs does not follow (it leaves out the curvature of
    their distance), and Newton could not lift it out again (found in the ten-cable fan: a segment
    58 um deep with 38 N on it, the node pairs at both its ends open).

    ``pairs.approach`` (kernel_arrays.PairBuffers) receives how far the step carries each pair's
    contact point towards its primitive (to first order; 0 for the pairs passed over, which cannot
    reach theirs)."""
    kind, elem, prim, pair_gap, approach = pairs.kind, pairs.elem, pairs.prim, pairs.gap, pairs.approach
    pair_t, pair_u, pair_normal = pairs.t, pairs.u, pairs.normal
    node_radius, reach = extra.node_radius, extra.contact.reach
    fraction = 1.0
    n_nodes = node_dof.shape[0]
    largest2 = 0.0
    for i in range(n_nodes):
        a = node_dof[i]
        move2 = delta[a] ** 2 + delta[a + 1] ** 2 + delta[a + 2] ** 2
        if not (move2 <= reach * reach):
            fraction = min(fraction, reach / math.sqrt(move2))
        if not (move2 <= largest2):
            largest2 = move2
    # A contact point moves at most as far as the farther of its nodes (both sides together for a
    # cable's own segments): a pair whose gap is at least twice the largest node move cannot be
    # approached beyond its gap, and is passed over (most of the candidates near convergence).
    unreachable = 2.0 * math.sqrt(largest2)
    for p in range(kind.shape[0]):
        approach[p] = 0.0
        if pair_gap[p] >= unreachable:
            continue
        slack = CABLE_SEGMENT_APPROACH if (kind[p] == CAP_SEG or kind[p] == SELF_SEG) else 0.5
        allowed = max(pair_gap[p], slack * node_radius[elem[p]])
        # ... but never nearer to the obstacle's surface (the other centre line) than MIN_SEPARATION
        # radii, the minimum separation of additive CCD: the slack lets a touching point sink half a
        # radius per step, and two such steps carried nodes through zero-thickness plates
        allowed = max(0.0, min(allowed, pair_gap[p] + (1.0 - MIN_SEPARATION) * node_radius[elem[p]]))
        i = elem[p]
        if kind[p] == PLANE or kind[p] == TRI_NODE or kind[p] == CAP_NODE or kind[p] == SELF_NODE:
            w0, w1 = 1.0, 0.0
        else:
            w0, w1 = 1.0 - pair_t[p], pair_t[p]
        j = i + 1 if w1 != 0.0 else i
        move = 0.0
        for k in range(3):
            move -= (w0 * delta[node_dof[i] + k] + w1 * delta[node_dof[j] + k]) * pair_normal[p, k]
        if kind[p] == SELF_NODE or kind[p] == SELF_SEG:
            # the other side may come the other way in the same step: both share the gap
            c, u = prim[p], pair_u[p]
            for k in range(3):
                move += ((1.0 - u) * delta[node_dof[c] + k] + u * delta[node_dof[c + 1] + k]) * pair_normal[p, k]
        approach[p] = move
        if not (move <= allowed):
            fraction = min(fraction, allowed / move) if move > 0.0 else 0.0
    return fraction
