# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether a rest state of a model without a Hessian of its own (mass_spring, kirchhoff_cg) is a
minimum of its energy: the Hessian on the free nodes by central differences of the gradient, and the
direction of its lowest curvature (the way off a saddle)."""

import numpy as np


def lowest_curvature(x: np.ndarray, free: np.ndarray, gradient, step: float, blocked=None) -> tuple:
    """(lowest eigenvalue, its unit eigenvector as node moves (n, 3), the differences' noise) of the
    symmetric part of the difference Hessian on the free nodes ``free`` (indices); ``gradient(x, out)``
    writes dE/dx (n, 3) into ``out``. The noise shows in the Hessian's asymmetry (a stretch spring's
    1e6 N/m entries beside a column's -1 N/m lateral softening: a bound relative to the largest entry
    hid it). ``blocked``: per free node (index) the unit normals (k, 3) of the surfaces it rests on,
    along which it may not move, or None where it may not move at all (held by friction): the
    curvature is then that along the surfaces (the Hessian projected on their tangent spaces; a
    contact that pushes keeps its node off the surface to first order)."""
    if not len(free):
        return np.inf, np.zeros_like(x), 0.0
    grad_plus, grad_minus = np.zeros_like(x), np.zeros_like(x)
    dofs = [(i, k) for i in free for k in range(3)]
    H = np.zeros((len(dofs), len(dofs)))
    for col, (i, k) in enumerate(dofs):
        xp, xm = x.copy(), x.copy()
        xp[i, k] += step
        xm[i, k] -= step
        gradient(xp, grad_plus)
        gradient(xm, grad_minus)
        H[:, col] = (grad_plus[free] - grad_minus[free]).reshape(-1) / (2.0 * step)
    noise = 10.0 * float(np.abs(H - H.T).max()) + 1e-12 * float(np.abs(H).max())
    T = np.eye(len(dofs))
    if blocked:
        columns = []
        for a, i in enumerate(free):
            if i not in blocked:
                basis = np.eye(3)
            elif blocked[i] is None:
                continue
            else:  # the directions orthogonal to every normal
                _u, sv, vt = np.linalg.svd(np.atleast_2d(blocked[i]))
                basis = vt[int(np.sum(sv > 1e-9)) :].T
            for b in range(basis.shape[1]):
                column = np.zeros(len(dofs))
                column[3 * a : 3 * a + 3] = basis[:, b]
                columns.append(column)
        if not columns:
            return np.inf, np.zeros_like(x), noise
        T = np.array(columns).T
    values, vectors = np.linalg.eigh(T.T @ (0.5 * (H + H.T)) @ T)
    mode = np.zeros_like(x)
    mode[free] = (T @ vectors[:, 0]).reshape(-1, 3)
    return float(values[0]), mode, noise


def is_minimum(x: np.ndarray, free: np.ndarray, gradient, step: float, blocked=None) -> bool:
    """True when the difference Hessian (lowest_curvature) has no eigenvalue below its own noise."""
    value, _mode, noise = lowest_curvature(x, free, gradient, step, blocked)
    return bool(value > -noise)
