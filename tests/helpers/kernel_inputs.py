# SPDX-License-Identifier: GPL-3.0-or-later
"""The named tuples the Newton kernels take (solver_core.kernel_arrays), built from the few arrays a
kernel test sets up: candidate pairs with their buffers, the contact part of a cable's interactions
without friction or mounts, a numbering of dofs, and compliant clips."""

import numpy as np

from solver_core.contact.pair_geometry import pair_nodes
from solver_core.kernel_arrays import CompliantClips, ContactParameters, InteractionArrays, PairBuffers, RodArrays


def pair_buffers(kind, elem, prim=None, **given) -> PairBuffers:
    """PairBuffers of the pairs (kind, elem, prim), zeroed and fresh but for the fields ``given``
    (gap, t, normal, point, u, force, fresh, moves, approach, end_grad; an array already of the field's
    dtype and contiguous is taken as it is, so a kernel writes into it). end_grad=np.empty((0, 12)):
    no end gradients (contact_energy.contact_energy_of)."""
    kind = np.asarray(kind, dtype=np.int64)
    elem = np.asarray(elem, dtype=np.int64)
    prim = np.zeros_like(kind) if prim is None else np.asarray(prim, dtype=np.int64)
    m = kind.shape[0]
    fields = {
        "gap": np.zeros(m),
        "t": np.zeros(m),
        "normal": np.zeros((m, 3)),
        "point": np.zeros((m, 3)),
        "u": np.zeros(m),
        "force": np.zeros((m, 3)),
        "fresh": np.ones(m, dtype=np.bool_),
        "moves": np.zeros(m),
        "approach": np.zeros(m),
        "end_grad": np.zeros((m, 12)),
    }
    for name, value in given.items():
        fields[name] = np.ascontiguousarray(value, dtype=fields[name].dtype)
    return PairBuffers(kind, elem, prim, pair_nodes(kind, elem, prim), **fields)


def contact_interactions(obstacles, node_radius, node_len, seg_len, stiffness, reach=np.inf) -> InteractionArrays:
    """A cable's InteractionArrays with contact only: the obstacles, per node radius and length, per
    segment rest length, the contact stiffness [N/m^2] and search reach [m]."""
    n_nodes = np.asarray(node_radius).shape[0]
    contact = ContactParameters(float(node_radius[0]), float(stiffness), float(reach), 2, 1e-6, True)
    return InteractionArrays(
        obstacles,
        contact,
        np.asarray(node_len, dtype=np.float64),
        np.asarray(seg_len, dtype=np.float64),
        np.zeros(0, dtype=np.uint8),  # no friction
        np.zeros((0, 3)),
        np.zeros(0),
        np.zeros((0, 3)),
        np.zeros(0),
        np.zeros((0, 3)),  # no sliding clips
        np.zeros((0, 3)),
        np.zeros(0),
        np.zeros(0, dtype=np.int64),  # no compliant clips
        np.zeros(0, dtype=np.int64),
        np.zeros((0, 3)),
        np.zeros((0, 4)),
        np.zeros((0, 6, 6)),
        np.zeros(0, dtype=np.int64),
        np.asarray(node_radius, dtype=np.float64),
        np.zeros(n_nodes, dtype=np.int64),
    )


def dof_layout(node_dof, fixed, bw=0) -> RodArrays:
    """RodArrays of nodes numbered ``node_dof`` with the dofs ``fixed`` and nothing else: no segments,
    joints or loads (for the contact kernels, which read a rod's numbering only)."""
    n_nodes = np.asarray(node_dof).shape[0]
    return RodArrays(
        np.asarray(node_dof, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.asarray(fixed, dtype=np.bool_),
        int(bw),
        np.zeros(0),
        np.zeros((0, 3)),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros(0),
        np.zeros((0, 3)),
        np.zeros((0, 3)),
        np.zeros((n_nodes, 3)),
        np.zeros((0, 3)),
    )


def compliant_clips(node, rot, centre, quat, K) -> CompliantClips:
    """CompliantClips of clips holding the nodes ``node`` and frames ``rot``, centred at ``centre`` (clips,
    3), turned by the unit quaternions ``quat`` (clips, 4), of stiffness ``K`` (clips, 6, 6)."""
    return CompliantClips(
        np.asarray(node, dtype=np.int64),
        np.asarray(rot, dtype=np.int64),
        np.asarray(centre, dtype=np.float64),
        np.asarray(quat, dtype=np.float64),
        np.asarray(K, dtype=np.float64),
    )
