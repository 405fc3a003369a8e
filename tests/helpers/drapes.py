# SPDX-License-Identifier: GPL-3.0-or-later
"""Cables routed as users draw them: a tight polyline over, under or round an obstacle, with slack.

A user clicks a route that hugs the part it passes (a few millimetres clear of it), then gives the
cable its length: the route's plus 0 to 50 % slack. ``drape_case(rng)`` draws one such case: a
zero-thickness plate, a 2 mm plate, a closed box (up to 1 m), a sphere (1 cm to 1 m) or a
tessellated cylinder lying across the route; the route over, under or round it; 4 to 100 segments;
cables 2 to 10 mm thick; and ``far_side``, whether a cable ended on the other side than drawn. Used by
benchmarks/bench_robustness.py and the tests (no solver code here).
"""

import math

import numpy as np

from .obstacles import box, cylinder, plate

KINDS = ("plate", "thin plate", "box", "sphere", "cylinder")
SIDES = ("over", "under", "round")
MATERIAL = {"E": 126e6, "nu": 0.3, "density": 7958.0}  # Lv 2017, Table 2


def _wrap(start, end, radius, clear):
    """The taut route from ``start`` to ``end`` (x, z) over the top of the circle of ``radius`` about the
    origin, ``clear`` outside it: tangent lines and the arc between, the arc's chords short enough that
    none comes within clear / 2 of the circle. Returns the arc's points (x, 0, z)."""
    rho = radius + clear

    def tangent_angle(point, sign):
        d = math.hypot(*point)
        return math.atan2(point[1], point[0]) + sign * math.acos(min(1.0, rho / d))

    a0, a1 = tangent_angle(start, -1.0), tangent_angle(end, 1.0)
    # from the left, over the top (pi/2), to the right: the left tangent point's angle in (pi/2, 3 pi/2],
    # the right one's in (-pi/2, pi/2]; atan2 put a connector below the centre at -pi, and the arc
    # went from there the long way round, under the circle
    a0 = (a0 - 0.5 * math.pi) % (2.0 * math.pi) + 0.5 * math.pi
    a1 = (a1 + 0.5 * math.pi) % (2.0 * math.pi) - 0.5 * math.pi
    step = 2.0 * math.sqrt(clear / rho)  # a chord's sagitta rho (1 - cos(step / 2)) < clear / 4
    n = max(2, int(math.ceil(abs(a0 - a1) / step)) + 1)
    # the chords' ends on a circle a little larger, so that the chords' middles clear rho
    out = rho / math.cos(0.5 * abs(a0 - a1) / (n - 1))
    return [[out * math.cos(a), 0.0, out * math.sin(a)] for a in np.linspace(a0, a1, n)]


def drape_case(rng, kind=None, side=None, segments=None, slack=None, clear=None) -> dict:
    """A case document with one cable routed as drawn, and what was drawn:
    {"case", "kind", "side", "slack", "segments", "size"} (size: the obstacle's largest dimension).
    ``clear``: how far the route is drawn from the part (default one cable diameter; 0: snapped onto
    its surface, so that the cable starts in it by its radius)."""
    kind = kind or KINDS[rng.integers(len(KINDS))]
    side = side or SIDES[rng.integers(len(SIDES))]
    segments = int(segments or rng.integers(4, 101))
    slack = float(rng.uniform(0.0, 0.5) if slack is None else slack)
    diameter = float(rng.uniform(0.002, 0.01))
    clear = diameter if clear is None else float(clear)  # the route drawn one diameter clear of the part
    if kind in ("sphere", "cylinder"):
        lo, hi = (math.log(0.01), math.log(1.0)) if kind == "sphere" else (math.log(0.01), math.log(0.3))
        radius = float(np.exp(rng.uniform(lo, hi)))
        if kind == "sphere":
            obstacle = {"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": radius}
            across = radius
        else:
            across = radius * float(rng.uniform(2.0, 8.0))  # its half-length, across the route
            obstacle = cylinder(0.0, 0.0, radius, across, facets=int(rng.integers(8, 33)))
        half = top = radius
        corner = None  # the arc over it, tangent from where the connectors are (below)
    else:
        half = float(np.exp(rng.uniform(math.log(0.02), math.log(0.5))))  # half its length along the route
        across = half * float(rng.uniform(0.5, 2.0))
        thick = {"plate": 0.0, "thin plate": 0.002}.get(kind, 2.0 * half * float(rng.uniform(0.1, 1.0)))
        top = 0.5 * thick
        obstacle = plate(-half, half, across) if kind == "plate" else box((-half, -across, -top), (half, across, top))
        corner = [[-half - clear, 0.0, top + clear], [half + clear, 0.0, top + clear]]
    size = 2.0 * max(half, top)
    reach = half + clear + size * float(rng.uniform(0.3, 1.0))  # how far out the connectors are
    drop = size * float(rng.uniform(0.0, 0.6))  # how far below the top they are
    if corner is None:
        corner = _wrap((-reach, top - drop), (reach, top - drop), radius, clear)
    route = [[-reach, 0.0, top - drop], *corner, [reach, 0.0, top - drop]]
    if side == "under":
        route = [[x, y, -z] for x, y, z in route]
    elif side == "round":
        # in the horizontal plane through the middle, round the side across the route
        if kind == "sphere":
            bend = [[x, z, 0.0] for x, _y, z in _wrap((-reach, 0.0), (reach, 0.0), radius, clear)]
        elif kind == "cylinder":  # round its end
            bend = [[-half - clear, across + clear, 0.0], [half + clear, across + clear, 0.0]]
        else:
            bend = [[-half - clear, across + clear, 0.0], [half + clear, across + clear, 0.0]]
        route = [[-reach, 0.0, 0.0], *bend, [reach, 0.0, 0.0]]
    route = np.asarray(route, dtype=float)
    length = float(np.linalg.norm(np.diff(route, axis=0), axis=1).sum())

    def held(p, t):
        """A connector at p; t along increasing arc length (into the cable at the start, out of it at
        the end: the case format's convention)."""
        t = np.asarray(t, dtype=float)
        return {"position": list(map(float, p)), "tangent": (t / np.linalg.norm(t)).tolist()}

    cable = {
        "id": "W",
        "length": length * (1.0 + slack),
        "diameter": diameter,
        "material": dict(MATERIAL),
        "segments": segments,
        "start": held(route[0], route[1] - route[0]),
        "end": held(route[-1], route[-1] - route[-2]),
        "route": route.tolist(),
    }
    doc = {"format": "cable-harness-case/1", "cables": [cable], "obstacles": [obstacle]}
    return {"case": doc, "kind": kind, "side": side, "slack": slack, "segments": segments, "size": size}


def extent(obstacle):
    """(lo, hi) corners of the obstacle's bounding box."""
    if obstacle["type"] == "sphere":
        c, r = np.asarray(obstacle["center"], float), obstacle["radius"]
        return c - r, c + r
    v = np.asarray(obstacle["vertices"], float)
    return v.min(axis=0), v.max(axis=0)


def far_side(nodes, obstacle, side) -> bool:
    """Whether the cable ends on the other side of the obstacle than it was drawn: drawn over (under)
    it, a node below (above) the obstacle within its outline seen from above; drawn round its +y side,
    a node beyond its -y side within its outline seen from the side. Says nothing of how it got there
    (passes_through does)."""
    lo, hi = extent(obstacle)
    x, y, z = nodes[:, 0], nodes[:, 1], nodes[:, 2]
    if side == "round":
        inside = (x > lo[0]) & (x < hi[0]) & (z > lo[2]) & (z < hi[2])
        return bool(np.any(inside & (y < lo[1])))
    inside = (x > lo[0]) & (x < hi[0]) & (y > lo[1]) & (y < hi[1])
    if obstacle["type"] == "sphere":  # within the sphere's outline, not its bounding box's
        c = np.asarray(obstacle["center"], float)
        inside = np.hypot(x - c[0], y - c[1]) < obstacle["radius"]
    beyond = (z < lo[2]) if side == "over" else (z > hi[2])
    return bool(np.any(inside & beyond))
