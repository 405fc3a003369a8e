# SPDX-License-Identifier: GPL-3.0-or-later
"""The first guess's compiled centre-line kernels (rod/sag_kernels.py) against the numpy they
replace, and the sagged span against its definition: the length it was asked for, its nodes evenly
spaced by arc length along the sagged curve."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from solver_core.rod.sag_kernels import numpy_sum, polyline_length, resample_polyline, sagged_span

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def _numpy_resample(points, fractions):
    # the numpy formulation the kernel replaced (np.interp per coordinate); inf - inf is NaN there too
    with np.errstate(invalid="ignore"):
        seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
        arc = np.concatenate(([0.0], np.cumsum(seg)))
        return np.column_stack([np.interp(fractions * arc[-1], arc, points[:, k]) for k in range(3)])


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 400), elements=finite))
def test_sum_is_numpys_to_the_bit(values):
    assert numpy_sum(values, values.shape[0]) == values.sum()


@pytest.mark.parametrize("n", [8191, 8192, 8193, 20_000, 100_003])
def test_sum_beyond_numpys_buffer(n):
    # numpy adds the sums of its 8192-value buffers in turn: a longer array is not one pairwise tree
    values = np.random.default_rng(n).random(n) * 10.0 ** np.random.default_rng(n + 1).uniform(-3, 3, n)
    assert numpy_sum(values, n) == values.sum()


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(np.float64, st.tuples(st.integers(1, 40), st.just(3)), elements=finite),
    hnp.arrays(np.float64, st.integers(0, 30), elements=st.floats(-0.5, 1.5)),
    st.booleans(),
)
def test_resample_is_numpys_interp(points, fractions, repeat):
    if repeat and len(points) > 2:
        points[len(points) // 2] = points[len(points) // 2 - 1]  # a segment of zero length
    np.testing.assert_array_equal(resample_polyline(points, fractions), _numpy_resample(points, fractions))
    assert polyline_length(points) == np.linalg.norm(np.diff(points, axis=0), axis=1).sum()


@pytest.mark.parametrize(
    "points",
    [
        [[0.0, 0, 0], [1, 0, 0], [np.inf, 0, 0]],
        [[0.0, 0, 0], [np.inf, 0, 0], [2, 0, 0]],
        [[0.0, 0, 0], [np.nan, 1, 0], [2, 0, 0]],
        [[1.0, 2, 3]],
        [[1.0, 2, 3], [1.0, 2, 3]],
    ],
    ids=["inf at the end", "inf inside", "NaN inside", "one point", "no length"],
)
def test_resample_and_length_of_degenerate_polylines_are_numpys(points):
    points = np.array(points, dtype=np.float64)
    fractions = np.array([np.nan, -np.inf, -0.5, 0.0, 0.3, 1.0, 2.0, np.inf])
    np.testing.assert_array_equal(resample_polyline(points, fractions), _numpy_resample(points, fractions))
    np.testing.assert_array_equal(polyline_length(points), np.linalg.norm(np.diff(points, axis=0), axis=1).sum())


def _span(n, seed):
    rng = np.random.default_rng(seed)
    p0, p1 = np.zeros(3), np.array([0.3, 0.05, -0.02])
    u = np.linspace(0.0, 1.0, n)
    # drawn with a little sag already (down and sideways): its length grows with the sag's amplitude
    off = rng.normal(size=3) * 1e-3
    off[2] = -abs(off[2])
    points = p0 + u[:, None] * (p1 - p0) + np.outer(np.sin(np.pi * u), off)
    bump = np.sin(np.pi * u)[:, None] * np.array([0.0, 0.0, -1.0])
    return points, bump, u


@pytest.mark.parametrize("n", [3, 10, 97, 300])
@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_sagged_span_has_the_length_asked_for_with_even_nodes(n, share):
    points, bump, u = _span(n, n)
    current, target = polyline_length(points), 0.45
    wanted = current + share * (target - current)
    inner = sagged_span(points, bump, u[1:-1], wanted, target, 1e-14 * target)
    # independent reference: the amplitude by bisection, the nodes by arc length along that curve
    lo, hi = 0.0, target
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.linalg.norm(np.diff(points + mid * bump, axis=0), axis=1).sum() < wanted:
            lo = mid
        else:
            hi = mid
    curve = points + lo * bump
    expected = _numpy_resample(curve, u[1:-1])
    np.testing.assert_allclose(inner, expected, rtol=0.0, atol=1e-12)
    nodes = np.vstack((points[0], inner, points[-1]))
    assert polyline_length(nodes) <= wanted * (1.0 + 1e-12)  # chords of the curve: never longer


def test_sagged_span_already_long_enough_is_not_sagged():
    points, bump, u = _span(20, 1)
    inner = sagged_span(points, bump, u[1:-1], 0.5 * polyline_length(points), 0.45, 1e-14)
    np.testing.assert_array_equal(inner, _numpy_resample(points, u[1:-1]))


def test_sagged_span_too_short_to_reach_takes_the_largest_sag():
    # a length the largest amplitude cannot give: the largest, never a NaN or a loop
    points, bump, u = _span(20, 2)
    inner = sagged_span(points, bump, u[1:-1], 1e3, 0.45, 1e-14)
    np.testing.assert_array_equal(inner, _numpy_resample(points + 0.45 * bump, u[1:-1]))
