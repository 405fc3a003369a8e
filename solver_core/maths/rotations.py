# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit quaternions (w, x, y, z) and rotation matrices.

A quaternion q describes the material frame R(q) = [d1 d2 d3] of a segment: column k is the
director d_k in world coordinates, d3 being the cross-section normal (Chen 2023, Eqs. 1-4).
Increments are body-frame rotation vectors: q <- q * exp(theta / 2), i.e. R <- R exp([theta]x).
"""

import math

import numpy as np

from .._jit import njit
from .small_dense import dot, mat_mul


@njit
def _flush(value):
    # Planar problems drive off-plane components towards zero; left alone they sink into
    # subnormal numbers, which make every later floating-point operation ~100x slower.
    return 0.0 if abs(value) < 1e-150 else value


@njit
def quat_conj_mul(a, b, out):
    """out = conj(a) * b: the rotation from frame a to frame b, expressed in frame a."""
    out[0] = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    out[1] = a[0] * b[1] - a[1] * b[0] - a[2] * b[3] + a[3] * b[2]
    out[2] = a[0] * b[2] + a[1] * b[3] - a[2] * b[0] - a[3] * b[1]
    out[3] = a[0] * b[3] - a[1] * b[2] + a[2] * b[1] - a[3] * b[0]


@njit
def quat_to_matrix(q, R):
    w, x, y, z = q[0], q[1], q[2], q[3]
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit
def quat_retract(q, theta, out):
    """out = normalise(q * exp(theta / 2)): apply a body-frame rotation vector theta to q."""
    angle = math.sqrt(theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2])
    if angle < 1e-8:
        c = 1.0 - angle * angle / 8.0
        s = 0.5 - angle * angle / 48.0
    else:
        c = math.cos(0.5 * angle)
        s = math.sin(0.5 * angle) / angle
    e0, e1, e2, e3 = c, s * theta[0], s * theta[1], s * theta[2]
    w = q[0] * e0 - q[1] * e1 - q[2] * e2 - q[3] * e3
    x = q[0] * e1 + q[1] * e0 + q[2] * e3 - q[3] * e2
    y = q[0] * e2 - q[1] * e3 + q[2] * e0 + q[3] * e1
    z = q[0] * e3 + q[1] * e2 - q[2] * e1 + q[3] * e0
    n = math.sqrt(w * w + x * x + y * y + z * z)
    out[0] = _flush(w / n)
    out[1] = _flush(x / n)
    out[2] = _flush(y / n)
    out[3] = _flush(z / n)


# ---- plain numpy helpers used when building models and results (not in hot loops) ----


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Rotation matrix -> unit quaternion with w >= 0 (Shepperd's method: matrices_to_quats)."""
    out = np.empty((1, 4))
    matrices_to_quats(np.ascontiguousarray(R, dtype=np.float64).reshape(1, 3, 3), out)
    return out[0]


def matrix_from_quat(q: np.ndarray) -> np.ndarray:
    R = np.empty((3, 3))
    quat_to_matrix(np.asarray(q, dtype=np.float64), R)
    return R


def cross3(a, b) -> np.ndarray:
    """Cross product of two 3-vectors (np.cross costs ~10 us per call on tiny inputs)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def frame_from_tangent(tangent: np.ndarray, normal=None) -> np.ndarray:
    """Orthonormal frame [d1 d2 d3] with d3 = tangent and d1 = normal (or any perpendicular). In plain
    floats: numpy's per-call cost on 3-vectors was most of its time, and it is called for every held
    frame of every solve."""
    t0, t1, t2 = float(tangent[0]), float(tangent[1]), float(tangent[2])
    size = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    t0, t1, t2 = t0 / size, t1 / size, t2 / size
    d1 = None
    if normal is not None:
        n0, n1, n2 = float(normal[0]), float(normal[1]), float(normal[2])
        along = n0 * t0 + n1 * t1 + n2 * t2
        d1 = (n0 - t0 * along, n1 - t1 * along, n2 - t2 * along)
        if not d1[0] * d1[0] + d1[1] * d1[1] + d1[2] * d1[2] > 1e-24 * (n0 * n0 + n1 * n1 + n2 * n2):
            d1 = None  # a normal along the tangent fixes no roll: chosen as for no normal
    if d1 is None:
        h0, h1 = (1.0, 0.0) if abs(t0) < 0.9 else (0.0, 1.0)
        along = h0 * t0 + h1 * t1
        d1 = (h0 - t0 * along, h1 - t1 * along, -t2 * along)
    size = math.sqrt(d1[0] * d1[0] + d1[1] * d1[1] + d1[2] * d1[2])
    a0, a1, a2 = d1[0] / size, d1[1] / size, d1[2] / size
    b0, b1, b2 = t1 * a2 - t2 * a1, t2 * a0 - t0 * a2, t0 * a1 - t1 * a0  # d2 = d3 x d1
    return np.array([[a0, b0, t0], [a1, b1, t1], [a2, b2, t2]])


def rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Smallest rotation matrix that turns unit vector a into unit vector b (parallel transport)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    v = cross3(a, b)
    c = float(a @ b)
    if c < -1.0 + 1e-12:
        # Half turn about any axis perpendicular to a.
        axis = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(a, [0.0, 1.0, 0.0])
        axis /= np.linalg.norm(axis)
        return 2.0 * np.outer(axis, axis) - np.eye(3)
    vx = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + vx + vx @ vx / (1.0 + c)


@njit
def transported_frames(F0, tangents, out):
    """out[i] = F0 carried along the unit ``tangents`` by the smallest rotation from each to the next,
    starting from F0's own d3 (discrete parallel transport, zero twist): rotation_between, compiled,
    as a whole cable's first guess loops over every segment."""
    F = F0.copy()
    a = F0[:, 2].copy()
    R = np.empty((3, 3))
    for i in range(tangents.shape[0]):
        b = tangents[i]
        c = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
        if c < -1.0 + 1e-12:  # a half turn about an axis perpendicular to a
            axis = np.array([0.0, a[2], -a[1]])  # a x (1, 0, 0)
            if math.sqrt(dot(axis, axis)) < 1e-6:
                axis = np.array([-a[2], 0.0, a[0]])  # a x (0, 1, 0)
            axis /= math.sqrt(dot(axis, axis))
            for r in range(3):
                for k in range(3):
                    R[r, k] = 2.0 * axis[r] * axis[k] - (1.0 if r == k else 0.0)
        else:
            # Rodrigues' rotation taking a to b: I + [v]x + [v]x^2 / (1 + c), v = a x b, c = a . b
            v0, v1, v2 = a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]
            vx = np.array([[0.0, -v2, v1], [v2, 0.0, -v0], [-v1, v0, 0.0]])
            R[:] = np.eye(3) + vx + mat_mul(vx, vx) / (1.0 + c)
        F = mat_mul(R, F)
        out[i] = F
        a = b.copy()


@njit
def matrices_to_quats(Rs, out):
    """out[i] = the unit quaternion (w >= 0) of Rs[i] (Shepperd's method: from the largest of the trace
    and the diagonal entries, so that no division is by a small number)."""
    for i in range(Rs.shape[0]):
        R = Rs[i]
        t = R[0, 0] + R[1, 1] + R[2, 2]
        if t > 0.0:
            s = math.sqrt(t + 1.0) * 2.0
            q = (0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s)
        elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
            s = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2.0
            q = ((R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s)
        elif R[1, 1] > R[2, 2]:
            s = math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2.0
            q = ((R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s)
        else:
            s = math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2.0
            q = ((R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s)
        n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
        sign = -1.0 if q[0] / n < 0.0 else 1.0
        for k in range(4):
            out[i, k] = sign * q[k] / n


def axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis)
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def world_turn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The world rotation vector w with b = exp([w]x) a (rotation matrices); the angle from both its
    sine and cosine, exact for small turns too (an arccos of the trace alone loses them)."""
    R = b @ a.T
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    norm = float(np.linalg.norm(axis))
    angle = float(np.arctan2(0.5 * norm, 0.5 * (np.trace(R) - 1.0)))
    return angle * axis / norm if norm > 0.0 else np.zeros(3)


def slerp_matrix(R0: np.ndarray, R1: np.ndarray, t: float) -> np.ndarray:
    """Geodesic interpolation between two rotation matrices."""
    Rrel = R0.T @ R1
    q = matrix_to_quat(Rrel)
    angle = 2.0 * math.atan2(math.sqrt(q[1:] @ q[1:]), q[0])
    if angle < 1e-12:
        return R0.copy()
    return R0 @ axis_angle_matrix(q[1:], t * angle)
