# SPDX-License-Identifier: GPL-3.0-or-later
"""A point of a centre line at an arc length, linearly between its nodes (calibration's measured points,
a KBL segment's ends at clips)."""

import numpy as np


def point_at(nodes: np.ndarray, arc: np.ndarray, s: float) -> np.ndarray:
    """The point at arc length ``s`` of the polyline ``nodes`` (n, 3) whose nodes lie at arc lengths
    ``arc`` (increasing): linear between the nodes, the end node beyond either end."""
    return np.array([np.interp(s, arc, nodes[:, k]) for k in range(3)])
