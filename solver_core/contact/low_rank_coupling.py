# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact between two cables (or a cable and itself) as low-rank terms beside the banded matrix:
each acting pair couples a few degrees of freedom far apart along the band (banded.low_rank_solve)."""

import numpy as np

from .._jit import njit
from .contact import SELF_NODE, SELF_SEG
from .pair_geometry import segment_pair_curvature


@njit
def _acting_self_pair(kind, pair_force, p):
    return (kind[p] == SELF_NODE or kind[p] == SELF_SEG) and (
        pair_force[p, 0] != 0.0 or pair_force[p, 1] != 0.0 or pair_force[p, 2] != 0.0
    )


@njit
def self_coupling(pos, rod, pairs, extra, exact, store, last_spans):
    """Self-contact couples the two touching legs of a cable (or two cables solved together), far
    apart in the band. Per acting self pair, the Gauss-Newton Hessian k J J^T with J = (a on this
    side, b on the other) has its blocks k a a^T and k b b^T inside the band (contact_energy adds
    them); the rest, k (a b^T + b a^T), is returned as a pair of rows of U^T (a, b, fixed dofs
    zeroed) with the pair stiffness k in k_c. With ``exact`` (the exact Hessian, not Gauss-Newton),
    a segment pair between cables also subtracts the coupling of its ends' power mean,
    -k (a_M b_M^T + b_M a_M^T) (``pair_end_grad``, another pair of rows), and adds its distance's
    curvature (pair_geometry.segment_pair_curvature) as whole terms k v v^T, one row each after all the
    pairs, k in k_s: they are small beside the pair's k n n^T, so the band stays as stiff as it
    was, and a row instead of two keeps the capacitance matrix small. Returns Ut, k_c, k_s, the
    rows' spans (low_rank_factor) and ``store``.

    U^T is dense (n_dof columns per row) for the band solves, and allocating and clearing ~100 rows
    of ten cables' dofs per iteration costs page faults: it lives in ``store`` (grown when too small)
    from call to call, and only what the last call wrote (``last_spans``) is cleared.

    ``rod``: kernel_arrays.RodArrays; ``pairs``: kernel_arrays.PairBuffers; ``extra``:
    kernel_arrays.InteractionArrays."""
    kind, elem, prim, pair_gap = pairs.kind, pairs.elem, pairs.prim, pairs.gap
    pair_t, pair_u, pair_normal, pair_force, pair_end_grad = pairs.t, pairs.u, pairs.normal, pairs.force, pairs.end_grad
    node_dof, fixed = rod.node_dof, rod.fixed
    stiffness, node_len, seg_len = extra.contact.stiffness, extra.node_len, extra.seg_len
    acting = np.empty(kind.shape[0], dtype=np.int64)
    n_act = 0
    for p in range(kind.shape[0]):
        if _acting_self_pair(kind, pair_force, p):
            acting[n_act] = p
            n_act += 1
    # each acting segment pair's curvature terms (up to 4), computed once for counting and filling
    curv_vecs = np.empty((4 * n_act, 12))
    curv_coefs = np.empty(4 * n_act)
    curv_count = np.zeros(n_act, dtype=np.int64)
    n_c, n_s = 0, 0
    for a in range(n_act):
        p = acting[a]
        n_c += 2 if _has_end_grad(pair_end_grad, p) else 1
        if exact and kind[p] == SELF_SEG:
            curv_count[a] = _curvature_terms(
                elem,
                prim,
                pair_t,
                pair_u,
                pair_gap,
                stiffness,
                seg_len,
                pos,
                p,
                curv_vecs[4 * a : 4 * a + 4],
                curv_coefs[4 * a : 4 * a + 4],
            )
            n_s += curv_count[a]
    for r in range(last_spans.shape[0]):
        for piece in range(2):
            for d in range(last_spans[r, 2 * piece], last_spans[r, 2 * piece + 1]):
                store[r, d] = 0.0
    if store.shape[0] < 2 * n_c + n_s:
        store = np.zeros((max(2 * n_c + n_s, 2 * store.shape[0]), fixed.shape[0]))
    Ut = store[: 2 * n_c + n_s]
    k_c = np.empty(n_c)
    k_s = np.empty(n_s)
    spans = np.zeros((2 * n_c + n_s, 4), dtype=np.int64)
    j, q = 0, 0
    for a in range(n_act):
        p = acting[a]
        i, c, t, u = elem[p], prim[p], pair_t[p], pair_u[p]
        node_pair = kind[p] == SELF_NODE
        last = i if node_pair else i + 1
        k_c[j] = stiffness * (node_len[i] if node_pair else seg_len[i])
        for k in range(3):
            nk = pair_normal[p, k]
            if node_pair:
                Ut[2 * j, node_dof[i] + k] = -nk
            else:
                Ut[2 * j, node_dof[i] + k] = -(1.0 - t) * nk
                Ut[2 * j, node_dof[i + 1] + k] = -t * nk
            Ut[2 * j + 1, node_dof[c] + k] = (1.0 - u) * nk
            Ut[2 * j + 1, node_dof[c + 1] + k] = u * nk
        _fix_row(Ut, 2 * j, i, last, np.int64(-1), np.int64(-1), node_dof, fixed, spans)
        _fix_row(Ut, 2 * j + 1, c, c + 1, np.int64(-1), np.int64(-1), node_dof, fixed, spans)
        j += 1
        if _has_end_grad(pair_end_grad, p):
            k_c[j] = -stiffness * seg_len[i]
            for k in range(3):
                Ut[2 * j, node_dof[i] + k] = pair_end_grad[p, k]
                Ut[2 * j, node_dof[i + 1] + k] = pair_end_grad[p, 3 + k]
                Ut[2 * j + 1, node_dof[c] + k] = pair_end_grad[p, 6 + k]
                Ut[2 * j + 1, node_dof[c + 1] + k] = pair_end_grad[p, 9 + k]
            _fix_row(Ut, 2 * j, i, i + 1, np.int64(-1), np.int64(-1), node_dof, fixed, spans)
            _fix_row(Ut, 2 * j + 1, c, c + 1, np.int64(-1), np.int64(-1), node_dof, fixed, spans)
            j += 1
        for m in range(4 * a, 4 * a + curv_count[a]):
            r = 2 * n_c + q
            k_s[q] = curv_coefs[m]
            for k in range(3):
                Ut[r, node_dof[i] + k] = curv_vecs[m, k]
                Ut[r, node_dof[i + 1] + k] = curv_vecs[m, 3 + k]
                Ut[r, node_dof[c] + k] = curv_vecs[m, 6 + k]
                Ut[r, node_dof[c + 1] + k] = curv_vecs[m, 9 + k]
            _fix_row(Ut, r, i, i + 1, c, c + 1, node_dof, fixed, spans)
            q += 1
    return Ut, k_c, k_s, spans, store


@njit
def _curvature_terms(elem, prim, pair_t, pair_u, pair_gap, stiffness, seg_len, pos, p, vecs, coefs):
    force = stiffness * seg_len[elem[p]] * max(-pair_gap[p], 0.0)
    return segment_pair_curvature(pos, elem[p], prim[p], pair_t[p], pair_u[p], force, vecs, coefs)


@njit
def _has_end_grad(pair_end_grad, p):
    if pair_end_grad.shape[0] <= p:
        return False
    for k in range(12):
        if pair_end_grad[p, k] != 0.0:
            return True
    return False


@njit
def _fix_row(Ut, row, first, last, first2, last2, node_dof, fixed, spans):
    """Fixed dofs out of a row of U^T (their rows and columns are Dirichlet), and its spans: the
    columns of nodes first..last, and of first2..last2 (-1: none), lower piece first."""
    for piece in range(2):
        a, b = (first, last) if piece == 0 else (first2, last2)
        if a < 0:
            continue
        for n in range(a, b + 1):
            for k in range(3):
                if fixed[node_dof[n] + k]:
                    Ut[row, node_dof[n] + k] = 0.0
    lo, hi = node_dof[first], node_dof[last] + 3
    lo2, hi2 = (node_dof[first2], node_dof[last2] + 3) if first2 >= 0 else (0, 0)
    if first2 >= 0 and lo2 < lo:
        lo, hi, lo2, hi2 = lo2, hi2, lo, hi
    spans[row, 0], spans[row, 1], spans[row, 2], spans[row, 3] = lo, hi, lo2, hi2
