# SPDX-License-Identifier: GPL-3.0-or-later
"""Scenes and checks shared by the contact tests (no bpy here)."""

import math

import numpy as np

from helpers.cases import cable, case, min_clearance
from helpers.matrices import dense_from_band

R = 0.002  # cable radius of the test cables (4 mm)
LINEAR_DENSITY = 7958.0 * math.pi * 0.004**2 / 4  # the helpers' cable (Lv 2017: 30 g over 300 mm)
TABLE = {"type": "plane", "point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}


def no_penetration(result, doc, cable_id="W1", others=()):
    nodes = result["steps"][-1]["cables"][cable_id]["nodes"] if "steps" in result else result["nodes"]
    clearance = min_clearance(nodes, R, doc.get("obstacles", ()), others)
    assert clearance >= -0.01 * R, f"penetration {-clearance:.3g} m"


def crossed_pair(load, b_height):
    """Two equal cables clamped straight at both ends, A along x, B along y crossing above its middle
    (centre lines ``b_height`` apart), B pushed down at its middle with ``load`` newtons; no gravity."""
    a = cable(
        id="A",
        length=0.3,
        segments=30,
        start={"position": [-0.15, 0, 0], "tangent": [1, 0, 0]},
        end={"position": [0.15, 0, 0], "tangent": [1, 0, 0]},
    )
    b = cable(
        id="B",
        length=0.3,
        segments=30,
        loads=[{"s": 0.15, "force": [0, 0, -load]}],
        start={"position": [0.0, -0.15, b_height], "tangent": [0, 1, 0]},
        end={"position": [0.0, 0.15, b_height], "tangent": [0, 1, 0]},
    )
    return case(a, b, gravity=[0, 0, 0], contact={"cable_cable": True})


def contact_force(cable_result):
    return np.sum([c["force"] for c in cable_result["contacts"]], axis=0)


def crumpled_mesh_crossing_cable_and_loop(rng):
    """Candidate contact pairs of every kind: a loop of cable (out along x, round, and back across its
    own first leg 1.8 radii up) over a crumpled mesh, with another cable's segment across it.
    Returns (obstacle arrays, positions, radii, reach, self gap, kind, elem, prim)."""
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

    n_grid = 15
    x, y = np.meshgrid(np.linspace(-0.05, 0.15, n_grid), np.linspace(-0.1, 0.1, n_grid))
    z = rng.uniform(-0.6, 0.6, x.shape) * R
    verts = np.column_stack((x.ravel(), y.ravel(), z.ravel()))
    i = np.arange(n_grid - 1)
    a = (i[:, None] * n_grid + i[None, :]).ravel()
    tris = np.concatenate(
        (np.column_stack((a, a + 1, a + n_grid + 1)), np.column_stack((a, a + n_grid + 1, a + n_grid)))
    )
    obstacles = (
        ObstacleSet(triangles=verts[tris], triangle_owner=np.zeros(len(tris), dtype=np.int64))
        .with_capsules([[0.1, -0.1, 0.6 * R]], [[0.1, 0.1, 0.6 * R]], [R])
        .kernel_arrays()
    )
    s = np.linspace(0.0, 1.0, 61)
    pos = np.column_stack(
        (0.12 * s - 0.04 * np.sin(2 * np.pi * s), 0.04 * np.sin(2 * np.pi * s), 0.9 * R + 1.8 * R * s)
    )
    radius, part = np.full(len(pos), R), np.zeros(len(pos), dtype=np.int64)
    seg = float(np.linalg.norm(np.diff(pos, axis=0), axis=1).max())
    reach, self_gap = max(R, 0.5 * seg), 4
    kind, elem, prim = find_pairs(pos, radius, part, 2 * reach, obstacles, self_gap)
    return obstacles, pos, radius, reach, self_gap, kind, elem, prim


def dense_newton_matrix(band, bw, Ut, k_c, k_s):
    """The Newton matrix as the solver uses it, dense: the lower band mirrored, plus the low-rank
    couplings k (a b^T + b a^T) of row pairs and the whole terms k v v^T after them."""
    H = dense_from_band(band, bw)
    for j in range(len(k_c)):
        H += k_c[j] * (np.outer(Ut[2 * j], Ut[2 * j + 1]) + np.outer(Ut[2 * j + 1], Ut[2 * j]))
    for q in range(len(k_s)):
        H += k_s[q] * np.outer(Ut[2 * len(k_c) + q], Ut[2 * len(k_c) + q])
    return H


def fan(n_cables, segments):
    """The contact benchmark's pile, smaller: cables 10 degrees apart crossing over a floor, each
    routed higher than the last, sagging onto the floor and onto each other."""
    cables = []
    for k in range(n_cables):
        angle = math.radians(-45 + 10 * k)
        d = np.array([math.cos(angle), math.sin(angle), 0.0])
        start = -0.25 * d + np.array([0, 0, 0.004 * k + 0.002])
        cables.append(
            cable(
                id=f"C{k}",
                length=0.52,
                segments=segments,
                start={"position": start.tolist(), "tangent": d.tolist(), "normal": [0, 0, 1]},
                end={"position": (start + 0.5 * d).tolist(), "tangent": d.tolist(), "normal": [0, 0, 1]},
                route=[start.tolist(), (start + 0.25 * d + [0, 0, 0.003 * k]).tolist(), (start + 0.5 * d).tolist()],
            )
        )
    return case(
        *cables,
        contact={"cable_cable": True},
        obstacles=[{"type": "plane", "point": [0, 0, -0.05], "normal": [0, 0, 1]}],
    )
