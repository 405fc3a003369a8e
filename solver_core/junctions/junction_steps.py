# SPDX-License-Identifier: GPL-3.0-or-later
"""How far a Newton step on the junctions may go: its cap, its approach to obstacles, the moved frames.

Steps are in scaled variables y = (p / L, w) (junctions.py); ``JunctionSystem`` takes these from
``JunctionSteps``.
"""

from dataclasses import dataclass

import numpy as np

from ..maths.rotations import axis_angle_matrix

# A Newton step on the junctions moves one by at most this fraction of its shortest branch and turns
# it by at most this many radians.
MAX_MOVE = 0.1
MAX_TURN = 0.3


@dataclass
class JunctionFrames:
    """Positions (n, 3) and rotations (n, 3, 3, from the case's frame) of every junction."""

    position: np.ndarray
    rotation: np.ndarray

    def copy(self) -> "JunctionFrames":
        return JunctionFrames(self.position.copy(), self.rotation.copy())


class JunctionSteps:
    """The step limits of a ``JunctionSystem`` (its base class)."""

    def _approach_cap(self, harness, frames, step, L: float) -> float:
        """The largest fraction (<= 1) of ``step`` that sinks no junction deeper into an obstacle than
        twice what it may sink at a balance (junction_contact.py: then as deep as its branches' ends
        may sink), or than it is already: the penalty's Hessian knows only the contacts where the
        junctions are (as step_limits does for a cable's nodes)."""
        t = 1.0
        for i, k in enumerate(self.free):
            contact, p = self.contact[k], frames.position[k]
            move = L * step[6 * i : 6 * i + 3]
            # twice what it may sink at a balance (as ITERATE_PENETRATION is for a cable), so that a
            # junction resting at that depth can still slide along the surface; one clear of every
            # obstacle stops half that deep, where the next step's model holds the contact
            now = contact.depth(harness.obstacles, p)
            allowed = max(2.0 * contact.allowed_depth, now) if now > 0.0 else 0.5 * contact.allowed_depth
            if contact.depth(harness.obstacles, p + t * move) <= allowed:
                continue
            low, high = 0.0, t
            for _ in range(40):
                mid = 0.5 * (low + high)
                if contact.depth(harness.obstacles, p + mid * move) <= allowed:
                    low = mid
                else:
                    high = mid
            t = low
        return t

    def _scaled(self, g, L) -> np.ndarray:
        out = np.empty(6 * len(self.free))
        for i, k in enumerate(self.free):
            out[6 * i : 6 * i + 3] = L * g[k, :3]
            out[6 * i + 3 : 6 * i + 6] = g[k, 3:]
        return out

    def _moved(self, frames: JunctionFrames, step: np.ndarray, L: float) -> JunctionFrames:
        out = frames.copy()
        for i, k in enumerate(self.free):
            out.position[k] = frames.position[k] + L * step[6 * i : 6 * i + 3]
            w = step[6 * i + 3 : 6 * i + 6]
            angle = float(np.linalg.norm(w))
            if angle > 0.0:
                out.rotation[k] = axis_angle_matrix(w / angle, angle) @ frames.rotation[k]
        return out

    def _step_cap(self, harness, step, L) -> float:
        """The largest multiple (<= any) of ``step`` within MAX_MOVE of each junction's shortest branch
        and MAX_TURN radians."""
        cap = np.inf
        for i, k in enumerate(self.free):
            shortest = min(harness.cables[cid].model.cable.length for cid in self.adjacent(k))
            move = L * float(np.linalg.norm(step[6 * i : 6 * i + 3]))
            turn = float(np.linalg.norm(step[6 * i + 3 : 6 * i + 6]))
            if move > 0.0:
                cap = min(cap, MAX_MOVE * shortest / move)
            if turn > 0.0:
                cap = min(cap, MAX_TURN / turn)
        return cap
