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

from ._jit import njit


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
def positive_eigenvalue_count(S):
    """How many eigenvalues of the symmetric matrix S are positive.

    Householder reduction to a tridiagonal T = Q^T S Q (Golub and Van Loan, Alg. 8.3.1), then the
    Sturm count of T at 0 (ibid., Sec. 8.4.1): the pivots d_i = a_i - b_(i-1)^2 / d_(i-1) of
    T = L D L^T have as many negative entries as T has negative eigenvalues (Sylvester's law of
    inertia). A pivot within round-off of zero is taken as -tiny, as LAPACK's dstebz does: an
    eigenvalue at zero is not counted as positive. S is not changed."""
    m = S.shape[0]
    if m == 0:
        return 0
    A = S.copy()
    diag = np.empty(m)
    off = np.zeros(m)  # off[i]: T[i, i - 1]
    v = np.empty(m)
    p = np.empty(m)
    scale = 0.0
    for i in range(m):
        for j in range(m):
            scale = max(scale, abs(A[i, j]))
    for k in range(m - 2):
        # the reflector that zeroes column k below its first sub-diagonal entry
        alpha = 0.0
        for i in range(k + 1, m):
            alpha += A[i, k] * A[i, k]
        alpha = math.sqrt(alpha)
        if alpha == 0.0:
            off[k + 1] = 0.0
            continue
        if A[k + 1, k] > 0.0:
            alpha = -alpha
        off[k + 1] = alpha
        for i in range(k + 1):
            v[i] = 0.0
        v[k + 1] = A[k + 1, k] - alpha
        for i in range(k + 2, m):
            v[i] = A[i, k]
        vv = 0.0
        for i in range(k + 1, m):
            vv += v[i] * v[i]
        if vv == 0.0:
            continue
        beta = 2.0 / vv
        # A <- H A H with H = I - beta v v^T on the trailing block: A - v w^T - w v^T
        for i in range(k + 1, m):
            total = 0.0
            for j in range(k + 1, m):
                total += A[i, j] * v[j]
            p[i] = beta * total
        vp = 0.0
        for i in range(k + 1, m):
            vp += v[i] * p[i]
        half = 0.5 * beta * vp
        for i in range(k + 1, m):
            p[i] -= half * v[i]  # w
        for i in range(k + 1, m):
            for j in range(k + 1, m):
                A[i, j] -= v[i] * p[j] + p[i] * v[j]
    for i in range(m):
        diag[i] = A[i, i]
    if m >= 2:
        off[m - 1] = A[m - 1, m - 2]
    tiny = max(scale, 1e-300) * 2.220446049250313e-16
    not_positive = 0
    d = 1.0
    for i in range(m):
        d = diag[i] - (off[i] * off[i] / d if i > 0 else 0.0)
        if abs(d) < tiny:
            d = -tiny
        if d < 0.0:
            not_positive += 1
    return m - not_positive
