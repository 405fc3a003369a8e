# SPDX-License-Identifier: GPL-3.0-or-later
"""What a junction step may not do: pass a junction through an obstacle or another cable, carry a
branch's end across another cable, cross two branches, or stretch a branch past its ultimate strain.
``JunctionChecks`` holds these tests for ``junctions.JunctionSystem``."""

import numpy as np

from .branch_crossing import crossing
from .diagnostics import max_axial_strain
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
        held = {cid: dict((side, end) for side, end in self.branches[cid]) for cid in ids}

        def outward(cid, side):
            end = held[cid][side]
            direction = rotations[self.index(end.junction)] @ end.outlet
            return direction if side == "start" else -direction

        shapes = {cid: self._branch_shape(harness, cid, nodes) for cid in ids}
        # boxes grown by the radius and a segment (crossing's own reach): only pairs whose boxes meet
        grow = np.array([[radius + longest] for _where, _arc, radius, longest in shapes.values()])
        low = np.array([where.min(axis=0) for where, *_rest in shapes.values()]) - grow
        high = np.array([where.max(axis=0) for where, *_rest in shapes.values()]) + grow
        apart = (low[:, None, :] > high[None, :, :]).any(axis=2)
        apart |= apart.T
        for i, a in enumerate(ids):
            for j in range(i + 1, len(ids)):
                if apart[i, j]:
                    continue
                b = ids[j]
                shared = []
                for side_a, end_a in held[a].items():
                    for side_b, end_b in held[b].items():
                        if end_a.junction == end_b.junction:
                            cos = float(outward(a, side_a) @ outward(b, side_b))
                            shared.append((side_a, side_b, np.sqrt(max(0.0, 0.5 * (1.0 - cos)))))
                depth = crossing(shapes[a], shapes[b], shared)
                if depth is not None:
                    return (
                        f"branches {a!r} and {b!r} pass through each other ({depth * 1e3:.2g} mm deep; contact "
                        f"between branches of one harness is not modelled): no physical equilibrium was found"
                    )
        self._found_clear = ({cid: nodes[cid].copy() for cid in ids}, rotations.copy(), sections, ids)
        return None

    @staticmethod
    def _branch_shape(harness, cid, nodes=None) -> tuple:
        """(world nodes, arc lengths, radius, longest segment's arc length): branch_crossing's shape."""
        where = harness.world_nodes(cid) if nodes is None else nodes[cid]
        model = harness.cables[cid].model
        return where, model.node_s, harness.cable_radius(cid), float(model.rest_len.max())
