# SPDX-License-Identifier: GPL-3.0-or-later
"""What a junction step may not do: pass a junction through an obstacle or another cable, carry a
branch's end across another cable, cross two branches, or stretch a branch past its ultimate strain.
``JunctionChecks`` holds these tests for ``junctions.JunctionSystem``."""

import numpy as np

from ..solve.diagnostics import max_axial_strain
from .branch_crossing import Branches, first_crossing
from .junction_contact import segments_cross_triangle


class JunctionChecks:
    """The refusals of ``junctions.JunctionSystem``'s steps (a mixin: its methods read and write the
    system's fields and call its helpers)."""

    def _crosses(self, harness, a, b) -> str | None:
        """Why a free junction may not move from frames a to b: its centre would pass through an
        obstacle or, with cable-cable contact, into another cable (or carry a branch's end across one);
        None where none would."""
        scene = self._scene(harness)
        for k in self.free:
            p0, p1 = a.position[k], b.position[k]
            if self.contact[k].crosses(harness.obstacles, p0, p1):
                return f"junction {self.specs[k].id!r} would pass through an obstacle"
            if self.contact[k].enters_cable(scene, p0, p1) or self._end_segments_sweep(harness, scene, k, p1 - p0):
                return (
                    f"junction {self.specs[k].id!r} would pass through another cable (a junction resting on "
                    f"another cable is not modelled)"
                )
        return None

    def _end_segments_sweep(self, harness, scene, k: int, move: np.ndarray) -> bool:
        """Whether a branch's end segment at junction k, its end carried by ``move`` about its other node,
        sweeps through another cable's centre line: the branch's own contact only acts once it is
        through, and cannot tell which side it came from."""
        if not len(scene.capsule_a) or not move.any():
            return False
        jid = self.specs[k].id
        for cid in self.adjacent(k):
            nodes = harness.world_nodes(cid)
            for side, held in self.branches[cid]:
                if held.junction == jid:
                    end, other = (nodes[0], nodes[1]) if side == "start" else (nodes[-1], nodes[-2])
                    swept = np.array([other, end, end + move])
                    if segments_cross_triangle(scene.capsule_a, scene.capsule_b, swept):
                        return True
        return False

    def _scene(self, harness):
        """The obstacles as the branches see them: with cable-cable contact, the other cables' segments
        as capsules too, where they lie now (a partner moves with the branches it is solved with)."""
        if not self._others:
            return harness.cables[next(iter(self.branches))].interactions.obstacles
        return harness.obstacles.with_capsules(*harness.capsules_for(tuple(self.branches)))

    def _overstretched(self, harness) -> str | None:
        """The refusal of a balanced state in which a branch, or a cable solved with one, would stretch
        past its ultimate strain (Lv 2017, Sec. 2.4), or None."""
        limit = harness.case.solver.ultimate_strain
        over = []
        for cid, session in harness.cables.items():
            if cid in self.branches or (harness.joint(cid) and any(b in session.solved_with for b in self.branches)):
                strain = max_axial_strain(session.model, session.state)
                if strain > limit:
                    over.append(f"cable {cid!r} would stretch {strain * 100:.2f} %")
        if not over:
            return None
        return f"step refused: {', '.join(over)} (ultimate {limit * 100:.2f} %); the last valid state is kept"

    def _branches_crossing(self, harness, nodes: dict | None = None, rotations=None) -> str | None:
        """A message naming two branches that pass through each other (branch_crossing.py), or None;
        ``nodes``: world nodes per branch, where they lie if not given; ``rotations``: the junctions'
        (their outlets'), the current frames' if not given."""
        ids = list(self.branches)
        if len(ids) < 2:
            return None  # (a fixed junction may hold one branch, or none yet)
        rotations = self.frames.rotation if rotations is None else rotations
        nodes = {cid: harness.world_nodes(cid) for cid in ids} if nodes is None else nodes
        clear = self._found_clear
        sections = [(harness.cables[cid].model, harness.cable_radius(cid)) for cid in ids]
        if (
            clear is not None
            and clear[3] == ids
            and np.array_equal(clear[1], rotations)
            and all(a is b and r == q for (a, r), (b, q) in zip(clear[2], sections))
            and all(np.array_equal(clear[0][cid], nodes[cid]) for cid in ids)
        ):
            return None  # found clear at these very nodes and outlets (the prediction, then its confirmation)
        a, b, depth = first_crossing(*self._crossing_branches(harness, ids, nodes, rotations))
        if a >= 0:
            return (
                f"branches {ids[a]!r} and {ids[b]!r} pass through each other ({depth * 1e3:.2g} mm deep; contact "
                f"between branches of one harness is not modelled): no physical equilibrium was found"
            )
        self._found_clear = ({cid: nodes[cid].copy() for cid in ids}, rotations.copy(), sections, ids)
        return None

    def _crossing_branches(self, harness, ids, nodes, rotations) -> Branches:
        """The branches ``ids`` at world ``nodes`` with the junctions turned by ``rotations``, as
        branch_crossing.first_crossing reads them (what does not move kept while the models stay)."""
        models = [harness.cables[cid].model for cid in ids]
        radii = [harness.cable_radius(cid) for cid in ids]
        key = (ids, [id(m) for m in models], radii)
        kept = self._crossing_layout
        if kept is None or kept[0] != key or any(a is not b for a, b in zip(kept[1], models)):
            end_junction = np.full((len(ids), 2), -1, dtype=np.int64)
            outlets = np.zeros((len(ids), 2, 3))  # in the junctions' frames, outward
            for i, cid in enumerate(ids):
                for side, end in self.branches[cid]:
                    e = 0 if side == "start" else 1
                    end_junction[i, e] = self.index(end.junction)
                    outlets[i, e] = (1.0 - 2.0 * e) * np.asarray(end.outlet, dtype=float)
            layout = (
                np.cumsum([0] + [m.n_nodes for m in models]),
                np.concatenate([m.node_s for m in models]),
                np.array(radii),
                np.array([m.rest_len.max() for m in models]),
                end_junction,
                outlets,
            )
            self._crossing_layout = kept = (key, models, layout)
        first, arc, radius, longest, end_junction, outlets = kept[2]
        turned = np.asarray(rotations)[np.maximum(end_junction, 0)]
        outward = np.einsum("beij,bej->bei", turned, outlets)
        return Branches(np.concatenate([nodes[cid] for cid in ids]), first, arc, radius, longest, end_junction, outward)
