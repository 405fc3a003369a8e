# SPDX-License-Identifier: GPL-3.0-or-later
"""Junctions of a branched harness in the case format (``junctions``, and cable ends that name one).

A junction is a small rigid body where branches meet (case format, "Junctions (breakouts)"): a
position and an orientation, unknowns of the equilibrium unless ``fixed``. A cable end at a junction
gives the ``outlet`` direction in the junction's frame, which is the world frame for the case as given,
and optionally the ``normal`` its material frame's d1 starts with (default: rotations.frame_from_tangent
of the outlet). The end is then held like a connector with a normal, by the junction's frame.
"""

from dataclasses import dataclass, replace

import numpy as np

from ..errors import CaseError, check_id
from ..maths.rotations import frame_from_tangent

UNIT_TOLERANCE = 1e-3
MAX_JUNCTION_MASS = 1e6  # kg


@dataclass(frozen=True)
class JunctionSpec:
    id: str
    position: np.ndarray
    fixed: bool = False
    # 3x3 [normal, binormal, tangent]: the frame a step's tangent/normal turn the junction from
    frame: np.ndarray = None
    mass: float = 0.0  # kg, its weight acts at its position


@dataclass(frozen=True)
class JunctionEnd:
    """A cable end held by a junction: outlet and normal in the junction's frame (world, as given)."""

    junction: str
    outlet: np.ndarray
    normal: np.ndarray
    normal_given: bool = True  # False: chosen (untwisted_normal), written back without it


def _frame(obj, where, unit) -> np.ndarray | None:
    """The 3x3 frame an object's ``tangent`` (and ``normal``) give, or None without a tangent."""
    if obj.get("tangent") is None:
        if obj.get("normal") is not None:
            raise CaseError(f"{where}.normal needs a tangent")
        return None
    tangent = unit(obj["tangent"], f"{where}.tangent")
    return frame_from_tangent(tangent, _normal(obj, where, tangent, "tangent", unit))


def _normal(obj, where, axis, axis_name, unit) -> np.ndarray | None:
    """An object's optional unit ``normal``, checked perpendicular to ``axis`` (its tangent or outlet)."""
    if obj.get("normal") is None:
        return None
    normal = unit(obj["normal"], f"{where}.normal")
    dot = float(normal @ axis)
    if abs(dot) > UNIT_TOLERANCE:
        raise CaseError(f"{where}.normal must be perpendicular to the {axis_name} (their dot product is {dot:.3g})")
    return normal


def parse_junctions(raw, number, vector, unit, show) -> dict:
    """The case's ``junctions`` list as {id: JunctionSpec} in case order (``number``, ``vector`` and
    ``unit``: the case parser's checked readers)."""
    if not isinstance(raw, list):
        raise CaseError("junctions must be a list")
    out = {}
    for i, obj in enumerate(raw):
        where = f"junctions[{i}]"
        if not isinstance(obj, dict):
            raise CaseError(f"{where} must be an object with id and position")
        for key in obj:
            if key not in ("id", "position", "fixed", "tangent", "normal", "mass"):
                raise CaseError(
                    f"{where}.{key if isinstance(key, str) else repr(key)} is not a known key "
                    f"(known: id, position, fixed, tangent, normal, mass)"
                )
        for key in ("id", "position"):
            if key not in obj:
                raise CaseError(f"{where}.{key} is missing")
        jid = check_id(obj["id"], f"{where}.id")
        if jid in out:
            raise CaseError(f"{where}.id {show(jid)} is used twice")
        position = vector(obj["position"], f"{where}.position")
        fixed = obj.get("fixed", False)
        if not isinstance(fixed, (bool, np.bool_)):
            raise CaseError(f"{where}.fixed must be true or false")
        frame = _frame(obj, where, unit)
        if frame is None:
            frame = np.eye(3)
        mass = number(obj.get("mass", 0.0), f"{where}.mass", non_negative=True, bound=MAX_JUNCTION_MASS)
        out[jid] = JunctionSpec(jid, position, bool(fixed), frame, float(mass))
    return out


def parse_junction_end(obj, where, junctions, unit, show) -> JunctionEnd:
    """A cable's ``start``/``end`` that names a junction: {"junction", "outlet", "normal"?}."""
    for key in obj:
        if key not in ("junction", "outlet", "normal"):
            raise CaseError(
                f"{where}.{key if isinstance(key, str) else repr(key)} is not a known key at a junction "
                f"(known: junction, outlet, normal)"
            )
    jid = obj["junction"]
    if not isinstance(jid, str) or jid not in junctions:
        known = ", ".join(junctions) or "none"
        raise CaseError(f"{where}.junction: there is no junction with id {show(jid)} (junctions: {known})")
    if "outlet" not in obj:
        raise CaseError(f"{where}.outlet is missing (the direction the cable leaves the junction)")
    outlet = unit(obj["outlet"], f"{where}.outlet")
    normal = _normal(obj, where, outlet, "outlet", unit)
    given = normal is not None
    return JunctionEnd(jid, outlet, frame_from_tangent(outlet, normal)[:, 0], given)


def untwisted_normal(held: JunctionEnd, other_normal) -> JunctionEnd:
    """A junction end without a ``normal`` takes that of the cable's other end (made perpendicular to
    the outlet), so that a cable drawn untwisted starts untwisted: an arbitrary one would pre-twist it
    by up to half a turn. Without one there (a connector that lets the cable roll), any serves."""
    if held is None or held.normal_given or other_normal is None:
        return held
    n = other_normal - (other_normal @ held.outlet) * held.outlet
    if float(n @ n) < 0.01:
        return held  # the other end's normal lies along the outlet: it says nothing about roll here
    return replace(held, normal=n / np.linalg.norm(n))


def check_junction_graph(junctions: dict, ends: list, anchors: set, show) -> None:
    """Every free junction joins at least two cable ends, and every junction is held, through its
    cables, by a connector or a fixed junction (a floating harness has no equilibrium).

    ``ends``: (cable id, "start"/"end", junction id) of every junction end; ``anchors``: cable ids with
    an end, or a clip, held by a connector frame."""
    count = {jid: 0 for jid in junctions}
    links = {}
    for cid, _side, jid in ends:
        count[jid] += 1
        links.setdefault(jid, set()).add(cid)
    place = {jid: k for k, jid in enumerate(junctions)}
    for jid, spec in junctions.items():
        if not spec.fixed and count[jid] < 2:
            raise CaseError(
                f"junctions[{place[jid]}]: junction {show(jid)} joins {count[jid]} cable "
                f"end{'s' if count[jid] != 1 else ''}; a free junction joins at least 2 (or mark it fixed)"
            )
    # connected components of junctions and their cables
    by_cable = {}
    for cid, _side, jid in ends:
        by_cable.setdefault(cid, set()).add(jid)
    seen = set()
    for jid in junctions:
        if jid in seen:
            continue
        stack, component, cables = [jid], set(), set()
        while stack:
            j = stack.pop()
            if j in component:
                continue
            component.add(j)
            for cid in links.get(j, ()):
                cables.add(cid)
                stack.extend(by_cable[cid] - component)
        seen |= component
        if not any(junctions[j].fixed for j in component) and not cables & anchors:
            names = ", ".join(show(j) for j in sorted(component, key=place.get))
            raise CaseError(
                f"junctions[{min(place[j] for j in component)}]: junction {names} is held by no connector: its "
                f"cables end only at free junctions (give one cable a connector end, or mark a junction fixed)"
            )


def end_frame_at(position, rotation, end: JunctionEnd):
    """(position, tangent, normal) of a cable end held by a junction at ``position`` turned by
    ``rotation`` (3x3, from the case's frame)."""
    return position, rotation @ end.outlet, rotation @ end.normal


def junction_to_dict(spec: JunctionSpec) -> dict:
    out = {"id": spec.id, "position": spec.position.tolist(), "fixed": spec.fixed}
    if not np.array_equal(spec.frame, np.eye(3)):
        out["tangent"] = spec.frame[:, 2].tolist()
        out["normal"] = spec.frame[:, 0].tolist()
    if spec.mass:
        out["mass"] = spec.mass
    return out


def junction_end_to_dict(end: JunctionEnd) -> dict:
    out = {"junction": end.junction, "outlet": end.outlet.tolist()}
    if end.normal_given:
        out["normal"] = end.normal.tolist()
    return out


@dataclass(frozen=True)
class JunctionMove:
    """A step's move of a fixed junction: its new position and rotation from the case's frame (None:
    as before)."""

    position: np.ndarray | None = None
    rotation: np.ndarray | None = None


def parse_junction_moves(raw, where, junctions, vector, unit, show) -> dict:
    """A step's ``junctions``: {id: {"position"?, "tangent"?, "normal"?}} for fixed junctions."""
    if not isinstance(raw, dict):
        raise CaseError(f"{where} must be an object keyed by junction id")
    out = {}
    for jid, obj in raw.items():
        w = f"{where}.{jid if isinstance(jid, str) and jid.isprintable() else show(jid)}"
        if jid not in junctions:
            raise CaseError(f"{w}: there is no junction with id {show(jid)}")
        spec = junctions[jid]
        if not spec.fixed:
            raise CaseError(f"{w}: junction {show(jid)} is free (its place is solved for); a step moves fixed ones")
        if not isinstance(obj, dict):
            raise CaseError(f"{w} must be an object with position, tangent, normal")
        for key in obj:
            if key not in ("position", "tangent", "normal"):
                raise CaseError(f"{w}.{key if isinstance(key, str) else repr(key)} is not a known key")
        position = vector(obj["position"], f"{w}.position") if "position" in obj else None
        frame = _frame(obj, w, unit)
        rotation = None if frame is None else frame @ spec.frame.T
        out[jid] = JunctionMove(position, rotation)
    return out


def junction_move_to_dict(spec: JunctionSpec, move: JunctionMove) -> dict:
    out = {}
    if move.position is not None:
        out["position"] = move.position.tolist()
    if move.rotation is not None:
        frame = move.rotation @ spec.frame
        out["tangent"] = frame[:, 2].tolist()
        out["normal"] = frame[:, 0].tolist()
    return out
