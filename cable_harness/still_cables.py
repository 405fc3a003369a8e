# SPDX-License-Identifier: GPL-3.0-or-later
"""Which cables a quasi-static Simulate tick may leave where they are.

A cable whose holders, settings, colliders and contact settings are what they were at its last
converged solve rests where that solve left it (the solver is deterministic), unless a cable solved
in this tick comes near it. Dragging one connector of a bay then solves, reads out and writes the
cables that move, not the whole scene: the bay's untouched sensor cable cost 1.4 ms of solve, 1.4 ms
of read-outs and 1 ms of writing per tick. Only names and copies of result documents are kept.
"""

import numpy as np

# how near a cable being solved may come to a still one, beyond both surfaces, in the larger of their
# contact reaches (max(radius, half the longest segment)), before both are solved: as near as the
# solver's own grouping of cables (solver_core cable_groups.GROUP_MARGIN)
GROUPING_REACHES = 2.0


class StillCables:
    def __init__(self):
        self._last = {}  # cable name -> (its inputs, the inputs all cables share, its result document)
        self._written = set()  # of those, the ones whose result the curve shows

    def remember(self, name: str, own_inputs, shared_inputs, result: dict, written: bool) -> None:
        """``result``: the cable's result after a converged solve towards exactly these inputs;
        ``written``: whether its curve was written from it."""
        self._last[name] = (own_inputs, shared_inputs, result)
        if written:
            self._written.add(name)
        else:
            self._written.discard(name)

    def drop(self, names) -> None:
        for name in names:
            self._last.pop(name, None)
            self._written.discard(name)

    def written(self, name: str) -> bool:
        return name in self._written

    def mark_written(self, name: str) -> None:
        self._written.add(name)

    def unchanged(self, own_inputs: dict, shared_inputs) -> set:
        """The names (of ``own_inputs``: name -> inputs) whose inputs are those of their last
        converged solve."""
        return {
            name
            for name, own in own_inputs.items()
            if (last := self._last.get(name)) is not None and last[0] == own and last[1] == shared_inputs
        }

    def result(self, name: str) -> dict:
        return self._last[name][2]


def too_near(still_nodes: dict, moved_nodes: dict, radius: dict) -> set:
    """The still cables (name -> (n, 3) nodes, m) that a moved cable's nodes come near: within both
    radii (``radius``: name -> m) and GROUPING_REACHES of the larger contact reach, widened by half the
    longest segment of each (two segments are no nearer than their nearest nodes less that). Bounding
    boxes first, then node to node among the nodes inside the other's box widened by the distance
    (no node outside it is that near any of its nodes)."""
    near = set()
    boxes = {
        n: (x.min(axis=0), x.max(axis=0), 0.5 * _longest_segment(x)) for n, x in {**still_nodes, **moved_nodes}.items()
    }
    for s, a in still_nodes.items():
        lo_s, hi_s, half_s = boxes[s]
        for m, b in moved_nodes.items():
            lo_m, hi_m, half_m = boxes[m]
            reach = max(radius[s], half_s, radius[m], half_m)
            gap = radius[s] + radius[m] + GROUPING_REACHES * reach + half_s + half_m
            if np.any(lo_s - gap > hi_m) or np.any(lo_m - gap > hi_s):
                continue
            a_in = a[np.all((a >= lo_m - gap) & (a <= hi_m + gap), axis=1)]
            b_in = b[np.all((b >= lo_s - gap) & (b <= hi_s + gap), axis=1)]
            if not (len(a_in) and len(b_in)):
                continue
            d2 = ((a_in[:, None, :] - b_in[None, :, :]) ** 2).sum(axis=2)
            if float(d2.min()) <= gap * gap:
                near.add(s)
                break
    return near


def _longest_segment(nodes: np.ndarray) -> float:
    d = np.diff(nodes, axis=0)
    return float(np.sqrt(np.einsum("ij,ij->i", d, d).max(initial=0.0)))
