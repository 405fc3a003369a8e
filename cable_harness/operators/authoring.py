# SPDX-License-Identifier: GPL-3.0-or-later
"""Authoring: add connectors and clips, mark objects, draw a cable between selected holders, make a
cable's current shape its rest shape."""

import math

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty, IntProperty
from mathutils import Matrix, Quaternion, Vector

from ..props import ROLES
from ..scene_model import (
    CABLE,
    CLIP,
    COLLIDER,
    CONNECTOR,
    JUNCTION,
    attached,
    cable_diameter,
    ensure_cable_curve,
    harness_objects,
    metres_per_unit,
    object_frame,
    rotation_of,
    style_new_cable_curve,
    write_curve_points,
)
from .common import MARKER_SIZE_M, active_cable_or_report, centre_line, link_new_object, run_solve

DEFAULT_DIAMETER_M = 0.004
DEFAULT_CLIP_LENGTH_M = 0.01


def _add_marker(context, name, display, rotation, role):
    scale = metres_per_unit(context.scene)
    ob = bpy.data.objects.new(name, None)
    ob.empty_display_type = display
    ob.empty_display_size = MARKER_SIZE_M / scale
    ob.location = context.scene.cursor.location
    ob.rotation_euler = rotation
    ob.cable_harness.role = role
    link_new_object(context, ob)
    return ob


class CABLE_HARNESS_OT_add_connector(bpy.types.Operator):
    """Add a connector at the 3D cursor; its arrow (local Z) is the direction the cable leaves it"""

    bl_idname = "cable_harness.add_connector"
    bl_label = "Connector"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        # outlet pointing down, so that a cable between two new connectors hangs
        ob = _add_marker(context, "Connector", "SINGLE_ARROW", (math.pi, 0.0, 0.0), CONNECTOR)
        _choose_rotation(ob)
        return {"FINISHED"}


def _choose_rotation(ob) -> None:
    """Remember the rotation the extension gave the connector (until the user turns it)."""
    ob.cable_harness.rotation_chosen = ob.matrix_basis.to_quaternion()


def _rotation_is_chosen(ob) -> bool:
    """Whether the connector still has the rotation the extension gave it."""
    chosen = Quaternion(ob.cable_harness.rotation_chosen)
    return chosen.magnitude > 0.5 and abs(chosen.dot(ob.matrix_basis.to_quaternion())) > 1.0 - 1e-9


def _transported(vector, route) -> np.ndarray:
    """``vector`` carried along the polyline ``route`` without twist: at each corner turned by the
    smallest rotation taking one segment's direction to the next."""
    v = np.asarray(vector, dtype=np.float64)
    steps = np.diff(np.asarray(route, dtype=np.float64), axis=0)
    steps = [d / n for d, n in zip(steps, np.linalg.norm(steps, axis=1)) if n > 1e-12]
    for a, b in zip(steps, steps[1:]):
        axis = np.cross(a, b)
        c = float(np.dot(a, b))
        # Rodrigues form of the minimal rotation a -> b (a half turn has no unique one: left as is)
        if c > -1.0 + 1e-9:
            v = v + np.cross(axis, v) + np.cross(axis, np.cross(axis, v)) / (1.0 + c)
    return v


def _roll_to(ob, wanted_x) -> None:
    """Turn a connector about its outlet (local Z) so that its local X lies along ``wanted_x`` (world)."""
    M = np.array(ob.matrix_world)
    z = M[:3, 2] / max(float(np.linalg.norm(M[:3, 2])), 1e-300)
    x = np.asarray(wanted_x, dtype=np.float64) - z * float(np.dot(wanted_x, z))
    if not np.linalg.norm(x) > 1e-9:
        return
    x /= np.linalg.norm(x)
    R = Matrix(np.column_stack((x, np.cross(z, x), z)).tolist())
    world = ob.matrix_world
    ob.matrix_world = Matrix.LocRotScale(world.translation, R, world.to_scale())


def untwist_new_connectors(start, end, route) -> None:
    """Two connectors' default rolls would twist the cable drawn between them (two new ones with a
    U between them: half a turn). A connector that still has the rotation Add Connector gave it is
    rolled about its outlet to where the route carries the other's local X (the end, else the start)."""
    if end is None or CONNECTOR != start.cable_harness.role or CONNECTOR != end.cable_harness.role:
        return
    for moved, fixed, path in ((end, start, route), (start, end, route[::-1])):
        if moved.cable_harness.roll_free or fixed.cable_harness.roll_free or not _rotation_is_chosen(moved):
            continue
        _roll_to(moved, _transported(np.array(fixed.matrix_world)[:3, 0], path))
        bpy.context.view_layer.update()
        _choose_rotation(moved)
        return


class CABLE_HARNESS_OT_add_clip(bpy.types.Operator):
    """Add a clip at the 3D cursor; the cable runs through its ring along local Z"""

    bl_idname = "cable_harness.add_clip"
    bl_label = "Clip"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        ob = _add_marker(context, "Clip", "CIRCLE", (0.0, math.pi / 2.0, 0.0), CLIP)
        ob.cable_harness.clip_length = DEFAULT_CLIP_LENGTH_M / metres_per_unit(context.scene)
        return {"FINISHED"}


class CABLE_HARNESS_OT_add_junction(bpy.types.Operator):
    """Add a junction at the 3D cursor: where branches of a harness meet (select it with connectors and
    use Cable Between Selected for one branch per connector)"""

    bl_idname = "cable_harness.add_junction"
    bl_label = "Junction"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        _add_marker(context, "Junction", "ARROWS", (0.0, 0.0, 0.0), JUNCTION)
        return {"FINISHED"}


class CABLE_HARNESS_OT_assign_role(bpy.types.Operator):
    """Give the selected objects a harness role"""

    bl_idname = "cable_harness.assign_role"
    bl_label = "Assign Harness Role"
    bl_options = {"REGISTER", "UNDO"}

    role: EnumProperty(name="Role", items=ROLES, description="The role to give the selected objects")  # type: ignore

    def execute(self, context):
        wrong = []
        for ob in context.selected_objects:
            if self.role == "COLLIDER" and ob.type != "MESH":
                wrong.append(ob.name)
            elif self.role == CABLE and ob.type != "CURVE":
                wrong.append(ob.name)
            elif self.role == JUNCTION and ob.type != "EMPTY":
                wrong.append(ob.name)
            else:
                ob.cable_harness.role = self.role
        if wrong:
            self.report(
                {"WARNING"},
                f"not changed (a {self.role.lower()} must be a "
                f"{dict(COLLIDER='mesh', JUNCTION='empty').get(self.role, 'curve')}): {', '.join(wrong)}",
            )
        return {"FINISHED"}


def _order_clips(start_pos, clips):
    """Greedy nearest-neighbour order of the clips, walking from the start connector."""
    remaining = list(clips)
    ordered = []
    here = start_pos
    while remaining:
        nearest = min(remaining, key=lambda c: np.linalg.norm(np.array(c.matrix_world.translation) - here))
        ordered.append(nearest)
        remaining.remove(nearest)
        here = np.array(nearest.matrix_world.translation)
    return ordered


def _junction_outward(junction, towards) -> np.ndarray:
    """Unit direction (world) from a junction towards a point: a new branch's outlet there."""
    d = np.asarray(towards, dtype=np.float64) - np.array(junction.matrix_world.translation)
    n = float(np.linalg.norm(d))
    return d / n if n > 0.0 else rotation_of(junction)[:, 2]


def plan_route(start, end, clips, scale):
    """Drawn route (world, Blender units) through the holders, and the index of each clip centre.

    The route leaves the start connector and enters the end connector along their outlets and
    passes each clip along its axis, in the direction that the route travels; a junction's outlet is
    the direction towards the next holder along the route.
    """
    s_frame = object_frame(start, 1.0)
    if start.cable_harness.role == JUNCTION:
        first = clips[0] if clips else end
        s_frame["tangent"] = _junction_outward(start, first.matrix_world.translation).tolist()
    start_pos = np.array(s_frame["position"])
    ordered = _order_clips(start_pos, clips)
    end_pos = None if end is None else np.array(end.matrix_world.translation)
    waypoints = [start_pos] + [np.array(c.matrix_world.translation) for c in ordered]
    if end_pos is not None:
        waypoints.append(end_pos)
    span = sum(np.linalg.norm(b - a) for a, b in zip(waypoints, waypoints[1:])) or DEFAULT_DIAMETER_M * 50 / scale
    lead = 0.1 * span
    route = [start_pos, start_pos + lead * np.array(s_frame["tangent"])]
    centres, reversed_flags = [], []
    for k, clip in enumerate(ordered):
        frame = object_frame(clip, 1.0)
        centre = np.array(frame["position"])
        axis = np.array(frame["tangent"])
        before = waypoints[k]
        after = waypoints[k + 2] if k + 2 < len(waypoints) else centre + axis
        flip = float(np.dot(after - before, axis)) < 0.0
        axis = -axis if flip else axis
        half = 0.5 * clip.cable_harness.clip_length
        route += [centre - half * axis, centre, centre + half * axis]
        centres.append(len(route) - 2)
        reversed_flags.append(flip)
    if end is not None:
        # arrive along the end connector's outlet: the last leg runs along the "into" tangent
        into = np.array(object_frame(end, 1.0, into=True)["tangent"])
        if end.cable_harness.role == JUNCTION:
            into = -_junction_outward(end, route[-1])
        route += [end_pos - lead * into, end_pos]
    else:
        route.append(route[-1] + lead * (route[-1] - route[-2]) / max(np.linalg.norm(route[-1] - route[-2]), 1e-12))
    return np.array(route), ordered, centres, reversed_flags


def make_cable(context, start, end, clips, slack_percent, diameter_units, segments):
    scale = metres_per_unit(context.scene)
    route, ordered, centres, flags = plan_route(start, end, clips, scale)
    untwist_new_connectors(start, end, route)
    seg_len = np.linalg.norm(np.diff(route, axis=0), axis=1)
    arc = np.concatenate(([0.0], np.cumsum(seg_len)))
    length = arc[-1] * (1.0 + slack_percent / 100.0)
    curve = bpy.data.curves.new("Cable", "CURVE")
    ob = bpy.data.objects.new("Cable", curve)
    link_new_object(context, ob)
    s = ob.cable_harness
    s.role = CABLE
    s.start = start
    s.end = end
    # a junction's outlet arrow, in its local axes: the route's direction out of it
    if start.cable_harness.role == JUNCTION:
        s.start_outlet = rotation_of(start).T @ _unit(route[1] - route[0])
    if end is not None and end.cable_harness.role == JUNCTION:
        s.end_outlet = rotation_of(end).T @ _unit(route[-2] - route[-1])
    s.length = length
    s.diameter = diameter_units
    s.segments = segments
    for clip, index, flip in zip(ordered, centres, flags):
        ref = s.clips.add()
        ref.clip = clip
        ref.s = arc[index] * length / arc[-1]
        ref.reversed = flip
    for p in route:
        s.route.add().co = p
    style_new_cable_curve(curve)
    ensure_cable_curve(ob, len(route))
    write_curve_points(ob, route, np.zeros(len(route)))
    return ob


def _unit(v) -> np.ndarray:
    return np.asarray(v, dtype=np.float64) / max(float(np.linalg.norm(v)), 1e-300)


class CABLE_HARNESS_OT_make_cable(bpy.types.Operator):
    """Draw a cable from the active (or first) selected connector through the selected clips to the
    other selected connector (none: a free end), its length the route's plus some slack. With a
    junction: one branch from it to each selected connector (the active connector with the junction
    alone: a cable from the connector into the junction)"""

    bl_idname = "cable_harness.make_cable"
    bl_label = "Cable Between Selected"
    bl_options = {"REGISTER", "UNDO"}

    slack: FloatProperty(
        name="Slack",
        description="Extra length over the drawn route",
        subtype="PERCENTAGE",
        min=0.0,
        soft_max=100.0,
        default=15.0,
    )  # type: ignore
    diameter: FloatProperty(
        name="Diameter", description="Cable diameter (0: 4 mm)", min=0.0, default=0.0, subtype="DISTANCE", unit="LENGTH"
    )  # type: ignore
    segments: IntProperty(
        name="Segments", description="Number of rod segments of the new cable", min=2, soft_max=1000, default=60
    )  # type: ignore
    solve: bpy.props.BoolProperty(
        name="Solve Now",
        description="Solve the new cable at once (otherwise it stays on its drawn route)",
        default=True,
    )  # type: ignore

    def execute(self, context):
        selected = context.selected_objects
        connectors = [o for o in selected if o.cable_harness.role == CONNECTOR]
        clips = [o for o in selected if o.cable_harness.role == CLIP]
        junctions = [o for o in selected if o.cable_harness.role == JUNCTION and o.type == "EMPTY"]
        if junctions:
            return self._with_junctions(context, connectors, clips, junctions)
        if len(connectors) not in (1, 2):
            self.report({"ERROR"}, "select two connectors (or one, for a free end) and any clips to pass through")
            return {"CANCELLED"}
        active = context.view_layer.objects.active
        start = active if active in connectors else connectors[0]
        end = next((c for c in connectors if c is not start), None)
        diameter = self.diameter or DEFAULT_DIAMETER_M / metres_per_unit(context.scene)
        ob = make_cable(context, start, end, clips, self.slack, diameter, self.segments)
        if self.solve:
            run_solve(self, context, [ob])
        return {"FINISHED"}

    def _with_junctions(self, context, connectors, clips, junctions):
        """Branches of a harness: a junction and connectors (one branch per connector, from the junction;
        or, with one connector active, from it into the junction), or two junctions (one cable between)."""
        active = context.view_layer.objects.active
        diameter = self.diameter or DEFAULT_DIAMETER_M / metres_per_unit(context.scene)
        if len(junctions) == 2 and not connectors:
            start = active if active in junctions else junctions[0]
            pairs = [(start, next(j for j in junctions if j is not start))]
        elif len(junctions) == 1 and connectors:
            junction = junctions[0]
            if len(connectors) == 1 and active is connectors[0]:
                pairs = [(connectors[0], junction)]
            else:
                pairs = [(junction, c) for c in connectors]
        else:
            self.report(
                {"ERROR"},
                "select one junction and the connectors of its branches, or two junctions (and any clips)",
            )
            return {"CANCELLED"}
        if clips and len(pairs) > 1:
            self.report({"ERROR"}, "clips go with one branch at a time: select the junction, one connector and them")
            return {"CANCELLED"}
        made = [make_cable(context, a, b, clips, self.slack, diameter, self.segments) for a, b in pairs]
        for ob in made:
            ob.select_set(True)
        context.view_layer.objects.active = made[-1]
        if self.solve:
            run_solve(self, context, made)
        return {"FINISHED"}


class CABLE_HARNESS_OT_set_rest_shape(bpy.types.Operator):
    """Make the active cable's curve as it is now (drawn, edited by hand or solved) the shape it springs
    back to when nothing holds it: a moulded hose or a pre-bent bundle"""

    bl_idname = "cable_harness.set_rest_shape"
    bl_label = "Set Rest Shape from Curve"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        cable = active_cable_or_report(self, context)
        if cable is None:
            return {"CANCELLED"}
        line = centre_line(cable)
        keep = np.concatenate(([True], np.linalg.norm(np.diff(line, axis=0), axis=1) > 0.0))
        line = line[keep]  # a repeated point gives no direction
        if len(line) < 2:
            self.report({"ERROR"}, f"cable {cable.name!r} has no curve to take its rest shape from")
            return {"CANCELLED"}
        s = cable.cable_harness
        s.rest_route.clear()
        for point in line:
            s.rest_route.add().co = point
        s.rest_shape = "CURVE"
        self.report({"INFO"}, f"{cable.name}: its rest shape is the curve as it is now ({len(line)} points)")
        return {"FINISHED"}


def _nearest_face(colliders, depsgraph, point):
    """(collider, world point, world unit normal) of the collider surface nearest to ``point`` (world),
    or None: Object.closest_point_on_mesh of each evaluated collider, in its local space."""
    best, best_distance = None, math.inf
    for ob in colliders:
        evaluated = ob.evaluated_get(depsgraph)
        M = evaluated.matrix_world
        inverse = M.inverted_safe()
        found, co, normal, _index = evaluated.closest_point_on_mesh(inverse @ Vector(point))
        if not found:
            continue
        world = M @ co
        distance = (world - Vector(point)).length
        if distance < best_distance:
            n = (inverse.to_3x3().transposed() @ normal).normalized()
            best, best_distance = (ob, world, n), distance
    return best


def _clip_radius(scene, clip) -> float:
    """The largest radius of the cables passing a clip (Blender units; a new cable's with none)."""
    radii = [
        0.5 * cable_diameter(ob.cable_harness)
        for ob in harness_objects(scene, CABLE)
        if any(ref.clip == clip for ref in ob.cable_harness.clips)
    ]
    return max(radii, default=0.5 * DEFAULT_DIAMETER_M / metres_per_unit(scene))


def _perpendicular(v, n) -> np.ndarray | None:
    """``v`` made perpendicular to the unit ``n`` and unit (None where it is along ``n``)."""
    w = np.asarray(v, dtype=np.float64) - n * float(np.dot(v, n))
    length = float(np.linalg.norm(w))
    return w / length if length > 1e-6 else None


class CABLE_HARNESS_OT_snap_to_face(bpy.types.Operator):
    """Move the selected connectors and clips onto the nearest face of a collider (the active object if it
    is a collider, else the nearest collider): a connector with its outlet along the face's normal, Mounted
    On that collider; a clip with its axis along the face, lifted by its cable's radius to lie on it"""

    bl_idname = "cable_harness.snap_to_face"
    bl_label = "Snap to Face"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return any(ob.cable_harness.role in (CONNECTOR, CLIP) for ob in context.selected_objects)

    def execute(self, context):
        scene = context.scene
        active = context.active_object
        if active is not None and active.cable_harness.role == COLLIDER and active.type == "MESH":
            colliders = [active]
        else:
            colliders = [ob for ob in harness_objects(scene, COLLIDER) if attached(scene, ob) is not None]
        holders = [ob for ob in context.selected_objects if ob.cable_harness.role in (CONNECTOR, CLIP)]
        if not colliders:
            self.report({"ERROR"}, "no collider to snap to: give the device's mesh the Collider role")
            return {"CANCELLED"}
        depsgraph = context.evaluated_depsgraph_get()
        done = []
        for ob in holders:
            hit = _nearest_face(colliders, depsgraph, ob.matrix_world.translation)
            if hit is None:
                continue
            collider, point, normal = hit
            n = np.array(normal)
            axes = np.array(ob.matrix_world.to_3x3().normalized())
            if ob.cable_harness.role == CONNECTOR:
                z = n
                x = _perpendicular(axes[:, 0], z)
                x = x if x is not None else _perpendicular(axes[:, 1], z)
                ob.cable_harness.mounted_on = collider
            else:
                z = _perpendicular(axes[:, 2], n)
                z = z if z is not None else _perpendicular(axes[:, 0], n)
                x = n
                point = point + normal * _clip_radius(scene, ob)
            R = Matrix(np.column_stack((x, np.cross(z, x), z)).tolist())
            ob.matrix_world = Matrix.LocRotScale(point, R, ob.matrix_world.to_scale())
            done.append(f"{ob.name!r} onto {collider.name!r}")
        if not done:
            self.report({"WARNING"}, "no collider surface found to snap to")
            return {"CANCELLED"}
        self.report({"INFO"}, f"snapped {', '.join(done)}")
        return {"FINISHED"}


classes = (
    CABLE_HARNESS_OT_add_connector,
    CABLE_HARNESS_OT_add_clip,
    CABLE_HARNESS_OT_add_junction,
    CABLE_HARNESS_OT_assign_role,
    CABLE_HARNESS_OT_make_cable,
    CABLE_HARNESS_OT_set_rest_shape,
    CABLE_HARNESS_OT_snap_to_face,
)


register, unregister = bpy.utils.register_classes_factory(classes)
