# SPDX-License-Identifier: GPL-3.0-or-later
"""The unstressed shape of a pre-formed cable (case format: ``rest``), as what the bend/twist energy
measures from.

The energy of a joint between rotations a and b is (2 / l_bar) sum_k K_k (p_k - p0_k)^2 with p the
vector part of conj(q_a) q_b (rod_energy.py); p0 is that of the unstressed cable, zero for a straight
one. A constant Darboux vector kappa = (k1, k2, t) in the material frame (Chen 2023, Eqs. 9-10) turns
one rotation into the next by exp(l_bar kappa), so p0 = sin(l_bar |kappa| / 2) kappa / |kappa|
exactly: a cable pre-formed to a ring or a helix is unstressed on a discrete ring or helix. A rest
route gives the rotations of the unstressed cable directly: the route resampled at the nodes, each
segment's frame carried along it by parallel transport from the start frame's normal (no rest
twist), a frame rotation between two segments half-way between them, and one at an end turned
back from its segment by half the turn over it (the curvature there extrapolated from the joints
next to it: the route's tangent at its end).
"""

import math
from dataclasses import dataclass

import numpy as np

from ..errors import CaseError
from ..maths.rotations import frame_from_tangent, matrix_to_quat


@dataclass(frozen=True)
class RestShape:
    curvature: tuple = (0.0, 0.0)  # k1, k2 (1/m) about the directors d1, d2
    twist: float = 0.0  # t (1/m) about d3
    route: np.ndarray | None = None  # the unstressed centre line (m), or None for a constant Darboux vector


MAX_REST_CURVATURE = 1e6  # 1/m: a radius of a micrometre; beyond it the numbers mean a units mistake


def parse_rest(obj, where, number, vector) -> RestShape:
    """A cable's ``rest`` entry; ``number`` and ``vector`` are the case parser's checked readers."""
    if not isinstance(obj, dict):
        raise CaseError(f"{where} must be an object with curvature and twist, or a route")
    for key in obj:
        if key not in ("curvature", "twist", "route"):
            shown = key if isinstance(key, str) else repr(key)
            raise CaseError(f"{where}.{shown} is not a known key (known: curvature, twist, route)")
    if "route" in obj and ("curvature" in obj or "twist" in obj):
        raise CaseError(f"{where} gives a route and a curvature or twist: one or the other")
    if "route" in obj:
        raw = obj["route"]
        if not isinstance(raw, list) or len(raw) < 2:
            raise CaseError(f"{where}.route must be a list of at least 2 points")
        route = np.array([vector(p, f"{where}.route[{i}]") for i, p in enumerate(raw)])
        pieces = np.linalg.norm(np.diff(route, axis=0), axis=1)
        if not (pieces > 0.0).all():
            k = int(np.argmin(pieces))
            raise CaseError(f"{where}.route[{k + 1}] repeats the point before it")
        return RestShape(route=route)
    curvature = obj.get("curvature", [0.0, 0.0])
    if not isinstance(curvature, list) or len(curvature) != 2:
        raise CaseError(f"{where}.curvature must be [k1, k2] (1/m about the directors d1 and d2)")
    k = tuple(number(c, f"{where}.curvature[{i}]", bound=MAX_REST_CURVATURE) for i, c in enumerate(curvature))
    twist = number(obj.get("twist", 0.0), f"{where}.twist", bound=MAX_REST_CURVATURE)
    return RestShape(curvature=k, twist=twist)


# A segment may turn by at most this much in the rest shape (rad): the discrete Darboux vector holds up
# to half a turn, and a coarser rest shape than this is no longer the shape that was asked for.
MAX_REST_TURN = 1.0


def check_rest_resolution(rest, length, segments, where) -> None:
    """Refuse a constant rest curvature and twist that the cable's segments cannot resolve."""
    if rest is None or rest.route is not None:
        return
    rate = math.hypot(rest.curvature[0], rest.curvature[1], rest.twist)
    turn = rate * length / segments
    if turn > MAX_REST_TURN:
        needed = math.ceil(rate * length / MAX_REST_TURN)
        raise CaseError(
            f"{where} turns each of the {segments} segments by {turn:.3g} rad; give the cable at least "
            f"{needed} segments (at most {MAX_REST_TURN:g} rad each)"
        )


def rest_to_dict(rest: RestShape) -> dict:
    if rest.route is not None:
        return {"route": rest.route.tolist()}
    return {"curvature": list(rest.curvature), "twist": rest.twist}


def _darboux_rotations(kappa, joint_len) -> np.ndarray:
    phi = joint_len[:, None] * kappa[None, :]
    angle = np.linalg.norm(phi, axis=1)
    out = np.zeros((len(joint_len), 3))
    bent = angle > 0.0
    out[bent] = np.sin(0.5 * angle[bent])[:, None] * phi[bent] / angle[bent][:, None]
    return out


def _qmul(a, b) -> np.ndarray:
    return np.concatenate(([a[0] * b[0] - a[1:] @ b[1:]], a[0] * b[1:] + b[0] * a[1:] + np.cross(a[1:], b[1:])))


def _qconj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def _rotation_vector(q) -> np.ndarray:
    """The rotation vector (axis times angle) of a unit quaternion."""
    q = q if q[0] >= 0.0 else -q
    s = np.linalg.norm(q[1:])
    return np.zeros(3) if s == 0.0 else (2.0 * np.arctan2(s, q[0]) / s) * q[1:]


def _from_rotation_vector(r) -> np.ndarray:
    angle = np.linalg.norm(r)
    if angle == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate(([np.cos(0.5 * angle)], np.sin(0.5 * angle) * r / angle))


def _route_rotations(route, node_s, length, start_normal, frames_at_node, n_rots) -> np.ndarray:
    """Rest quaternion of every rotation (segments, then frames) from a rest route."""
    arc = np.concatenate(([0.0], np.cumsum(np.linalg.norm(np.diff(route, axis=0), axis=1))))
    s = node_s / length * arc[-1]
    nodes = np.column_stack([np.interp(s, arc, route[:, k]) for k in range(3)])
    chords = np.diff(nodes, axis=0)
    n_segs = len(chords)
    quats = np.zeros((n_rots, 4))
    d1 = None
    for i in range(n_segs):
        t = chords[i] / np.linalg.norm(chords[i])
        if d1 is None:
            R = frame_from_tangent(t, start_normal)
        else:
            # parallel transport of d1 from the previous segment's tangent to this one's (no twist)
            d1 = d1 - np.dot(d1, t) * t
            R = frame_from_tangent(t, d1 / np.linalg.norm(d1))
        d1 = R[:, 0].copy()
        quats[i] = matrix_to_quat(R)
    for node, rotations in frames_at_node.items():
        left = quats[node - 1] if node > 0 else None
        right = quats[node] if node < n_segs else None
        if left is None or right is None:
            # an end: the frame of the route's tangent there, which the end chord's frame misses by half
            # the turn over its segment: the curvature at the end, extrapolated linearly from the turns
            # of the two joints next to it (turn vectors in the chord's frame)
            q = right if left is None else left
            if n_segs >= 2:
                order = range(n_segs) if left is None else range(n_segs - 1, -1, -1)
                chain = [quats[k] for k in list(order)[:3]]
                turns = [_rotation_vector(_qmul(_qconj(a), b)) for a, b in zip(chain[:-1], chain[1:])]
                half = turns[0] - 0.5 * turns[1] if len(turns) == 2 else 0.5 * turns[0]
                q = _qmul(q, _qconj(_from_rotation_vector(half)))
        else:
            q = left + right if np.dot(left, right) >= 0.0 else left - right  # half-way (slerp at 1/2)
            q = q / np.linalg.norm(q)
        for r in rotations:
            quats[r] = q
    return quats


def joint_rest_rotations(rest, joint_a, joint_b, joint_len, node_s, length, start, frames_at_node, n_rots):
    """p0 per joint: the vector part of the unstressed relative rotation conj(q_a) q_b, its scalar part
    taken non-negative as the energy takes it (zeros for a straight cable)."""
    if rest is None:
        return np.zeros((len(joint_a), 3))
    if rest.route is None:
        kappa = np.array([rest.curvature[0], rest.curvature[1], rest.twist], dtype=np.float64)
        return _darboux_rotations(kappa, np.asarray(joint_len, dtype=np.float64))
    quats = _route_rotations(rest.route, node_s, length, start.normal, frames_at_node, n_rots)
    out = np.empty((len(joint_a), 3))
    for j, (a, b) in enumerate(zip(joint_a, joint_b)):
        qa, qb = quats[a], quats[b]
        w = qa[0] * qb[0] + qa[1:] @ qb[1:]
        v = qa[0] * qb[1:] - qb[0] * qa[1:] - np.cross(qa[1:], qb[1:])
        out[j] = -v if w < 0.0 else v
    return out
