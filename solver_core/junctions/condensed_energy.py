# SPDX-License-Identifier: GPL-3.0-or-later
"""The junctions' condensed energy E(p, R) and its gradient: what the branches' ends carry.

With every branch at its own equilibrium for the junctions' frames, dE/dp = sum_b f_b - m g and
dE/dw = sum_b m_b (the envelope theorem; junctions.py's docstring), f_b and m_b what the junction
holds branch b with (diagnostics.reactions, with the contacts' push on the end node). Also the
tolerance a balance is judged against, and the result's ``junctions`` block. ``JunctionSystem`` takes
these from ``CondensedEnergy``.
"""

import numpy as np

from ..solve.diagnostics import elastic_and_load_energy, reactions
from .junction_steps import JunctionFrames


class CondensedEnergy:
    """The condensed energy, gradient and read-outs of a ``JunctionSystem`` (its base class)."""

    def _branch_loads(self, harness, cid):
        """(side, junction index, force, moment) the junction exerts on branch ``cid`` at each held end;
        kept per state (a finite-difference column re-solves only a junction's own branches)."""
        session = harness.cables[cid]
        kept = self._load_cache.get(cid)
        if kept is not None and kept[0] is session.state:
            return kept[1]
        ends, _clips = reactions(session.model, session.state)
        # and what the contacts push the held end node with (the junction's own obstacle contact apart)
        pushed = session.contact_push()
        last = session.model.n_nodes - 1
        loads = [
            (
                side,
                self.index(held.junction),
                ends[side]["force"] + pushed[0 if side == "start" else last],
                ends[side]["moment"],
            )
            for side, held in self.branches[cid]
        ]
        self._load_cache[cid] = (session.state, loads)
        return loads

    def _gradient(self, harness, frames) -> np.ndarray:
        """dE/dp and dE/dw of every junction, (n, 6): what the branches carry, less the junction's weight
        and what the obstacles push it with."""
        return self._branch_gradient(harness) + self._contact_gradient(harness, frames)

    def _contact_gradient(self, harness, frames) -> np.ndarray:
        gc = np.zeros((len(self.specs), 6))
        for k in self.free:
            gc[k, :3] = -self.contact[k].force(harness.obstacles, frames.position[k])
        return gc

    def _branch_gradient(self, harness) -> np.ndarray:
        g = np.zeros((len(self.specs), 6))
        for cid in self.branches:
            for _side, k, force, moment in self._branch_loads(harness, cid):
                g[k, :3] += force
                g[k, 3:] += moment
        gravity = harness.case.gravity
        for k, spec in enumerate(self.specs):
            g[k, :3] -= spec.mass * gravity
        return g

    def _loads(self, harness) -> dict:
        out = {spec.id: [] for spec in self.specs}
        for cid in self.branches:
            for side, k, force, moment in self._branch_loads(harness, cid):
                # what the branch pulls the junction with: minus what the junction holds it with
                out[self.specs[k].id].append((cid, side, -force, -moment))
        return out

    def _tolerance(self, harness) -> np.ndarray:
        """Per junction (6,): the sum of the held branch ends' residual tolerances."""
        tol = np.zeros((len(self.specs), 6))
        for cid, ends in self.branches.items():
            session = harness.cables[cid]
            model = session.model
            # with the floor of round-off a stiff contact or clip puts under a branch's residual
            dof_tol = session.interactions.dof_tolerance(session.boundary)
            for side, held in ends:
                k = self.index(held.junction)
                node = 0 if side == "start" else model.n_nodes - 1
                rot = model.start_frame if side == "start" else model.end_frame
                tol[k, :3] += dof_tol[model.node_dof[node]]
                tol[k, 3:] += dof_tol[model.rot_dof[rot]]
        L = self._length_scale(harness)
        for k in self.free:  # and of the junction's own contact (as Interactions.dof_tolerance)
            floor = 64.0 * np.finfo(float).eps * self.contact[k].stiffness * L
            tol[k, :3] = np.maximum(tol[k, :3], floor)
            tol[k, 3:] = np.maximum(tol[k, 3:], floor * L)
        return tol

    def _length_scale(self, harness) -> float:
        # (a fixed junction may hold no cable yet: one placed in a scene before its branches are drawn)
        return max((harness.cables[cid].model.cable.length for cid in self.branches), default=1.0)

    def junction_documents(self) -> dict:
        """The result's ``junctions`` block (case format): per junction whether its last solve balanced
        it, its frame (the last balanced one, or the case's before any), the force and moment out of
        balance there (null before any balance) and what each branch pulls it with."""
        out = {}
        converged = self.last is not None and self.last.converged
        for k, spec in enumerate(self.specs):
            residual = None if self.residual is None else self.residual[k]
            out[spec.id] = {
                "converged": converged,
                "position": self.frames.position[k].tolist(),
                "rotation": self.frames.rotation[k].tolist(),
                "fixed": spec.fixed,
                "residual_force": None if residual is None else residual[:3].tolist(),
                "residual_moment": None if residual is None else residual[3:].tolist(),
                "branches": [
                    {"cable": cid, "end": side, "force": f.tolist(), "moment": m.tolist()}
                    for cid, side, f, m in self.loads.get(spec.id, [])
                ],
                # the obstacles' push on the junction's own sleeve (the ball of its widest branch's radius)
                "contacts": [
                    {"point": q.tolist(), "normal": n.tolist(), "force": f.tolist()}
                    for q, n, f in ([] if self.contact is None else self.contact[k].contacts)
                ],
            }
        return out

    def _energy_scale(self, harness) -> float:
        """The size of the terms the branches' energy sums: their weight times their length, their bending
        EI / L (J)."""
        total = 0.0
        g = float(np.linalg.norm(harness.case.gravity))
        for cid in self.branches:
            c = harness.cables[cid].model.cable
            total += c.section.linear_density * g * c.length**2 + c.section.bend_stiffness / c.length
        return total

    @staticmethod
    def _cables_energy(harness, ids) -> float:
        """Elastic, load, contact and clip-spring energy of the cables ``ids`` (J); the contacts of a joint
        solve are counted once, with its first cable. The loads' potential is each cable's from its own origin (a
        constant apart from the world's, so every difference is the same): where the scene lies adds
        nothing to the energy's size, against which its round-off is judged."""
        total = 0.0
        for cid in ids:
            s = harness.cables[cid]
            total += elastic_and_load_energy(s.model, s.state)
            total += s.group_energy if harness.joint(cid) else s.interactions.contact_energy_at(s.state)
            total += s.interactions.mount_energy_at(s.state, s.boundary)
        return total

    def energy(self, harness, frames: JunctionFrames) -> float:
        """Elastic, load and contact energy of the branches plus the junctions' weight and contact at
        ``frames`` (J): the energy whose gradient ``_gradient`` is (the branches' contact forces are in
        what their ends carry)."""
        # the other cables give way with the branches they touch: their change since the solve began
        total = self._cables_energy(harness, self.branches) + self._cables_energy(harness, self._others)
        total -= self._others_energy
        for k, spec in enumerate(self.specs):  # from where it was drawn (_cables_energy)
            total -= spec.mass * float(harness.case.gravity @ (frames.position[k] - spec.position))
        for k in self.free:
            total += self.contact[k].energy(harness.obstacles, frames.position[k])
        return total
