# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether a cable's state or step passes through what it touches: depths, crossings, jumps.

``Interactions`` takes these from ``PenetrationChecks``; the solves ask them before they call a state
converged or take a step (equilibrium.py, junctions).
"""

import numpy as np

from ..geometry.contact_geometry import segments_near_capsules
from ..rod.rod_state import RodState
from .crossing import step_crosses_triangles
from .pair_search import find_pairs, segment_penetration


class PenetrationChecks:
    """The penetration checks of an ``Interactions`` (its base class)."""

    def pairs_depend_on_search(self, state: RodState, margin: float) -> bool:
        """Whether some contact pairs within ``margin`` of the cable at ``state`` are found only where
        their closest points lie at the search (newton.minimise_rod_energy): segment pairs against
        capsules. Segments against mesh edges, self-contact and contact between the cables of a group
        do not: every such pair within reach is a candidate, wherever its closest points lie (a
        segment piercing a face is found at the search only, but no step can make one). Capsules
        further than ``margin`` and both radii from every segment of the cable cannot pair with it:
        boxes first, then exact distances to the segments of the capsules whose boxes overlap the
        cable's. (A cable solved beside another out of reach, as Simulate's still cables are, would
        otherwise search afresh before and after every solve: with the bay's plug dragged, the
        still cable inside the dragged pair's box cost a search of the 200k-triangle collider
        every tick, 1.3 ms of 8.5.)"""
        if not len(self.obstacles.capsule_radius):
            return False
        capsules = self._shifted_obstacles()
        a, b, radius = capsules.capsule_a, capsules.capsule_b, capsules.capsule_radius
        within = margin + float(self.node_radius.max()) + radius
        lo = state.positions.min(axis=0) - within[:, None]
        hi = state.positions.max(axis=0) + within[:, None]
        overlap = (np.minimum(a, b) <= hi).all(axis=1) & (np.maximum(a, b) >= lo).all(axis=1)
        if not overlap.any():
            return False
        near = segments_near_capsules(
            state.positions, self.node_part, a[overlap], b[overlap], np.ascontiguousarray(within[overlap])
        )
        return bool(near)

    def deepest_pair_penetration(self, state: RodState) -> float:
        """Largest penetration of any contact pair at ``state``, from a fresh search (0 when clear)."""
        gap = self._evaluate_pairs(state)[3]
        return float(max(0.0, -gap.min())) if len(gap) else 0.0

    def deepest_penetration(self, state: RodState) -> float:
        """Largest penetration of any contact pair or segment (0 when clear), in metres."""
        if not self.uses_contact:
            return 0.0
        known = self.known_penetration(state)
        if known is not None:
            return known
        gap = self._evaluate_pairs(state)[3]
        finite = gap[np.isfinite(gap)]
        deepest = float(max(0.0, -finite.min())) if finite.size else 0.0
        deepest = max(
            deepest, segment_penetration(state.positions, self.node_radius, self.node_part, self._shifted_obstacles())
        )
        self.__dict__["_deepest"] = (self.obstacles, state.positions.copy(), deepest)
        return deepest

    def known_penetration(self, state: RodState) -> float | None:
        """deepest_penetration of ``state`` if it was the last one measured against these obstacles (a
        solve measures its result, and the next step starts from it), else None."""
        kept = self.__dict__.get("_deepest")
        if kept is not None and kept[0] is self.obstacles and np.array_equal(kept[1], state.positions):
            return kept[2]
        return None

    def nothing_within(self, state: RodState, distance: float) -> bool:
        """Whether no obstacle, other cable or other part of this cable comes within ``distance`` of
        the cable's surface at ``state`` (then no move of its nodes up to that far can touch one)."""
        if not self.uses_contact:
            return True
        kind, _elem, _prim = find_pairs(
            state.positions, self.node_radius, self.node_part, distance, self._shifted_obstacles(), self.self_gap
        )
        return len(kind) == 0

    def crosses_between(self, before: RodState, after: RodState) -> bool:
        """Whether moving the nodes on straight lines from ``before`` to ``after`` carries the centre
        line through a face of a mesh obstacle (exact, whatever the move: crossing.py)."""
        if not self.uses_contact:
            return False
        return bool(
            step_crosses_triangles(before.positions, after.positions, self.node_part, self._shifted_obstacles())
        )

    def jumps_across_cables(self, before: RodState, after: RodState, depth: float) -> bool:
        """Whether moving the nodes on straight lines from ``before`` to ``after`` carries the cable
        into another cable's segment (a capsule) deeper than ``depth`` on the way. A jump clean across
        one leaves nothing at its end to see, so the way is sampled: no node moves more than half the
        thinner radius between samples, and a centre line crossing another's comes within a quarter
        radius of it at some sample."""
        radii = self.obstacles.capsule_radius
        if not len(radii):
            return False
        arrays = self._shifted_obstacles()  # only capsules near the way matter (boxes first)
        margin = float(radii.max()) + float(self.node_radius.max())
        low = np.minimum(before.positions.min(axis=0), after.positions.min(axis=0)) - margin
        high = np.maximum(before.positions.max(axis=0), after.positions.max(axis=0)) + margin
        a, b = arrays.capsule_a, arrays.capsule_b
        if not (np.all(np.minimum(a, b) <= high, axis=1) & np.all(np.maximum(a, b) >= low, axis=1)).any():
            return False
        move = float(np.linalg.norm(after.positions - before.positions, axis=1).max())
        samples = int(np.ceil(move / (0.5 * min(self.radius, float(radii.min())))))
        for j in range(1, samples):
            t = j / samples
            between = RodState((1.0 - t) * before.positions + t * after.positions, after.quats)
            if self.deepest_pair_penetration(between) > depth:
                return True
        return False

    def passes_through(self, before: RodState, after: RodState) -> bool:
        """Whether the nodes, moved on straight lines from ``before`` to ``after``, carry the cable into or
        through an obstacle on the way: a route that bulges against the loads (drawn over an obstacle) is
        lengthened on the far side of its chord, so that even the first step of its sag can jump through
        what it was drawn over. Faces are tested exactly (crossing.py), the rest at every half radius."""
        if self.crosses_between(before, after):
            return True
        move = float(np.linalg.norm(after.positions - before.positions, axis=1).max())
        samples = int(np.ceil(move / (0.5 * self.radius)))
        for j in range(1, samples):
            t = j / samples
            between = RodState((1.0 - t) * before.positions + t * after.positions, after.quats)
            if self.deepest_penetration(between) > 0.0:
                return True
        return False
