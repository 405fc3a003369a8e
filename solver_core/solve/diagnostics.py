# SPDX-License-Identifier: GPL-3.0-or-later
"""What engineers read off a solved cable: directors, bend radius, twist, reactions, energy."""

import numpy as np

from ..maths.rotations import matrix_from_quat
from ..rod.rod_energy import rod_energy
from ..rod.rod_model import RodModel
from ..rod.rod_state import RodState
from .newton import rod_gradient


def rotation_matrices(quats: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotation matrices of (n, 4) unit quaternions (w, x, y, z): rotations.quat_to_matrix for
    all of them in one pass."""
    w, x, y, z = quats[:, 0], quats[:, 1], quats[:, 2], quats[:, 3]
    R = np.empty((len(quats), 3, 3))
    R[:, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[:, 0, 1] = 2.0 * (x * y - w * z)
    R[:, 0, 2] = 2.0 * (x * z + w * y)
    R[:, 1, 0] = 2.0 * (x * y + w * z)
    R[:, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[:, 1, 2] = 2.0 * (y * z - w * x)
    R[:, 2, 0] = 2.0 * (x * z - w * y)
    R[:, 2, 1] = 2.0 * (y * z + w * x)
    R[:, 2, 2] = 1.0 - 2.0 * (x * x + y * y)
    return R


def directors(state: RodState, model: RodModel) -> np.ndarray:
    """(n_segments, 3, 3): row k of entry i is the director d_{k+1} of segment i (world)."""
    return rotation_matrices(state.quats[: model.n_segments]).transpose(0, 2, 1)


def _relative_rotations(model: RodModel, state: RodState):
    qa = state.quats[model.joint_a]
    qb = state.quats[model.joint_b]
    # vec(conj(a) b) and its scalar part, per joint
    w = np.einsum("ij,ij->i", qa, qb)
    v = qa[:, :1] * qb[:, 1:] - qb[:, :1] * qa[:, 1:] - np.cross(qa[:, 1:], qb[:, 1:])
    sign = np.where(w < 0.0, -1.0, 1.0)
    return w * sign, v * sign[:, None]


def bend_radii(model: RodModel, state: RodState) -> np.ndarray:
    """Radius of curvature at every joint: Voronoi length over the angle between the d3 directors."""
    d3 = rotation_matrices(state.quats)[:, :, 2]
    cosang = np.clip(np.einsum("ij,ij->i", d3[model.joint_a], d3[model.joint_b]), -1.0, 1.0)
    angle = np.arccos(cosang)
    with np.errstate(divide="ignore"):
        return np.where(angle > 1e-12, model.joint_len / np.maximum(angle, 1e-300), np.inf)


def joint_arc_lengths(model: RodModel) -> np.ndarray:
    """Arc length of every bend/twist joint: the node its two rotations meet at."""
    n_segs = len(model.rest_len)
    return np.where(
        model.joint_b < n_segs,
        model.node_s[np.minimum(model.joint_b, n_segs - 1)],
        model.node_s[np.minimum(model.joint_a + 1, n_segs)],
    )


def twist_rates(model: RodModel, state: RodState) -> np.ndarray:
    """Twist per unit length at every joint (rad/m), from the discrete Darboux vector (Chen 2023, Eq. 9)."""
    w, v = _relative_rotations(model, state)
    return 2.0 * np.arctan2(v[:, 2], w) / model.joint_len


def elastic_and_load_energy(model: RodModel, state: RodState) -> float:
    return float(rod_energy(state.positions, state.quats, model.arrays(), 1.0))


def reactions(model: RodModel, state: RodState):
    """Force and moment that each connector and clip exerts on the cable (world frame).

    At a held degree of freedom the energy gradient is exactly what the holder must supply:
    f = dE/dx at held nodes, and the couple R dE/dtheta at held frames; clip moments are taken
    about the clip centre, connector moments about the connector point.
    """
    g = rod_gradient(model, state.positions, state.quats)

    def node_force(k):
        return g[model.node_dof[k] : model.node_dof[k] + 3]

    def couple(r):
        return matrix_from_quat(state.quats[r]) @ g[model.rot_dof[r] : model.rot_dof[r] + 3]

    ends = {"start": {"force": node_force(0).copy(), "moment": couple(model.start_frame)}}
    if model.end_frame >= 0:
        ends["end"] = {"force": node_force(model.n_nodes - 1).copy(), "moment": couple(model.end_frame)}
    clips = []
    for clip, nodes, rots in zip(model.cable.clips, model.clip_nodes, model.clip_rots):
        if not nodes or clip.kind == "sliding" or clip.stiffness is not None:
            clips.append({"force": np.zeros(3), "moment": np.zeros(3)})  # held by an energy: see Interactions
            continue
        centre = (
            state.positions[nodes[0]] + (clip.s - model.node_s[nodes[0]]) * matrix_from_quat(state.quats[rots[0]])[:, 2]
        )
        force = np.zeros(3)
        moment = np.zeros(3)
        for k in nodes:
            f = node_force(k)
            force += f
            moment += np.cross(state.positions[k] - centre, f)
        for r in rots:
            moment += couple(r)
        clips.append({"force": force, "moment": moment})
    return ends, clips


def max_axial_strain(model: RodModel, state: RodState) -> float:
    chords = state.positions[1:] - state.positions[:-1]
    lengths = np.sqrt(np.einsum("ij,ij->i", chords, chords))
    return float((lengths / model.rest_len).max() - 1.0)
