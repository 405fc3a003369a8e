# SPDX-License-Identifier: GPL-3.0-or-later
"""Case files: export the scene's harness, build a scene from a case, solve a case file as it is."""

import math

import bpy
import numpy as np
from bpy.props import BoolProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper
from mathutils import Matrix

from ...solver_core import PRESETS, CaseError, frame_from_tangent, load_case, solve_case
from ..scene_model import (
    CABLE,
    CLIP,
    COLLIDER,
    CONNECTOR,
    JUNCTION,
    HarnessInputError,
    ensure_cable_curve,
    metres_per_unit,
    style_new_cable_curve,
    write_curve_points,
)
from ..simulation import export_case
from .common import MARKER_SIZE_M, NeedsSolver, link_new_object


class CABLE_HARNESS_OT_export_case(bpy.types.Operator, ExportHelper):
    """Write the scene's cables, connectors and clips as a harness case (JSON, SI units)"""

    bl_idname = "cable_harness.export_case"
    bl_label = "Export Harness Case"
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})  # type: ignore

    def execute(self, context):
        try:
            doc = export_case(context.scene, self.filepath, context.evaluated_depsgraph_get())
        except HarnessInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except OSError as exc:
            self.report({"ERROR"}, f"cannot write {self.filepath}: {exc.strerror}")
            return {"CANCELLED"}
        self.report(
            {"INFO"},
            f"exported {len(doc['cables'])} cable(s) and {len(doc.get('obstacles', []))} "
            f"collider(s) to {self.filepath}",
        )
        return {"FINISHED"}


def _marker(context, name, frame, scale, role, display, into=False):
    ob = bpy.data.objects.new(name, None)
    ob.empty_display_type = display
    ob.empty_display_size = MARKER_SIZE_M / scale
    tangent = -frame.tangent if into else frame.tangent
    F = frame_from_tangent(tangent, frame.normal)
    M = np.eye(4)
    M[:3, :3] = F
    M[:3, 3] = frame.position / scale
    ob.matrix_world = Matrix(M.tolist())  # rows; a nested list would be read column by column
    ob.cable_harness.role = role
    ob.cable_harness.roll_free = frame.normal is None
    link_new_object(context, ob)
    return ob


def _junction_marker(context, spec, scale):
    """An empty for a case junction, in the case's frame (its outlets are world directions there)."""
    ob = bpy.data.objects.new(spec.id, None)
    ob.empty_display_type = "ARROWS"
    ob.empty_display_size = MARKER_SIZE_M / scale
    ob.location = (spec.position / scale).tolist()
    ob.cable_harness.role = JUNCTION
    ob.cable_harness.junction_fixed = spec.fixed
    ob.cable_harness.junction_mass = spec.mass
    link_new_object(context, ob)
    return ob


# spheres become UV spheres of this many segments (rings: half): the faces lie within 0.5 % of the
# radius inside the sphere, (1 - cos(pi / 32)) r
SPHERE_SEGMENTS = 64


def _sphere_mesh(centre, radius, segments=SPHERE_SEGMENTS):
    """Vertices and faces (quads, triangles at the poles, wound outwards) of a UV sphere."""
    rings = segments // 2
    theta = np.linspace(0.0, math.pi, rings + 1)[1:-1]
    phi = np.linspace(0.0, 2.0 * math.pi, segments, endpoint=False)
    T, P = np.meshgrid(theta, phi, indexing="ij")
    T, P = T.ravel(), P.ravel()
    ring_points = np.column_stack((np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)))
    verts = np.vstack(([0.0, 0.0, 1.0], ring_points, [0.0, 0.0, -1.0])) * radius + centre
    faces = []
    bottom = len(verts) - 1
    for j in range(segments):
        k = (j + 1) % segments
        faces.append((0, 1 + j, 1 + k))
        last = 1 + (rings - 2) * segments
        faces.append((bottom, last + k, last + j))
        for i in range(rings - 2):
            a = 1 + i * segments
            b = a + segments
            faces.append((a + j, b + j, b + k, a + k))
    return verts, faces


def _plane_mesh(point, normal, half_size):
    """A square of side 2 ``half_size`` centred on ``point``, facing ``normal``."""
    F = frame_from_tangent(np.asarray(normal, dtype=np.float64), None)
    u, v = F[:, 0], F[:, 1]
    corners = [point + half_size * (a * u + b * v) for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
    return np.array(corners), [(0, 1, 2, 3)]


def _case_extent(case) -> tuple:
    """Centre and size (m) of what a case's cables span: their frames and routes."""
    points = []
    for spec in case.cables:
        points.append(spec.start.position)
        if spec.end is not None:
            points.append(spec.end.position)
        points.extend(c.frame.position for c in spec.clips)
        if spec.route is not None:
            points.extend(spec.route)
    points = np.array(points, dtype=np.float64).reshape(-1, 3)
    lo, hi = points.min(axis=0), points.max(axis=0)
    return 0.5 * (lo + hi), max(float(np.linalg.norm(hi - lo)), max(spec.length for spec in case.cables))


def build_colliders_from_case(context, case) -> tuple:
    """A collider mesh for every obstacle of a case: (objects, notes). Meshes as they are; planes as
    squares four times the harness's size across; spheres as UV spheres."""
    scale = metres_per_unit(context.scene)
    centre, size = _case_extent(case) if case.cables else (np.zeros(3), 1.0)
    made, notes = [], []
    for index, obstacle in enumerate(case.obstacles):
        kind = obstacle["type"]
        if kind == "mesh":
            verts, faces = np.asarray(obstacle["vertices"], dtype=np.float64), obstacle["triangles"]
            name = obstacle.get("name") or f"obstacle {index}"
        elif kind == "plane":
            point, normal = np.asarray(obstacle["point"]), np.asarray(obstacle["normal"])
            # the square's centre: the harness's centre dropped onto the plane
            foot = centre - float(np.dot(centre - point, normal)) * normal
            verts, faces = _plane_mesh(foot, normal, 2.0 * size)
            name = f"plane {index}"
            notes.append(f"obstacles[{index}]: the plane is a square {4.0 * size / scale:.4g} units across")
        else:
            verts, faces = _sphere_mesh(np.asarray(obstacle["center"]), float(obstacle["radius"]))
            name = f"sphere {index}"
            notes.append(f"obstacles[{index}]: the sphere is a UV sphere of {SPHERE_SEGMENTS} segments")
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata((np.asarray(verts) / scale).tolist(), [], [tuple(int(i) for i in f) for f in faces])
        mesh.update()
        ob = bpy.data.objects.new(name, mesh)
        link_new_object(context, ob)
        ob.cable_harness.role = COLLIDER
        made.append(ob)
    return made, notes


def _import_bundle(settings, spec, scale) -> bool:
    """The panel's bundle from a case's (True), unless a wire's material is neither a preset nor E with a
    density, or the case overrides the bundle's diameter or stiffness (False: imported as one cable)."""
    bundle = spec.bundle
    if spec.material or spec.diameter_given:
        return False
    wires = []
    for wire in bundle.wires:
        m = wire.material
        if not isinstance(m, dict):
            return False
        if set(m) == {"preset"} and m["preset"] in PRESETS:
            wires.append((wire, m["preset"], None))
        elif set(m) <= {"E", "nu", "density"} and {"E", "density"} <= set(m):
            wires.append((wire, "CUSTOM", m))
        else:
            return False
    settings.wires.clear()
    for wire, material, values in wires:
        w = settings.wires.add()
        w.diameter, w.count, w.material = wire.diameter / scale, wire.count, material
        w.wire_id = wire.id or ""
        if values is not None:
            w.youngs_modulus, w.density = values["E"] / 1e6, values["density"]
            w.poisson_ratio = values.get("nu", 0.3)
    settings.wrap, settings.sheath = bundle.wrap, bundle.sheath / scale
    settings.is_bundle = True
    return True


def _import_rest(settings, rest, scale) -> None:
    """A case's rest shape as the panel's (the inverse of scene_model.rest_document)."""
    if rest.route is not None:
        settings.rest_route.clear()
        for point in rest.route:
            settings.rest_route.add().co = point / scale
        settings.rest_shape = "CURVE"
        return
    k1, k2 = rest.curvature
    kappa = math.hypot(k1, k2)
    settings.rest_shape = "BENT" if kappa > 0.0 or rest.twist != 0.0 else "STRAIGHT"
    settings.rest_bend_radius = 1.0 / kappa / scale if kappa > 0.0 else 0.0
    settings.rest_bend_direction = math.atan2(-k1, k2) if kappa > 0.0 else 0.0
    settings.rest_twist = math.degrees(rest.twist)


def build_scene_from_case(context, case, scene_settings: bool = True) -> list:
    """Connectors, clips and cable curves for every cable of a case: (cable objects, notes for the user).
    ``scene_settings``: also take the case's gravity and contact settings into the scene."""
    scale = metres_per_unit(context.scene)
    notes = []
    if scene_settings:
        context.scene.gravity = case.gravity.tolist()
        contact = context.scene.cable_harness
        contact.friction_static = case.contact.get("friction_static", 0.0)
        contact.friction_dynamic = case.contact.get("friction_dynamic", contact.friction_static)
        contact.cable_cable = bool(case.contact.get("cable_cable", False))
        # the model and the motion (solver.model, solver.dynamics) are the scene's too
        contact.model = case.solver.model
        dynamics = case.solver.dynamics
        contact.motion = "QUASI_STATIC" if dynamics is None else "DYNAMIC"
        if dynamics is not None:
            contact.time_step = min(max(dynamics.time_step, 1e-5), 0.1)
            contact.damping = dynamics.damping
            if abs(contact.time_step - dynamics.time_step) > 1e-6 * dynamics.time_step:
                notes.append(
                    f"solver.dynamics.time_step {dynamics.time_step:g} s is beyond the panel's range: "
                    f"set to {contact.time_step:g} s"
                )
    cables = []
    junctions = {jid: _junction_marker(context, j, scale) for jid, j in case.junctions.items()}
    if any(j.frame is not None and not np.array_equal(j.frame, np.eye(3)) for j in case.junctions.values()):
        notes.append("junction frames (tangent, normal) are not held in Blender: steps that turn them are not imported")
    for spec in case.cables:
        if spec.start_junction is not None:
            start = junctions[spec.start_junction.junction]
        else:
            start = _marker(context, f"{spec.id} start", spec.start, scale, CONNECTOR, "SINGLE_ARROW")
        if spec.end is None:
            end = None
        elif spec.end_junction is not None:
            end = junctions[spec.end_junction.junction]
        else:
            end = _marker(context, f"{spec.id} end", spec.end, scale, CONNECTOR, "SINGLE_ARROW", into=True)
        if any(held.normal_given for _side, held in spec.junction_ends()):
            notes.append(f"{spec.id}: a junction end's normal is not held in Blender (its roll follows the other end)")
        curve = bpy.data.curves.new(spec.id, "CURVE")
        ob = bpy.data.objects.new(spec.id, curve)
        link_new_object(context, ob)
        s = ob.cable_harness
        s.role = CABLE
        s.start, s.end = start, end
        # outlet arrows in the junction's axes, which are the world's as imported
        if spec.start_junction is not None:
            s.start_outlet = spec.start_junction.outlet.tolist()
        if spec.end_junction is not None:
            s.end_outlet = (-spec.end_junction.outlet).tolist()
        s.length = spec.length / scale
        s.diameter = spec.diameter / scale
        s.segments = spec.segments
        material = spec.material
        if spec.bundle is not None and _import_bundle(s, spec, scale):
            pass  # its diameter and material follow from its wires
        elif set(material) == {"preset"} and material["preset"] in PRESETS:
            s.material = material["preset"]
        else:
            s.material = "CUSTOM"
            section = spec.section
            E = material.get("E")
            if E is None:
                # stiffness given directly: the equivalent solid-section modulus
                E = section.bend_stiffness / (math.pi * spec.diameter**4 / 64.0)
                notes.append(f"{spec.id}: material given as stiffnesses, imported as E = {E / 1e6:.4g} MPa")
            s.youngs_modulus = E / 1e6
            s.poisson_ratio = material.get("nu", 0.3)
            s.density = section.linear_density / (math.pi * spec.diameter**2 / 4.0)
        if spec.bundle is not None and not s.is_bundle:
            notes.append(
                f"{spec.id}: a bundle whose wires or overrides the panel cannot hold, imported as one cable of "
                f"its derived diameter and stiffness"
            )
        if spec.rest is not None:
            _import_rest(s, spec.rest, scale)
        if spec.allowed_bend_radius is not None:
            s.min_bend_radius_allowed = spec.allowed_bend_radius / scale
        if spec.loads:
            notes.append(f"{spec.id}: its {len(spec.loads)} point load(s) are not held in Blender: imported without")
        for index, clip in enumerate(spec.clips):
            marker = _marker(context, f"{spec.id} clip {index}", clip.frame, scale, CLIP, "CIRCLE")
            marker.cable_harness.clip_kind = clip.kind
            marker.cable_harness.clip_length = clip.length / scale
            marker.cable_harness.roll_free = False
            if clip.stiffness and "translational" in clip.stiffness:
                marker.cable_harness.clip_compliant = True
                marker.cable_harness.clip_translational_stiffness = clip.stiffness["translational"]
                marker.cable_harness.clip_rotational_stiffness = clip.stiffness["rotational"]
            ref = s.clips.add()
            ref.clip = marker
            ref.s = clip.s / scale
        route = (
            spec.route
            if spec.route is not None
            else np.array(
                [spec.start.position]
                + [c.frame.position for c in spec.clips]
                + (
                    [spec.end.position]
                    if spec.end is not None
                    else [spec.start.position + spec.length * spec.start.tangent]
                )
            )
        )
        for p in route:
            s.route.add().co = p / scale
        style_new_cable_curve(curve)
        ensure_cable_curve(ob, len(route))
        write_curve_points(ob, np.asarray(route) / scale, np.zeros(len(route)))
        cables.append(ob)
    return cables, notes


def _mount_connectors(case, cables, colliders) -> None:
    """Give the imported connectors with mounted_on the collider built from that mesh as Mounted On."""
    named = {o["name"]: ob for o, ob in zip(case.obstacles, colliders) if o.get("name")}
    for spec, ob in zip(case.cables, cables):
        s = ob.cable_harness
        for mount, holder in ((spec.start_mount, s.start), (spec.end_mount, s.end)):
            if mount in named and holder is not None and holder.cable_harness.role == CONNECTOR:
                holder.cable_harness.mounted_on = named[mount]


class CABLE_HARNESS_OT_import_case(bpy.types.Operator, ImportHelper):
    """Build connectors, clips and cables from a harness case file (JSON)"""

    bl_idname = "cable_harness.import_case"
    bl_label = "Import Harness Case"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})  # type: ignore
    colliders: BoolProperty(
        name="Colliders",
        description="Also build the case's obstacles as collider meshes (meshes as they are, planes as large "
        "squares, spheres as UV spheres)",
        default=True,
    )  # type: ignore
    scene_settings: BoolProperty(
        name="Replace Scene Gravity and Contact",
        description="Also set the scene's gravity, friction and cable-cable contact to the case's "
        "(off: the scene keeps its own)",
        default=False,
    )  # type: ignore

    def execute(self, context):
        try:
            case = load_case(self.filepath)
        except CaseError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        colliders, notes = build_colliders_from_case(context, case) if self.colliders else ([], [])
        cables, cable_notes = build_scene_from_case(context, case, self.scene_settings)
        notes += cable_notes
        _mount_connectors(case, cables, colliders)
        if not self.scene_settings and self._differs(context.scene, case):
            notes.append("the case's gravity or contact settings differ from the scene's, which were kept")
        for note in notes:
            self.report({"WARNING"}, note)
        self.report({"INFO"}, f"imported {len(cables)} cable(s) and {len(colliders)} collider(s)")
        return {"FINISHED"}

    @staticmethod
    def _differs(scene, case) -> bool:
        gravity = np.array(scene.gravity) if scene.use_gravity else np.zeros(3)
        return not np.allclose(gravity, case.gravity) or scene.cable_harness.contact_document() != {
            "friction_static": case.contact.get("friction_static", 0.0),
            "friction_dynamic": case.contact.get("friction_dynamic", case.contact.get("friction_static", 0.0)),
            "cable_cable": bool(case.contact.get("cable_cable", False)),
        }


def menu_import(self, context):
    self.layout.operator(CABLE_HARNESS_OT_import_case.bl_idname, text="Cable Harness Case (.json)")


def menu_export(self, context):
    self.layout.operator(CABLE_HARNESS_OT_export_case.bl_idname, text="Cable Harness Case (.json)")


class CABLE_HARNESS_OT_solve_case_file(NeedsSolver, bpy.types.Operator):
    """Solve a harness case file (JSON) with the quasi-static solver and report the result"""

    bl_idname = "cable_harness.solve_case_file"
    bl_label = "Solve Case File"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="Case File", description="The case JSON file to solve", subtype="FILE_PATH")  # type: ignore

    def execute(self, context):
        try:
            result = solve_case(load_case(bpy.path.abspath(self.filepath)))
        except CaseError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        cables = result["steps"][-1]["cables"]
        failed = [cid for cid, c in cables.items() if not c["converged"]]
        if failed:
            self.report({"WARNING"}, f"not converged: {', '.join(failed)}")
        else:
            self.report({"INFO"}, f"solved {len(cables)} cables")
        return {"FINISHED"}


classes = (CABLE_HARNESS_OT_export_case, CABLE_HARNESS_OT_import_case, CABLE_HARNESS_OT_solve_case_file)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.TOPBAR_MT_file_import.append(menu_import)
    bpy.types.TOPBAR_MT_file_export.append(menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)
    _unregister_classes()
