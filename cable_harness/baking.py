# SPDX-License-Identifier: GPL-3.0-or-later
"""Baking solved cable motion into keyframes that play back without this extension.

Each cable's curve data gets an action of its own holding, for every point of its single POLY
spline, F-curves for ``co`` (x, y, z) and ``tilt``, one key per baked frame, written in bulk with
``keyframe_points.foreach_set``. The cable settings remember the action's name and whatever action
the curve had before, so Clear Bake removes exactly what the bake made and restores the rest.
Works with Blender 4.4+ layered actions (slots and channelbags) and with older ``action.fcurves``.
"""

import bpy
import numpy as np

BAKE_TAG = "cable_harness_bake"


def _fcurve_factory(action, anim_data, id_type: str, name: str, group: str):
    """A function (data_path, index) -> new F-curve, for layered (4.4+) and legacy actions."""
    if hasattr(action, "slots"):  # Blender 4.4+: layered actions
        slot = action.slots.new(id_type, name)
        anim_data.action_slot = slot
        layer = action.layers.new("Cable Harness")
        strip = layer.strips.new(type="KEYFRAME")
        fcurves = strip.channelbag(slot, ensure=True).fcurves
        return lambda path, index=0: fcurves.new(path, index=index, group_name=group)
    return lambda path, index=0: action.fcurves.new(path, index=index, action_group=group)


def bake_cable(ob, frames: np.ndarray, points: np.ndarray, tilts: np.ndarray) -> str:
    """Key ``points`` (n_frames, n_points, 3; curve-local Blender units) and ``tilts`` on the cable curve."""
    clear_bake(ob)
    curve = ob.data
    anim = curve.animation_data or curve.animation_data_create()
    settings = ob.cable_harness
    settings.bake_previous_action = anim.action.name if anim.action is not None else ""
    action = bpy.data.actions.new(f"{ob.name} cable bake")
    action[BAKE_TAG] = ob.name
    anim.action = action
    new_fcurve = _fcurve_factory(action, anim, "CURVE", curve.name, ob.name)
    n_frames, n_points = points.shape[:2]
    keys = np.empty((n_frames, 2), dtype=np.float32)
    keys[:, 0] = frames
    for i in range(n_points):
        for k in range(3):
            fc = new_fcurve(f"splines[0].points[{i}].co", k)
            keys[:, 1] = points[:, i, k]
            fc.keyframe_points.add(n_frames)
            fc.keyframe_points.foreach_set("co", keys.ravel())
            fc.keyframe_points.foreach_set("interpolation", np.full(n_frames, 1, dtype=np.int32))  # LINEAR
            fc.update()
        fc = new_fcurve(f"splines[0].points[{i}].tilt")
        keys[:, 1] = tilts[:, i]
        fc.keyframe_points.add(n_frames)
        fc.keyframe_points.foreach_set("co", keys.ravel())
        fc.keyframe_points.foreach_set("interpolation", np.full(n_frames, 1, dtype=np.int32))
        fc.update()
    settings.bake_action = action.name
    return action.name


def bake_junction(ob, samples) -> None:
    """Key a free junction's solved frames: [(frame, world matrix)], location and rotation in the
    object's rotation mode (Euler angles kept continuous from key to key)."""
    euler = None
    for frame, matrix in samples:
        ob.matrix_world = matrix
        ob.keyframe_insert("location", frame=frame, group="Cable Harness")
        if ob.rotation_mode == "QUATERNION":
            ob.keyframe_insert("rotation_quaternion", frame=frame, group="Cable Harness")
        elif ob.rotation_mode != "AXIS_ANGLE":
            if euler is not None:
                ob.rotation_euler = ob.rotation_euler.to_matrix().to_euler(ob.rotation_mode, euler)
            euler = ob.rotation_euler.copy()
            ob.keyframe_insert("rotation_euler", frame=frame, group="Cable Harness")


def clear_bake(ob) -> bool:
    """Remove the action a bake made on this cable and restore the one it replaced."""
    settings = ob.cable_harness
    name = settings.bake_action
    if not name:
        return False
    action = bpy.data.actions.get(name)
    anim = ob.data.animation_data
    if anim is not None and anim.action is not None and anim.action.name == name:
        previous = bpy.data.actions.get(settings.bake_previous_action) if settings.bake_previous_action else None
        anim.action = previous
    if action is not None and action.get(BAKE_TAG) == ob.name:
        bpy.data.actions.remove(action)
    settings.bake_action = ""
    settings.bake_previous_action = ""
    return True
