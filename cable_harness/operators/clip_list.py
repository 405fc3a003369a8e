# SPDX-License-Identifier: GPL-3.0-or-later
"""The clip list of a cable: add the selected clips where the cable passes them, remove one, and
move one up or down the list (the arc positions stay in order along the cable; the clips move)."""

import bpy
import numpy as np
from bpy.props import EnumProperty

from ..scene_model import CLIP, cable_diameter
from .common import RemoveListItem, active_cable, active_cable_or_report, centre_line


def place_on_cable(line: np.ndarray, length: float, point: np.ndarray) -> tuple:
    """(arc position, tangent) of the point of ``line`` nearest ``point``, the arc position scaled
    so that the whole line measures ``length`` (the line is the cable as drawn or solved)."""
    a, b = line[:-1], line[1:]
    d = b - a
    dd = np.maximum(np.einsum("ij,ij->i", d, d), 1e-300)
    t = np.clip(np.einsum("ij,ij->i", point - a, d) / dd, 0.0, 1.0)
    nearest = a + t[:, None] * d
    k = int(np.argmin(np.linalg.norm(nearest - point, axis=1)))
    seg = np.sqrt(dd)
    arc = np.concatenate(([0.0], np.cumsum(seg)))
    s = (arc[k] + t[k] * seg[k]) / arc[-1] * length
    return float(s), d[k] / seg[k]


def distance_to_line(line: np.ndarray, point: np.ndarray) -> float:
    """How far ``point`` is from the nearest point of polyline ``line`` (same units)."""
    a, d = line[:-1], line[1:] - line[:-1]
    dd = np.maximum(np.einsum("ij,ij->i", d, d), 1e-300)
    t = np.clip(np.einsum("ij,ij->i", point - a, d) / dd, 0.0, 1.0)
    return float(np.linalg.norm(a + t[:, None] * d - point, axis=1).min())


def far_off_distance(settings) -> float:
    """Beyond this (Blender units) a clip is not where the cable passes: its arc position, the nearest
    point's, means little. The larger of a few diameters and 5 % of the length, so that neither a thin
    long cable nor a thick short one warns of a clip the route merely misses by a little."""
    return max(3.0 * cable_diameter(settings), 0.05 * settings.length)


class CABLE_HARNESS_OT_clip_add(bpy.types.Operator):
    """Add the selected clips to the active cable's list, where the cable passes them now"""

    bl_idname = "cable_harness.clip_add"
    bl_label = "Add Selected Clips"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        cable = active_cable_or_report(self, context)
        if cable is None:
            return {"CANCELLED"}
        s = cable.cable_harness
        listed = {ref.clip.name for ref in s.clips if ref.clip is not None}
        new = [o for o in context.selected_objects if o.cable_harness.role == CLIP and o.name not in listed]
        if not new:
            self.report({"ERROR"}, "select clips that are not in the cable's list yet (with the cable active)")
            return {"CANCELLED"}
        line = centre_line(cable)
        entries = [(ref.s, ref.clip, ref.reversed) for ref in s.clips]
        far_off = []
        for clip in new:
            position = np.array(clip.matrix_world.translation)
            arc, tangent = place_on_cable(line, s.length, position)
            distance = distance_to_line(line, position)
            if distance > far_off_distance(s):
                far_off.append((clip.name, distance, arc))
            axis = np.array(clip.matrix_world.to_3x3().col[2])
            entries.append((arc, clip, float(axis @ tangent) < 0.0))
        entries.sort(key=lambda e: e[0])
        s.clips.clear()
        for arc, clip, flipped in entries:
            ref = s.clips.add()
            ref.clip, ref.s, ref.reversed = clip, arc, flipped
        s.result_stale = True
        unit = context.scene.unit_settings

        def length(value):  # Blender units, shown as the panel shows lengths
            return bpy.utils.units.to_string(unit.system, "LENGTH", value * unit.scale_length, precision=3)

        for name, distance, arc in far_off:
            self.report(
                {"WARNING"},
                f"clip {name!r} is {length(distance)} from {cable.name!r}: added at the nearest point "
                f"(s = {length(arc)}); move the clip onto the cable or set its Arc Length in the list",
            )
        self.report({"INFO"}, f"added {len(new)} clip(s) to {cable.name!r}")
        return {"FINISHED"}


class CABLE_HARNESS_OT_clip_remove(RemoveListItem, bpy.types.Operator):
    """Remove the clip selected in the list from the active cable (the clip object stays)"""

    bl_idname = "cable_harness.clip_remove"
    bl_label = "Remove Clip"
    list_name, active_name = "clips", "active_clip"
    empty_message = "the active cable has no clip to remove"


class CABLE_HARNESS_OT_clip_move(bpy.types.Operator):
    """Move the selected clip up or down the cable: it swaps places with its neighbour, whose arc
    position it takes (the positions stay in order along the cable)"""

    bl_idname = "cable_harness.clip_move"
    bl_label = "Move Clip"
    bl_options = {"REGISTER", "UNDO"}

    direction: EnumProperty(
        name="Direction",
        items=[("UP", "Up", "Towards the cable's start"), ("DOWN", "Down", "Towards the cable's end")],
        description="Which way along the cable the clip moves",
    )  # type: ignore

    def execute(self, context):
        cable = active_cable(context)
        s = cable.cable_harness if cable is not None else None
        if s is None or not len(s.clips):
            self.report({"ERROR"}, "the active cable has no clips")
            return {"CANCELLED"}
        index = min(max(s.active_clip, 0), len(s.clips) - 1)
        other = index - 1 if self.direction == "UP" else index + 1
        if not 0 <= other < len(s.clips):
            return {"CANCELLED"}
        a, b = s.clips[index], s.clips[other]
        (a.clip, a.reversed), (b.clip, b.reversed) = (b.clip, b.reversed), (a.clip, a.reversed)
        s.active_clip = other
        s.result_stale = True
        return {"FINISHED"}


classes = (CABLE_HARNESS_OT_clip_add, CABLE_HARNESS_OT_clip_remove, CABLE_HARNESS_OT_clip_move)


register, unregister = bpy.utils.register_classes_factory(classes)
