# SPDX-License-Identifier: GPL-3.0-or-later
"""Scene <-> solver: harness objects to a case document, solved cables back to curves.

The case document is the contract (docs/case-format.md): the Blender layer builds the same
document it exports, and solver_core validates it, so a scene solved here and its exported case
solved by the CLI give the same nodes. Blender stores lengths in Blender units; one unit is
``scene.unit_settings.scale_length`` metres, so a CAD scene in millimetres (scale 0.001) and one in
metres describe the same physical harness. ``scene.gravity`` is taken in m/s^2.
"""

import hashlib
import math
import re

import numpy as np

from ..solver_core import (
    PRESETS,
    CableChange,
    CaseError,
    Frame,
    bundle_diameter,
    mount_radius,
    parse_case,
    points_into,
)

CONNECTOR, CLIP, CABLE, COLLIDER, JUNCTION = "CONNECTOR", "CLIP", "CABLE", "COLLIDER", "JUNCTION"
CABLE_ENDS = (CONNECTOR, JUNCTION)  # what may hold a cable's end


class HarnessInputError(ValueError):
    """The scene cannot be turned into a case: the message names the object and what is wrong."""


def metres_per_unit(scene) -> float:
    scale = scene.unit_settings.scale_length
    return scale if scale > 0.0 else 1.0


# object types that can be cables and colliders (props.ROLE_OBJECT_TYPES offers the roles by these)
ROLE_OBJECT_TYPES = {CABLE: {"CURVE"}, COLLIDER: {"MESH"}, JUNCTION: {"EMPTY"}}


def harness_objects(scene, role):
    """The scene's objects with this role (and of a type that can carry it)."""
    types = ROLE_OBJECT_TYPES.get(role)
    return [ob for ob in scene.objects if ob.cable_harness.role == role and (types is None or ob.type in types)]


def _matrix(ob) -> np.ndarray:
    return np.array([list(row) for row in ob.matrix_world])


def rotation_of(ob) -> np.ndarray:
    """The rotation of an object's world matrix (its scale and shear taken out by polar decomposition)."""
    u, _s, vt = np.linalg.svd(_matrix(ob)[:3, :3])
    R = u @ vt
    if np.linalg.det(R) < 0.0:
        R = u @ np.diag([1.0, 1.0, -1.0]) @ vt
    return R


def attached(scene, ob):
    """``ob`` while it is in ``scene``, else None. An object deleted with X leaves the scene but stays
    in the file as long as a cable points at it (and undo links it back): a cable holds on to what the
    user sees, never to a holder the user deleted."""
    return ob if ob is not None and scene.objects.get(ob.name) == ob else None


def held_clips(scene, settings) -> list:
    """The clip list's entries that hold the cable: those of clips deleted from the scene are left out
    (an empty entry stays, to be refused by name)."""
    return [ref for ref in settings.clips if ref.clip is None or attached(scene, ref.clip) is not None]


def detached_notes(scene, ob) -> list:
    """What the cable lets go of because the user deleted it (the panel's notes, in its words)."""
    s = ob.cable_harness
    notes = []
    if s.start is not None and attached(scene, s.start) is None:
        notes.append(f"Start {s.start.name!r} was deleted: undo the delete, or pick another Start")
    if s.end is not None and attached(scene, s.end) is None:
        notes.append(f"End {s.end.name!r} was deleted: the cable's end hangs free (undo the delete, or pick an End)")
    for ref in s.clips:
        if ref.clip is not None and attached(scene, ref.clip) is None:
            notes.append(
                f"Clip {ref.clip.name!r} was deleted: the cable runs free there (undo the delete, or remove it "
                "from the clip list)"
            )
    return notes


def is_junction(ob) -> bool:
    return ob is not None and ob.cable_harness.role == JUNCTION and ob.type in ROLE_OBJECT_TYPES[JUNCTION]


def junction_end(junction, outward, side: str, cable_name: str) -> dict:
    """A cable end held by a junction (case format): ``outward`` is the direction from the junction into
    the cable in the junction's local axes (its outlet arrow); the case's outlet is the direction the
    cable leaves (start) or enters (end) the junction, world."""
    v = rotation_of(junction) @ np.asarray(outward, dtype=np.float64)
    n = float(np.linalg.norm(v))
    if not n > 1e-12:
        raise HarnessInputError(
            f"cable {cable_name!r}: its {side} outlet at junction {junction.name!r} has no direction"
        )
    v = v / n
    return {"junction": junction.name, "outlet": (v if side == "start" else -v).tolist()}


def junction_document(junction, scale) -> dict:
    j = junction.cable_harness
    doc = {
        "id": junction.name,
        "position": (_matrix(junction)[:3, 3] * scale).tolist(),
        "fixed": bool(j.junction_fixed),
    }
    if j.junction_mass > 0.0:
        doc["mass"] = float(j.junction_mass)
    return doc


def cable_junctions(scene, ob) -> list:
    """The junction objects holding a cable's ends."""
    s = ob.cable_harness
    return [h for h in (attached(scene, s.start), attached(scene, s.end)) if is_junction(h)]


def with_harness_mates(scene, cables) -> list:
    """``cables`` and every cable joined to them through junctions: a branched harness is solved whole."""
    chosen = list(cables)
    names = {ob.name for ob in chosen}
    junctions = {j.name for ob in chosen for j in cable_junctions(scene, ob)}
    grew = bool(junctions)
    while grew:
        grew = False
        for ob in harness_objects(scene, CABLE):
            mine = {j.name for j in cable_junctions(scene, ob)}
            if ob.name not in names and mine & junctions:
                chosen.append(ob)
                names.add(ob.name)
                junctions |= mine
                grew = True
    return chosen


def holder_frame(ob, scale, *, into=False, roll_free=False, flip=False) -> Frame:
    """The frame of a connector or clip in SI: position, tangent (local +Z) and normal (local +X).

    ``into``: the cable runs into this connector (its end), so the tangent is minus the outlet.
    ``flip``: a clip the cable passes against its local +Z axis.
    """
    M = _matrix(ob)
    axes = M[:3, :3]
    z_length = float(np.linalg.norm(axes[:, 2])) if np.all(np.isfinite(M)) else 0.0
    if not z_length > 1e-12:
        raise HarnessInputError(f"{ob.name!r} has no direction: its scale along its local Z axis is zero")
    z = axes[:, 2] / z_length
    x = axes[:, 0] - z * (axes[:, 0] @ z)
    norm_x = float(np.linalg.norm(x))
    tangent = -z if (into or flip) else z
    normal = x / norm_x if not roll_free and norm_x > 1e-12 else None
    return Frame(M[:3, 3] * scale, tangent, normal)


def end_mounts(scene, ob, colliders, cache, depsgraph) -> dict:
    """{side: (connector, colliders.Mount, outlet)} of the cable's connectors that sit on a collider:
    their Mounted On if set, else the nearest collider within reach (ColliderCache.mount). Raises
    HarnessInputError for a connector whose outlet points into the collider it sits on."""
    s = ob.cable_harness
    radius = 0.5 * cable_diameter(s)
    found = {}
    for side, holder in (("start", attached(scene, s.start)), ("end", attached(scene, s.end))):
        if holder is None or holder.cable_harness.role != CONNECTOR:
            continue
        chosen = attached(scene, holder.cable_harness.mounted_on)
        pool = [chosen] if chosen is not None and chosen.cable_harness.role == COLLIDER else colliders
        mount = cache.mount(pool, depsgraph, _matrix(holder)[:3, 3], radius)
        if mount is None:
            continue
        outlet = rotation_of(holder)[:, 2]
        if points_into(outlet, mount.normal):
            raise HarnessInputError(
                f"connector {holder.name!r} points its outlet into {mount.collider!r}, which it is mounted on: "
                f"turn the outlet away from {mount.collider!r} (Snap to Face sets it along the face's normal)"
            )
        found[side] = (holder, mount, outlet)
    return found


def mount_zone_radius(ob, mount, outlet) -> float:
    """The radius (Blender units) about a mounted connector within which its collider is no obstacle
    to the cable ``ob`` (solver_core.mount_radius, from the connector's point)."""
    return mount.distance + mount_radius(0.5 * cable_diameter(ob.cable_harness), outlet, mount.normal)


def object_frame(ob, scale, *, into=False, roll_free=False, flip=False) -> dict:
    """``holder_frame`` as a case-format frame."""
    frame = holder_frame(ob, scale, into=into, roll_free=roll_free, flip=flip)
    doc = {"position": frame.position.tolist(), "tangent": frame.tangent.tolist()}
    if frame.normal is not None:
        doc["normal"] = frame.normal.tolist()
    return doc


def check_apart(ob, first, last) -> None:
    """Two holders of a cable's ends closer than its diameter are one place, where no cable can run
    from one to the other (the solver found only a stretch past the ultimate strain): refused by name."""
    if first is None or last is None or first == last:
        return
    gap = float(np.linalg.norm(_matrix(first)[:3, 3] - _matrix(last)[:3, 3]))
    if gap < cable_diameter(ob.cable_harness):
        raise HarnessInputError(
            f"cable {ob.name!r}: its connectors {first.name!r} and {last.name!r} coincide (closer than the "
            "cable's diameter); move one of them away from the other"
        )


def holder_frames(scene, ob, scale) -> CableChange:
    """Where a cable's connectors and clips are now: the per-tick input of a cable already built."""
    s = ob.cable_harness
    first, last, refs = attached(scene, s.start), attached(scene, s.end), held_clips(scene, s)
    if first is None or any(ref.clip is None for ref in refs):
        raise HarnessInputError(f"cable {ob.name!r} lost a connector or clip")
    check_apart(ob, first, last)
    # an end held by a junction follows the junction (the solver's), never a frame of its own
    start = None if is_junction(first) else holder_frame(first, scale, roll_free=first.cable_harness.roll_free)
    end = (
        None
        if last is None or is_junction(last)
        else holder_frame(last, scale, into=True, roll_free=last.cable_harness.roll_free)
    )
    clips = {i: holder_frame(ref.clip, scale, flip=ref.reversed) for i, ref in enumerate(refs)}
    return CableChange(start=start, end=end, clips=clips)


def build_signature(scene, ob, scale) -> tuple:
    """Every setting of a cable that its solver model is built from (all but where its holders are
    and its route): when this changes, the cable is rebuilt; otherwise a tick is a step."""
    s = ob.cable_harness
    first, last = attached(scene, s.start), attached(scene, s.end)

    def holder(h):
        if is_junction(h):
            j = h.cable_harness
            return (JUNCTION, h.name, j.junction_fixed, j.junction_mass)
        return None if h is None else (h.cable_harness.role, h.cable_harness.roll_free)

    def clip(ref):
        c = None if ref.clip is None else ref.clip.cable_harness
        if c is None:
            return (ref.s, None)
        stiffness = (c.clip_translational_stiffness, c.clip_rotational_stiffness) if c.clip_compliant else None
        return (ref.s, c.role, c.clip_kind, c.clip_length, stiffness)

    material = (s.material,)
    if s.material == "CUSTOM":
        material += (s.youngs_modulus, s.poisson_ratio, s.density)
    if s.is_bundle:
        wires = tuple((w.diameter, w.count, w.material, w.youngs_modulus, w.poisson_ratio, w.density) for w in s.wires)
        material = ("BUNDLE", s.wrap, s.sheath, wires)
    return (
        scale,
        s.length,
        None if s.is_bundle else s.diameter,  # a bundle's follows from its wires, in ``material``
        s.segments,
        material,
        holder(first),
        holder(last),
        tuple(s.start_outlet) if is_junction(first) else None,
        tuple(s.end_outlet) if is_junction(last) else None,
        tuple(clip(ref) for ref in held_clips(scene, s)),
        _rest_signature(s),
    )


def _rest_points(settings) -> np.ndarray:
    """The stored rest shape's points (world, Blender units), read in one call."""
    co = np.empty(len(settings.rest_route) * 3, dtype=np.float32)
    settings.rest_route.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def _rest_signature(settings) -> tuple:
    """The rest shape's settings as they are (read on every tick: no document is built for it)."""
    if settings.rest_shape == "BENT":
        return ("BENT", settings.rest_bend_radius, settings.rest_bend_direction, settings.rest_twist)
    if settings.rest_shape == "CURVE":
        return ("CURVE", _rest_points(settings).tobytes())
    return ("STRAIGHT",)


def rest_document(settings, scale) -> dict | None:
    """The case-format ``rest`` of a cable's settings (SI), or None for a straight cable."""
    if settings.rest_shape == "BENT":
        radius = settings.rest_bend_radius * scale
        kappa = 1.0 / radius if radius > 0.0 else 0.0  # 0: no bend, a twist alone
        a = settings.rest_bend_direction
        # bending towards cos(a) d1 + sin(a) d2: d3' = k2 d1 - k1 d2 (case format, Pre-formed cables)
        return {
            "curvature": [-kappa * math.sin(a), kappa * math.cos(a)],
            "twist": math.radians(settings.rest_twist),
        }
    if settings.rest_shape == "CURVE":
        if len(settings.rest_route) < 2:
            raise HarnessInputError("the rest shape has no stored shape (use Set Rest Shape from Curve)")
        return {"route": (_rest_points(settings) * scale).tolist()}
    return None


def material_document(settings) -> dict:
    """The case-format material of a cable's (or a bundle wire's) settings."""
    if settings.material == "CUSTOM":
        return {"E": settings.youngs_modulus * 1e6, "nu": settings.poisson_ratio, "density": settings.density}
    if settings.material not in PRESETS:
        raise HarnessInputError(f"unknown material preset {settings.material!r}")
    return {"preset": settings.material}


def cable_diameter(settings) -> float:
    """The cable's outer diameter in Blender units: its own, or its bundle's (the solver's rule,
    solver_core.specs.bundle; the rule scales with the wires, so it holds in any unit)."""
    if not settings.is_bundle or not len(settings.wires):
        return settings.diameter
    diameters = [w.diameter for w in settings.wires]
    if min(diameters) <= 0.0:
        return 0.0
    return bundle_diameter(diameters, [w.count for w in settings.wires]) + 2.0 * settings.sheath


def bundle_document(settings, scale) -> dict:
    """The case-format ``bundle`` of a cable's settings (SI)."""
    if not len(settings.wires):
        raise HarnessInputError("it is a bundle without wires (add wires to its list, or untick Bundle of Wires)")
    return {
        "wires": [
            {
                "diameter": w.diameter * scale,
                "material": material_document(w),
                "count": w.count,
                **({"id": w.wire_id.strip()} if w.wire_id.strip() else {}),
            }
            for w in settings.wires
        ],
        "wrap": settings.wrap,
        "sheath": settings.sheath * scale,
    }


def cable_document(scene, ob, scale, with_route: bool = True) -> dict:
    """The case-format cable of one cable object (raises HarnessInputError naming what is missing);
    holders deleted from ``scene`` are let go of (detached_notes says which)."""
    s = ob.cable_harness
    name = ob.name
    first, last = attached(scene, s.start), attached(scene, s.end)
    if first is None:
        deleted = f": {s.start.name!r} was deleted (undo the delete, or pick another Start)" if s.start else ""
        raise HarnessInputError(f"cable {name!r} has no start connector{deleted}")
    if first.cable_harness.role not in CABLE_ENDS:
        raise HarnessInputError(f"cable {name!r}: start object {first.name!r} is not a connector or junction")
    end = None
    if last is not None:
        if last.cable_harness.role not in CABLE_ENDS:
            raise HarnessInputError(f"cable {name!r}: end object {last.name!r} is not a connector or junction")
        if is_junction(last):
            end = junction_end(last, s.end_outlet, "end", name)
        else:
            end = object_frame(last, scale, into=True, roll_free=last.cable_harness.roll_free)
            end["connector"] = last.name  # the connector's name: KBL nodes, formboard labels
        check_apart(ob, first, last)
    clips = []
    for index, ref in enumerate(s.clips):
        clip = ref.clip
        if clip is not None and attached(scene, clip) is None:
            continue  # deleted: let go of (held_clips)
        if clip is None:
            raise HarnessInputError(f"cable {name!r}: clip {index + 1} in its list is missing (deleted?)")
        c = clip.cable_harness
        entry = {
            "s": ref.s * scale,
            "kind": c.clip_kind,
            "length": c.clip_length * scale,
            "frame": object_frame(clip, scale, flip=ref.reversed, roll_free=False),
        }
        if c.clip_compliant:
            entry["stiffness"] = {
                "translational": c.clip_translational_stiffness,
                "rotational": c.clip_rotational_stiffness,
            }
        clips.append(entry)
    if s.is_bundle:
        try:
            parts = {"bundle": bundle_document(s, scale)}
        except HarnessInputError as exc:
            raise HarnessInputError(f"cable {name!r}: {exc}") from None
    else:
        parts = {"diameter": s.diameter * scale, "material": material_document(s)}
    doc = {
        "id": name,
        "length": s.length * scale,
        **parts,
        "segments": s.segments,
        "start": (
            junction_end(first, s.start_outlet, "start", name)
            if is_junction(first)
            else object_frame(first, scale, roll_free=first.cable_harness.roll_free) | {"connector": first.name}
        ),
        "end": end,
        "clips": clips,
    }
    try:
        rest = rest_document(s, scale)
    except HarnessInputError as exc:
        raise HarnessInputError(f"cable {name!r}: {exc}") from None
    if rest is not None:
        doc["rest"] = rest
    if s.min_bend_radius_allowed > 0.0:
        doc["allowed_bend_radius"] = s.min_bend_radius_allowed * scale
    if not with_route:
        return doc
    current = _solved_centre_line(ob, s)
    if current is not None:
        # start from what the user sees: the last result, not the drawn route
        doc["route"] = (current * scale).tolist()
    elif len(s.route) >= 2:
        doc["route"] = [(np.array(p.co) * scale).tolist() for p in s.route]
    return doc


def _solved_centre_line(ob, settings):
    """The cable curve's points (world, Blender units) if they hold a result for these settings."""
    if not settings.result_valid or ob.type != "CURVE" or len(ob.data.splines) != 1:
        return None
    points = ob.data.splines[0].points
    if len(points) != settings.segments + 1:
        return None
    co = np.empty(len(points) * 4, dtype=np.float32)
    points.foreach_get("co", co)
    local = co.reshape(-1, 4)[:, :3].astype(np.float64)
    M = _matrix(ob)
    world = local @ M[:3, :3].T + M[:3, 3]
    length = float(np.linalg.norm(np.diff(world, axis=0), axis=1).sum())
    return world if abs(length - settings.length) <= 0.01 * settings.length else None


def case_document(scene, cable_objects=None) -> dict:
    """The scene's harness as a case document (SI units)."""
    scale = metres_per_unit(scene)
    cables = harness_objects(scene, CABLE) if cable_objects is None else list(cable_objects)
    if not cables:
        raise HarnessInputError("the scene has no cable (mark a curve as a cable or use Add > Cable Harness)")
    gravity = list(scene.gravity) if scene.use_gravity else [0.0, 0.0, 0.0]
    doc = {
        "format": "cable-harness-case/1",
        "gravity": gravity,
        "cables": [cable_document(scene, ob, scale) for ob in cables],
        "contact": scene.cable_harness.contact_document(),
        "solver": {"model": scene.cable_harness.model},
    }
    dynamics = scene.cable_harness.dynamics_document()
    if dynamics is not None:
        doc["solver"]["dynamics"] = dynamics
    junctions = {}
    for ob in cables:
        for j in cable_junctions(scene, ob):
            junctions.setdefault(j.name, j)
    if junctions:
        doc["junctions"] = [junction_document(j, scale) for j in junctions.values()]
    return doc


def result_inputs(scene, ob) -> str:
    """A digest of every setting the cable's result follows from: what its case is built from (its own
    settings, its holders' kinds and settings, which clips it passes which way round), the scene's
    gravity, contact, Model and Motion, and the bend limit its read-outs are checked against. Where
    its holders are and the colliders are not settings, and not in it."""
    settings = scene.cable_harness
    s = ob.cable_harness
    key = (
        build_signature(scene, ob, metres_per_unit(scene)),
        tuple(ref.reversed for ref in held_clips(scene, s)),
        s.min_bend_radius_allowed,
        tuple(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0),
        tuple(sorted(settings.contact_document().items())),
        settings.model,
        repr(settings.dynamics_document()),
    )
    mounts = tuple(getattr(h.cable_harness.mounted_on, "name", None) for h in (s.start, s.end) if h is not None)
    if any(mounts):  # (only then: results solved before connectors had Mounted On stay current)
        key += (mounts,)
    return hashlib.sha1(repr(key).encode()).hexdigest()


def result_is_stale(scene, ob) -> bool:
    """Whether the cable's last result is of other settings than it has now (the panel says so). A
    result without a digest (a file saved before it was kept) goes by the settings changed since."""
    s = ob.cable_harness
    return s.result_stale or (bool(s.result_inputs) and s.result_inputs != result_inputs(scene, ob))


# the Model names of the panel (props: the scene's Model), by the case format's solver.model
MODEL_NAMES = {
    "cosserat": "Cosserat Rod",
    "mass_spring": "Mass-Spring (Lv 2017)",
    "kirchhoff_cg": "Kirchhoff Rod (Linn et al.)",
    "cosserat_pbd": "Cosserat Rod, PBD (Chen 2023)",
}
# a material's fields in the case format, as the panel names them
_MATERIAL_FIELDS = {"E": "Young's Modulus", "nu": "Poisson's Ratio", "density": "Density"}
_TO_ROD = "or set Model to Cosserat Rod"


def _model(name: str) -> str:
    return f"Model {MODEL_NAMES.get(name, name)}"


def _names(names) -> str:
    return f" ({', '.join(repr(n) for n in names)})" if names else ""


# what the solver refuses of a scene's settings, in the words of the panel and what to change there:
# (pattern of the whole message, its replacement given the match and a lookup of object names)
_SETTING_WORDS = [
    (
        re.compile(r"solver\.dynamics: solver\.model \W(\w+)\W is quasi-static here;.*"),
        lambda m, look: (
            f"Motion Dynamic: {_model(m[1])} is quasi-static only; set Motion to Quasi-static, "
            "or Model to Cosserat Rod or Cosserat Rod, PBD"
        ),
    ),
    (
        re.compile(r"solver\.dynamics: junctions \(branched harnesses\).*"),
        lambda m, look: (
            "Motion Dynamic: junctions (branched harnesses) are solved quasi-statically only"
            f"{_names(look.junctions())}; set Motion to Quasi-static"
        ),
    ),
    (
        re.compile(r"contact\.cable_cable: solver\.model \W(\w+)\W.*"),
        lambda m, look: (
            f"{_model(m[1])} has no contact between cables; untick Cable-Cable Contact (Contact panel), {_TO_ROD}"
        ),
    ),
    (
        re.compile(r"obstacles: solver\.model \W(\w+)\W.*"),
        lambda m, look: f"{_model(m[1])} has no contact with colliders; take the Collider role off them, {_TO_ROD}",
    ),
    (
        re.compile(r"junctions: solver\.model \W(\w+)\W.*"),
        lambda m, look: f"{_model(m[1])} does not model junctions{_names(look.junctions())}; {_TO_ROD[3:]}",
    ),
    (
        re.compile(r"cables\.(.+?)\.rest: solver\.model \W(\w+)\W.*"),
        lambda m, look: f"cable {m[1]!r}: {_model(m[2])} has no rest shape; set its Rest Shape to Straight, {_TO_ROD}",
    ),
    (
        re.compile(r"cables\.(.+?)\.clips\[(\d+)\]: solver\.model \W(\w+)\W.*"),
        lambda m, look: (
            f"cable {m[1]!r}: {look.clip(m[1], int(m[2]))}: {_model(m[3])} holds only fixed, "
            f"rigid clips with a length; set the clip's Kind to fixed, untick Compliant and give it a Length, {_TO_ROD}"
        ),
    ),
    (
        re.compile(r"cables\.(.+?)\.clips: solver\.model \W(\w+)\W.*"),
        lambda m, look: (
            f"cable {m[1]!r}: {_model(m[2])} holds a cable by its two ends only; remove the clips "
            f"from its Clips list, {_TO_ROD}"
        ),
    ),
    (
        re.compile(r"cables\.(.+?)\.segments: solver\.model \W(\w+)\W takes at most (\d+) segments.*"),
        lambda m, look: f"cable {m[1]!r}: {_model(m[2])} takes at most {m[3]} Segments; lower its Segments, {_TO_ROD}",
    ),
    (
        re.compile(
            r"cable '(.+?)'\.clips\[(\d+)\]\.s = (\S+ m) \(with length (\S+ m)\) lies outside the cable's "
            r"interior, 0 to (\S+ m)"
        ),
        lambda m, look: (
            f"cable {m[1]!r}: {look.clip(m[1], int(m[2]))} at Arc Length {m[3]} (clip Length "
            f"{m[4]}) lies outside the cable, 0 to {m[5]}; set its Arc Length in the Clips list within the "
            "cable, or lengthen the cable"
        ),
    ),
    (
        re.compile(r"cable '(.+?)'\.material\.(E|nu|density) (.*)"),
        lambda m, look: f"cable {m[1]!r}: its {_MATERIAL_FIELDS[m[2]]} {m[3]}; change its {_MATERIAL_FIELDS[m[2]]}",
    ),
    (
        re.compile(r"cable '(.+?)'\.bundle\.wires\[(\d+)\]\.material\.(E|nu|density) (.*)"),
        lambda m, look: (
            f"cable {m[1]!r}: wire {int(m[2]) + 1}'s {_MATERIAL_FIELDS[m[3]]} {m[4]}; change it in its Wires list"
        ),
    ),
]


class _SceneNames:
    """The names of the objects a message refers to by case-format index (none without a scene)."""

    def __init__(self, scene):
        self.scene = scene

    def junctions(self) -> list:
        return [] if self.scene is None else [ob.name for ob in harness_objects(self.scene, JUNCTION)]

    def clip(self, cable_name: str, index: int) -> str:
        """Clip ``index`` (of the case's clips: those held) of the cable, by number and name."""
        ob = None if self.scene is None else self.scene.objects.get(cable_name)
        refs = [] if ob is None else held_clips(self.scene, ob.cable_harness)
        name = f" {refs[index].clip.name!r}" if index < len(refs) and refs[index].clip is not None else ""
        return f"clip {index + 1}{name}"


# the solver's field paths in a message, as the panel names them
_FIELD_WORDS = [
    (re.compile(r"\.clips\[(\d+)\]\.s\b"), lambda m: f" clip {int(m.group(1)) + 1}'s arc position"),
    (re.compile(r"\.clips\[(\d+)\]\.length\b"), lambda m: f" clip {int(m.group(1)) + 1}'s length"),
    (re.compile(r"\.clips\[(\d+)\]"), lambda m: f" clip {int(m.group(1)) + 1}"),
    (re.compile(r"\bclips\[(\d+)\]"), lambda m: f"clip {int(m.group(1)) + 1}"),
    (
        re.compile(r"\.bundle\.wires\[(\d+)\]\.(\w+)"),
        lambda m: f" wire {int(m.group(1)) + 1}'s {'ID' if m.group(2) == 'id' else m.group(2)}",
    ),
    (re.compile(r"\.(length|diameter|segments)\b"), lambda m: f" {m.group(1)}"),
    (re.compile(r"\.(start|end)\b(?!\.)"), lambda m: f" {m.group(1)} connector"),
]
_MODEL_KEY = re.compile(r"solver\.model [\"'](\w+)[\"'](?: \([^)]*\))?")
_LENGTH = re.compile(r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?) m\b")
_UNIT_NAMES = {1.0: "m", 0.01: "cm", 0.001: "mm"}


def plain_message(text: str, scale: float = 1.0, scene=None) -> str:
    """A solver message in the panel's words: a refused setting named as the panel names it (the
    objects by name, with ``scene``) with what to change, field names instead of paths, lengths in the
    scene's unit (metres, centimetres or millimetres; other unit scales keep metres)."""
    names = _SceneNames(scene)
    for pattern, words in _SETTING_WORDS:
        text = pattern.sub(lambda m, words=words: words(m, names), text)
    for pattern, words in _FIELD_WORDS:
        text = pattern.sub(words, text)
    text = _MODEL_KEY.sub(lambda m: _model(m[1]), text).replace("use the cosserat model", "set Model to Cosserat Rod")
    # (scale_length is single precision: 0.001 arrives as 0.0010000000475)
    unit = next((name for factor, name in _UNIT_NAMES.items() if math.isclose(scale, factor, rel_tol=1e-6)), None)
    if unit is not None and unit != "m":
        text = _LENGTH.sub(lambda m: f"{float(m.group(1)) / scale:.6g} {unit}", text)
    return text


def parse_scene_case(doc, scale: float = 1.0, scene=None):
    """Validate with the solver's own rules; the message names the cable object and its settings as
    the panel does (its clips and junctions by name, with ``scene``), lengths in the scene's unit
    (``scale``: metres per Blender unit)."""
    try:
        return parse_case(doc)
    except CaseError as exc:
        text = str(exc)
        for i, cable in enumerate(doc["cables"]):
            text = text.replace(f"cables[{i}]", f"cable {cable['id']!r}")
        raise HarnessInputError(plain_message(text, scale, scene)) from None


def solvable_cables(scene, cable_objects) -> tuple[list, dict]:
    """The cables that can be solved as they are set, and for each of the others (by name) why not:
    one cable's bad input (a missing connector, no length) does not hold the others back. A cable is
    checked with its harness mates, as it is solved. Raises HarnessInputError with the reason the
    whole case is refused when no cable can be solved."""
    cables = list(cable_objects)
    scale = metres_per_unit(scene)
    try:
        parse_scene_case(case_document(scene, with_harness_mates(scene, cables)), scale, scene)
        return cables, {}
    except HarnessInputError as exc:
        if len(cables) < 2:
            raise
        whole = exc
    solvable, refused = [], {}
    for ob in cables:
        try:
            parse_scene_case(case_document(scene, with_harness_mates(scene, [ob])), scale, scene)
        except HarnessInputError as exc:
            refused[ob.name] = str(exc)
        else:
            solvable.append(ob)
    if not solvable:
        raise whole
    return solvable, refused


def refused_text(refused: dict) -> str:
    """``solvable_cables``' refusals as one line, each naming its cable."""
    return "; ".join(text if repr(name) in text else f"cable {name!r}: {text}" for name, text in refused.items())


def mark_refused_cables(scene, cable_objects) -> None:
    """After a solve was refused for bad input: each cable that cannot be solved as set says why in
    its read-outs, which would otherwise still show its last result as this solve's."""
    for ob in cable_objects:
        try:
            parse_scene_case(case_document(scene, with_harness_mates(scene, [ob])), metres_per_unit(scene), scene)
        except HarnessInputError as exc:
            ob.cable_harness.result_converged = False
            ob.cable_harness.result_message = str(exc)


# ---------------------------------------------------------------- writing results


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of two (n, 3) arrays: np.cross's own arithmetic (the same bits) without
    its axis handling, which on a cable's few dozen rows costs more than the arithmetic."""
    return np.column_stack(
        (
            a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
            a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
            a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0],
        )
    )


def _twist_angles(directors: np.ndarray) -> np.ndarray:
    """Accumulated roll of the material frame against a parallel-transported (minimum twist) frame.

    Between neighbouring segments, d1 is carried over by the smallest rotation taking one d3 to the
    next; the signed angle from the carried d1 to the actual one is that joint's twist.
    """
    d1, d3 = directors[:, 0], directors[:, 2]
    a, b, p = d3[:-1], d3[1:], d1[:-1]
    v = _cross(a, b)
    c = np.einsum("ij,ij->i", a, b)[:, None]
    # Rodrigues form of the minimal rotation a -> b applied to p: p + v x p + v x (v x p) / (1 + c)
    vxp = _cross(v, p)
    carried = p + vxp + _cross(v, vxp) / np.maximum(1.0 + c, 1e-12)
    sin = np.einsum("ij,ij->i", _cross(carried, d1[1:]), b)
    cos = np.einsum("ij,ij->i", carried, d1[1:])
    return np.concatenate(([0.0], np.cumsum(np.arctan2(sin, cos))))


def point_tilts(directors: np.ndarray) -> np.ndarray:
    """Tilt per curve point (node) from the per-segment twist, so textures follow the material frame."""
    seg = _twist_angles(directors)
    tilt = np.empty(len(seg) + 1)
    tilt[0] = seg[0]
    tilt[-1] = seg[-1]
    tilt[1:-1] = 0.5 * (seg[1:] + seg[:-1])
    return tilt


def style_new_cable_curve(curve) -> None:
    """How a new cable curve looks (round bevel, capped, minimum twist); set once, when the extension
    creates the curve: afterwards these settings are the user's."""
    curve.dimensions = "3D"
    curve.twist_mode = "MINIMUM"
    curve.bevel_mode = "ROUND"
    curve.bevel_resolution = 4
    curve.use_fill_caps = True


def sync_cable_bevel(ob) -> None:
    """Bevel depth = the cable radius in the object's local units (so an object scaled by 2 draws the
    same thickness), unless the user set another depth since the extension last set it."""
    s = ob.cable_harness
    M = _matrix(ob)[:3, :3]
    scale = abs(_det3(M)) ** (1.0 / 3.0)
    diameter = cable_diameter(s)
    wanted = 0.5 * diameter / scale if scale > 1e-12 else 0.5 * diameter
    curve = ob.data
    ours = s.bevel_depth_set
    if ours == 0.0 or math.isclose(curve.bevel_depth, ours, rel_tol=1e-6, abs_tol=1e-12):
        curve.bevel_depth = wanted
        s.bevel_depth_set = curve.bevel_depth


def ensure_cable_curve(ob, n_points: int) -> None:
    """A single spline of n points to write the centre line into; only the points are touched, and
    the spline is made anew (as POLY) only when there is none of a kind with points (POLY or NURBS)
    or its point count differs. Bevel, resolution, caps and twist stay as the user set them."""
    cu = ob.data
    if cu.dimensions != "3D":  # a 2-D curve cannot hold a 3-D centre line
        cu.dimensions = "3D"
    splines = cu.splines
    if len(splines) != 1 or splines[0].type not in ("POLY", "NURBS") or len(splines[0].points) != n_points:
        kind = splines[0].type if len(splines) == 1 and splines[0].type in ("POLY", "NURBS") else "POLY"
        splines.clear()
        spline = splines.new(kind)
        spline.points.add(n_points - 1)
        if kind == "NURBS":
            spline.use_endpoint_u = True
    sync_cable_bevel(ob)


def _det3(A: np.ndarray) -> float:
    """The determinant of a 3 x 3 matrix, by its rows' triple product (LAPACK's LU for a 3 x 3 cost
    a Simulate tick more than the arithmetic, and far more with its threads waking on a busy machine)."""
    return float(
        A[0, 0] * (A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1])
        - A[0, 1] * (A[1, 0] * A[2, 2] - A[1, 2] * A[2, 0])
        + A[0, 2] * (A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0])
    )


def _to_local(M: np.ndarray, world: np.ndarray) -> np.ndarray:
    """Points (n, 3) from world into the local space of the affine world matrix ``M`` (4 x 4): A^-1 (p - t),
    A^-1 as the adjugate over the determinant (see _det3); a singular A raises as np.linalg.inv does."""
    A = M[:3, :3]
    det = _det3(A)
    if not (det != 0.0 and math.isfinite(det)):
        return (np.linalg.inv(M) @ np.column_stack((world, np.ones(len(world)))).T).T[:, :3]
    a, b, c = A[:, 0], A[:, 1], A[:, 2]
    # the rows of A^-1 are b x c, c x a, a x b over det (A's columns a, b, c)
    inverse = (
        np.array(
            [
                [b[1] * c[2] - b[2] * c[1], b[2] * c[0] - b[0] * c[2], b[0] * c[1] - b[1] * c[0]],
                [c[1] * a[2] - c[2] * a[1], c[2] * a[0] - c[0] * a[2], c[0] * a[1] - c[1] * a[0]],
                [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]],
            ]
        )
        / det
    )
    return (world - M[:3, 3]) @ inverse.T


def write_curve_points(ob, world_points_units: np.ndarray, tilts: np.ndarray) -> None:
    """Write centre-line points (world, Blender units) into the cable curve with foreach_set."""
    local = np.ones((len(world_points_units), 4))
    local[:, :3] = _to_local(_matrix(ob), world_points_units)
    spline = ob.data.splines[0]
    spline.points.foreach_set("co", local.astype(np.float32).ravel())
    spline.points.foreach_set("tilt", tilts.astype(np.float32))
    ob.data.update_tag()


def write_cable_result(ob, result: dict, scale: float) -> None:
    """Curve geometry and read-outs of one solved cable (a result document entry)."""
    s = ob.cable_harness
    nodes = np.asarray(result["nodes"]) / scale
    directors = np.asarray(result["directors"])
    ensure_cable_curve(ob, len(nodes))
    write_curve_points(ob, nodes, point_tilts(directors))
    s.result_valid = True
    s.result_stale = False
    s.result_converged = bool(result["converged"])
    s.result_length = result["length"] / scale
    radius = result["min_bend_radius"]
    s.result_min_bend_radius = radius / scale if radius is not None and math.isfinite(radius) else 0.0
    s.result_solve_ms = result["solve_ms"]
    s.result_iterations = result["iterations"]
    s.result_start_force = float(np.linalg.norm(result["end_forces"]["start"]["force"]))
    end = result["end_forces"].get("end")
    s.result_end_force = float(np.linalg.norm(end["force"])) if end else 0.0
    messages = []
    if not result["converged"]:
        messages.append(result.get("message", "not converged"))
    allowed = s.min_bend_radius_allowed * scale
    if allowed > 0.0 and radius is not None and radius < allowed:
        messages.append(f"bend radius {radius * 1e3:.1f} mm is below the allowed {allowed * 1e3:.1f} mm")
    s.result_message = "; ".join(messages)
