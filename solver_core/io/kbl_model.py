# SPDX-License-Identifier: GPL-3.0-or-later
"""The topology of a solved harness as KBL sees it: nodes, segments, wires, protections and fixings.

KBL (VDA 4964) describes a harness as a graph: nodes (connectors, breakouts, fixing points) joined by
segments, each with its centre curve and physical length; wires routed through the segments; wire
protections along them. Here a node is every cable end (its connector, junction or free end) and every
clip; a segment is a piece of a cable between two nodes, its centre line the solved one. kbl.py writes
this model as KBL XML, kbl_read.py reads it back.
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import CaseError
from ..geometry.polyline import point_at
from ..specs.case import MAX_EXTENT
from .formboard import cable_end_vertex, solved_step
from .run_case import as_case


@dataclass
class KblNode:
    key: tuple  # unique within the harness (node_key; ("clip", cable, k) for clips)
    label: str  # KBL's Id
    kind: str  # "connector", "junction", "clip" or "free end"
    point: np.ndarray  # m, world
    tangent: np.ndarray | None = None  # a connector's outlet or a clip's axis (m, unit), for its placement
    normal: np.ndarray | None = None


@dataclass
class KblSegment:
    label: str
    cable: str
    start: tuple  # node keys
    end: tuple
    points: np.ndarray  # m: the solved centre line from start to end
    arc: tuple  # (s0, s1), m along the case's cable
    length: float  # m: the solved centre line's length


@dataclass
class KblWire:
    label: str  # the wire's number
    kind: tuple  # (diameter m, material text): its General_wire part
    start: tuple  # node keys
    end: tuple
    cables: list  # the cables it runs on, from start to end
    length: float  # m: the solved lengths of those cables (the length to cut)


@dataclass
class KblCable:
    """What KBL has no field for, carried as extension data (docs/kbl.md)."""

    id: str
    diameter: float
    section: dict  # EA, GA, EI, GJ (N, N m^2), linear_density (kg/m)
    converged: bool
    min_bend_radius: float | None
    allowed_bend_radius: float | None
    covering: tuple | None  # (wrap, factor or None, source or None) of a taped/sleeved/conduit bundle
    length: float  # m, solved


@dataclass
class KblHarness:
    nodes: dict  # key -> KblNode, in order of appearance
    segments: list
    wires: list
    cables: dict  # id -> KblCable
    clips: dict = field(default_factory=dict)  # node key -> clip kind ("fixed", "rotating", "sliding")

    def cable_segments(self, cable: str) -> list:
        return [s for s in self.segments if s.cable == cable]


def kbl_harness(case, result: dict | None = None, step: int = 0) -> KblHarness:
    """The KBL model of ``case`` at solve ``step`` (0: the case as routed) of ``result`` (None: solved here)."""
    case = as_case(case)
    solved = solved_step(case, result, step)
    nodes, segments, cables, clips = {}, [], {}, {}
    for cable in case.cables:
        doc = solved.get(cable.id)
        if doc is None:
            raise CaseError(f"result: step {step} has no cable {cable.id!r}")
        centre, arc = _centre_line(cable, doc, step)
        ends = [
            _end_node(nodes, cable, side, centre[0] if side == "start" else centre[-1]) for side in ("start", "end")
        ]
        keys = [ends[0]]
        cuts = [0.0]
        for k, clip in enumerate(sorted(cable.clips, key=lambda c: c.s)):
            key = ("clip", cable.id, k + 1)
            point = point_at(centre, arc, clip.s)
            nodes[key] = KblNode(key, f"{cable.id} clip {k + 1}", "clip", point, clip.frame.tangent, clip.frame.normal)
            clips[key] = clip.kind
            keys.append(key)
            cuts.append(clip.s)
        keys.append(ends[1])
        cuts.append(float(arc[-1]))
        for k in range(len(keys) - 1):
            points = _piece(centre, arc, cuts[k], cuts[k + 1])
            length = float(np.sum(np.linalg.norm(np.diff(points, axis=0), axis=1)))
            segments.append(
                KblSegment(
                    f"{cable.id} {k + 1}", cable.id, keys[k], keys[k + 1], points, (cuts[k], cuts[k + 1]), length
                )
            )
        cables[cable.id] = _cable_data(cable, doc)
    _unique_labels(nodes)
    harness = KblHarness(nodes, segments, [], cables, clips)
    harness.wires = _wires(case, harness)
    return harness


def _unique_labels(nodes) -> None:
    """Node Ids are unique in a KBL file: a label used before (a connector named like another cable's
    end, say) gets " #2", " #3", ... in the order of the nodes."""
    used = set()
    for node in nodes.values():
        label, k = node.label, 1
        while label in used:
            k += 1
            label = f"{node.label} #{k}"
        node.label = label
        used.add(label)


def _centre_line(cable, doc, step) -> tuple:
    """(nodes (n, 3) m, their arc lengths along the case's cable) of a result entry, checked."""
    where = f"result: steps[{step}].cables.{cable.id}"
    try:
        centre = np.asarray(doc.get("nodes"), dtype=np.float64)
    except (TypeError, ValueError):
        raise CaseError(f"{where}.nodes must be a list of [x, y, z] points") from None
    if centre.ndim != 2 or centre.shape[1] != 3 or len(centre) < 2 or not np.all(np.abs(centre) <= MAX_EXTENT):
        raise CaseError(f"{where}.nodes must be a list of at least two [x, y, z] points within {MAX_EXTENT:g} m")
    arc = doc.get("arc_lengths")
    if arc is None:
        return centre, np.linspace(0.0, cable.length, len(centre))
    try:
        arc = np.asarray(arc, dtype=np.float64)
    except (TypeError, ValueError):
        arc = None
    if (
        arc is None
        or arc.shape != (len(centre),)
        or not np.all(np.abs(arc) <= MAX_EXTENT)
        or np.any(np.diff(arc) <= 0.0)
    ):
        raise CaseError(f"{where}.arc_lengths must be one increasing arc length per node")
    return centre, arc


def node_key(cable, side: str) -> tuple:
    """The node of a cable end: its junction's, its named connector's (every end naming it shares it),
    else its own. Keys are tuples, so that no name can make the key of a node of another kind."""
    key, kind, label = cable_end_vertex(cable, side)
    return ("connector", label) if kind == "connector" and cable.connectors[0 if side == "start" else 1] else key


def _end_node(nodes, cable, side, point) -> str:
    _key, kind, label = cable_end_vertex(cable, side)
    key = node_key(cable, side)
    if key not in nodes:  # a junction's node is its first branch end's point (all of them meet there)
        frame = cable.start if side == "start" else cable.end
        held = kind == "connector" and frame is not None
        outlet = None if not held else frame.tangent if side == "start" else -frame.tangent  # out of the connector
        nodes[key] = KblNode(
            key, label, kind, np.array(point, dtype=np.float64), outlet, frame.normal if held else None
        )
    return key


def _piece(centre, arc, s0, s1) -> np.ndarray:
    """The centre line from arc length s0 to s1: its nodes between, with the ends interpolated."""
    inside = (arc > s0) & (arc < s1)
    return np.vstack([point_at(centre, arc, s0), centre[inside], point_at(centre, arc, s1)])


def _cable_data(cable, doc) -> KblCable:
    sec = cable.section
    section = {
        "EA": sec.stretch_stiffness,
        "GA": sec.shear_stiffness,
        "EI": sec.bend_stiffness,
        "GJ": sec.twist_stiffness,
        "linear_density": sec.linear_density,
    }
    covering = None
    bundle = cable.bundle
    if bundle is not None and bundle.wrap != "loose":
        given = bundle.covering or {}
        covering = (bundle.wrap, given.get("applied", given.get("factor")), given.get("source"))
    radius = doc.get("min_bend_radius")
    if radius is not None and (
        isinstance(radius, bool) or not isinstance(radius, (int, float)) or not 0.0 < radius <= MAX_EXTENT
    ):
        raise CaseError(
            f"result: cables.{cable.id}.min_bend_radius must be a positive length in m or null, got {radius!r}"
        )
    return KblCable(
        cable.id,
        cable.diameter,
        section,
        bool(doc.get("converged")),
        None if radius is None else float(radius),
        cable.allowed_bend_radius,
        covering,
        float(doc["length"]),
    )


def _wires(case, harness: KblHarness) -> list:
    """The wires: the case's routed wires, each one of its ``count``; and, on a cable that runs between
    two ends that are not junctions, its bundle's wires without an id (each runs on that cable only) or,
    without a bundle, the cable itself as one wire."""
    wires = []
    lengths = {cid: c.length for cid, c in harness.cables.items()}

    def add(label, kind, start, end, cables, count):
        for k in range(count):
            number = label if count == 1 else f"{label}.{k + 1}"
            wires.append(KblWire(number, kind, start, end, list(cables), sum(lengths[c] for c in cables)))

    for route in case.wires:
        start = node_key(case.cable(route.start[0]), route.start[1])
        end = node_key(case.cable(route.end[0]), route.end[1])
        add(route.id, (route.diameter, _material_text(route.material)), start, end, route.cables, route.count)
    for cable in case.cables:
        if cable.start_junction is not None or cable.end_junction is not None:
            continue
        ends = (node_key(cable, "start"), node_key(cable, "end"))
        if cable.bundle is None:
            add(cable.id, (cable.diameter, _material_text(cable.material)), *ends, [cable.id], 1)
            continue
        for k, w in enumerate(cable.bundle.wires):
            if w.id is None:
                add(f"{cable.id}.w{k + 1}", (w.diameter, _material_text(w.material)), *ends, [cable.id], w.count)
    return wires


def _material_text(material) -> str:
    if isinstance(material, dict) and isinstance(material.get("preset"), str):
        return material["preset"]
    if isinstance(material, str):
        return material
    if isinstance(material, dict):
        return ", ".join(f"{k} {v:g}" for k, v in sorted(material.items()) if isinstance(v, (int, float)))
    return "/NULL"


def wire_segments(harness: KblHarness, wire: KblWire) -> list:
    """The segments a wire runs through, in order from its start node."""
    out, at = [], wire.start
    for cid in wire.cables:
        pieces = harness.cable_segments(cid)
        if pieces[0].start == at:
            out += pieces
            at = pieces[-1].end
        else:  # the wire runs this cable from its end to its start
            out += pieces[::-1]
            at = pieces[0].start
    return out
