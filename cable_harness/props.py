# SPDX-License-Identifier: GPL-3.0-or-later
"""Harness roles and settings stored on objects (saved with the .blend, survive undo).

One PropertyGroup per object, ``Object.cable_harness``, whose ``role`` says what the object is:
a connector (its local +Z axis is the outlet direction, local +X the cable's first director),
a clip (the cable runs along its local +Z axis), a cable (a curve object), or a collider.
Lengths are stored in Blender units (shown in scene units); ``scene_model`` converts to SI.
"""

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from ..solver_core import PRESETS

ROLES = [
    ("NONE", "None", "Not part of the harness"),
    ("CONNECTOR", "Connector", "Holds a cable end; its local Z axis is the outlet direction"),
    ("CLIP", "Clip", "Holds a cable along its local Z axis"),
    ("CABLE", "Cable", "A cable solved between connectors and clips"),
    ("COLLIDER", "Collider", "A mesh the cables rest on and wrap around"),
]

CLIP_KINDS = [
    ("fixed", "Fixed", "Position, direction and roll held over the clip length"),
    ("rotating", "Rotating", "Position and direction held, the cable may roll"),
    ("sliding", "Sliding", "The cable may slide along the clip axis and roll"),
]

MATERIALS = [(name, name.replace("_", " ").title(), p.description) for name, p in PRESETS.items()] + [
    ("CUSTOM", "Custom", "Young's modulus, Poisson's ratio and density given here")
]


def _is_connector(self, obj):
    return obj.cable_harness.role == "CONNECTOR"


def _is_clip(self, obj):
    return obj.cable_harness.role == "CLIP"


class CableHarnessClipRef(bpy.types.PropertyGroup):
    clip: PointerProperty(name="Clip", type=bpy.types.Object, poll=_is_clip)  # type: ignore
    s: FloatProperty(
        name="Arc Length",
        description="Arc length of the cable at the clip centre",
        min=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )  # type: ignore
    reversed: BoolProperty(
        name="Reversed", default=False, description="The cable passes this clip against its local Z axis"
    )  # type: ignore


class CableHarnessPoint(bpy.types.PropertyGroup):
    co: FloatVectorProperty(name="Location", size=3, subtype="TRANSLATION", unit="LENGTH")  # type: ignore


class CableHarnessSettings(bpy.types.PropertyGroup):
    role: EnumProperty(name="Role", items=ROLES, default="NONE")  # type: ignore

    # connector
    roll_free: BoolProperty(
        name="Roll Free",
        default=False,
        description="The cable may turn about the outlet axis here (a swivel: no twisting moment)",
    )  # type: ignore

    # clip
    clip_kind: EnumProperty(name="Kind", items=CLIP_KINDS, default="fixed")  # type: ignore
    clip_length: FloatProperty(
        name="Length",
        description="Length of cable the clip holds (0: a point clip)",
        min=0.0,
        default=0.01,
        subtype="DISTANCE",
        unit="LENGTH",
    )  # type: ignore
    clip_compliant: BoolProperty(
        name="Compliant", default=False, description="The clip yields elastically instead of holding rigidly"
    )  # type: ignore
    clip_translational_stiffness: FloatProperty(name="Translational Stiffness", description="N/m", min=0.0, default=1e4)  # type: ignore
    clip_rotational_stiffness: FloatProperty(name="Rotational Stiffness", description="N m/rad", min=0.0, default=10.0)  # type: ignore

    # cable
    start: PointerProperty(
        name="Start", type=bpy.types.Object, poll=_is_connector, description="Connector at the start of the cable"
    )  # type: ignore
    end: PointerProperty(
        name="End", type=bpy.types.Object, poll=_is_connector, description="Connector at the end (empty: a free end)"
    )  # type: ignore
    clips: CollectionProperty(type=CableHarnessClipRef)  # type: ignore
    active_clip: IntProperty(name="Active Clip", default=0)  # type: ignore
    route: CollectionProperty(type=CableHarnessPoint)  # type: ignore
    length: FloatProperty(
        name="Length", description="Length of the cable", min=0.0, default=1.0, subtype="DISTANCE", unit="LENGTH"
    )  # type: ignore
    diameter: FloatProperty(name="Diameter", min=0.0, default=0.004, subtype="DISTANCE", unit="LENGTH")  # type: ignore
    material: EnumProperty(name="Material", items=MATERIALS, default="lv2017_harness")  # type: ignore
    youngs_modulus: FloatProperty(name="Young's Modulus", description="MPa", min=0.0, default=126.0)  # type: ignore
    poisson_ratio: FloatProperty(name="Poisson's Ratio", min=0.0, max=0.499, default=0.3)  # type: ignore
    density: FloatProperty(name="Density", description="kg/m^3", min=0.0, default=1500.0)  # type: ignore
    min_bend_radius_allowed: FloatProperty(
        name="Allowed Bend Radius",
        description="Smallest bend radius the cable may have (0: no check)",
        min=0.0,
        default=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )  # type: ignore
    segments: IntProperty(name="Segments", min=2, soft_max=1000, default=60)  # type: ignore
    solver_model: EnumProperty(
        name="Model",
        items=[("cosserat", "Cosserat Rod", "Discrete Cosserat rod, quasi-static Newton solver")],
        default="cosserat",
    )  # type: ignore

    # collider
    collider_margin: FloatProperty(
        name="Margin",
        description="Extra clearance kept from this mesh",
        min=0.0,
        default=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )  # type: ignore

    # last result of a cable (read-outs)
    result_valid: BoolProperty(default=False)  # type: ignore
    result_converged: BoolProperty(default=False)  # type: ignore
    result_length: FloatProperty(name="Solved Length", subtype="DISTANCE", unit="LENGTH")  # type: ignore
    result_min_bend_radius: FloatProperty(name="Min Bend Radius", subtype="DISTANCE", unit="LENGTH")  # type: ignore
    result_solve_ms: FloatProperty(name="Solve Time (ms)")  # type: ignore
    result_iterations: IntProperty(name="Iterations")  # type: ignore
    result_start_force: FloatProperty(name="Start Force (N)")  # type: ignore
    result_end_force: FloatProperty(name="End Force (N)")  # type: ignore
    result_message: StringProperty(name="Message")  # type: ignore

    # what a bake made (so that Clear Bake removes exactly that)
    bake_action: StringProperty()  # type: ignore
    bake_previous_action: StringProperty()  # type: ignore


class CableHarnessSceneSettings(bpy.types.PropertyGroup):
    """Contact between the cables and the scene, for every cable of the scene (case format: contact)."""

    friction_static: FloatProperty(
        name="Static Friction",
        min=0.0,
        soft_max=2.0,
        default=0.0,
        description="Coulomb coefficient below which a contact sticks (0: frictionless)",
    )  # type: ignore
    friction_dynamic: FloatProperty(
        name="Dynamic Friction",
        min=0.0,
        soft_max=2.0,
        default=0.0,
        description="Coulomb coefficient of a sliding contact (at most the static one)",
    )  # type: ignore
    cable_cable: BoolProperty(
        name="Cable-Cable Contact",
        default=False,
        description="Cables press against each other instead of passing through (their drawn routes must not cross)",
    )  # type: ignore

    def contact_document(self) -> dict:
        return {
            "friction_static": self.friction_static,
            "friction_dynamic": min(self.friction_dynamic, self.friction_static),
            "cable_cable": self.cable_cable,
        }


classes = (CableHarnessClipRef, CableHarnessPoint, CableHarnessSettings, CableHarnessSceneSettings)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Object.cable_harness = PointerProperty(type=CableHarnessSettings)
    bpy.types.Scene.cable_harness = PointerProperty(type=CableHarnessSceneSettings)


def unregister():
    del bpy.types.Scene.cable_harness
    del bpy.types.Object.cable_harness
    _unregister_classes()
