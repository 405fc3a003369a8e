# SPDX-License-Identifier: GPL-3.0-or-later
"""A harness tree laid flat with every run straight at its true length, and no two runs crossing.

Each vertex of the tree is given a wedge of directions (narrower than half a turn) and every run
leaving it towards its subtree points into that subtree's part of the wedge. All of a subtree then
lies in the cone of its wedge from the vertex (a sum of vectors within a convex cone stays in it),
sibling subtrees get disjoint wedges with gaps between them, and the run into a vertex comes from
outside its cone: so runs meet only at their shared ends, whatever their lengths. The wedges are
shared out by the number of connectors (leaves) each subtree holds; the trunk (the longest path)
goes on straight through its junctions, branches leave it at the middle of their share.
"""

import math
from dataclasses import dataclass

import numpy as np

ROOT_WEDGE = 0.9 * math.pi  # the directions the whole tree fans out into from its root
GAP = 0.15  # of each child's share of a wedge, left empty on both sides (no two runs may touch)


@dataclass(frozen=True)
class Run:
    """A straight run of the board: ``key`` (the caller's, e.g. a cable id) from vertex ``a`` to ``b``."""

    key: str
    a: object  # vertex ids: any hashable value
    b: object
    length: float


def lay_out(vertices: list, runs: list, spacing: float) -> dict:
    """Positions (vertex -> (x, y)) of every vertex: each connected tree laid out from its own root,
    the trees one below another ``spacing`` apart. Raises ValueError for a loop (a board lays out trees)."""
    neighbours = {v: [] for v in vertices}
    for run in runs:
        neighbours[run.a].append((run.b, run.length))
        neighbours[run.b].append((run.a, run.length))
    placed, top = {}, 0.0
    for component in _components(vertices, neighbours):
        edges = sum(len(neighbours[v]) for v in component) // 2
        if edges != len(component) - 1:
            raise ValueError("the runs form a loop")
        root, trunk = _trunk(component, neighbours)
        local = {root: np.zeros(2)}
        _place(root, None, (-0.5 * ROOT_WEDGE, 0.5 * ROOT_WEDGE), 0.0, neighbours, trunk, local)
        points = np.array(list(local.values()))
        shift = np.array([-points[:, 0].min(), top - points[:, 1].max()])
        for v, p in local.items():
            placed[v] = p + shift
        top = float((points[:, 1].min() + shift[1]) - spacing)
    return placed


def _components(vertices, neighbours) -> list:
    seen, out = set(), []
    for start in vertices:
        if start in seen:
            continue
        stack, component = [start], []
        seen.add(start)
        while stack:
            v = stack.pop()
            component.append(v)
            for w, _ in neighbours[v]:
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        out.append(component)
    return out


def _farthest(start, neighbours) -> tuple:
    """(the vertex farthest from ``start`` along the runs, the path to it)."""
    best, best_d, best_path = start, 0.0, [start]
    stack = [(start, None, 0.0, [start])]
    while stack:
        v, parent, d, path = stack.pop()
        if d > best_d:
            best, best_d, best_path = v, d, path
        for w, length in neighbours[v]:
            if w != parent:
                stack.append((w, v, d + length, path + [w]))
    return best, best_path


def _trunk(component, neighbours) -> tuple:
    """(root, the set of trunk vertices): the longest path of the tree, from one end of it."""
    first = min(component, key=lambda v: (len(neighbours[v]) != 1, str(v)))  # a leaf, chosen repeatably
    end, _ = _farthest(first, neighbours)
    _other, path = _farthest(end, neighbours)
    return end, set(path)


def _leaves(v, parent, neighbours) -> int:
    children = [w for w, _ in neighbours[v] if w != parent]
    return 1 if not children else sum(_leaves(w, v, neighbours) for w in children)


def _place(v, parent, wedge, heading, neighbours, trunk, out) -> None:
    """Place the children of ``v`` (at out[v]) inside ``wedge`` (low, high angles), the trunk's
    child as near to ``heading`` (the direction the run into v had) as its share allows."""
    children = [(w, length) for w, length in neighbours[v] if w != parent]
    if not children:
        return
    weights = {w: _leaves(w, v, neighbours) for w, _ in children}
    # the trunk's child in the middle, the others alternately on its two sides, the largest first
    on_trunk = [c for c in children if c[0] in trunk]
    others = sorted((c for c in children if c[0] not in trunk), key=lambda c: (-weights[c[0]], str(c[0])))
    order = list(on_trunk)
    for k, c in enumerate(others):
        if k % 2 == 0:
            order.append(c)
        else:
            order.insert(0, c)
    low, high = wedge
    total = sum(weights[w] for w, _ in order)
    start = low
    for w, length in order:
        share = (high - low) * weights[w] / total
        sub = (start + GAP * share, start + share - GAP * share)
        start += share
        if w in trunk:
            direction = min(max(heading, sub[0]), sub[1])
        else:
            direction = 0.5 * (sub[0] + sub[1])
        out[w] = out[v] + length * np.array([math.cos(direction), math.sin(direction)])
        _place(w, v, sub, direction, neighbours, trunk, out)


def runs_cross(positions: dict, runs: list, tolerance: float = 1e-9) -> list:
    """The pairs of runs (by key) that meet anywhere but at a shared end: for tests and checks. Two
    straight runs from a shared end meet again only if they leave it in the same direction."""
    crossing = []
    for i, r in enumerate(runs):
        for s in runs[i + 1 :]:
            shared = {r.a, r.b} & {s.a, s.b}
            if shared:
                (o,) = shared
                u = positions[r.b if r.a == o else r.a] - positions[o]
                v = positions[s.b if s.a == o else s.a] - positions[o]
                cos = float(u @ v) / max(float(np.linalg.norm(u) * np.linalg.norm(v)), 1e-300)
                meet = cos > 1.0 - 1e-12
            else:
                meet = _segment_distance(positions[r.a], positions[r.b], positions[s.a], positions[s.b]) <= tolerance
            if meet:
                crossing.append((r.key, s.key))
    return crossing


def _segment_distance(p, q, r, s) -> float:
    """Distance between two 2-D segments: zero where they cross, else the least endpoint-to-segment one."""

    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    o1, o2, o3, o4 = orient(p, q, r), orient(p, q, s), orient(r, s, p), orient(r, s, q)
    if o1 * o2 < 0.0 and o3 * o4 < 0.0:
        return 0.0

    def point_segment(x, a, b):
        ab = b - a
        t = min(max(float((x - a) @ ab) / max(float(ab @ ab), 1e-300), 0.0), 1.0)
        return float(np.linalg.norm(x - (a + t * ab)))

    return min(point_segment(p, r, s), point_segment(q, r, s), point_segment(r, p, q), point_segment(s, p, q))
