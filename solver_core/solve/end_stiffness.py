# SPDX-License-Identifier: GPL-3.0-or-later
"""The stiffness a cable in equilibrium shows at its held ends: the Schur complement of its Hessian.

With the free degrees of freedom f at a minimum for held ones h, the reduced energy E*(h) has the
Hessian (static condensation; the implicit function theorem on dE/df = 0)

    d2E*/dh2 = H_hh - H_hf H_ff^-1 H_fh,

H the exact Hessian of the rod's energy (rod_energy.py, geometric = 1). A junction moves the held
dofs of its branches' ends linearly: the end node by the junction's shift, the end frame by its
rotation (body-frame increment R_f^T w, exactly, since exp(w) R_f = R_f exp(R_f^T w)), so the
junctions' stiffness is the sum of these blocks mapped to (p, w). Exact only for a cable whose
energy is the rod's alone (no contact, compliant or sliding clips): ``exact_for`` tells.
"""

import numpy as np

from .._jit import njit
from ..kernel_arrays import CondensedFactors
from ..maths.banded import band_cholesky
from ..maths.rotations import quat_to_matrix
from ..rod.rod_energy import rod_gradient_hessian

# Round-off in a state (relative to the cable's length, and in unit quaternions): 16 units of the last
# place, where writing a held frame by two routes differs by 1.5 (matrix_to_quat of the same frame)
ROUNDING = 16.0 * np.finfo(float).eps


def exact_for(session) -> bool:
    """Whether the rod's own Hessian is the whole Hessian of ``session``'s cable at its state and about
    it: no clip holds it by an energy (compliant or sliding clips) and nothing it could touch lies
    within one reach of it (Interactions.reach: a contact coming on within a step is a stiffness the
    rod's Hessian does not know)."""
    if any(c.kind == "sliding" or c.stiffness is not None for c in session.model.cable.clips):
        return False
    check = session.interactions
    return check.nothing_within(session.state, check.reach)


def hessian_band(model, state, geometric: float = 1.0) -> tuple:
    """(gradient, lower band in banded.py's storage) of the rod's energy with its exact Hessian, held
    rows too (``geometric`` = 0: the Gauss-Newton matrix, rod_gradient_hessian)."""
    n, bw = model.n_dof, model.bw
    band = np.zeros((n, bw + 1))
    grad = np.zeros(n)
    rod_gradient_hessian(state.positions, state.quats, model.arrays(), 1.0, grad, band, bw, np.bool_(True), geometric)
    return grad, band


@njit
def _condense_hessian(pos, quat, rod, geometric, bw, band, ordered, factors):
    """``condense`` of the rod's Hessian at (pos, quat), assembled into ``band`` (hessian_band's), into
    ``factors`` (kernel_arrays.CondensedFactors), in reversed order of the dofs where ``factors.reverse``
    (into ``ordered``: (P H P)[i, i - d] = H[n-1-i+d, n-1-i], P the reversal; ``factors.fixed`` and
    ``factors.held`` in that order). One call for what took three and their Python (docs/performance.md)."""
    reverse, fixed, held = factors.reverse, factors.fixed, factors.held
    S, factor, Y, first = factors.S, factors.factor, factors.Y, factors.first
    grad = np.zeros(band.shape[0])
    band[:, :] = 0.0
    rod_gradient_hessian(pos, quat, rod, 1.0, grad, band, bw, np.bool_(True), geometric)
    if not reverse:
        return condense(band, bw, fixed, held, S, factor, Y, first)
    n = band.shape[0]
    for c in range(bw + 1):
        d = bw - c
        for i in range(n):
            ordered[i, c] = band[n - 1 - i + d, c] if i >= d else 0.0
    return condense(ordered, bw, fixed, held, S, factor, Y, first)


@njit
def _band_entry(band, bw, i, j):
    """H[i, j] of the symmetric matrix whose lower band is ``band`` (0 outside the band)."""
    if i < j:
        i, j = j, i
    return band[i, bw - (i - j)] if i - j <= bw else 0.0


@njit
def condense(band, bw, fixed, held, S, factor, Y, first):
    """Static condensation onto the held dofs ``held`` (six per end, each end's together): S = H_hh -
    H_hf H_ff^-1 H_fh. The free block H_ff is H with every fixed row and column replaced by the
    identity's; its Cholesky factor L goes to ``factor`` and Y[:, a] = L^-1 H_f,h_a, so that S = H_hh -
    Y^T Y; an end's six columns vanish before the row ``first`` of each. Only forward solves: a held
    dof at the far end of the band has a column of L^-1 H_fh a few entries long. Returns False where
    H_ff is not positive definite."""
    n = band.shape[0]
    for i in range(n):
        for c in range(bw + 1):
            j = i - (bw - c)
            factor[i, c] = 0.0 if fixed[i] or (j >= 0 and fixed[j]) else band[i, c]
        if fixed[i]:
            factor[i, bw] = 1.0
    if not band_cholesky(factor, bw):
        return False
    m = held.shape[0]
    Y[:, :] = 0.0
    for a0 in range(0, m, 6):
        lo = n
        for a in range(a0, a0 + 6):
            lo = min(lo, max(0, held[a] - bw))
        for a in range(a0, a0 + 6):
            first[a] = lo
            h = held[a]
            for i in range(max(0, h - bw), min(n, h + bw + 1)):
                if not fixed[i]:
                    Y[i, a] = _band_entry(band, bw, i, h)
        _forward_six(factor, bw, Y, a0, lo)
    for a in range(m):
        for b in range(a, m):
            S[a, b] = _band_entry(band, bw, held[a], held[b])
    for a0 in range(0, m, 6):
        for b0 in range(a0, m, 6):
            _subtract_products(Y, a0, b0, max(first[a0], first[b0]), S)
    for a in range(m):
        for b in range(a):
            S[a, b] = S[b, a]
    return True


@njit
def _forward_six(factor, bw, Y, a0, lo):
    """Y[:, a0:a0 + 6] = L^-1 Y[:, a0:a0 + 6] in place, for columns that vanish before row ``lo``: six
    independent sums per row, where one column at a time was a chain of dependent subtractions."""
    n = factor.shape[0]
    for i in range(lo, n):
        s0, s1, s2, s3, s4, s5 = Y[i, a0], Y[i, a0 + 1], Y[i, a0 + 2], Y[i, a0 + 3], Y[i, a0 + 4], Y[i, a0 + 5]
        for k in range(max(lo, i - bw), i):
            f = factor[i, bw - (i - k)]
            s0 -= f * Y[k, a0]
            s1 -= f * Y[k, a0 + 1]
            s2 -= f * Y[k, a0 + 2]
            s3 -= f * Y[k, a0 + 3]
            s4 -= f * Y[k, a0 + 4]
            s5 -= f * Y[k, a0 + 5]
        d = factor[i, bw]
        Y[i, a0], Y[i, a0 + 1], Y[i, a0 + 2] = s0 / d, s1 / d, s2 / d
        Y[i, a0 + 3], Y[i, a0 + 4], Y[i, a0 + 5] = s3 / d, s4 / d, s5 / d


@njit
def _subtract_products(Y, a0, b0, lo, S):
    """S[a, b] -= Y[lo:, a] . Y[lo:, b] for the six columns from a0 and the six from b0 (the upper
    triangle where they are the same)."""
    for i in range(lo, Y.shape[0]):
        for a in range(a0, a0 + 6):
            y = Y[i, a]
            for b in range(max(a, b0), b0 + 6):
                S[a, b] -= y * Y[i, b]


@njit
def condense_gradient(factor, bw, fixed, held, grad, Y, first, z, r):
    """The reduced gradient r = g_h - H_hf H_ff^-1 g_f of ``condense``'s factors: z = L^-1 g_f, r = g_h -
    Y^T z. The Newton step of the free dofs with the held ones moved by dh is df = -L^-T (z + Y dh)
    (free_step)."""
    n = factor.shape[0]
    for i in range(n):
        z[i] = 0.0 if fixed[i] else grad[i]
    _forward_from(factor, bw, z, 0)
    m = held.shape[0]
    for a in range(m):
        r[a] = grad[held[a]]
    for i in range(first.min() if m else n, n):
        zi = z[i]
        for a in range(m):
            if i >= first[a]:
                r[a] -= Y[i, a] * zi


@njit
def _forward_from(factor, bw, y, lo):
    """y = L^-1 y in place, for a y that vanishes before index ``lo``."""
    n = factor.shape[0]
    for i in range(lo, n):
        s = y[i]
        for k in range(max(lo, i - bw), i):
            s -= factor[i, bw - (i - k)] * y[k]
        y[i] = s / factor[i, bw]


@njit
def free_step(factor, bw, Y, z, dh, out):
    """out = -L^-T (z + Y dh): the free dofs' Newton step for a move dh of the held ones (condense)."""
    n, m = factor.shape[0], dh.shape[0]
    for i in range(n):
        s = z[i]
        for a in range(m):
            s += Y[i, a] * dh[a]
        out[i] = s
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, min(n, i + bw + 1)):
            s -= factor[k, bw - (k - i)] * out[k]
        out[i] = s / factor[i, bw]
    for i in range(n):
        out[i] = -out[i]


@njit
def _reduce(factors, bw, grad, quats, end_rots, Kb, rb, J, z):
    """condense_gradient of the condensation ``factors`` (kernel_arrays.CondensedFactors) for ``grad`` (in
    the dofs' own order: reversed here where the condensation is), mapped to the ends' world moves: Kb =
    J^T S J, rb = J^T r, J = end_map at ``quats`` (the ends' frames ``end_rots``). One call for what took
    five and their Python (docs/performance.md)."""
    factor, fixed, held, Y, first, S = factors.factor, factors.fixed, factors.held, factors.Y, factors.first, factors.S
    reverse = factors.reverse
    n, m = factor.shape[0], held.shape[0]
    ordered = np.empty(n) if reverse else grad
    if reverse:
        for i in range(n):
            ordered[i] = grad[n - 1 - i]
    r = np.empty(m)
    condense_gradient(factor, bw, fixed, held, ordered, Y, first, z, r)
    J[:, :] = 0.0
    for e in range(end_rots.shape[0]):
        _end_block(quats[end_rots[e]], J, 6 * e)
    for a in range(m):
        rb[a] = 0.0
        for c in range(m):
            rb[a] += J[c, a] * r[c]
    SJ = np.zeros((m, m))
    for a in range(m):
        for b in range(m):
            for c in range(m):
                SJ[a, b] += S[a, c] * J[c, b]
    for a in range(m):
        for b in range(m):
            total = 0.0
            for c in range(m):
                total += J[c, a] * SJ[c, b]
            Kb[a, b] = total


@njit
def _free_response(factor, bw, Y, z, J, dy, reverse, out):
    """free_step for a world move ``dy`` of the ends (held dofs J dy), in the dofs' own order."""
    n, m = factor.shape[0], J.shape[0]
    dh = np.zeros(m)
    for a in range(m):
        for b in range(m):
            dh[a] += J[a, b] * dy[b]
    step = np.empty(n) if reverse else out
    free_step(factor, bw, Y, z, dh, step)
    if reverse:
        for i in range(n):
            out[i] = step[n - 1 - i]


def end_dofs(model, side: str) -> np.ndarray:
    """The six held dofs of an end: its node's position, then its frame's body rotation (read-only;
    kept with the model)."""
    key = ("end_dofs", side)
    if key not in model.derived:
        node = 0 if side == "start" else model.n_nodes - 1
        rot = model.start_frame if side == "start" else model.end_frame
        dofs = np.concatenate([model.node_dof[node] + np.arange(3), model.rot_dof[rot] + np.arange(3)])
        dofs.flags.writeable = False
        model.derived[key] = dofs
    return model.derived[key]


def condensed_end_stiffness(model, state, sides) -> np.ndarray | None:
    """d2E*/dh2 for the ends ``sides`` ("start"/"end"), in world shift and world rotation of each end
    (6 per end, in that order), or None where the free part of the Hessian is not positive definite
    (the cable is not at a strict minimum: the condensation does not hold)."""
    out = Condensation.at(model, state, sides)
    return None if out is None else out.stiffness(state)


def end_map(model, state, sides) -> np.ndarray:
    """J: the held dofs' change (end shift, body-frame rotation of the end frame) per world shift and
    world rotation w of each end; theta = R_f^T w."""
    J = np.zeros((6 * len(sides), 6 * len(sides)))
    for e, side in enumerate(sides):
        _end_block(state.quats[model.start_frame if side == "start" else model.end_frame], J, 6 * e)
    return J


@njit
def _end_block(q, J, at):
    """One end's block of end_map: the identity for the shift, R_f^T for the rotation."""
    R = np.empty((3, 3))
    quat_to_matrix(q, R)
    for i in range(3):
        J[at + i, at + i] = 1.0
        for j in range(3):
            J[at + 3 + i, at + 3 + j] = R[j, i]


def end_rotations(model, sides: tuple) -> np.ndarray:
    """The rotation indices of the frames of the ends ``sides`` (kept with the model)."""
    key = ("end rotations", sides)
    if key not in model.derived:
        model.derived[key] = np.array(
            [model.start_frame if side == "start" else model.end_frame for side in sides], dtype=np.int64
        )
    return model.derived[key]


def _layout(model, sides: tuple) -> tuple:
    """(held dofs, fixed mask, reverse) of the condensation onto ``sides``, in the order it condenses
    in (Condensation); (None, None, False) where an end is not held. Kept with the model."""
    key = ("condensation layout", sides)
    if key not in model.derived:
        fixed = model.fixed.astype(bool)
        held = np.concatenate([end_dofs(model, side) for side in sides]) if sides else np.zeros(0, dtype=np.int64)
        assert held.shape[0] % 6 == 0  # condense takes an end's six dofs together
        if not fixed[held].all():
            model.derived[key] = (None, None, False)
        else:
            n, m = model.n_dof, held.shape[0]
            reverse = m > 0 and int(held.min()) < n - 1 - int(held.max())
            if reverse:
                held, fixed = n - 1 - held, np.ascontiguousarray(fixed[::-1])
            model.derived[key] = (held, fixed, bool(reverse))
    return model.derived[key]


class Condensation:
    """``condense`` of one cable's Hessian ``band`` at ``state`` for its ends ``sides``: its factors, kept
    for gradients at other states too (a chord step: Newton's step with the Hessian of a nearby state,
    which converges linearly at the rate of the Hessian's change; Kelley 1995, Sec. 5.4).

    Where the held dofs lie nearer the first dof than the last (a cable held at its start alone), the
    dofs are condensed in reverse order (``reverse``): the forward solves then start a band's width
    before the held dofs instead of at the first dof, and a cable of 100 segments condenses in a
    third less time (docs/performance.md). ``held``, ``fixed`` and the factors are in that order."""

    def __init__(self, model, state, sides, band, factors: CondensedFactors, geometric=1.0):
        self.model, self.sides, self.band, self.factors = model, tuple(sides), band, factors
        self.geometric = geometric
        self.positions, self.quats = state.positions.copy(), state.quats.copy()
        self.held, self.fixed, self.reverse = factors.held, factors.fixed, factors.reverse
        self.S, self.factor, self.Y, self.first = factors.S, factors.factor, factors.Y, factors.first

    @classmethod
    def at(cls, model, state, sides, geometric: float = 1.0):
        """The condensation of the rod's Hessian at ``state`` (hessian_band's, with its ``geometric``
        part), or None where the ends are not all held or H_ff is not positive definite."""
        held, fixed, reverse = _layout(model, tuple(sides))
        if held is None:
            return None
        n, m, bw = model.n_dof, held.shape[0], model.bw
        band, ordered = np.empty((n, bw + 1)), np.empty((n, bw + 1) if reverse else (0, bw + 1))
        S, factor, Y, first = np.empty((m, m)), np.empty((n, bw + 1)), np.empty((n, m)), np.empty(m, np.int64)
        factors = CondensedFactors(fixed, held, reverse, S, factor, Y, first)
        if not _condense_hessian(state.positions, state.quats, model.arrays(), geometric, bw, band, ordered, factors):
            return None
        return cls(model, state, sides, band, factors, geometric)

    def formed_at(self, model, state, sides) -> bool:
        """Whether this is the condensation of ``model``'s Hessian at ``state`` for ``sides``, to
        round-off: formed at a state that differs from ``state`` by ROUNDING at most (a frame held at a
        junction and written by another sequence of operations), whose Hessian is this one to
        round-off."""
        if model is not self.model or tuple(sides) != self.sides:
            return False
        length = model.cable.length
        return bool(
            np.abs(state.positions - self.positions).max() <= ROUNDING * length
            and np.abs(state.quats - self.quats).max() <= ROUNDING
        )

    def proves_stable(self, model, state) -> bool:
        """Whether this condensation shows ``model``'s rod energy to have a strict minimum in the free
        dofs at ``state``, were it balanced there: formed there (formed_at) from the exact Hessian,
        whose free block it factored (positive definite; a stricter test than the solver's own, which
        allows a shift of stability.stability_shift)."""
        return self.geometric == 1.0 and self.formed_at(model, state, self.sides)

    def stiffness(self, state) -> np.ndarray:
        """J^T S J: the ends' stiffness in world shifts and rotations (end_map at ``state``)."""
        J = end_map(self.model, state, list(self.sides))
        return J.T @ self.S @ J

    def reduced(self, state, grad) -> tuple:
        """(J^T S J, J^T r, step) for the gradient ``grad`` at ``state``: step(dy) is the free dofs' Newton
        step for a world move dy of the ends (held dofs through J)."""
        model = self.model
        n, m = model.n_dof, self.held.shape[0]
        Kb, rb, J, z = np.empty((m, m)), np.empty(m), np.empty((m, m)), np.empty(n)
        end_rots = end_rotations(model, self.sides)
        _reduce(self.factors, model.bw, grad, state.quats, end_rots, Kb, rb, J, z)

        def step(dy):
            out = np.empty(n)
            _free_response(self.factor, model.bw, self.Y, z, J, np.asarray(dy, dtype=float), self.reverse, out)
            return out

        return Kb, rb, step
