# SPDX-License-Identifier: GPL-3.0-or-later
"""A KBL file read back: its topology (nodes, segments, wires and their routes, protections, fixings),
lengths in metres, centre curves and this tool's extension data (docs/kbl.md).

Reads what kbl.py writes and the same elements of other tools' KBL 2.3-2.5 files; lengths in other
units than mm and m are refused by name. A malformed file is a CaseError naming the element.
"""

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from ..errors import CaseError
from ..specs.case import check_input_file
from .kbl import EXTENSION, NAMESPACE
from .kbl_curves import curve_points

MAX_BYTES = 64 * 1024 * 1024
SCALE = {("metre", None): 1.0, ("metre", "milli"): 1e-3, ("metre", "centi"): 1e-2, ("metre", "kilo"): 1e3}


@dataclass
class ReadSegment:
    label: str
    start: str  # node labels
    end: str
    length: float | None  # m: Physical_length (None: not given)
    curves: list  # (degree, control points (n, 3) m) of its Center_curve elements
    data: dict  # this tool's extension data: type (without the prefix) -> value text
    protections: list  # labels of the Wire_protection_occurrences on it
    fixings: list  # labels of the Fixing_occurrences assigned to it

    def curve_points(self, count: int = 50) -> np.ndarray:
        """Points along its centre curves (clamped uniform B-splines), start to end."""
        u = np.linspace(0.0, 1.0, count)
        return np.vstack([curve_points(control, degree, u) for degree, control in self.curves])


@dataclass
class KblFile:
    nodes: dict = field(default_factory=dict)  # label -> (kind or None, point m, [referenced component labels])
    segments: dict = field(default_factory=dict)  # label -> ReadSegment
    wires: dict = field(default_factory=dict)  # wire number -> {"length", "segments", "ends"}
    protections: dict = field(default_factory=dict)  # label -> (protection type, length m)
    version: str = ""

    def summary(self) -> dict:
        """A JSON-ready summary, lengths in m."""
        return {
            "version": self.version,
            "nodes": {k: {"kind": v[0], "point": v[1].tolist(), "components": v[2]} for k, v in self.nodes.items()},
            "segments": {
                k: {
                    "start": s.start,
                    "end": s.end,
                    "length": s.length,
                    "protections": s.protections,
                    "fixings": s.fixings,
                }
                for k, s in self.segments.items()
            },
            "wires": self.wires,
            "protections": {k: {"type": t, "length": n} for k, (t, n) in self.protections.items()},
        }


def read_kbl(path: str) -> KblFile:
    """A KBL file read back; CaseError naming the file for one that is not a regular file of at most
    MAX_BYTES (a pipe or device is refused before reading: it could block) or not XML."""
    check_input_file(path, "KBL file", MAX_BYTES)
    try:
        root = ET.parse(path).getroot()
    except OSError as exc:
        raise CaseError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (ET.ParseError, LookupError, ValueError) as exc:  # LookupError: an unknown encoding
        raise CaseError(f"{path}: not XML ({' '.join(str(exc).split())[:200]})") from None
    return parse_kbl(root, path)


def parse_kbl(root: ET.Element, where: str = "KBL") -> KblFile:
    if root.tag not in (f"{{{NAMESPACE}}}KBL_container", "KBL_container"):
        raise CaseError(f"{where}: the root element is {root.tag!r}, not KBL_container")
    r = _Reader(root, where)
    out = KblFile(version=root.get("version_id", ""))
    for node in root.findall("Node"):
        point = r.point(r.text(node, "Cartesian_point"))
        kind = r.extension(node).get("kind")
        components = [r.label(c) for c in (node.findtext("Referenced_components") or "").split()]
        out.nodes[r.text(node, "Id")] = (kind, point, components)
    protections = {e.get("id"): e for e in root.iter("Wire_protection_occurrence")}
    for occurrence in protections.values():
        part = r.element(r.text(occurrence, "Part"))
        length = occurrence.find("Protection_length")
        out.protections[r.text(occurrence, "Id")] = (
            part.findtext("Protection_type"),
            r.length(length) if length is not None else None,
        )
    for seg in root.findall("Segment"):
        length = seg.find("Physical_length")
        out.segments[r.text(seg, "Id")] = ReadSegment(
            r.text(seg, "Id"),
            r.label(r.text(seg, "Start_node")),
            r.label(r.text(seg, "End_node")),
            r.length(length) if length is not None else None,
            [r.curve(c) for c in seg.findall("Center_curve")],
            r.extension(seg),
            [r.label(r.text(a, "Associated_protection")) for a in seg.findall("Protection_area")],
            [r.label(r.text(a, "Fixing")) for a in seg.findall("Fixing_assignment")],
        )
    out.wires = _wires(root, r)
    return out


def _wires(root, r) -> dict:
    routes = {}
    for e in root.findall("Routing"):
        routed = r.text(e, "Routed_wire")
        r.element(routed)  # a routing of no connection is refused
        routes[routed] = e
    contacts = {}  # contact point id -> connector occurrence label
    for occurrence in root.iter("Connector_occurrence"):
        for contact in occurrence.findall("Contact_points"):
            contacts[contact.get("id")] = r.text(occurrence, "Id")
    wires = {}
    for connection in root.iter("Connection"):
        wire = r.element(r.text(connection, "Wire"))
        number = wire.findtext("Wire_number") or wire.findtext("Special_wire_id") or connection.get("id")
        lengths = [r.length(r.child(e, "Length_value")) for e in wire.findall("Length_information")]
        ends = sorted(
            (
                (r.number(e, "Position_on_wire"), contacts.get(r.text(e, "Contact_point")))
                for e in connection.findall("Extremities")
            ),
            key=lambda end: end[0],
        )
        route = routes.get(connection.get("id"))
        segments = [] if route is None else [r.label(s) for s in (route.findtext("Segments") or "").split()]
        wires[number] = {"length": lengths[0] if lengths else None, "segments": segments, "ends": [e[1] for e in ends]}
    return wires


class _Reader:
    def __init__(self, root, where):
        self.where = where
        self.by_id = {}
        for e in root.iter():
            if e.get("id") is not None:
                self.by_id[e.get("id")] = e
        self.units = {}
        for unit in root.findall("Unit"):
            key = (unit.findtext("Si_unit_name"), unit.findtext("Si_prefix"))
            self.units[unit.get("id")] = SCALE.get(key) if unit.findtext("Si_dimension") is None else None

    def element(self, xml_id: str) -> ET.Element:
        if xml_id not in self.by_id:
            raise CaseError(f"{self.where}: {xml_id!r} is referred to but no element has that id")
        return self.by_id[xml_id]

    def text(self, element, tag: str) -> str:
        text = element.findtext(tag)
        if text is None or not text.strip():
            raise CaseError(f"{self.where}: {element.tag} {element.get('id')!r} has no {tag}")
        return text.strip()

    def child(self, element, tag: str) -> ET.Element:
        found = element.find(tag)
        if found is None:
            raise CaseError(f"{self.where}: {element.tag} {element.get('id')!r} has no {tag}")
        return found

    def label(self, xml_id: str) -> str:
        """The Id (KBL's own name) of the element with that XML id, else the XML id."""
        return self.element(xml_id).findtext("Id") or xml_id

    def number(self, element, tag: str) -> float:
        try:
            value = float(self.text(element, tag))
        except ValueError:
            raise CaseError(f"{self.where}: {element.tag} {element.get('id')!r}: {tag} is not a number") from None
        if not np.isfinite(value):
            raise CaseError(f"{self.where}: {element.tag} {element.get('id')!r}: {tag} is not finite")
        return value

    def length(self, value) -> float:
        """A Numerical_value in a length unit, in m."""
        unit = self.text(value, "Unit_component")
        scale = self.units.get(unit)
        if scale is None:
            raise CaseError(f"{self.where}: {value.tag} {value.get('id')!r} is in unit {unit!r}, not a length unit")
        metres = self.number(value, "Value_component") * scale
        if not np.isfinite(metres):
            raise CaseError(f"{self.where}: {value.tag} {value.get('id')!r} is too large a length")
        return metres

    def point(self, xml_id: str) -> np.ndarray:
        """A Cartesian_point in m (KBL coordinates are in the file's length unit: mm, as written here)."""
        element = self.element(xml_id)
        coords = []
        for c in element.findall("Coordinates"):
            try:
                coords.append(float(c.text))
            except (TypeError, ValueError):
                raise CaseError(
                    f"{self.where}: Cartesian_point {xml_id!r} has a coordinate that is not a number"
                ) from None
        if len(coords) not in (2, 3) or not np.all(np.isfinite(coords)) or max(map(abs, coords)) > 1e12:
            raise CaseError(
                f"{self.where}: Cartesian_point {xml_id!r} needs 2 or 3 finite coordinates (mm, at most 1e12)"
            )
        return np.array((coords + [0.0])[:3]) * 1e-3

    def curve(self, element) -> tuple:
        degree = int(self.number(element, "Degree"))
        control = np.array([self.point(p) for p in self.text(element, "Control_points").split()])
        if not 1 <= degree < len(control):
            raise CaseError(
                f"{self.where}: B_spline_curve {element.get('id')!r}: degree {degree} needs more control points"
            )
        return degree, control

    def extension(self, element) -> dict:
        out = {}
        for info in element.findall("Processing_information"):
            kind = info.findtext("Instruction_type") or ""
            if kind.startswith(EXTENSION):
                out[kind[len(EXTENSION) :]] = info.findtext("Instruction_value")
        return out
