# SPDX-License-Identifier: GPL-3.0-or-later
"""Wires routed through a harness: the bill of materials' wire, from its connector to its connector.

A bundle wire that gives an ``id`` names a circuit; the same id on every branch the wire runs on
routes it through the junctions between them. It must run as one path: into each junction it passes
on one branch and out on one other, and it ends at two cable ends that are not junctions (connectors,
or a free end). Its length to cut is the sum of those branches' lengths (each branch's formboard
length: the junction is a point where the branches' ends meet). A wire that ends inside a junction,
splits there (a splice), or runs on branches that do not join, is refused by name: the bill of
materials would otherwise list a wire that cannot be made.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class WireRoute:
    id: str
    cables: tuple  # the cable ids it runs on, from ``start`` to ``end``
    start: tuple  # (cable id, "start" | "end"): the cable end it begins at (a connector or a free end)
    end: tuple  # the cable end it ends at
    length: float  # m, the sum of the cables' lengths: the length to cut
    count: int
    diameter: float
    material: object  # as given (a preset name or numbers)


class RouteError(ValueError):
    """A wire that is not one path; ``cable`` is the cable where the fault shows."""

    def __init__(self, message: str, cable: str):
        super().__init__(message)
        self.cable = cable


def trace_wire(wire_id: str, branches) -> tuple:
    """The order of a wire's branches from one terminal end to the other.

    ``branches``: (cable id, start junction or None, end junction or None) of each branch carrying
    the wire, in a fixed order (the first branch with a terminal end sets where the route begins).
    Returns ([(cable id, forward)], (cable id, side) of the first end, (cable id, side) of the last);
    raises RouteError when the branches are not one path between two terminal ends."""
    at_junction = {}
    for cid, start, end in branches:
        for jid in (start, end):
            if jid is not None:
                at_junction.setdefault(jid, []).append(cid)
    for jid, cables in at_junction.items():
        if len(cables) == 1:
            raise RouteError(
                f"wire {wire_id!r} ends inside junction {jid!r}: it reaches it on cable {cables[0]!r} and leaves "
                f"on no other branch (give the wire's id to the branch it runs on, or end it at a connector)",
                cables[0],
            )
        if len(cables) > 2:
            named = ", ".join(repr(c) for c in cables)
            raise RouteError(
                f"wire {wire_id!r} splits at junction {jid!r} onto cables {named}: a wire passes a junction on one "
                f"branch in and one out (a splice joins different wires: give each its own id)",
                cables[2],
            )
    terminals = [
        (cid, side) for cid, start, end in branches for side, j in (("start", start), ("end", end)) if j is None
    ]
    if len(terminals) != 2:
        named = ", ".join(repr(c) for c, _s, _e in branches)
        raise RouteError(
            f"wire {wire_id!r} on cables {named} is not one route from one cable end to another "
            f"({len(terminals)} ends that are not junctions; a route has 2)",
            branches[0][0],
        )
    by_cable = {cid: (start, end) for cid, start, end in branches}
    order, (cid, side) = [], terminals[0]
    while True:
        start, end = by_cable[cid]
        forward = side == "start"
        order.append((cid, forward))
        onward = end if forward else start
        if onward is None:
            break
        cid = next(c for c in at_junction[onward] if c != cid)
        side = "start" if by_cable[cid][0] == onward else "end"
    last = (cid, "end" if forward else "start")
    if len(order) != len(branches):  # the rest of the branches form a loop of their own
        named = ", ".join(repr(c) for c, _s, _e in branches if c not in {o for o, _f in order})
        raise RouteError(
            f"wire {wire_id!r} on cables {named} does not join its route from {terminals[0][0]!r} to {last[0]!r}",
            next(c for c, _s, _e in branches if c not in {o for o, _f in order}),
        )
    return order, terminals[0], last


def route_wires(cables, error) -> tuple:
    """Every wire with an id in the cables' bundles (case.CableSpec, in case order), routed; ``error``
    makes the exception to raise from a message naming the field."""
    found = {}  # id -> [(cable index, wire index, wire)]
    for k, cable in enumerate(cables):
        for i, wire in enumerate(cable.bundle.wires if cable.bundle is not None else ()):
            if wire.id is not None:
                found.setdefault(wire.id, []).append((k, i, wire))
    routes = []
    for wire_id, places in found.items():
        k0, i0, first = places[0]
        for k, i, wire in places[1:]:
            for key in ("diameter", "material", "count"):
                if getattr(wire, key) != getattr(first, key):
                    raise error(
                        f"cables[{k}].bundle.wires[{i}].{key}: wire {wire_id!r} has {key} {getattr(wire, key)!r} here "
                        f"but {getattr(first, key)!r} on cable {cables[k0].id!r}"
                    )
        branches = [
            (
                cables[k].id,
                None if cables[k].start_junction is None else cables[k].start_junction.junction,
                None if cables[k].end_junction is None else cables[k].end_junction.junction,
            )
            for k, _i, _w in places
        ]
        try:
            order, start, end = trace_wire(wire_id, branches)
        except RouteError as exc:
            k, i = next((k, i) for k, i, _w in places if cables[k].id == exc.cable)
            raise error(f"cables[{k}].bundle.wires[{i}].id: {exc}") from None
        length = sum(cables[k].length for k, _i, _w in places)
        routes.append(
            WireRoute(
                wire_id, tuple(c for c, _f in order), start, end, length, first.count, first.diameter, first.material
            )
        )
    return tuple(routes)


def wires_document(routes) -> list:
    """The result's ``wires``: each routed wire's ends, the cables it runs on and its length to cut."""
    return [
        {
            "id": r.id,
            "from": {"cable": r.start[0], "end": r.start[1]},
            "to": {"cable": r.end[0], "end": r.end[1]},
            "cables": list(r.cables),
            "length": r.length,
            "count": r.count,
            "diameter": r.diameter,
            "material": r.material,
        }
        for r in routes
    ]
