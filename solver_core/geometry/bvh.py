# SPDX-License-Identifier: GPL-3.0-or-later
"""Axis-aligned bounding-box tree over triangles: the broad phase for mesh obstacles.

Built once per static mesh (median-free midpoint splits with in-place partitioning, O(n log n),
a million triangles in about a second) and queried with boxes around cable segments. Node arrays
are plain numpy arrays so that a tree can be kept between solves and passed to kernels.
"""

from dataclasses import dataclass

import numpy as np

from .._jit import njit

LEAF_SIZE = 4


@dataclass(frozen=True)
class TriangleTree:
    node_min: np.ndarray  # (n_nodes, 3)
    node_max: np.ndarray
    node_left: np.ndarray  # child index, -1 for a leaf
    node_right: np.ndarray
    node_start: np.ndarray  # leaf: first entry in order
    node_count: np.ndarray  # leaf: number of triangles
    order: np.ndarray  # triangle indices, leaves' ranges point into it


@njit
def _build(tri_min, tri_max):
    n = tri_min.shape[0]
    max_nodes = 2 * n + 1
    node_min = np.empty((max_nodes, 3))
    node_max = np.empty((max_nodes, 3))
    node_left = np.full(max_nodes, -1, dtype=np.int64)
    node_right = np.full(max_nodes, -1, dtype=np.int64)
    node_start = np.zeros(max_nodes, dtype=np.int64)
    node_count = np.zeros(max_nodes, dtype=np.int64)
    order = np.arange(n)
    centre = 0.5 * (tri_min + tri_max)
    stack = np.empty((128, 2), dtype=np.int64)  # (node, unused)
    n_nodes = 1
    node_start[0] = 0
    node_count[0] = n
    top = 0
    stack[0, 0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top, 0]
        start = node_start[node]
        count = node_count[node]
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        clo = np.full(3, np.inf)
        chi = np.full(3, -np.inf)
        for i in range(start, start + count):
            tri = order[i]
            for k in range(3):
                lo[k] = min(lo[k], tri_min[tri, k])
                hi[k] = max(hi[k], tri_max[tri, k])
                clo[k] = min(clo[k], centre[tri, k])
                chi[k] = max(chi[k], centre[tri, k])
        node_min[node] = lo
        node_max[node] = hi
        if count <= LEAF_SIZE:
            continue
        axis = 0
        for k in range(1, 3):
            if chi[k] - clo[k] > chi[axis] - clo[axis]:
                axis = k
        split = 0.5 * (clo[axis] + chi[axis])
        i, j = start, start + count - 1
        while i <= j:
            if centre[order[i], axis] < split:
                i += 1
            else:
                order[i], order[j] = order[j], order[i]
                j -= 1
        left_count = i - start
        if left_count == 0 or left_count == count:
            # all centres coincide along the axis: split by count
            left_count = count // 2
        left = n_nodes
        right = n_nodes + 1
        n_nodes += 2
        node_left[node] = left
        node_right[node] = right
        node_start[left] = start
        node_count[left] = left_count
        node_start[right] = start + left_count
        node_count[right] = count - left_count
        if top + 2 > stack.shape[0]:
            bigger = np.empty((stack.shape[0] * 2, 2), dtype=np.int64)
            bigger[:top] = stack[:top]
            stack = bigger
        stack[top, 0] = left
        stack[top + 1, 0] = right
        top += 2
    return (
        node_min[:n_nodes].copy(),
        node_max[:n_nodes].copy(),
        node_left[:n_nodes].copy(),
        node_right[:n_nodes].copy(),
        node_start[:n_nodes].copy(),
        node_count[:n_nodes].copy(),
        order,
    )


def build_triangle_tree(triangles: np.ndarray) -> TriangleTree:
    """Tree over triangles (n, 3, 3)."""
    triangles = np.ascontiguousarray(triangles, dtype=np.float64)
    return TriangleTree(*_build(triangles.min(axis=1), triangles.max(axis=1)))


@njit
def query_box(node_min, node_max, node_left, node_right, node_start, node_count, order, lo, hi, out, n_out):
    """Append to out (from n_out on) the triangles whose boxes overlap [lo, hi]; returns the new count,
    or -1 when out is full."""
    stack = np.empty(64, dtype=np.int64)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if (
            node_min[node, 0] > hi[0]
            or node_max[node, 0] < lo[0]
            or node_min[node, 1] > hi[1]
            or node_max[node, 1] < lo[1]
            or node_min[node, 2] > hi[2]
            or node_max[node, 2] < lo[2]
        ):
            continue
        if node_left[node] < 0:
            for i in range(node_start[node], node_start[node] + node_count[node]):
                if n_out >= out.shape[0]:
                    return -1
                out[n_out] = order[i]
                n_out += 1
        else:
            if top + 2 > stack.shape[0]:
                bigger = np.empty(stack.shape[0] * 2, dtype=np.int64)
                bigger[:top] = stack[:top]
                stack = bigger
            stack[top] = node_left[node]
            stack[top + 1] = node_right[node]
            top += 2
    return n_out
