# SPDX-License-Identifier: GPL-3.0-or-later
"""Case documents and small helpers shared by the tests (no bpy here)."""

import copy

import numpy as np

from solver_core import Harness, parse_case, solve_case

WIRE = {"E": 126e6, "nu": 0.3, "density": 7958.0}  # Lv 2017, Table 2 (30 g over 300 mm of a 4 mm cable)


def cable(**overrides):
    doc = {
        "id": "W1",
        "length": 0.3,
        "diameter": 0.004,
        "material": dict(WIRE),
        "segments": 40,
        "start": {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        "end": None,
    }
    doc.update(copy.deepcopy(overrides))
    return doc


def case(*cables, **overrides):
    doc = {"format": "cable-harness-case/1", "gravity": [0.0, 0.0, -9.81], "cables": copy.deepcopy(list(cables)) or [cable()]}
    doc.update(copy.deepcopy(overrides))
    return doc


def solve(doc):
    """Solve a case document; returns the result document."""
    return solve_case(parse_case(doc))


def first(result, cable_id="W1"):
    return result["steps"][0]["cables"][cable_id]


def harness(doc):
    return Harness.from_case(parse_case(doc))


def rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
