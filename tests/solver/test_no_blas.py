# SPDX-License-Identifier: GPL-3.0-or-later
"""No compiled kernel calls BLAS or LAPACK, and the loops that replace them are right.

numba compiles np.dot, @ and np.linalg into calls of SciPy's BLAS and LAPACK, which Blender's Python
lacks: there the first such call aborts Blender. Every kernel's source is read here (the build's
warm-up, run with SciPy blocked, and tests/blender/test_without_scipy.py run them)."""

import ast

import numpy as np
import pytest
from helpers.blender_free import ROOT

from solver_core.maths.small_dense import congruence, dot, mat_mul, mat_vec, positive_eigenvalue_count

# numpy names that numba lowers to BLAS or LAPACK calls
_BLAS_NAMES = {"dot", "vdot", "matmul", "inner", "cov", "corrcoef", "matrix_power"}


def _kernels(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("njit" in ast.unparse(d) for d in node.decorator_list):
            yield node


def _blas_uses(function):
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            yield node.lineno, "@"
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.MatMult):
            yield node.lineno, "@="
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            parts = name.split(".")
            if "linalg" in parts or (parts[0] in ("np", "numpy") and parts[-1] in _BLAS_NAMES):
                yield node.lineno, name
            elif len(parts) > 1 and parts[-1] == "dot":  # a.dot(b)
                yield node.lineno, name


def test_no_kernel_uses_blas_or_lapack():
    found = []
    kernels = 0
    for path in sorted((ROOT / "solver_core").rglob("*.py")):
        for function in _kernels(ast.parse(path.read_text(encoding="utf-8"))):
            kernels += 1
            found += [f"{path.name}:{line} {function.name}: {what}" for line, what in _blas_uses(function)]
    assert kernels > 100  # the scan sees the kernels
    assert not found, "kernels calling BLAS/LAPACK (aborts Blender without SciPy):\n" + "\n".join(found)


def test_the_scan_finds_each_form():
    source = (
        "@njit\ndef k(a, b):\n    x = a @ b\n    y = np.dot(a, b)\n    z = np.linalg.eigvalsh(a)\n"
        "    w = a.dot(b)\n    a @= b\n    return np.linalg.norm(a)\n"
    )
    (function,) = _kernels(ast.parse(source))
    found = sorted(_blas_uses(function))
    assert [what for _, what in found] == ["@", "np.dot", "np.linalg.eigvalsh", "a.dot", "@=", "np.linalg.norm"]


def test_products_equal_numpys(rng):
    A, B, x = rng.normal(size=(6, 4)), rng.normal(size=(4, 5)), rng.normal(size=4)
    assert dot(x, x) == pytest.approx(float(x @ x), rel=1e-14)
    np.testing.assert_allclose(mat_vec(A, x), A @ x, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(mat_mul(A, B), A @ B, rtol=1e-13, atol=1e-14)
    K = rng.normal(size=(6, 6))
    J = rng.normal(size=(6, 6))
    np.testing.assert_allclose(congruence(J, K), J.T @ K @ J, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 17, 60])
def test_positive_eigenvalue_count_equals_the_spectrums(rng, m):
    for _ in range(20):
        Q, _ = np.linalg.qr(rng.normal(size=(m, m)))
        # eigenvalues well away from zero, of mixed signs and of sizes 1e-6 to 1e6
        values = rng.choice([-1.0, 1.0], size=m) * 10.0 ** rng.uniform(-6, 6, size=m)
        S = (Q * values) @ Q.T
        S = 0.5 * (S + S.T)
        before = S.copy()
        assert positive_eigenvalue_count(S) == int(np.sum(values > 0))
        np.testing.assert_array_equal(S, before)  # S untouched


def test_positive_eigenvalue_count_of_special_forms():
    # a zero leading pivot (the Sturm sequence must step over it): eigenvalues +1 and -1
    assert positive_eigenvalue_count(np.array([[0.0, 1.0], [1.0, 0.0]])) == 1
    # already diagonal, zero, and exact zero eigenvalues (not positive)
    assert positive_eigenvalue_count(np.diag([3.0, -2.0, 5.0, -1.0])) == 2
    assert positive_eigenvalue_count(np.diag([0.0, -1.0, 2.0, 0.0])) == 1
    assert positive_eigenvalue_count(np.zeros((4, 4))) == 0
    assert positive_eigenvalue_count(np.zeros((0, 0))) == 0
    # the capacitance's shape: 2x2 coupling blocks [[0, 1/k], [1/k, 0]] plus Z^T Z
    k = 1e6
    S = np.zeros((4, 4))
    S[0, 1] = S[1, 0] = S[2, 3] = S[3, 2] = 1.0 / k
    assert positive_eigenvalue_count(S) == 2
