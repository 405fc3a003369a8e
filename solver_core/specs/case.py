# SPDX-License-Identifier: GPL-3.0-or-later
"""The harness case (``docs/case-format.md``): parsing and validation (writing back: case_writer.py;
each model's refusals: model_features.py).

Every rejected field is named by its path in the document, e.g. ``cables[1].clips[0].s``.
Unit tolerances: tangents and normals must have unit length within 1e-3 (CAD exports round
to a few digits) and are then normalised; a normal must be perpendicular to its tangent within
1e-3 and is then made exactly perpendicular.
"""

import json
import math
import numbers
import os
import stat
from dataclasses import dataclass, field

import numpy as np

from ..errors import CaseError, check_id, name, show
from ..geometry.mounting import DETECT_RADII, closest_on_triangles, mount_radius, points_into
from .bundle import Bundle, parse_bundle
from .junction_spec import (
    JunctionEnd,
    JunctionMove,
    check_junction_graph,
    parse_junction_end,
    parse_junction_moves,
    parse_junctions,
    untwisted_normal,
)
from .materials import SectionStiffness, section_stiffness
from .model_features import check_dynamics_features, check_model_features
from .rest_shape import RestShape, check_rest_resolution, parse_rest
from .wire_routes import route_wires

CASE_FORMAT = "cable-harness-case/1"
CLIP_KINDS = ("fixed", "rotating", "sliding")
SOLVER_MODELS = ("cosserat", "mass_spring", "kirchhoff_cg", "cosserat_pbd")
UNIT_TOLERANCE = 1e-3

# Ranges of the input numbers (SI). Each lies far beyond any harness yet keeps every product the solver
# forms finite in float64 (energies ~ EA L strain^2, squared distances, gradients squared in the Newton
# model): coordinates and lengths within 1e6 m (a float64 step there is 1.2e-10 m, far below any
# diameter), moduli and stiffnesses up to 1e15 (diamond: E = 1.2e12 Pa), loads up to 1e9 N.
MAX_EXTENT = 1e6  # |coordinate|, cable length [m]
MIN_DIAMETER = 1e-6  # [m]: d^4 of thinner sections underflows towards the smallest doubles
MAX_GRAVITY = 1e6  # |component| [m/s^2]
MAX_LOAD = 1e9  # |component| of a dead force [N] or moment [N m]
MAX_STIFFNESS = 1e15  # clip stiffnesses [N/m, N m/rad]
MAX_ITERATIONS = 1_000_000
MAX_FRICTION = 100.0
DEFAULT_DURATION = 1.0 / 24.0  # a step of a dynamic case: one frame of film [s]
MAX_TIME_STEPS = 100_000  # time steps per case step (duration / time_step)
MAX_DAMPING = 1e6  # [1/s]
MAX_CONNECTOR_NAME = 100  # characters of a connector's name
MIN_TIME_STEP = 1e-9  # [s]: the inertia springs 4 m / h^2 stay within float64 for any cable


@dataclass(frozen=True)
class Frame:
    position: np.ndarray
    tangent: np.ndarray
    normal: np.ndarray | None = None  # None: the cable may roll freely about the tangent here


@dataclass(frozen=True)
class Clip:
    s: float
    frame: Frame
    kind: str = "fixed"
    length: float = 0.0
    stiffness: dict | None = None


@dataclass(frozen=True)
class Load:
    s: float
    force: np.ndarray
    moment: np.ndarray


@dataclass(frozen=True)
class CableSpec:
    id: str
    length: float
    diameter: float
    material: dict
    section: SectionStiffness
    segments: int
    start: Frame
    end: Frame | None
    clips: tuple = ()
    loads: tuple = ()
    route: np.ndarray | None = None
    rest: RestShape | None = None  # pre-formed: the unstressed shape (None: straight)
    bundle: Bundle | None = None  # a bundle of wires: diameter and section derived (material: overrides)
    diameter_given: bool = True  # False: the diameter is the bundle's
    start_junction: JunctionEnd | None = None  # the start is held by a junction (start is its frame as given)
    end_junction: JunctionEnd | None = None
    # the smallest bend radius the cable's maker allows [m] (None: not given); read-outs and reports
    # measure the cable against it, the solver does not enforce it
    allowed_bend_radius: float | None = None
    # the name of the mesh obstacle a connector is mounted on (None: not given): see mounting.py
    start_mount: str | None = None
    end_mount: str | None = None
    # the names of the connectors at the start and end (None: not given); ends naming one connector
    # are one connector of the harness (a KBL node, a formboard label)
    connectors: tuple = (None, None)

    def junction_ends(self) -> tuple:
        """(side, JunctionEnd) of the ends held by junctions."""
        return tuple((side, e) for side, e in (("start", self.start_junction), ("end", self.end_junction)) if e)


@dataclass(frozen=True)
class Dynamics:
    """``solver.dynamics``: the steps are a motion in time (dynamics.py)."""

    time_step: float  # the integrator's step [s]; a step's duration is split into equal parts no longer
    damping: float = 0.0  # mass-proportional (Rayleigh) damping: a force -c m v on every node [1/s]


@dataclass(frozen=True)
class SolverSettings:
    model: str = "cosserat"
    tolerance: float = 1e-8
    max_iterations: int = 200
    ultimate_strain: float = 0.005  # Lv 2017, Sec. 2.4: steps that would stretch the cable more are refused
    dynamics: Dynamics | None = None  # None: quasi-static steps


@dataclass(frozen=True)
class CableChange:
    """Boundary frames a step moves: ``start``/``end`` and clips by index."""

    start: Frame | None = None
    end: Frame | None = None
    clips: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    cables: tuple
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    obstacles: tuple = ()
    contact: dict = field(default_factory=dict)
    solver: SolverSettings = field(default_factory=SolverSettings)
    steps: tuple = ()  # each a dict: cable id -> CableChange
    junctions: dict = field(default_factory=dict)  # id -> junction_spec.JunctionSpec, in case order
    junction_steps: tuple = ()  # per step: junction id -> junction_spec.JunctionMove (fixed junctions)
    wires: tuple = ()  # wire_routes.WireRoute of every bundle wire with an id
    step_durations: tuple = ()  # per step, its duration [s] (solver.dynamics only; default DEFAULT_DURATION)
    warnings: tuple = ()  # what the case gives that is valid but likely a mistake (the solve reports them)

    def cable(self, cable_id: str) -> CableSpec:
        for c in self.cables:
            if c.id == cable_id:
                return c
        raise KeyError(cable_id)


# ---------------------------------------------------------------- field readers


def _check_keys(obj, allowed, where):
    if not isinstance(obj, dict):
        raise CaseError(f"{where} must be an object")
    for key in obj:
        if key not in allowed:
            raise CaseError(f"{where}.{name(key)} is not a known key (known: {', '.join(allowed)})")


def as_float(value, where) -> float:
    """A JSON or numpy number as a float; CaseError for anything else, huge integers and NaN or infinity."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise CaseError(f"{where} must be a finite number, got {show(value)}")
    try:
        out = float(value)
    except (OverflowError, ValueError, TypeError):
        raise CaseError(f"{where} must be a finite number, got a number too large for a double") from None
    if not math.isfinite(out):
        raise CaseError(f"{where} must be a finite number, got {show(value)}")
    return out


def as_int(value, where, low, high) -> int:
    """A JSON or numpy integer in [low, high]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise CaseError(f"{where} must be an integer from {low} to {high}, got {show(value)}")
    return int(value)


def _number(value, where, positive=False, non_negative=False, bound=None):
    out = as_float(value, where)
    if positive and out <= 0:
        raise CaseError(f"{where} must be positive, got {show(value)}")
    if non_negative and out < 0:
        raise CaseError(f"{where} must not be negative, got {show(value)}")
    if bound is not None and abs(out) > bound:
        raise CaseError(f"{where} = {out:g} is out of range (at most {bound:g} in magnitude)")
    return out


def _vector(value, where, bound=MAX_EXTENT):
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != 3:
        raise CaseError(f"{where} must be a list of 3 numbers, got {show(value)}")
    return np.array([_number(v, f"{where}[{i}]", bound=bound) for i, v in enumerate(value)])


def _unit(value, where):
    v = _vector(value, where)
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        raise CaseError(f"{where} is the zero vector; it must be a unit vector")
    if abs(norm - 1.0) > UNIT_TOLERANCE:
        raise CaseError(f"{where} must be a unit vector, its length is {norm:.6g}")
    return v / norm


def parse_frame(obj, where) -> Frame:
    _check_keys(obj, ("position", "tangent", "normal"), where)
    for key in ("position", "tangent"):
        if key not in obj:
            raise CaseError(f"{where}.{key} is missing")
    position = _vector(obj["position"], f"{where}.position")
    tangent = _unit(obj["tangent"], f"{where}.tangent")
    normal = None
    if obj.get("normal") is not None:
        normal = _unit(obj["normal"], f"{where}.normal")
        dot = float(np.dot(normal, tangent))
        if abs(dot) > UNIT_TOLERANCE:
            raise CaseError(f"{where}.normal must be perpendicular to the tangent (their dot product is {dot:.3g})")
        normal = normal - dot * tangent
        normal /= np.linalg.norm(normal)
    return Frame(position, tangent, normal)


def _parse_stiffness(obj, where):
    if obj is None:
        return None
    _check_keys(obj, ("translational", "rotational", "matrix"), where)
    if "matrix" in obj:
        m = obj["matrix"]
        if not isinstance(m, list) or len(m) != 6 or any(not isinstance(r, list) or len(r) != 6 for r in m):
            raise CaseError(f"{where}.matrix must be a 6x6 list of lists")
        arr = np.array(
            [
                [_number(v, f"{where}.matrix[{i}][{j}]", bound=MAX_STIFFNESS) for j, v in enumerate(r)]
                for i, r in enumerate(m)
            ]
        )
        if not np.allclose(arr, arr.T, rtol=1e-9, atol=0.0):
            raise CaseError(f"{where}.matrix must be symmetric")
        if np.linalg.eigvalsh(arr).min() <= 0:
            raise CaseError(f"{where}.matrix must be positive definite")
        return {"matrix": arr.tolist()}
    out = {}
    for key in ("translational", "rotational"):
        if key not in obj:
            raise CaseError(f"{where}.{key} is missing (or give a 6x6 matrix)")
        out[key] = _number(obj[key], f"{where}.{key}", positive=True, bound=MAX_STIFFNESS)
    return out


def _parse_clip(obj, where, length) -> Clip:
    _check_keys(obj, ("s", "frame", "kind", "length", "stiffness"), where)
    for key in ("s", "frame"):
        if key not in obj:
            raise CaseError(f"{where}.{key} is missing")
    s = _number(obj["s"], f"{where}.s")
    kind = obj.get("kind", "fixed")
    if not isinstance(kind, str) or kind not in CLIP_KINDS:
        raise CaseError(f"{where}.kind must be one of {', '.join(CLIP_KINDS)}, got {show(kind)}")
    clip_length = _number(obj.get("length", 0.0), f"{where}.length", non_negative=True)
    if not (0.0 < s - clip_length / 2.0 and s + clip_length / 2.0 < length):
        raise CaseError(
            f"{where}.s = {s:g} m (with length {clip_length:g} m) lies outside the cable's interior, 0 to {length:g} m"
        )
    return Clip(
        s,
        parse_frame(obj["frame"], f"{where}.frame"),
        kind,
        clip_length,
        _parse_stiffness(obj.get("stiffness"), f"{where}.stiffness"),
    )


def _parse_load(obj, where, length) -> Load:
    _check_keys(obj, ("s", "force", "moment"), where)
    if "s" not in obj:
        raise CaseError(f"{where}.s is missing")
    s = _number(obj["s"], f"{where}.s")
    if not 0.0 <= s <= length:
        raise CaseError(f"{where}.s = {s:g} m lies outside the cable, 0 to {length:g} m")
    force = _vector(obj["force"], f"{where}.force", MAX_LOAD) if "force" in obj else np.zeros(3)
    moment = _vector(obj["moment"], f"{where}.moment", MAX_LOAD) if "moment" in obj else np.zeros(3)
    return Load(s, force, moment)


def _anchor_chain(cable_start, cable_end, clips, length):
    """(s, point, label) pairs in arc-length order: where the cable is held in place."""
    chain = [(0.0, cable_start.position, "start", cable_start.tangent)]
    for index, clip in sorted(enumerate(clips), key=lambda ic: ic[1].s):
        if clip.kind == "sliding":
            continue  # its s is only where the cable starts out; the cable slides through it
        half = clip.length / 2.0
        chain.append(
            (clip.s - half, clip.frame.position - half * clip.frame.tangent, f"clips[{index}]", clip.frame.tangent)
        )
        chain.append(
            (clip.s + half, clip.frame.position + half * clip.frame.tangent, f"clips[{index}]", clip.frame.tangent)
        )
    if cable_end is not None:
        chain.append((length, cable_end.position, "end", cable_end.tangent))
    return chain


MIN_CLIP_SPACING = 1e-6  # of the cable length: clip ends closer than this would make segments of ~0 length


def _check_clip_breaks(where, clips, length, segments):
    """The clip ends where the model places nodes (rod_model.node_arclengths) must be resolvable: a
    clip's length is 0 or at least MIN_CLIP_SPACING of the cable's, distinct ends lie at least that far
    apart, and there are no more pieces between them than segments."""
    tiny = MIN_CLIP_SPACING * length
    breaks = {0.0: "start", length: "end"}
    for i, clip in enumerate(clips):
        if 0.0 < clip.length < tiny:
            raise CaseError(
                f"{where}.clips[{i}].length = {clip.length:g} is out of range (0, or at least "
                f"{tiny:g} m: {MIN_CLIP_SPACING:g} of the cable length)"
            )
        if clip.kind == "sliding":
            continue
        ends = (
            (clip.s - clip.length / 2.0, clip.s + clip.length / 2.0)
            if clip.length > 0.0 and clip.stiffness is None
            else (clip.s,)
        )
        for s in ends:
            breaks.setdefault(s, f"clips[{i}]")
    points = sorted(breaks)
    for a, b in zip(points, points[1:]):
        if b - a < tiny:
            raise CaseError(
                f"{where}.{breaks[b]} ends {b - a:.3g} m from where {breaks[a]} ends: closer than "
                f"{MIN_CLIP_SPACING:g} of the cable length (make them meet exactly or move them apart)"
            )
    if len(points) - 1 > segments:
        raise CaseError(f"{where}.segments = {segments} is too few for its clips; it needs at least {len(points) - 1}")


def _check_clip_intervals(where, clips):
    """Clips take up [s - length/2, s + length/2] of the cable: no two may share any of it, zero-length
    clips included (two clips at one arc length hold one point of the cable twice; sliding clips there
    would guide the same piece of cable through two sleeves)."""
    spans = sorted((c.s - c.length / 2.0, c.s + c.length / 2.0, i) for i, c in enumerate(clips))
    for (lo0, hi0, i), (lo1, hi1, j) in zip(spans, spans[1:]):
        if lo1 < hi0 - 1e-12 or (lo1 == lo0 and hi1 == hi0):
            raise CaseError(f"{where}.clips[{max(i, j)}] overlaps clips[{min(i, j)}] along the cable")


def check_reachable(cable_id, where, start, end, clips, length):
    """Reject frames that the cable cannot reach without stretching."""
    if end is not None:
        span = float(np.linalg.norm(end.position - start.position))
        if span > length * (1.0 + 1e-9):
            raise CaseError(
                f"{where}: start and end of cable {show(cable_id)} are {span:.6g} m apart but the cable is "
                f"only {length:.6g} m long"
            )
    chain = _anchor_chain(start, end, clips, length)
    for (s0, p0, a, t0), (s1, p1, b, t1) in zip(chain, chain[1:]):
        if a == b:
            continue
        if s1 < s0 - 1e-12:
            raise CaseError(f"{where}.{b} overlaps {a} along the cable")
        if s1 - s0 <= 1e-12 * max(length, 1.0) and float(np.dot(t0, t1)) < 1.0 - UNIT_TOLERANCE:
            # held frames that meet at one arc length hold one tangent (the cable cannot kink)
            raise CaseError(
                f"{where}: {a} and {b} of cable {show(cable_id)} hold the same point of the cable "
                f"with different tangents"
            )
        gap = float(np.linalg.norm(p1 - p0))
        if gap > (s1 - s0) + 1e-9 * length:
            raise CaseError(
                f"{where}: {a} and {b} of cable {show(cable_id)} are {gap:.6g} m apart but only {s1 - s0:.6g} m "
                f"of cable lies between them"
            )


BUNDLE_OVERRIDES = ("EA", "EI", "GJ", "GA", "linear_density")


def _under_bundle(exc: CaseError, where: str, given: dict) -> CaseError:
    """A section value the bundle derived (not one the case's material gives) is named under the
    bundle, the field the case has: ``cables[0].bundle (its derived GJ)``, not ``material.GJ``."""
    text = str(exc)
    for key in BUNDLE_OVERRIDES:
        if key not in given and text.startswith(f"{where}.material.{key} "):
            return CaseError(f"{where}.bundle (its derived {key}) " + text[len(f"{where}.material.{key} ") :])
    if text.startswith(f"{where}.material gives") and not given:
        return CaseError(f"{where}.bundle gives" + text[len(f"{where}.material gives") :])
    return exc


def _parse_end(obj, where, junctions):
    """A cable's start or end: (frame, JunctionEnd or None, the obstacle it is mounted on or None); a
    junction end's frame is the junction's as given."""
    if isinstance(obj, dict) and "junction" in obj:
        end = parse_junction_end(obj, where, junctions, _unit, show)
        return Frame(junctions[end.junction].position.copy(), end.outlet, end.normal), end, None
    mount = None
    if isinstance(obj, dict) and obj.get("mounted_on") is not None:
        mount = obj["mounted_on"]
        if not isinstance(mount, str) or not mount:
            raise CaseError(f"{where}.mounted_on must be the name of a mesh obstacle, got {show(mount)}")
        obj = {key: value for key, value in obj.items() if key != "mounted_on"}
    return parse_frame(obj, where), None, mount


def _mount_zones(cables, obstacles) -> tuple:
    """The obstacles, each mesh a connector is mounted on with its mount zones ("mount_zones": [[x, y,
    z, radius], ...], not a field of the format) where the connector is within DETECT_RADII cable radii
    of it (farther, it is not on it: no zone). CaseError for an outlet pointing into its mounting mesh."""
    named = {o["name"]: k for k, o in enumerate(obstacles) if o["type"] == "mesh" and "name" in o}
    zones = {}
    for i, cable in enumerate(cables):
        for side, frame, mount in (("start", cable.start, cable.start_mount), ("end", cable.end, cable.end_mount)):
            if mount is None:
                continue
            if mount not in named:
                raise CaseError(
                    f"cables[{i}].{side}.mounted_on {show(mount)} names no mesh obstacle (mesh obstacles are "
                    "named by their name)"
                )
            k = named[mount]
            verts = np.asarray(obstacles[k]["vertices"], dtype=np.float64)
            tris = verts[np.asarray(obstacles[k]["triangles"], dtype=np.int64)]
            distance, _point, normal, _index = closest_on_triangles(frame.position, tris)
            radius = 0.5 * cable.diameter
            if not distance <= DETECT_RADII * radius:
                continue
            outlet = frame.tangent if side == "start" else -frame.tangent  # out of the connector
            if points_into(outlet, normal):
                raise CaseError(
                    f"cables[{i}].{side}: its outlet points into obstacle {show(mount)}, which it is mounted on; "
                    f"turn the outlet away from {show(mount)}"
                )
            zones.setdefault(k, []).append([*frame.position.tolist(), distance + mount_radius(radius, outlet, normal)])
    return tuple({**o, "mount_zones": zones[k]} if k in zones else o for k, o in enumerate(obstacles))


def _parse_cable(obj, where, junctions=None) -> CableSpec:
    _check_keys(
        obj,
        (
            "id",
            "length",
            "diameter",
            "material",
            "bundle",
            "segments",
            "start",
            "end",
            "clips",
            "loads",
            "route",
            "rest",
            "allowed_bend_radius",
        ),
        where,
    )
    bundle = None if obj.get("bundle") is None else parse_bundle(obj["bundle"], f"{where}.bundle", _number, as_int)
    for key in ("id", "length", "start") if bundle else ("id", "length", "diameter", "material", "start"):
        if key not in obj:
            raise CaseError(f"{where}.{key} is missing")
    cable_id = check_id(obj["id"], f"{where}.id")
    length = _number(obj["length"], f"{where}.length", positive=True, bound=MAX_EXTENT)
    if obj.get("diameter") is None and bundle is not None:
        diameter, place = bundle.diameter, f"{where}.bundle (its diameter)"
    else:
        diameter, place = _number(obj["diameter"], f"{where}.diameter", positive=True), f"{where}.diameter"
    if diameter < MIN_DIAMETER:
        raise CaseError(f"{place} = {diameter:g} is out of range (at least {MIN_DIAMETER:g} m)")
    if diameter >= length:
        raise CaseError(f"{place} ({diameter:g}) must be smaller than the length ({length:g})")
    if bundle is None:
        section = section_stiffness(obj["material"], diameter, f"{where}.material")
    else:
        given = {} if obj.get("material") is None else obj["material"]
        if not isinstance(given, dict):
            raise CaseError(f"{where}.material must be an object")
        odd = sorted(set(given) - set(BUNDLE_OVERRIDES))
        if odd:
            raise CaseError(
                f"{where}.material.{odd[0]}: with a bundle, material may only give measured "
                f"{', '.join(BUNDLE_OVERRIDES)} (they override the bundle's)"
            )
        try:
            section = section_stiffness({**bundle.section, **given}, diameter, f"{where}.material")
        except CaseError as exc:
            raise _under_bundle(exc, where, given) from None
    segments = as_int(obj.get("segments", 50), f"{where}.segments", 2, 200000)
    junctions = junctions or {}
    start_given, start_name = _connector_name(obj["start"], f"{where}.start")
    end_given, end_name = _connector_name(obj.get("end"), f"{where}.end")
    start, start_junction, start_mount = _parse_end(start_given, f"{where}.start", junctions)
    end, end_junction, end_mount = (
        (None, None, None) if end_given is None else _parse_end(end_given, f"{where}.end", junctions)
    )
    if start_junction is not None and end is not None:
        start_junction = untwisted_normal(start_junction, end.normal)
        start = Frame(start.position, start.tangent, start_junction.normal)
    if end_junction is not None:
        end_junction = untwisted_normal(end_junction, start.normal)
        end = Frame(end.position, end.tangent, end_junction.normal)
    clips_raw = obj.get("clips", [])
    if not isinstance(clips_raw, list):
        raise CaseError(f"{where}.clips must be a list")
    clips = tuple(_parse_clip(c, f"{where}.clips[{i}]", length) for i, c in enumerate(clips_raw))
    _check_clip_intervals(where, clips)
    _check_clip_breaks(where, clips, length, segments)
    loads_raw = obj.get("loads", [])
    if not isinstance(loads_raw, list):
        raise CaseError(f"{where}.loads must be a list")
    loads = tuple(_parse_load(c, f"{where}.loads[{i}]", length) for i, c in enumerate(loads_raw))
    route = None
    if obj.get("route") is not None:
        r = obj["route"]
        if not isinstance(r, list) or len(r) < 2:
            raise CaseError(f"{where}.route must be a list of at least 2 points")
        route = np.array([_vector(p, f"{where}.route[{i}]") for i, p in enumerate(r)])
        if np.linalg.norm(np.diff(route, axis=0), axis=1).sum() <= 0.0:
            raise CaseError(f"{where}.route has zero length")
    allowed = obj.get("allowed_bend_radius")
    if allowed is not None:
        allowed = _number(allowed, f"{where}.allowed_bend_radius", positive=True, bound=MAX_EXTENT)
    rest = None if obj.get("rest") is None else parse_rest(obj["rest"], f"{where}.rest", _number, _vector)
    check_rest_resolution(rest, length, segments, f"{where}.rest")
    check_reachable(cable_id, where, start, end, clips, length)
    given = {} if obj.get("material") is None else obj["material"]
    material = {key: value if key == "preset" else float(value) for key, value in given.items()}
    return CableSpec(
        cable_id,
        length,
        diameter,
        material,
        section,
        segments,
        start,
        end,
        clips,
        loads,
        route,
        rest,
        bundle,
        bundle is None or obj.get("diameter") is not None,
        start_junction,
        end_junction,
        allowed,
        start_mount,
        end_mount,
        (start_name, end_name),
    )


def _connector_name(obj, where) -> tuple:
    """(the end without its ``connector`` key, the connector's name or None)."""
    if not isinstance(obj, dict) or "connector" not in obj:
        return obj, None
    if "junction" in obj:
        raise CaseError(f"{where}.connector: a junction end has no connector (the junction holds it)")
    name_given = obj["connector"]
    if not isinstance(name_given, str) or not name_given.strip() or len(name_given) > MAX_CONNECTOR_NAME:
        raise CaseError(f"{where}.connector must be a non-empty text of at most {MAX_CONNECTOR_NAME} characters")
    return {k: v for k, v in obj.items() if k != "connector"}, check_id(name_given, f"{where}.connector")


def _table(value, floats):
    """An (n, 3) array of JSON numbers (integers, and floats when ``floats``), or None for anything
    else: rows of other lengths, strings, booleans, integers beyond 64 bits."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError, RecursionError):  # ragged rows, nesting beyond numpy's
        return None
    kinds = "iuf" if floats else "iu"
    if arr.ndim != 2 or arr.shape[1] != 3 or (arr.size and arr.dtype.kind not in kinds):
        return None
    return arr


def _parse_obstacle(obj, where):
    if not isinstance(obj, dict) or "type" not in obj:
        raise CaseError(f"{where} must be an object with a type")
    kind = obj["type"] if isinstance(obj["type"], str) else None
    if kind == "plane":
        _check_keys(obj, ("type", "point", "normal"), where)
        return {
            "type": "plane",
            "point": _vector(obj.get("point"), f"{where}.point").tolist(),
            "normal": _unit(obj.get("normal"), f"{where}.normal").tolist(),
        }
    if kind == "sphere":
        _check_keys(obj, ("type", "center", "radius"), where)
        return {
            "type": "sphere",
            "center": _vector(obj.get("center"), f"{where}.center").tolist(),
            "radius": _number(obj.get("radius"), f"{where}.radius", positive=True, bound=MAX_EXTENT),
        }
    if kind == "mesh":
        _check_keys(obj, ("type", "vertices", "triangles", "name"), where)
        verts = _table(obj.get("vertices"), floats=True)
        if verts is None or not np.isfinite(verts).all() or np.abs(verts).max(initial=0.0) > MAX_EXTENT:
            raise CaseError(
                f"{where}.vertices must be a list of [x, y, z], each a finite number within {MAX_EXTENT:g} m"
            )
        verts = verts.astype(np.float64)
        tris = _table(obj.get("triangles"), floats=False)
        if tris is None or tris.size == 0:
            raise CaseError(f"{where}.triangles must be a non-empty list of [i, j, k] integer triples")
        if tris.min() < 0 or tris.max() >= len(verts):
            raise CaseError(f"{where}.triangles refers to a vertex index outside 0..{len(verts) - 1}")
        mesh = {"type": "mesh", "vertices": verts.tolist(), "triangles": tris.tolist()}
        if "name" in obj:
            if not isinstance(obj["name"], str):
                raise CaseError(f"{where}.name must be a string, got {show(obj['name'])}")
            mesh["name"] = obj["name"]
        return mesh
    raise CaseError(f"{where}.type must be plane, sphere or mesh, got {show(obj['type'])}")


def _parse_step(obj, where, cables_by_id):
    _check_keys(obj, ("cables", "junctions", "duration"), where)
    changes = {}
    cables = obj.get("cables", {})
    if not isinstance(cables, dict):
        raise CaseError(f"{where}.cables must be an object keyed by cable id")
    for cable_id, change in cables.items():
        w = f"{where}.cables.{name(cable_id)}"
        if cable_id not in cables_by_id:
            raise CaseError(f"{w}: there is no cable with id {show(cable_id)}")
        cable = cables_by_id[cable_id]
        _check_keys(change, ("start", "end", "clips"), w)
        for side, held in cable.junction_ends():
            if side in change:
                raise CaseError(
                    f"{w}.{side}: the {side} of cable {show(cable_id)} is held by junction {show(held.junction)}; "
                    f"a step moves the junction ({where}.junctions), if it is fixed"
                )
        start = parse_frame(change["start"], f"{w}.start") if "start" in change else None
        end = None
        if "end" in change:
            if cable.end is None:
                raise CaseError(f"{w}.end: cable {show(cable_id)} has a free end, a step cannot move it")
            end = parse_frame(change["end"], f"{w}.end")
        clips = {}
        raw = change.get("clips", {})
        if not isinstance(raw, dict):
            raise CaseError(f"{w}.clips must be an object keyed by clip index")
        for key, clip_change in raw.items():
            if not (isinstance(key, str) and key.isascii() and key.isdigit() and int(key) < len(cable.clips)):
                raise CaseError(
                    f"{w}.clips.{name(key)}: cable {show(cable_id)} has clips "
                    f"{f'0..{len(cable.clips) - 1}' if cable.clips else 'none'}"
                )
            _check_keys(clip_change, ("frame",), f"{w}.clips.{key}")
            if "frame" not in clip_change:
                raise CaseError(f"{w}.clips.{key}.frame is missing")
            clips[int(key)] = parse_frame(clip_change["frame"], f"{w}.clips.{key}.frame")
        changes[cable_id] = CableChange(start, end, clips)
    return changes


ROTATION_TOLERANCE = 1e-6  # of R^T R from the identity: rotations built in float64 are far closer


def api_frame(frame, where) -> Frame:
    """A Frame given to the Python API, checked as a case file's frame is (3 finite numbers within
    range, unit tangent and normal within UNIT_TOLERANCE, perpendicular) and returned as float arrays,
    normalised: lists and tuples are taken as well as arrays."""
    if not isinstance(frame, Frame):
        raise CaseError(f"{where} must be a Frame, got {type(frame).__name__}")
    if _passes_unchanged(frame):
        return frame
    fields = {"position": frame.position, "tangent": frame.tangent}
    if frame.normal is not None:
        fields["normal"] = frame.normal
    checked = parse_frame(fields, where)
    # a frame that is already what the check makes of it is passed on as given, bit for bit (the
    # case's own frames, and those of callers that normalise): the same input, the same solve
    given = [frame.position, frame.tangent] + ([frame.normal] if frame.normal is not None else [])
    if all(isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (3,) for a in given):
        made = [checked.position, checked.tangent] + ([checked.normal] if checked.normal is not None else [])
        # (|a - b| <= 1e-12 as np.allclose with rtol 0 has it, NaN false; allclose cost 36 us a call,
        # 2 ms of a Simulate tick on the equipment bay)
        if all(float(np.abs(a - b).max()) <= 1e-12 for a, b in zip(given, made)):
            return frame
    return checked


# |t.t - 1| and |n.t| at most this: parse_frame's normalising moves no component of such a frame by
# more than about 1e-14, far inside api_frame's 1e-12
_ROUND_OFF = 1e-14


def _passes_unchanged(frame: Frame) -> bool:
    """Whether ``frame`` is float64 arrays that parse_frame accepts and leaves as they are, to round-off:
    finite, in range, a unit tangent (and normal perpendicular to it). Checked at once, without
    parse_frame's element-wise messages (70 us a frame, 1.3 ms of a Simulate tick on the equipment
    bay); any other frame goes the long way, which names what is wrong."""
    given = (frame.position, frame.tangent) if frame.normal is None else (frame.position, frame.tangent, frame.normal)
    if not all(isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (3,) for a in given):
        return False
    if not (np.isfinite(given[0]).all() and float(np.abs(given[0]).max()) <= MAX_EXTENT):
        return False
    t = given[1]
    if not abs(float(t @ t) - 1.0) <= _ROUND_OFF:  # NaN fails too
        return False
    if frame.normal is None:
        return True
    n = given[2]
    return abs(float(n @ n) - 1.0) <= _ROUND_OFF and abs(float(n @ t)) <= _ROUND_OFF


def api_rotation(value, where) -> np.ndarray:
    """A 3x3 proper rotation (orthonormal, determinant +1) given to the Python API, as a float array:
    a scaled matrix or a reflection would move the junction's cables to frames no rotation reaches."""
    try:
        r = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise CaseError(f"{where} must be a 3x3 rotation matrix, got {show(value)}") from None
    if r.shape != (3, 3) or not np.isfinite(r).all():
        raise CaseError(f"{where} must be a 3x3 rotation matrix of finite numbers, got {show(value)}")
    off = float(np.abs(r.T @ r - np.eye(3)).max())
    if off > ROTATION_TOLERANCE:
        raise CaseError(f"{where} is not a rotation: its columns are not orthonormal (R^T R - I is {off:.3g})")
    if np.linalg.det(r) < 0.0:
        raise CaseError(f"{where} is a reflection (determinant -1), not a rotation")
    return r


def check_step_request(case: Case, changes, cable_ids=None, junction_moves=None) -> tuple:
    """What Harness.solve_step is asked must name the case's cables and fixed junctions, leave the ends
    held by junctions to them, and give frames, positions and rotations the case format would accept:
    CaseError otherwise. Returns (changes, junction_moves) with their frames as checked float arrays."""
    known = {c.id: c for c in case.cables}
    if not isinstance(changes, dict):
        raise CaseError(f"changes must be a dict of cable id -> CableChange, got {type(changes).__name__}")
    checked = {}
    for cid, change in changes.items():
        if not isinstance(cid, str) or cid not in known:
            raise CaseError(f"changes.{name(cid)}: there is no cable with id {show(cid)}")
        if not isinstance(change, CableChange):
            raise CaseError(f"changes.{name(cid)} must be a CableChange, got {type(change).__name__}")
        for side, held in known[cid].junction_ends():
            if getattr(change, side) is not None:
                raise CaseError(
                    f"changes.{name(cid)}.{side}: the {side} of cable {show(cid)} is held by junction "
                    f"{show(held.junction)}; move the junction instead"
                )
        if change.end is not None and known[cid].end is None:
            raise CaseError(f"changes.{name(cid)}.end: cable {show(cid)} has a free end, a step cannot move it")
        if not isinstance(change.clips, dict):
            raise CaseError(f"changes.{name(cid)}.clips must be a dict of clip index -> Frame")
        for k in change.clips:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < len(known[cid].clips):
                raise CaseError(
                    f"changes.{name(cid)}.clips.{name(k)}: cable {show(cid)} has {len(known[cid].clips)} clips"
                )
        w = f"changes.{name(cid)}"
        checked[cid] = CableChange(
            None if change.start is None else api_frame(change.start, f"{w}.start"),
            None if change.end is None else api_frame(change.end, f"{w}.end"),
            {int(k): api_frame(f, f"{w}.clips.{k}") for k, f in change.clips.items()},
        )
    if junction_moves is not None and not isinstance(junction_moves, dict):
        raise CaseError(f"junction_moves must be a dict of junction id -> JunctionMove, got {show(junction_moves)}")
    moves = {}
    for jid, move in (junction_moves or {}).items():
        if not isinstance(jid, str) or jid not in case.junctions:
            raise CaseError(f"junction_moves.{name(jid)}: there is no junction with id {show(jid)}")
        if not case.junctions[jid].fixed:
            raise CaseError(f"junction_moves.{name(jid)}: junction {show(jid)} is free; its place is solved for")
        if not isinstance(move, JunctionMove):
            raise CaseError(f"junction_moves.{name(jid)} must be a JunctionMove, got {type(move).__name__}")
        w = f"junction_moves.{name(jid)}"
        moves[jid] = JunctionMove(
            None if move.position is None else _vector(move.position, f"{w}.position"),
            None if move.rotation is None else api_rotation(move.rotation, f"{w}.rotation"),
        )
    if cable_ids is not None:
        if isinstance(cable_ids, str):
            raise CaseError("cable_ids must be a list of cable ids, not one string")
        try:
            ids = list(cable_ids)
        except TypeError:
            raise CaseError(f"cable_ids must be a list of cable ids, got {show(cable_ids)}") from None
        for cid in ids:
            if not isinstance(cid, str) or cid not in known:
                raise CaseError(f"cable_ids: there is no cable with id {show(cid)}")
    return checked, moves


def parse_case(doc) -> Case:
    """Validate a case document (already decoded from JSON) and build the in-memory case."""
    _check_keys(doc, ("format", "gravity", "cables", "obstacles", "contact", "solver", "steps", "junctions"), "case")
    if doc.get("format") != CASE_FORMAT:
        raise CaseError(f"case.format must be {CASE_FORMAT!r}, got {show(doc.get('format'))}")
    gravity = _vector(doc.get("gravity", [0.0, 0.0, -9.81]), "gravity", MAX_GRAVITY)
    raw_cables = doc.get("cables")
    if not isinstance(raw_cables, list) or not raw_cables:
        raise CaseError("cables must be a non-empty list")
    junctions = parse_junctions(doc.get("junctions", []), _number, _vector, _unit, show)
    cables = tuple(_parse_cable(c, f"cables[{i}]", junctions) for i, c in enumerate(raw_cables))
    ids = [c.id for c in cables]
    for i, cid in enumerate(ids):
        if cid in ids[:i]:
            raise CaseError(f"cables[{i}].id {show(cid)} is used twice")
    if junctions:
        ends = [(c.id, side, e.junction) for c in cables for side, e in c.junction_ends()]
        anchors = {
            c.id
            for c in cables
            if c.start_junction is None or (c.end is not None and c.end_junction is None) or c.clips
        }
        check_junction_graph(junctions, ends, anchors, show)
    wires = route_wires(cables, CaseError)
    raw_obstacles = doc.get("obstacles", [])
    if not isinstance(raw_obstacles, list):
        raise CaseError("obstacles must be a list")
    obstacles = _mount_zones(cables, tuple(_parse_obstacle(o, f"obstacles[{i}]") for i, o in enumerate(raw_obstacles)))
    contact = doc.get("contact", {})
    _check_keys(contact, ("friction_static", "friction_dynamic", "cable_cable"), "contact")
    for key in ("friction_static", "friction_dynamic"):
        if key in contact:
            _number(contact[key], f"contact.{key}", non_negative=True, bound=MAX_FRICTION)
    contact = {
        key: _number(value, f"contact.{key}") if key != "cable_cable" else value for key, value in contact.items()
    }
    if "cable_cable" in contact:
        if not isinstance(contact["cable_cable"], (bool, np.bool_)):
            raise CaseError("contact.cable_cable must be true or false")
        contact["cable_cable"] = bool(contact["cable_cable"])
    raw_solver = doc.get("solver", {})
    _check_keys(raw_solver, ("model", "tolerance", "max_iterations", "ultimate_strain", "dynamics"), "solver")
    model = raw_solver.get("model", "cosserat")
    if not isinstance(model, str) or model not in SOLVER_MODELS:
        raise CaseError(f"solver.model {show(model)} is not available; use one of {', '.join(SOLVER_MODELS)}")
    tolerance = _number(raw_solver.get("tolerance", 1e-8), "solver.tolerance", positive=True, bound=1.0)
    max_iterations = as_int(raw_solver.get("max_iterations", 200), "solver.max_iterations", 1, MAX_ITERATIONS)
    ultimate = _number(raw_solver.get("ultimate_strain", 0.005), "solver.ultimate_strain", positive=True, bound=10.0)
    raw_steps = doc.get("steps", [])
    if not isinstance(raw_steps, list):
        raise CaseError("steps must be a list")
    by_id = {c.id: c for c in cables}
    steps = tuple(_parse_step(s, f"steps[{i}]", by_id) for i, s in enumerate(raw_steps))
    dynamics = _parse_dynamics(raw_solver.get("dynamics"), model, junctions)
    durations = tuple(_parse_duration(s, f"steps[{i}]", dynamics) for i, s in enumerate(raw_steps))
    junction_steps = tuple(
        parse_junction_moves(s.get("junctions", {}), f"steps[{i}].junctions", junctions, _vector, _unit, show)
        for i, s in enumerate(raw_steps)
    )
    # Frames moved by steps must stay reachable, with the changes accumulated in order.
    current = {c.id: (c.start, c.end, list(c.clips)) for c in cables}
    for i, (step, moves) in enumerate(zip(steps, junction_steps)):
        step = dict(step)
        for cable in cables:  # the ends held by fixed junctions that move (free ones are solved for)
            for side, held in cable.junction_ends():
                if held.junction in moves and moves[held.junction].position is not None:
                    frame = current[cable.id][0 if side == "start" else 1]
                    moved = Frame(moves[held.junction].position, frame.tangent, frame.normal)
                    change = step.get(cable.id, CableChange())
                    step[cable.id] = CableChange(
                        moved if side == "start" else change.start, moved if side == "end" else change.end, change.clips
                    )
        for cid, change in step.items():
            start, end, clips = current[cid]
            start = change.start or start
            end = change.end or end
            for k, frame in change.clips.items():
                old = clips[k]
                clips[k] = Clip(old.s, frame, old.kind, old.length, old.stiffness)
            current[cid] = (start, end, clips)
            check_reachable(cid, f"steps[{i}].cables.{cid}", start, end, clips, by_id[cid].length)
    check_model_features(model, cables, obstacles, contact, junctions)
    return Case(
        cables,
        gravity,
        obstacles,
        dict(contact),
        SolverSettings(model, tolerance, max_iterations, ultimate, dynamics),
        steps,
        junctions,
        junction_steps if any(junction_steps) else (),
        wires,
        durations if dynamics is not None else (),
        _case_warnings(cables),
    )


def _case_warnings(cables) -> tuple:
    out = []
    for i, c in enumerate(cables):
        if c.bundle is not None and c.diameter_given and c.diameter < c.bundle.diameter * (1.0 - 1e-9):
            out.append(
                f"cables[{i}].diameter = {c.diameter * 1e3:.3g} mm is less than its bundle's "
                f"{c.bundle.diameter * 1e3:.3g} mm (its wires packed, with the sheath): the contact radius "
                f"lets the wires pass into what they touch"
            )
    return tuple(out)


def check_dynamics(case: Case, duration: float) -> None:
    """CaseError for a dynamic step the integrator cannot take: a case (also one built in code, not
    parsed) whose model or junctions dynamics does not cover, or too many time steps for ``duration``."""
    dynamics = case.solver.dynamics
    check_dynamics_features(case.solver.model, case.junctions)
    if not dynamics.time_step >= MIN_TIME_STEP:
        raise CaseError(f"solver.dynamics.time_step must be at least {MIN_TIME_STEP:g} s, got {dynamics.time_step!r}")
    if duration / dynamics.time_step > MAX_TIME_STEPS:
        raise CaseError(
            f"duration: {duration:g} s takes more than {MAX_TIME_STEPS} time steps of solver.dynamics.time_step "
            f"{dynamics.time_step:g} s; split the step or lengthen the time step"
        )


def _parse_dynamics(raw, model, junctions) -> Dynamics | None:
    """``solver.dynamics`` (None when absent): CaseError naming the field for anything else than a time
    step and a damping the integrator (dynamics.py) can use with this case's model and features."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise CaseError(f"solver.dynamics must be an object with time_step and damping, got {show(raw)}")
    _check_keys(raw, ("time_step", "damping"), "solver.dynamics")
    if "time_step" not in raw:
        raise CaseError("solver.dynamics.time_step is missing (seconds, e.g. 0.001)")
    time_step = _number(raw["time_step"], "solver.dynamics.time_step", positive=True, bound=MAX_EXTENT)
    if time_step < MIN_TIME_STEP:
        raise CaseError(f"solver.dynamics.time_step must be at least {MIN_TIME_STEP:g} s, got {show(raw['time_step'])}")
    damping = _number(raw.get("damping", 0.0), "solver.dynamics.damping", non_negative=True, bound=MAX_DAMPING)
    check_dynamics_features(model, junctions)
    return Dynamics(time_step, damping)


def step_duration(case: Case, index: int) -> float:
    """The duration of the case's step ``index`` (DEFAULT_DURATION where a case built in code gives none)."""
    durations = case.step_durations
    return durations[index] if index < len(durations) else DEFAULT_DURATION


def _parse_duration(step, where, dynamics) -> float:
    """A step's ``duration`` [s]: only in a dynamic case; DEFAULT_DURATION where not given."""
    if "duration" in step and dynamics is None:
        raise CaseError(f"{where}.duration: a step has a duration only when solver.dynamics is given")
    if dynamics is None:
        return DEFAULT_DURATION
    duration = _number(step.get("duration", DEFAULT_DURATION), f"{where}.duration", positive=True, bound=MAX_EXTENT)
    if duration / dynamics.time_step > MAX_TIME_STEPS:
        raise CaseError(
            f"{where}.duration: {duration:g} s takes more than {MAX_TIME_STEPS} time steps of "
            f"solver.dynamics.time_step {dynamics.time_step:g} s; split the step or lengthen the time step"
        )
    return duration


MAX_INPUT_BYTES = 64 * 1024 * 1024  # a case or sweep file; the largest meshes of real harnesses take a few MB


class _Duplicated(dict):
    """A decoded JSON object in which ``key`` was given twice."""

    key = None


def _note_duplicate_keys(pairs, found: list):
    out = {}
    for key, value in pairs:
        if key in out:
            marked = _Duplicated(pairs)
            marked.key = key
            found.append(key)
            return marked
        out[key] = value
    return out


def _duplicate_key_place(doc) -> tuple | None:
    """(field path, key) of the first object (in document order) whose key was given twice."""
    stack = [(doc, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, _Duplicated):
            return where or "the top-level object", value.key
        if isinstance(value, dict):
            items = [(v, f"{where}.{name(k)}" if where else name(k)) for k, v in value.items()]
        elif isinstance(value, list):
            items = [(v, f"{where}[{i}]") for i, v in enumerate(value)]
        else:
            continue
        stack.extend(reversed(items))
    return None


def check_input_file(path, what: str, limit: int = MAX_INPUT_BYTES) -> None:
    """CaseError (naming the file) unless ``path`` is a regular file of at most ``limit`` bytes: a
    folder, device or pipe is refused before it is read (reading could block or never end)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise CaseError(f"cannot read {what} {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, pipe or socket)"
        raise CaseError(f"cannot read {what} {path}: it is {kind}")
    if info.st_size > limit:
        raise CaseError(
            f"{what} {path} is {info.st_size / 2**20:.0f} MB, more than the {limit // 2**20} MB a {what} may have"
        )


def read_json(path, what="case file"):
    """A JSON document from a file; CaseError (naming the file) for anything that is not one: a file
    larger than MAX_INPUT_BYTES, a folder, a device or a pipe (refused before reading, which could
    block or never end), text that is not JSON, a key given twice in an object."""
    check_input_file(path, what)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)  # the file may have grown since
    except OSError as exc:
        raise CaseError(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise CaseError(f"{what} {path} is more than the {MAX_INPUT_BYTES // 2**20} MB a {what} may have")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaseError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    try:
        found = []
        doc = json.loads(text, object_pairs_hook=lambda pairs: _note_duplicate_keys(pairs, found))
    except json.JSONDecodeError as exc:
        raise CaseError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise CaseError(f"{path} nests lists or objects too deeply to be a {what}") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise CaseError(f"{path} is not valid JSON: {str(exc).splitlines()[0][:80]}") from None
    # JSON leaves a key given twice open and Python's decoder keeps the last silently: which value
    # the user meant cannot be known, so it is refused
    place = _duplicate_key_place(doc) if found else None
    if place is not None:
        raise CaseError(f"{path}: {place[0]} gives the key {show(place[1])} twice; give each key once")
    return doc


def load_case(path) -> Case:
    return parse_case(read_json(path))
