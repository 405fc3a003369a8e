# SPDX-License-Identifier: GPL-3.0-or-later
"""A solved harness as a KBL 2.4 SR-1 file (VDA 4964, prostep ivip's schema ``kbl24_sr1.xsd``).

What is written and what is not: docs/kbl.md. Lengths and coordinates are in millimetres (KBL's
usual unit, declared as a ``Unit``); what KBL has no field for (the stiffnesses, the solve's state, the
B-spline's knots) is carried as ``Processing_information`` with types starting ``cable_harness:``.
The element order follows the schema's sequences; tests/solver/test_kbl.py validates against it.
"""

import datetime
import math
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import check_title
from ..maths.rotations import frame_from_tangent
from .kbl_curves import fit_centre_curves
from .kbl_model import KblHarness, wire_segments

NAMESPACE = "http://www.prostep.org/Car_electric_container/KBL2.3/KBLSchema"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
VERSION = "2.4 SR-1"
EXTENSION = "cable_harness:"  # the processing instructions' types this tool writes
NULL = "/NULL"  # KBL 2.4 SR-1's advice for a mandatory string the sender does not manage
MM = 1000.0
CURVE_TOLERANCE = 1e-4  # m: the centre curves' largest deviation from the solved centre line


def kbl_text(harness: KblHarness, title: str, tolerance: float = CURVE_TOLERANCE, date: str | None = None) -> str:
    """The harness as a KBL document (UTF-8 XML text)."""
    check_title(title)
    w = _Writer()
    date = date or datetime.date.today().isoformat()
    root = ET.Element(f"{{{NAMESPACE}}}KBL_container", {"id": "KBL_container", "version_id": VERSION})
    occurrences = _connector_occurrences(w, harness)
    fixings = _fixing_occurrences(w, harness)
    wire_parts, wires = _wires(w, harness, occurrences)
    protection_parts, protections = _protections(w, harness)
    nodes = _nodes(w, harness, occurrences, fixings)
    segments = _segments(w, harness, nodes, fixings, protections, tolerance)
    routings = _routings(w, harness, wires, segments)
    harness_element = _harness(w, harness, title, date, occurrences, fixings, wires, protections)
    for element in (
        w.points
        + [o.housing for o in occurrences.values()]
        + list(fixings.parts.values())
        + wire_parts
        + [harness_element]
        + list(nodes.values())
        + routings
        + list(segments.values())
        + w.units()
        + protection_parts
    ):
        root.append(element)
    ET.register_namespace("kbl", NAMESPACE)
    ET.register_namespace("xsi", XSI)
    ET.indent(root, space=" ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ---------------------------------------------------------------- writing helpers


class _Writer:
    """Unique XML ids, the Cartesian points (mm) and the units the document refers to."""

    def __init__(self):
        self.counts = {}
        self.points = []
        self.unit_ids = {}

    def id(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}_{self.counts[prefix]}"

    def point(self, xyz_m) -> str:
        pid = self.id("Cartesian_point")
        element = ET.Element("Cartesian_point", {"id": pid})
        for v in np.asarray(xyz_m, dtype=np.float64) * MM:
            _sub(element, "Coordinates", _number(v))
        self.points.append(element)
        return pid

    def unit(self, name: str) -> str:
        """The id of "mm" or "mm2"."""
        return self.unit_ids.setdefault(name, f"unit_{name}")

    def units(self) -> list:
        out = []
        for name, uid in self.unit_ids.items():
            element = ET.Element("Unit", {"id": uid})
            _sub(element, "Unit_name", name)
            _sub(element, "Si_unit_name", "metre")
            _sub(element, "Si_prefix", "milli")
            if name == "mm2":
                _sub(element, "Si_dimension", "square")
            out.append(element)
        return out

    def value(self, parent, tag: str, value: float, unit: str = "mm") -> ET.Element:
        element = _sub(parent, tag, None, id=self.id(tag))
        _sub(element, "Unit_component", self.unit(unit))
        _sub(element, "Value_component", _number(value))
        return element

    def instruction(self, parent, kind: str, value) -> None:
        element = _sub(parent, "Processing_information", None, id=self.id("Processing_instruction"))
        _sub(element, "Instruction_type", EXTENSION + kind)
        _sub(element, "Instruction_value", value if isinstance(value, str) else _exact(value))

    def placement(self, parent, point, u, v) -> None:
        """A Transformation: its origin, U along ``u`` and V along ``v`` (made perpendicular; any
        perpendicular where ``v`` is None)."""
        u = np.asarray(u, dtype=np.float64) / np.linalg.norm(u)
        v = frame_from_tangent(u, v)[:, 0]  # v made perpendicular to u (any, where v is None)
        element = _sub(parent, "Placement", None, id=self.id("Transformation"))
        for tag, axis in (("U", u), ("V", v)):
            for c in axis:
                _sub(element, tag, _unit(c))
        _sub(element, "Cartesian_point", self.point(point))


def _sub(parent, tag: str, text=None, **attrs) -> ET.Element:
    element = ET.SubElement(parent, tag, attrs)
    if text is not None:
        element.text = text
    return element


def _number(value: float) -> str:
    """A length or coordinate in mm (to the nanometre) or an area in mm^2."""
    return f"{float(value):.6f}"


def _unit(value: float) -> str:
    """A component of a unit vector."""
    return f"{float(value):.9f}"


def _exact(value: float) -> str:
    """A value in SI units, as exactly as a double holds it."""
    return repr(float(value))


def _part(element, number: str, description: str) -> ET.Element:
    """The fields every KBL Part starts with (Part_number to Description)."""
    _sub(element, "Part_number", number)
    _sub(element, "Company_name", NULL)
    _sub(element, "Version", "1")
    _sub(element, "Abbreviation", NULL)
    _sub(element, "Description", description)
    return element


# ---------------------------------------------------------------- connectors and fixings


class _ConnectorOccurrence:
    def __init__(self, w: _Writer, node, ends: list):
        """``ends``: (wire index, 0 or 1) of the wire ends at the node."""
        self.id = w.id("Connector_occurrence")
        self.contact = {}
        self.housing = _part(
            ET.Element("Connector_housing", {"id": w.id("Connector_housing")}),
            f"{node.label} housing",
            "no end of the wires (a free cable end)" if node.kind == "free end" else "connector",
        )
        self.element = ET.Element("Connector_occurrence", {"id": self.id})
        _sub(self.element, "Id", node.label)
        if node.kind == "free end":
            _sub(self.element, "Usage", "no end")
        if node.tangent is not None:
            w.placement(self.element, node.point, node.tangent, node.normal)
        _sub(self.element, "Part", self.housing.get("id"))
        if not ends:
            return
        slot = _sub(self.housing, "Slots", None, id=w.id("Slot"))
        _sub(slot, "Number_of_cavities", str(len(ends)))
        cavities = [_sub(slot, "Cavities", None, id=w.id("Cavity")) for _ in ends]
        for k, cavity in enumerate(cavities):
            _sub(cavity, "Cavity_number", str(k + 1))
        slot_occurrence = ET.Element("Slots", {"id": w.id("Slot_occurrence")})
        _sub(slot_occurrence, "Part", slot.get("id"))
        for k, end in enumerate(ends):
            cavity = _sub(slot_occurrence, "Cavities", None, id=w.id("Cavity_occurrence"))
            _sub(cavity, "Part", cavities[k].get("id"))
            contact = _sub(self.element, "Contact_points", None, id=w.id("Contact_point"))
            _sub(contact, "Id", str(k + 1))
            _sub(contact, "Contacted_cavity", cavity.get("id"))
            self.contact[end] = contact.get("id")
        self.element.append(slot_occurrence)


def _connector_occurrences(w: _Writer, harness: KblHarness) -> dict:
    """node key -> _ConnectorOccurrence: every connector, and every free end a wire ends at."""
    ends = {}
    for k, wire in enumerate(harness.wires):
        ends.setdefault(wire.start, []).append((k, 0))
        ends.setdefault(wire.end, []).append((k, 1))
    return {
        key: _ConnectorOccurrence(w, node, ends.get(key, []))
        for key, node in harness.nodes.items()
        if node.kind == "connector" or (node.kind == "free end" and key in ends)
    }


class _Fixings:
    def __init__(self):
        self.parts = {}  # clip kind -> Fixing element
        self.occurrences = {}  # node key -> Fixing_occurrence element


def _fixing_occurrences(w: _Writer, harness: KblHarness) -> _Fixings:
    fixings = _Fixings()
    for key, kind in harness.clips.items():
        if kind not in fixings.parts:
            part = _part(ET.Element("Fixing", {"id": w.id("Fixing")}), f"clip ({kind})", f"{kind} clip")
            _sub(part, "Fixing_type", kind)
            fixings.parts[kind] = part
        node = harness.nodes[key]
        element = ET.Element("Fixing_occurrence", {"id": w.id("Fixing_occurrence")})
        _sub(element, "Id", node.label)
        w.placement(element, node.point, node.tangent, node.normal)
        _sub(element, "Part", fixings.parts[kind].get("id"))
        fixings.occurrences[key] = element
    return fixings


# ---------------------------------------------------------------- wires and protections


def _wires(w: _Writer, harness: KblHarness, occurrences: dict) -> tuple:
    """(General_wire parts, [(Wire_occurrence, Connection)] per wire)."""
    parts, out = {}, []
    for k, wire in enumerate(harness.wires):
        if wire.kind not in parts:
            diameter, material = wire.kind
            part = _part(
                ET.Element("General_wire", {"id": w.id("General_wire")}),
                f"wire {diameter * MM:g} mm {material}",
                f"wire, {diameter * MM:g} mm over its insulation, {material}",
            )
            w.value(part, "Outside_diameter", diameter * MM)
            colour = _sub(part, "Cover_colour", None, id=w.id("Wire_colour"))
            _sub(colour, "Colour_type", "base colour")
            _sub(colour, "Colour_value", NULL)
            parts[wire.kind] = part
        occurrence = ET.Element(
            "General_wire_occurrence", {"id": w.id("Wire_occurrence"), f"{{{XSI}}}type": "kbl:Wire_occurrence"}
        )
        _sub(occurrence, "Part", parts[wire.kind].get("id"))
        length = _sub(occurrence, "Length_information", None, id=w.id("Wire_length"))
        _sub(length, "Length_type", "DMU")
        w.value(length, "Length_value", wire.length * MM)
        _sub(occurrence, "Wire_number", wire.label)
        connection = ET.Element("Connection", {"id": w.id("Connection")})
        _sub(connection, "Id", wire.label)
        _sub(connection, "Wire", occurrence.get("id"))
        for end, key in ((0, wire.start), (1, wire.end)):
            extremity = _sub(connection, "Extremities", None, id=w.id("Extremity"))
            _sub(extremity, "Position_on_wire", f"{float(end):.1f}")
            _sub(extremity, "Contact_point", occurrences[key].contact[(k, end)])
        out.append((occurrence, connection))
    return list(parts.values()), out


def _protections(w: _Writer, harness: KblHarness) -> tuple:
    """(Wire_protection parts, {cable id: Wire_protection_occurrence}) of the covered bundles."""
    parts, occurrences = {}, {}
    for cid, cable in harness.cables.items():
        if cable.covering is None:
            continue
        wrap = cable.covering[0]
        if wrap not in parts:
            part = _part(ET.Element("Wire_protection", {"id": w.id("Wire_protection")}), f"{wrap} covering", wrap)
            _sub(part, "Protection_type", wrap)
            parts[wrap] = part
        element = ET.Element("Wire_protection_occurrence", {"id": w.id("Wire_protection_occurrence")})
        _sub(element, "Id", f"{cid} {wrap}")
        w.value(element, "Protection_length", cable.length * MM)
        _sub(element, "Part", parts[wrap].get("id"))
        occurrences[cid] = element
    return list(parts.values()), occurrences


# ---------------------------------------------------------------- topology


def _nodes(w: _Writer, harness: KblHarness, occurrences: dict, fixings: _Fixings) -> dict:
    out = {}
    for key, node in harness.nodes.items():
        element = ET.Element("Node", {"id": w.id("Node")})
        _sub(element, "Id", node.label)
        _sub(element, "Cartesian_point", w.point(node.point))
        if key in occurrences:
            _sub(element, "Referenced_components", occurrences[key].id)
        elif key in fixings.occurrences:
            _sub(element, "Referenced_components", fixings.occurrences[key].get("id"))
        w.instruction(element, "kind", node.kind)
        out[key] = element
    return out


def _segments(w, harness: KblHarness, nodes: dict, fixings: _Fixings, protections: dict, tolerance) -> dict:
    """segment label -> Segment element."""
    out = {}
    for seg in harness.segments:
        cable = harness.cables[seg.cable]
        element = ET.Element("Segment", {"id": w.id("Segment")})
        _sub(element, "Id", seg.label)
        for tag, d in (
            ("Start_vector", seg.points[1] - seg.points[0]),
            ("End_vector", seg.points[-1] - seg.points[-2]),
        ):
            if np.linalg.norm(d) > 0.0:
                for c in d / np.linalg.norm(d):
                    _sub(element, tag, _unit(c))
        w.value(element, "Physical_length", seg.length * MM)
        _sub(element, "Form", "circular")
        _sub(element, "End_node", nodes[seg.end].get("id"))
        _sub(element, "Start_node", nodes[seg.start].get("id"))
        deviation = 0.0
        for control, degree, piece_deviation in fit_centre_curves(seg.points, tolerance):
            curve = _sub(element, "Center_curve", None, id=w.id("B_spline_curve"))
            _sub(curve, "Degree", str(degree))
            _sub(curve, "Control_points", " ".join(w.point(p) for p in control))
            deviation = max(deviation, piece_deviation)
        area = _sub(element, "Cross_section_area_information", None, id=w.id("Cross_section_area"))
        _sub(area, "Value_determination", "calculated")
        w.value(area, "Area", math.pi * (cable.diameter * MM) ** 2 / 4.0, "mm2")
        if seg.start in fixings.occurrences:
            _fixing_assignment(w, element, harness.nodes[seg.start], fixings.occurrences[seg.start])
        _segment_data(w, element, seg, cable, deviation)
        if seg.cable in protections:
            area = _sub(element, "Protection_area", None, id=w.id("Protection_area"))
            _sub(area, "Start_location", "0.0")
            w.value(area, "Absolute_start_location", 0.0)
            _sub(area, "End_location", "1.0")
            w.value(area, "Absolute_end_location", seg.length * MM)
            _sub(area, "Associated_protection", protections[seg.cable].get("id"))
            _wrap, factor, source = cable.covering
            if factor is not None:
                w.instruction(area, "covering_factor", factor)
                w.instruction(area, "covering_source", str(source or "assumed"))
        out[seg.label] = element
    return out


def _fixing_assignment(w, segment, node, occurrence) -> None:
    """A clip is a node (its Fixing_occurrence referenced there) and assigned to the segment leaving it,
    at its start; its Orientation is the clip's normal (KBL: the fixing's z axis, y the curve's tangent)."""
    element = _sub(segment, "Fixing_assignment", None, id=w.id("Fixing_assignment"))
    _sub(element, "Location", "0.0")
    w.value(element, "Absolute_location", 0.0)
    for c in frame_from_tangent(node.tangent, node.normal)[:, 0]:
        _sub(element, "Orientation", _unit(c))
    _sub(element, "Fixing", occurrence.get("id"))


def _segment_data(w, element, seg, cable, deviation) -> None:
    """What KBL has no field for (docs/kbl.md)."""
    w.instruction(element, "cable", seg.cable)
    w.instruction(element, "arc_start_mm", seg.arc[0] * MM)
    w.instruction(element, "arc_end_mm", seg.arc[1] * MM)
    w.instruction(element, "outside_diameter_mm", cable.diameter * MM)
    w.instruction(element, "EA_N", cable.section["EA"])
    w.instruction(element, "GA_N", cable.section["GA"])
    w.instruction(element, "EI_N_m2", cable.section["EI"])
    w.instruction(element, "GJ_N_m2", cable.section["GJ"])
    w.instruction(element, "linear_density_kg_per_m", cable.section["linear_density"])
    if cable.min_bend_radius is not None:
        w.instruction(element, "cable_min_bend_radius_mm", cable.min_bend_radius * MM)
    if cable.allowed_bend_radius is not None:
        w.instruction(element, "allowed_bend_radius_mm", cable.allowed_bend_radius * MM)
    w.instruction(element, "converged", "true" if cable.converged else "false")
    w.instruction(element, "center_curve", "clamped uniform non-rational B-spline")
    w.instruction(element, "center_curve_deviation_mm", deviation * MM)


def _routings(w, harness: KblHarness, wires: list, segments: dict) -> list:
    out = []
    for wire, (_occurrence, connection) in zip(harness.wires, wires):
        element = ET.Element("Routing", {"id": w.id("Routing")})
        _sub(element, "Routed_wire", connection.get("id"))
        _sub(element, "Segments", " ".join(segments[s.label].get("id") for s in wire_segments(harness, wire)))
        out.append(element)
    return out


def _harness(w, harness: KblHarness, title, date, occurrences, fixings, wires, protections) -> ET.Element:
    element = _part(ET.Element("Harness", {"id": "Harness_1"}), title, f"{title}: routed and solved by cable_harness")
    w.instruction(element, "exported", date)
    w.instruction(element, "length_unit", "mm")
    not_converged = [cid for cid, c in harness.cables.items() if not c.converged]
    w.instruction(element, "not_converged", " ".join(not_converged) if not_converged else "none")
    _sub(element, "Car_classification_level_2", NULL)
    _sub(element, "Model_year", NULL)
    _sub(element, "Content", "harness complete set")
    for _occurrence, connection in wires:
        element.append(connection)
    for occurrence in occurrences.values():
        element.append(occurrence.element)
    for occurrence in fixings.occurrences.values():
        element.append(occurrence)
    for occurrence, _connection in wires:
        element.append(occurrence)
    for occurrence in protections.values():
        element.append(occurrence)
    return element
