# SPDX-License-Identifier: GPL-3.0-or-later
"""What a scene layer reads off a harness: cables' nodes, radii, held ends, clearances, junctions.

The Blender layer reads a harness only through these (never its sessions or junction system);
``Harness`` takes them from ``HarnessReadOuts``.
"""

import numpy as np

from ..contact.clearance import clearance_to_triangles
from ..specs.case import Frame
from .results import cable_result


class HarnessReadOuts:
    """The read-outs of a ``Harness`` (its base class: every method reads its cables and junctions)."""

    def has_cable(self, cable_id: str) -> bool:
        return cable_id in self.cables

    def is_solved(self, cable_id: str) -> bool:
        """Whether the cable has an equilibrium (its state is one, not the initial guess)."""
        return self.cables[cable_id].solved

    def cable_radius(self, cable_id: str) -> float:
        """The cable's radius, metres."""
        return 0.5 * self.cables[cable_id].model.cable.diameter

    def world_nodes(self, cable_id: str) -> np.ndarray:
        """The cable's nodes in world coordinates (metres), a new (n, 3) array."""
        session = self.cables[cable_id]
        return session.state.positions + session.model.origin

    def contact_reach(self, cable_id: str) -> float:
        """How far from the cable's nodes a broad phase must look for obstacles (metres): a few
        diameters and a couple of segments around a solved cable; around one not solved yet, as far as
        its first equilibrium may be from its guess (a sag can reach half its length)."""
        session = self.cables[cable_id]
        model = session.model
        return max(
            4.0 * model.cable.diameter,
            2.0 * float(model.rest_len.max()),
            0.0 if session.solved else 0.5 * model.cable.length,
        )

    def clearance(self, cable_id: str, triangles: np.ndarray, search: float) -> tuple:
        """(gap, arc length) of the cable's surface to the nearest of ``triangles`` (m, world), or
        (None, None) when none comes within ``search`` metres."""
        session = self.cables[cable_id]
        model = session.model
        gap, where = clearance_to_triangles(self.world_nodes(cable_id), self.cable_radius(cable_id), triangles)
        if where < 0.0 or gap > search:
            return None, None
        segment = min(int(where), model.n_segments - 1)
        return gap, float(model.node_s[segment] + (where - segment) * model.rest_len[segment])

    def held_end(self, cable_id: str, side: str) -> Frame | None:
        """The frame the solver holds the cable's ``side`` ("start" or "end") at now (metres), or None
        (a free end)."""
        return getattr(self.cables[cable_id].boundary, side)

    def is_branch(self, cable_id: str) -> bool:
        """Whether an end of the cable is held by a junction."""
        return self.junctions is not None and cable_id in self.junctions.branches

    def junction_documents(self) -> dict:
        """The result's ``junctions`` block ({} without junctions; case order): per junction its
        frame, whether it is fixed and balanced, and what each branch pulls it with."""
        return {} if self.junctions is None else self.junctions.junction_documents()

    def branches_at(self, junction_id: str) -> list:
        """The cables with an end held by the junction."""
        if self.junctions is None:
            return []
        branches = self.junctions.branches.items()
        return [cid for cid, ends in branches if any(end.junction == junction_id for _side, end in ends)]

    def cable_result(self, cable_id: str, arrays: bool = False) -> dict:
        """The result document of one cable (case format, section Result; built in results.py).
        ``arrays``: its per-node values as float arrays, not lists (in-process callers: a list of a
        cable's directors costs more than the rest of the document)."""
        return cable_result(self, cable_id, arrays=arrays)
