# SPDX-License-Identifier: GPL-3.0-or-later
"""Authoring: add connectors and clips, mark objects, draw a cable between selected holders, make a
cable's current shape its rest shape."""

import math

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty, IntProperty

from ..props import ROLES
from ..scene_model import (
    CABLE,
    CLIP,
    CONNECTOR,
    ensure_cable_curve,
    metres_per_unit,
    object_frame,
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
        _add_marker(context, "Connector", "SINGLE_ARROW", (math.pi, 0.0, 0.0), CONNECTOR)
        return {"FINISHED"}


class CABLE_HARNESS_OT_add_clip(bpy.types.Operator):
    """Add a clip at the 3D cursor; the cable runs through its ring along local Z"""

    bl_idname = "cable_harness.add_clip"
    bl_label = "Clip"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        ob = _add_marker(context, "Clip", "CIRCLE", (0.0, math.pi / 2.0, 0.0), CLIP)
        ob.cable_harness.clip_length = DEFAULT_CLIP_LENGTH_M / metres_per_unit(context.scene)
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
            else:
                ob.cable_harness.role = self.role
        if wrong:
            self.report(
                {"WARNING"},
                f"not changed (a {self.role.lower()} must be a "
                f"{'mesh' if self.role == 'COLLIDER' else 'curve'}): {', '.join(wrong)}",
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


def plan_route(start, end, clips, scale):
    """Drawn route (world, Blender units) through the holders, and the index of each clip centre.

    The route leaves the start connector and enters the end connector along their outlets and
    passes each clip along its axis, in the direction that the route travels.
    """
    s_frame = object_frame(start, 1.0)
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
        route += [end_pos - lead * into, end_pos]
    else:
        route.append(route[-1] + lead * (route[-1] - route[-2]) / max(np.linalg.norm(route[-1] - route[-2]), 1e-12))
    return np.array(route), ordered, centres, reversed_flags


def make_cable(context, start, end, clips, slack_percent, diameter_units, segments):
    scale = metres_per_unit(context.scene)
    route, ordered, centres, flags = plan_route(start, end, clips, scale)
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


class CABLE_HARNESS_OT_make_cable(bpy.types.Operator):
    """Draw a cable from the active (or first) selected connector through the selected clips to the
    other selected connector (none: a free end), its length the route's plus some slack"""

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


classes = (
    CABLE_HARNESS_OT_add_connector,
    CABLE_HARNESS_OT_add_clip,
    CABLE_HARNESS_OT_assign_role,
    CABLE_HARNESS_OT_make_cable,
    CABLE_HARNESS_OT_set_rest_shape,
)


register, unregister = bpy.utils.register_classes_factory(classes)
