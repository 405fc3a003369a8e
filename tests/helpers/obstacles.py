# SPDX-License-Identifier: GPL-3.0-or-later
"""Obstacle documents (case format) for tests and benchmarks: a zero-thickness plate, a closed box,
a tessellated cylinder."""

import numpy as np


def plate(x0, x1, half_width, z=0.0):
    return {
        "type": "mesh",
        "vertices": [[x0, -half_width, z], [x1, -half_width, z], [x1, half_width, z], [x0, half_width, z]],
        "triangles": [[0, 1, 2], [0, 2, 3]],
    }


def box(lo, hi):
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    v = [[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0], [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]]
    t = [
        [0, 2, 1],
        [0, 3, 2],
        [4, 5, 6],
        [4, 6, 7],
        [0, 1, 5],
        [0, 5, 4],
        [1, 2, 6],
        [1, 6, 5],
        [2, 3, 7],
        [2, 7, 6],
        [3, 0, 4],
        [3, 4, 7],
    ]
    return {"type": "mesh", "vertices": v, "triangles": t}


def cylinder(centre_x, centre_z, radius, half_width, facets=16):
    # a tessellated cylinder along y
    angles = np.linspace(0.0, 2.0 * np.pi, facets, endpoint=False)
    ring = [[centre_x + radius * np.cos(a), centre_z + radius * np.sin(a)] for a in angles]
    v = [[x, -half_width, z] for x, z in ring] + [[x, half_width, z] for x, z in ring]
    t = []
    for i in range(facets):
        j = (i + 1) % facets
        t += [[i, j, facets + j], [i, facets + j, facets + i]]
    v += [[centre_x, -half_width, centre_z], [centre_x, half_width, centre_z]]
    for i in range(facets):
        j = (i + 1) % facets
        t += [[2 * facets, j, i], [2 * facets + 1, facets + i, facets + j]]
    return {"type": "mesh", "vertices": v, "triangles": t}
