# SPDX-License-Identifier: GPL-3.0-or-later
"""The compiled frames of a cable's first guess (rotations.transported_frames, matrices_to_quats)
against rotation_between step by step on random paths with reversals, and quaternions of matrices
of every branch of Shepperd's method against the matrices they stand for."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from solver_core.maths.rotations import (
    frame_from_tangent,
    matrices_to_quats,
    matrix_from_quat,
    matrix_to_quat,
    rotation_between,
    transported_frames,
)


def unit_rows(raw):
    n = np.linalg.norm(raw, axis=1)
    return raw[n > 1e-3] / n[n > 1e-3, None]


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, (40, 3), elements=st.floats(-1.0, 1.0)), st.integers(0, 39))
def test_transport_is_rotation_between_step_by_step(raw, reversal):
    tangents = unit_rows(raw)
    if len(tangents) < 2:
        return
    k = reversal % len(tangents)
    if k > 0:
        tangents[k] = -tangents[k - 1]  # a half turn: the branch rotation_between takes apart
    # within 1.4e-3 rad of a half turn but not one, the turn's axis is the cross product of two nearly
    # opposite vectors: both ways of computing it lose digits there (4e-10 seen), not only this one
    turns = np.einsum("ij,ij->i", tangents[1:], tangents[:-1])
    exact = np.all(tangents[1:] == -tangents[:-1], axis=1)
    assume(not np.any((turns < -1.0 + 1e-6) & ~exact))
    F = frame_from_tangent(tangents[0] + np.array([0.3, -0.2, 0.1]))
    out = np.empty((len(tangents), 3, 3))
    transported_frames(F, np.ascontiguousarray(tangents), out)
    expected, t_prev = F, F[:, 2]
    for i, t in enumerate(tangents):
        expected = rotation_between(t_prev, t) @ expected
        t_prev = t
        np.testing.assert_allclose(out[i], expected, atol=1e-12)
        np.testing.assert_allclose(out[i][:, 2], t, atol=1e-12)  # each frame's d3 on its tangent


def test_quaternions_of_every_branch_of_shepperds_method():
    rng = np.random.default_rng(3)
    mats = [np.eye(3), np.diag([1.0, -1.0, -1.0]), np.diag([-1.0, 1.0, -1.0]), np.diag([-1.0, -1.0, 1.0])]
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        w, x, y, z = q
        mats.append(
            np.array(
                [
                    [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
                ]
            )
        )
    out = np.empty((len(mats), 4))
    matrices_to_quats(np.array(mats), out)
    for R, q in zip(mats, out):
        # the rotation it stands for is R again (quat_to_matrix, independent of Shepperd's branches),
        # as a unit quaternion with w >= 0, and the one-matrix form gives the same
        np.testing.assert_allclose(matrix_from_quat(q), R, atol=1e-14)
        assert abs(np.linalg.norm(q) - 1.0) < 1e-15 and q[0] >= 0.0
        np.testing.assert_array_equal(matrix_to_quat(R), q)
