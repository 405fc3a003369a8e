# SPDX-License-Identifier: GPL-3.0-or-later
"""Harness scenes built through the extension's own operators (for the Blender tests)."""

import inspect
import math
import types

import bpy
import numpy as np


def place(ob, location_m, scale, rotation=None):
    ob.location = [v / scale for v in location_m]
    if rotation is not None:
        ob.rotation_euler = rotation
    bpy.context.view_layer.update()


def simple_harness(unit_scale=1.0, with_clip=True, segments=40):
    """Two ceiling connectors 0.3 m apart and a clip between them, built with the Add and Make Cable
    operators in a scene whose unit is ``unit_scale`` metres. Returns (start, end, clip, cable)."""
    scene = bpy.context.scene
    scene.unit_settings.scale_length = unit_scale
    bpy.ops.cable_harness.add_connector()
    start = bpy.context.active_object
    place(start, (0.0, 0.0, 0.0), unit_scale)
    bpy.ops.cable_harness.add_connector()
    end = bpy.context.active_object
    place(end, (0.3, 0.0, 0.0), unit_scale)
    clip = None
    if with_clip:
        bpy.ops.cable_harness.add_clip()
        clip = bpy.context.active_object
        place(clip, (0.15, 0.02, -0.06), unit_scale, (0.0, math.pi / 2.0, 0.0))
    for ob in (start, end, clip):
        if ob is not None:
            ob.select_set(True)
    bpy.context.view_layer.objects.active = start
    assert bpy.ops.cable_harness.make_cable(segments=segments, solve=False) == {"FINISHED"}
    cable = next(o for o in scene.objects if o.cable_harness.role == "CABLE")
    return start, end, clip, cable


def open_bay():
    """demo_blends/equipment_bay.blend opened: (scene, its power plug, the plug's world position at the
    first frame and at the last, in scene units: the insertion it is animated along)."""
    from helpers.blender_env import ROOT

    bpy.ops.wm.open_mainfile(filepath=str(ROOT / "demo_blends" / "equipment_bay.blend"))
    scene = bpy.context.scene
    plug = bpy.data.objects["B_power_plug"]
    scene.frame_set(scene.frame_end)
    last = plug.matrix_world.translation.copy()
    scene.frame_set(scene.frame_start)
    return scene, plug, plug.matrix_world.translation.copy(), last


def curve_world_points(ob, scale=1.0):
    """Points of the cable curve in world space, metres."""
    pts = np.empty(len(ob.data.splines[0].points) * 4, dtype=np.float32)
    ob.data.splines[0].points.foreach_get("co", pts)
    pts = pts.reshape(-1, 4)[:, :3].astype(np.float64)
    M = np.array([list(r) for r in ob.matrix_world])
    return (pts @ M[:3, :3].T + M[:3, 3]) * scale


class StandIn:
    """A stand-in for the operator instance: the class's own functions bound to a plain object
    (operators cannot be instantiated outside Blender's operator machinery)."""

    def __init__(self, cls):
        self._cls = cls
        self.reports = []

    def __getattr__(self, name):
        attr = getattr(self._cls, name)
        if isinstance(inspect.getattr_static(self._cls, name), (staticmethod, classmethod)):
            return attr  # bound (or not) as the class binds it
        return types.MethodType(attr, self) if callable(attr) else attr

    def report(self, level, message):
        self.reports.append((set(level), message))


class StandInEvent:
    """Only attributes that bpy.types.Event really has, so code reading anything else fails here too."""

    __slots__ = ("type", "value")

    def __init__(self, type, value="NOTHING"):
        self.type, self.value = type, value


def y_harness(unit_scale=1.0, fixed=False, junction_z=0.0):
    """A connector, a junction 0.25 m along x and two connectors beyond it at +-0.15 m in y, drawn with
    Add Junction and Cable Between Selected. Returns (junction, trunk, branches)."""
    scene = bpy.context.scene
    scene.unit_settings.scale_length = unit_scale
    bpy.ops.cable_harness.add_connector()
    a = bpy.context.active_object
    place(a, (0.0, 0.0, 0.0), unit_scale, (0.0, math.pi / 2.0, 0.0))  # outlet along +x
    assert bpy.ops.cable_harness.add_junction() == {"FINISHED"}
    j = bpy.context.active_object
    place(j, (0.25, 0.0, junction_z), unit_scale)
    j.cable_harness.junction_fixed = fixed
    ends = []
    for y in (0.15, -0.15):
        bpy.ops.cable_harness.add_connector()
        c = bpy.context.active_object
        place(c, (0.45, y, 0.0), unit_scale, (0.0, -math.pi / 2.0, 0.0))  # the cable enters along +x
        ends.append(c)
    bpy.ops.object.select_all(action="DESELECT")
    for ob in (a, j):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = a
    assert bpy.ops.cable_harness.make_cable(segments=20, slack=8.0, solve=False) == {"FINISHED"}
    trunk = bpy.context.active_object
    bpy.ops.object.select_all(action="DESELECT")
    for ob in (j, *ends):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = j
    assert bpy.ops.cable_harness.make_cable(segments=20, slack=8.0, solve=False) == {"FINISHED"}
    branches = [o for o in scene.objects if o.cable_harness.role == "CABLE" and o is not trunk]
    return j, trunk, branches


class RecordingLayout:
    """Records what a panel draws (a stand-in for UILayout, which only a window's redraw provides):
    ("prop", name, text), ("label", text), ("operator", name), ("list", type), ("split", factor).
    ``wire_prefix``: a wire's settings recorded as "wire.<name>", apart from the cable's own."""

    def __init__(self, drawn, wire_prefix=False):
        self.drawn, self.wire_prefix = drawn, wire_prefix
        self.use_property_split = self.use_property_decorate = self.alert = self.active = False

    def prop(self, data, name, text=None, **kwargs):
        wire = self.wire_prefix and hasattr(data, "wire_id")
        self.drawn.append(("prop", f"wire.{name}" if wire else name, text))

    def label(self, text="", **kwargs):
        self.drawn.append(("label", text))

    def operator(self, name, **kwargs):
        self.drawn.append(("operator", name))
        return self

    def template_list(self, list_type, *args, **kwargs):
        self.drawn.append(("list", list_type))

    def separator(self, **kwargs):
        pass

    def split(self, factor=0.0, **kwargs):
        self.drawn.append(("split", factor))
        return self

    def row(self, **kwargs):
        return self

    column = box = row
