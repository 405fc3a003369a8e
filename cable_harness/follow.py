# SPDX-License-Identifier: GPL-3.0-or-later
"""Following fast colliders: how many solves a collider's move needs so that contact can push the
cables along, shared by Simulate's sub-steps within a tick and Bake's sub-frames.

Distances do not tell sides apart: a collider that moves further than part of a cable's radius
between two solves can pass through the cable. A move is measured at the corners of the collider's
bounding box and followed in steps of at most FOLLOW_MOVE radii of the thinnest cable, at most
MAX_FOLLOW_STEPS per tick or frame (a tick must stay short; the rest of a longer move is followed by
the next ticks). Free of bpy: Blender objects are passed in.
"""

import math

import numpy as np

FOLLOW_MOVE = 0.4  # of the thinnest cable's radius, per solve at most
MAX_FOLLOW_STEPS = 64


def steps_needed(move: float, radius: float) -> int:
    """Solves needed to follow a move of ``move`` metres with cables of ``radius`` metres (at least 1)."""
    if not move > 0.0:
        return 1
    return max(1, math.ceil(move / (FOLLOW_MOVE * radius)))


def world_corners(box: np.ndarray, matrix) -> np.ndarray:
    """The corners ``box`` (8 x 3, object space) placed by a 4 x 4 world ``matrix``."""
    M = np.asarray(matrix, dtype=np.float64)
    return box @ M[:3, :3].T + M[:3, 3]


def largest_move(before: np.ndarray, after: np.ndarray) -> float:
    """How far the farthest of corresponding corners moved."""
    if before.size == 0:
        return 0.0
    return float(np.linalg.norm(after - before, axis=1).max())


def evaluated_box(ob, depsgraph) -> np.ndarray:
    """The object-space corners of an object's evaluated bounding box (modifiers applied)."""
    return np.array([list(c) for c in ob.evaluated_get(depsgraph).bound_box], dtype=np.float64)


def collider_corners(colliders, depsgraph, scale: float) -> np.ndarray | None:
    """World corners (metres) of every collider's evaluated bounding box, None without colliders."""
    corners = [
        world_corners(evaluated_box(ob, depsgraph), [list(r) for r in ob.evaluated_get(depsgraph).matrix_world])
        for ob in colliders
    ]
    return np.concatenate(corners) * scale if corners else None
