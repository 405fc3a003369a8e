# SPDX-License-Identifier: GPL-3.0-or-later
"""What a solved cable's contacts, friction and clips do: forces, energies and the result's contacts.

``Interactions`` takes these from ``ContactReadOuts``; they read its model, obstacles, friction state
and clips, and change nothing.
"""

import numpy as np

from ..kernel_arrays import CompliantClips, PairBuffers
from ..maths.rotations import cross3, matrix_from_quat
from ..rod.rod_model import Boundary
from ..rod.rod_state import RodState
from .contact import NODE_KINDS, PAIR_KINDS, SELF_KINDS
from .contact_energy import contact_energy_of
from .mounts import compliant_energy, sliding_crossings, sliding_energy

# By pair kind: a node's pair with an obstacle (not another part of the cable), which a held node does
# not feel. A table lookup: np.isin on a report's few pairs cost more than the pairs' energy.
_NODE_ON_OBSTACLE = np.array([k in NODE_KINDS and k not in SELF_KINDS for k in range(max(PAIR_KINDS) + 1)])


def evaluated_pairs(kind, elem, prim, gap, t, normal, point, u, force) -> PairBuffers:
    """PairBuffers of the pairs (kind, elem, prim) with the buffers contact_energy writes (gap ... force)
    and none of a Newton step's (a report evaluates pairs; it takes no step)."""
    return PairBuffers(
        kind,
        elem,
        prim,
        np.empty((0, 4), dtype=np.int64),
        gap,
        t,
        normal,
        point,
        u,
        force,
        np.empty(0, dtype=np.bool_),
        np.empty(0),
        np.empty(0),
        np.empty((0, 12)),
    )


class ContactReadOuts:
    """The read-outs of an ``Interactions`` (its base class)."""

    def contact_gradient_at(self, state: RodState) -> np.ndarray:
        """d contact_energy_at / dx per node, (n_nodes, 3): at a held node, what its holder supplies
        against the contacts on it (a cable pressed onto a branch's end segment pushes half of that
        onto the junction holding it), beyond diagnostics.reactions' elastic part."""
        model = self.model
        out = np.zeros((model.n_nodes, 3))
        if not self.uses_contact:
            return out
        grad = np.zeros(model.n_dof)
        self._felt_contact_energy(state, grad)
        for k in range(3):
            out[:, k] = grad[model.node_dof + k]
        return out

    def friction_forces(self, state: RodState) -> np.ndarray:
        """Per node (n_nodes, 3), the friction force on the cable at ``state``: minus the gradient of the
        friction energy (contact_energy.friction_energy: mu N phi(|P (x - a)|), Huber phi of width
        eps), -mu N u / eps while the tangential offset u from the anchor is within eps (sticking),
        -mu N u / |u| beyond it (sliding, mu the dynamic factor once the node slides)."""
        model = self.model
        out = np.zeros((model.n_nodes, 3))
        fs = self.friction_state
        if not (self.settings.friction and self.uses_contact and fs.active.any()):
            return out
        mu = np.where(fs.sliding, self.settings.friction_dynamic, self.settings.friction_static)
        eps = self.stick_width
        for i in np.flatnonzero(fs.active):
            n = fs.normal[i]
            u = state.positions[i] + model.origin - fs.anchor[i]
            u = u - n * (u @ n)
            mag = float(np.linalg.norm(u))
            c = mu[i] * fs.force[i]
            out[i] = -(c / eps if mag < eps else c / mag) * u
        return out

    def contact_energy_at(self, state: RodState) -> float:
        """The penalty energy of the contacts at ``state`` (J) that the cable's free nodes feel: part of
        the energy a junction's branches hold (junctions.py), as their contact forces are part of what
        the branch ends carry. A node a connector or junction holds is left out: its push goes to the
        holder, not along the cable (diagnostics.reactions), and a junction has its own contact."""
        if not self.uses_contact:
            return 0.0
        return self._felt_contact_energy(state, None)

    def mount_energy_at(self, state: RodState, boundary: Boundary) -> float:
        """The energy of the sliding and compliant clips' springs at ``state`` (J): part of the energy a
        junction's branches hold, as the clips' forces are part of what the branch ends carry."""
        if not self._has_mounts():
            return 0.0
        model = self.model
        sl_point, sl_axis, sl_k, cc_node, cc_rot, cc_centre, cc_quat, cc_K, sl_part = self._clip_mounts(boundary)
        grad, no_band = np.zeros(model.n_dof), np.zeros((1, 1))
        n_planes = sl_point.shape[0]
        crossing, tpar, offset = np.empty(n_planes, dtype=np.int64), np.empty(n_planes), np.empty(n_planes)
        sliding_crossings(state.positions, self.node_part, sl_point, sl_axis, sl_part, crossing, tpar)
        energy = sliding_energy(
            state.positions, model.node_dof, sl_point, sl_axis, sl_k, crossing, tpar, grad, no_band, 0, 1, offset
        )
        deflection = np.empty((cc_node.shape[0], 6))
        energy += compliant_energy(
            state.positions,
            state.quats,
            model.node_dof,
            model.rot_dof,
            CompliantClips(cc_node, cc_rot, cc_centre, cc_quat, cc_K),
            grad,
            no_band,
            0,
            1,
            deflection,
        )
        return float(energy)

    def _felt_contact_energy(self, state: RodState, grad: np.ndarray | None) -> float:
        """The energy of every contact pair but those of a held node against an obstacle; with ``grad``
        (n_dof) its gradient added there too."""
        kind, elem, prim, gap, t, normal, point, u, force = self._evaluate_pairs(state)
        model = self.model
        held = _NODE_ON_OBSTACLE[kind] & model.held_nodes()[elem]
        if grad is None and not held.any():
            return self.__dict__["_evaluated"][4]
        return float(
            contact_energy_of(
                np.flatnonzero(~held),
                state.positions,
                evaluated_pairs(
                    kind, elem, prim, gap.copy(), t.copy(), normal.copy(), point.copy(), u.copy(), force.copy()
                ),
                self.contact_arrays(),
                model.node_dof,
                np.zeros(1) if grad is None else grad,
                np.zeros((1, 1)),
                0,
                0 if grad is None else 1,
            )
        )

    def contacts(self, state: RodState, stiffness: float | None = None):
        """Contacts carrying force: (node-or-segment kind, element, t, point, normal, force, gap,
        primitive, u); for self-contact the primitive is the cable's other segment, met at u."""
        if not self.uses_contact:
            return []
        kind, elem, prim, gap, t, normal, point, u, force = self._evaluate_pairs(state, stiffness)
        return [
            (
                int(kind[p]),
                int(elem[p]),
                float(t[p]),
                point[p] + self.model.origin,
                normal[p].copy(),
                force[p].copy(),
                float(gap[p]),
                int(prim[p]),
                float(u[p]),
            )
            for p in np.flatnonzero((force != 0.0).any(axis=1))
        ]

    def mount_reactions(self, state: RodState, boundary: Boundary) -> dict:
        """Force and moment each sliding or compliant clip exerts on the cable, and compliant deflections."""
        model = self.model
        out = {}
        if not self._has_mounts():
            return out
        mounts = self._clip_mounts(boundary)
        sl_point, sl_axis, sl_k, cc_node, cc_rot, cc_centre, cc_quat, cc_K, _sl_part = mounts
        plane = 0
        comp = 0
        for index, (clip, frame) in enumerate(zip(model.cable.clips, boundary.clips)):
            if clip.kind == "sliding":
                grad = np.zeros(model.n_dof)
                crossing = np.empty(2, dtype=np.int64)
                tpar = np.empty(2)
                offset = np.empty(2)
                sliding_crossings(
                    state.positions,
                    self.node_part,
                    sl_point[plane : plane + 2],
                    sl_axis[plane : plane + 2],
                    np.zeros(2, dtype=np.int64),
                    crossing,
                    tpar,
                )
                sliding_energy(
                    state.positions,
                    model.node_dof,
                    sl_point[plane : plane + 2],
                    sl_axis[plane : plane + 2],
                    sl_k[plane : plane + 2],
                    crossing,
                    tpar,
                    grad,
                    np.zeros((1, 1)),
                    0,
                    1,
                    offset,
                )
                plane += 2
                force, moment = self._force_moment(state, grad, frame.position - model.origin)
                out[index] = {
                    "force": force,
                    "moment": moment,
                    "offset": float(np.nanmax(offset)),
                    "crossing_segments": crossing.tolist(),
                }
            elif clip.stiffness is not None:
                grad = np.zeros(model.n_dof)
                deflection = np.empty((1, 6))
                clips = CompliantClips(
                    cc_node[comp : comp + 1],
                    cc_rot[comp : comp + 1],
                    cc_centre[comp : comp + 1],
                    cc_quat[comp : comp + 1],
                    cc_K[comp : comp + 1],
                )
                compliant_energy(
                    state.positions,
                    state.quats,
                    model.node_dof,
                    model.rot_dof,
                    clips,
                    grad,
                    np.zeros((1, 1)),
                    0,
                    1,
                    deflection,
                )
                force, moment = self._force_moment(state, grad, frame.position - model.origin)
                r = cc_rot[comp]
                moment = moment - matrix_from_quat(state.quats[r]) @ grad[model.rot_dof[r] : model.rot_dof[r] + 3]
                Rc = matrix_from_quat(cc_quat[comp])
                out[index] = {
                    "force": force,
                    "moment": moment,
                    "deflection": {
                        "translation": (Rc @ deflection[0, :3]).tolist(),
                        "rotation": (Rc @ deflection[0, 3:]).tolist(),
                    },
                }
                comp += 1
        return out

    def _force_moment(self, state, grad, centre):
        """Force on the cable and its moment about ``centre`` from an energy gradient over node dofs."""
        force = np.zeros(3)
        moment = np.zeros(3)
        per_node = -grad[self.model.node_dof[:, None] + np.arange(3)]
        for k in np.flatnonzero(per_node.any(axis=1)):  # the few nodes a mount acts on, in order
            f = per_node[k]
            force += f
            moment += cross3(state.positions[k] - centre, f)
        return force, moment

    def _normal_forces(self, state: RodState):
        """Normal force and contact normal lumped at each node from the current contacts."""
        model = self.model
        n_force = np.zeros(model.n_nodes)
        n_vec = np.zeros((model.n_nodes, 3))
        for kind, elem, t, _point, normal, force, _gap, _prim, _u in self.contacts(state):
            if kind in SELF_KINDS:
                continue  # friction between two legs of one cable is not modelled (it would hold them to the world)
            mag = float(np.linalg.norm(force))
            shares = ((elem, 1.0),) if kind in NODE_KINDS else ((elem, 1.0 - t), (elem + 1, t))
            for node, w in shares:
                n_force[node] += w * mag
                n_vec[node] += w * mag * normal
        return n_force, n_vec
