# SPDX-License-Identifier: GPL-3.0-or-later
"""Small dense products and a symmetric inertia count, as loops that compiled kernels call.

numba compiles ``np.dot``, ``@`` on arrays and ``np.linalg.*`` into calls of SciPy's BLAS and
LAPACK, looked up when they first run. Blender's Python ships numpy without SciPy: there such a
call aborts the whole process ("BLAS wrapper returned with an error"), even from cached kernels.
The solver's dense algebra is 3x3 to 6x6 (frames, clip springs) or one small symmetric matrix per
factorisation (the capacitance of cable-cable coupling), where loops are also faster than a call
into BLAS. No kernel may use the numpy forms (tests/solver/test_no_blas.py reads every kernel).
"""

import math

import numpy as np

from .._jit import njit


@njit
def dot(a, b):
    """a . b of two vectors of the same length."""
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@njit
def mat_vec(A, x):
    """A x as a new vector."""
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        total = 0.0
        for j in range(A.shape[1]):
            total += A[i, j] * x[j]
        out[i] = total
    return out


@njit
def mat_mul(A, B):
    """A B as a new matrix."""
    out = np.zeros((A.shape[0], B.shape[1]))
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            a = A[i, k]
            if a != 0.0:
                for j in range(B.shape[1]):
                    out[i, j] += a * B[k, j]
    return out


@njit
def congruence(J, K):
    """J^T K J (K square) as a new matrix: the stiffness K seen through the Jacobian J."""
    return mat_mul(J.T.copy(), mat_mul(K, J))


@njit
def _swap_symmetric(A, p, q, m):
    """Swap rows and columns p and q of the symmetric matrix A (full storage)."""
    if p == q:
        return
    for j in range(m):
        A[p, j], A[q, j] = A[q, j], A[p, j]
    for i in range(m):
        A[i, p], A[i, q] = A[i, q], A[i, p]


@njit
def positive_eigenvalue_count(S):
    """How many eigenvalues of the symmetric matrix S are positive.

    Bunch and Kaufman's symmetric indefinite factorisation P S P^T = L D L^T (Golub and Van Loan,
    Alg. 4.4.4; LAPACK's dsytrf), D of 1x1 and 2x2 blocks: by Sylvester's law of inertia S has as many
    positive eigenvalues as D, i.e. one per positive 1x1 block and one per 2x2 block (whose
    determinant the pivoting makes negative). A 1x1 pivot within round-off of zero is not counted
    (an eigenvalue at zero is not positive). About m^3 / 3 multiplications; S is not changed."""
    m = S.shape[0]
    A = S.copy()
    scale = 0.0
    for i in range(m):
        for j in range(m):
            scale = max(scale, abs(A[i, j]))
    tiny = max(scale, 1e-300) * m * 2.220446049250313e-16
    alpha = (1.0 + math.sqrt(17.0)) / 8.0
    positive = 0
    k = 0
    while k < m:
        lam, r = 0.0, k
        for i in range(k + 1, m):
            if abs(A[i, k]) > lam:
                lam, r = abs(A[i, k]), i
        akk = abs(A[k, k])
        block = 1
        if max(akk, lam) <= tiny:
            k += 1  # a zero column: a zero eigenvalue
            continue
        if akk < alpha * lam:
            sigma = 0.0
            for j in range(k, m):
                if j != r:
                    sigma = max(sigma, abs(A[r, j]))
            if akk * sigma >= alpha * lam * lam:
                pass
            elif abs(A[r, r]) >= alpha * sigma:
                _swap_symmetric(A, k, r, m)
            else:
                _swap_symmetric(A, k + 1, r, m)
                block = 2
        if block == 1:
            d = A[k, k]
            if d > tiny:
                positive += 1
            if d != 0.0:
                for i in range(k + 1, m):
                    f = A[i, k] / d
                    if f != 0.0:
                        for j in range(k + 1, m):
                            A[i, j] -= f * A[k, j]
            k += 1
        else:
            a, b, c = A[k, k], A[k + 1, k], A[k + 1, k + 1]
            det = a * c - b * b  # negative by the pivoting: one positive, one negative eigenvalue
            positive += 1
            for i in range(k + 2, m):
                # [x, y] = [A[i, k], A[i, k + 1]] E^-1
                x = (A[i, k] * c - A[i, k + 1] * b) / det
                y = (A[i, k + 1] * a - A[i, k] * b) / det
                if x != 0.0 or y != 0.0:
                    for j in range(k + 2, m):
                        A[i, j] -= x * A[k, j] + y * A[k + 1, j]
            k += 2
    return positive
