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
from .point_attributes import remove_companions
from .scene_model import ROLE_OBJECT_TYPES, sync_cable_bevel
from .variation_study import DISTRIBUTIONS, QUANTITIES

ROLES = [
    ("NONE", "None", "Not part of the harness"),
    ("CONNECTOR", "Connector", "Holds a cable end; its local Z axis is the outlet direction"),
    ("CLIP", "Clip", "Holds a cable along its local Z axis"),
    ("CABLE", "Cable", "A cable solved between connectors and clips"),
    ("COLLIDER", "Collider", "A mesh the cables rest on and wrap around"),
    (
        "JUNCTION",
        "Junction",
        "Where branches of a harness meet: a small rigid body holding the cable ends along their outlets",
    ),
]

# Roles are offered only to object types that can carry them (scene_model.ROLE_OBJECT_TYPES): a
# cable is a curve the solver writes its centre line into, a collider a mesh whose triangles it touches.
# (identifier, name, description, number): the numbers are those the roles were saved with
_NUMBERED_ROLES = [(*item, number) for number, item in enumerate(ROLES)]
_ROLES_BY_TYPE = {}


def _role_items(self, context):
    """The roles an object of this type can take (the list is kept: Blender holds its strings)."""
    kind = getattr(self.id_data, "type", "")
    if kind not in _ROLES_BY_TYPE:
        _ROLES_BY_TYPE[kind] = [
            item for item in _NUMBERED_ROLES if item[0] not in ROLE_OBJECT_TYPES or kind in ROLE_OBJECT_TYPES[item[0]]
        ]
    return _ROLES_BY_TYPE[kind]


CLIP_KINDS = [
    ("fixed", "Fixed", "Position, direction and roll held over the clip length"),
    ("rotating", "Rotating", "Position and direction held, the cable may roll"),
    ("sliding", "Sliding", "The cable may slide along the clip axis and roll"),
]

MATERIALS = [(name, name.replace("_", " ").title(), p.description) for name, p in PRESETS.items()] + [
    ("CUSTOM", "Custom", "Young's modulus, Poisson's ratio and density given here")
]


def _settings_changed(self, context):
    """A setting the solved cable was built from changed: its read-outs are of the old settings."""
    self.result_stale = True


def _point_attributes_changed(self, context):
    """Off: the "<cable> Physics" meshes the option made go at once, rather than show an old solve."""
    if not self.point_attributes:
        remove_companions(self.id_data)


def _diameter_changed(self, context):
    self.result_stale = True
    if self.id_data.type == "CURVE":
        sync_cable_bevel(self.id_data)


def _bundle_changed(self, context):
    # a wire's or the bundle's setting: the cable's diameter and stiffness follow (self may be a wire)
    ob = self.id_data
    ob.cable_harness.result_stale = True
    if ob.type == "CURVE":
        sync_cable_bevel(ob)


def _material_property(whose: str, default: str, update):
    return EnumProperty(
        name="Material",
        items=MATERIALS,
        default=default,
        description=f"Stiffness and density of {whose}: a preset (python -m solver_core presets) or custom values",
        update=update,
    )


def _modulus_property(whose: str, update):
    return FloatProperty(
        name="Young's Modulus (MPa)",
        description=f"Young's modulus of {whose} homogenised section, in MPa (N/mm²)",
        min=0.0,
        default=126.0,
        update=update,
    )


def _poisson_property(update):
    return FloatProperty(
        name="Poisson's Ratio",
        description="Poisson's ratio (dimensionless): sets the torsional stiffness GJ = EJ / (1 + nu)",
        min=0.0,
        max=0.499,
        default=0.3,
        update=update,
    )


def _density_property(whose: str, update):
    return FloatProperty(
        name="Density (kg/m³)",
        description=f"Mass per volume of {whose} section, in kg/m³ (its weight is what gravity pulls)",
        min=0.0,
        default=1500.0,
        update=update,
    )


def _length_changed(self, context):
    # the clips keep their place along the cable in proportion (a clip at mid-length stays there)
    if self.clip_length_basis > 0.0 and self.length > 0.0:
        ratio = self.length / self.clip_length_basis
        for ref in self.clips:
            ref.s *= ratio
    self.clip_length_basis = self.length
    self.result_stale = True


def _is_connector(self, obj):
    return obj.cable_harness.role == "CONNECTOR"


def _is_cable_end(self, obj):
    return obj.cable_harness.role == "CONNECTOR" or (obj.cable_harness.role == "JUNCTION" and obj.type == "EMPTY")


def _is_clip(self, obj):
    return obj.cable_harness.role == "CLIP"


def _is_collider(self, obj):
    return obj.cable_harness.role == "COLLIDER" and obj.type == "MESH"


def _is_cable(self, obj):
    return obj.cable_harness.role == "CABLE" and obj.type == "CURVE"


class CableHarnessClipRef(bpy.types.PropertyGroup):
    clip: PointerProperty(name="Clip", type=bpy.types.Object, poll=_is_clip, description="The clip object")  # type: ignore
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
    co: FloatVectorProperty(
        name="Location", description="A point of the drawn route (world)", size=3, subtype="TRANSLATION", unit="LENGTH"
    )  # type: ignore


class CableHarnessVariation(bpy.types.PropertyGroup):
    """One varied quantity of a variation study (variation_study.py)."""

    cable: PointerProperty(
        name="Cable", type=bpy.types.Object, poll=_is_cable, description="The cable whose quantity varies"
    )  # type: ignore
    quantity: EnumProperty(name="Quantity", items=QUANTITIES, default="LENGTH", description="What varies")  # type: ignore
    clip_number: IntProperty(
        name="Clip",
        description="Which clip of the cable's list (1: the first from its start)",
        min=1,
        default=1,
    )  # type: ignore
    axis: EnumProperty(
        name="Axis",
        items=[(a, a, f"Along the world {a} axis") for a in "XYZ"],
        default="Z",
        description="The world axis along which the place varies",
    )  # type: ignore
    distribution: EnumProperty(
        name="Distribution", items=DISTRIBUTIONS, default="UNIFORM", description="How the values are chosen"
    )  # type: ignore
    tolerance: FloatProperty(
        name="Tolerance",
        description="How far the value varies about the scene's: the half-width (Uniform, Corners) or the "
        "standard deviation (Normal), a length",
        min=0.0,
        default=0.002,
        subtype="DISTANCE",
        unit="LENGTH",
    )  # type: ignore
    tolerance_percent: FloatProperty(
        name="Tolerance (%)",
        description="How far the value varies about the scene's, in percent of it: the half-width (Uniform, "
        "Corners) or the standard deviation (Normal)",
        min=0.0,
        max=99.0,
        default=10.0,
    )  # type: ignore


class CableHarnessWire(bpy.types.PropertyGroup):
    """A kind of wire in a bundle: its diameter, material and how many of it the bundle holds."""

    wire_id: StringProperty(
        name="Wire ID",
        description="Names the circuit (e.g. W12). Give the same ID to this wire on every branch it runs "
        "through: the report's bill of materials then lists it once, from connector to connector through "
        "the junctions, cut to the sum of those branches' lengths. Empty: a wire of this cable only",
        default="",
        maxlen=100,
        update=_bundle_changed,
    )  # type: ignore

    diameter: FloatProperty(
        name="Diameter",
        description="Outer diameter of one wire, its insulation included",
        min=0.0,
        default=0.0016,
        subtype="DISTANCE",
        unit="LENGTH",
        update=_bundle_changed,
    )  # type: ignore
    count: IntProperty(
        name="Count",
        description="How many wires of this kind the bundle holds",
        min=1,
        default=1,
        update=_bundle_changed,
    )  # type: ignore
    material: _material_property("one wire", "pvc_wire", _bundle_changed)  # type: ignore
    youngs_modulus: _modulus_property("the wire's", _bundle_changed)  # type: ignore
    poisson_ratio: _poisson_property(_bundle_changed)  # type: ignore
    density: _density_property("the wire's", _bundle_changed)  # type: ignore


WRAPS = [
    ("loose", "Loose", "Wires held together loosely: the bundle's stiffness is the sum of its wires'"),
    ("taped", "Taped", "Wrapped in tape: stiffer than loose by a factor not known here (the sum is a lower bound)"),
    ("sleeved", "Sleeved", "In a sleeve: stiffer than loose by a factor not known here (the sum is a lower bound)"),
    ("conduit", "Conduit", "In a conduit: stiffer than loose by a factor not known here (the sum is a lower bound)"),
]


class CableHarnessSettings(bpy.types.PropertyGroup):
    role: EnumProperty(
        name="Role",
        items=_role_items,
        default=0,
        description="What this object is in the harness (cables must be curves, colliders meshes)",
    )  # type: ignore

    # connector
    roll_free: BoolProperty(
        name="Roll Free",
        default=False,
        description="The cable may turn about the outlet axis here (a swivel: no twisting moment)",
    )  # type: ignore
    mounted_on: PointerProperty(
        name="Mounted On",
        type=bpy.types.Object,
        poll=_is_collider,
        description="The collider the connector sits on (its device or bracket): around the connector, within "
        "a few cable radii, that collider is no obstacle to the cable leaving it. Empty: the collider whose "
        "surface lies within 1.25 cable radii of the connector, if any. Snap to Face sets it",
    )  # type: ignore
    # the rotation the extension gave a new connector (Add Connector, Cable Between Selected): while the
    # connector still has it, Cable Between Selected may roll it about its outlet for an untwisted cable
    rotation_chosen: FloatVectorProperty(size=4, options={"HIDDEN"})  # type: ignore

    # junction
    junction_fixed: BoolProperty(
        name="Fixed",
        default=False,
        description="Held where it is placed, like a connector (drag it to move its branches); otherwise its "
        "position and rotation are solved for, where the forces and moments of its branches balance",
    )  # type: ignore
    junction_readout: StringProperty(
        name="Last Solve",
        default="",
        description="The junction after the last solve: where it is (free ones) and the force each branch "
        "pulls it with, in N",
    )  # type: ignore
    junction_mass: FloatProperty(
        name="Mass",
        description="Mass of the junction's sleeve or tape, in kg; its weight acts at its origin",
        min=0.0,
        soft_max=1.0,
        default=0.0,
        unit="MASS",
    )  # type: ignore

    # clip
    clip_kind: EnumProperty(
        name="Kind", items=CLIP_KINDS, default="fixed", description="What the clip holds of the cable passing it"
    )  # type: ignore
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
    clip_translational_stiffness: FloatProperty(
        name="Translational Stiffness (N/m)",
        description="Force per metre with which a compliant clip resists the cable moving off its centre, in N/m",
        min=0.0,
        default=1e4,
    )  # type: ignore
    clip_rotational_stiffness: FloatProperty(
        name="Rotational Stiffness (N·m/rad)",
        description="Moment per radian with which a compliant clip resists the cable turning in it, in N·m/rad",
        min=0.0,
        default=10.0,
    )  # type: ignore

    # cable
    start: PointerProperty(
        name="Start",
        type=bpy.types.Object,
        poll=_is_cable_end,
        description="Connector or junction at the start of the cable",
    )  # type: ignore
    end: PointerProperty(
        name="End",
        type=bpy.types.Object,
        poll=_is_cable_end,
        description="Connector or junction at the end (empty: a free end)",
    )  # type: ignore
    start_outlet: FloatVectorProperty(
        name="Start Outlet",
        size=3,
        subtype="DIRECTION",
        default=(0.0, 0.0, 1.0),
        description="Where the cable leaves its start junction: a direction in the junction's local axes "
        "(it turns with the junction)",
    )  # type: ignore
    end_outlet: FloatVectorProperty(
        name="End Outlet",
        size=3,
        subtype="DIRECTION",
        default=(0.0, 0.0, 1.0),
        description="Where the cable leaves its end junction, pointing into the cable: a direction in the "
        "junction's local axes (it turns with the junction)",
    )  # type: ignore
    clips: CollectionProperty(
        type=CableHarnessClipRef, description="The clips the cable passes, in order from its start"
    )  # type: ignore
    active_clip: IntProperty(name="Active Clip", default=0, description="The clip selected in the list")  # type: ignore
    route: CollectionProperty(
        type=CableHarnessPoint, description="The drawn route the cable starts from (Reset puts it back there)"
    )  # type: ignore
    length: FloatProperty(
        name="Length",
        description="Length of the cable (its clips keep their place along it in proportion when this changes)",
        min=0.0,
        default=1.0,
        subtype="DISTANCE",
        unit="LENGTH",
        update=_length_changed,
    )  # type: ignore
    clip_length_basis: FloatProperty(options={"HIDDEN"})  # type: ignore  # the length the clips' s refer to
    diameter: FloatProperty(
        name="Diameter",
        description="Outer diameter of the cable: its contact radius is half of it, and the curve's bevel shows it",
        min=0.0,
        default=0.004,
        subtype="DISTANCE",
        unit="LENGTH",
        update=_diameter_changed,
    )  # type: ignore
    is_bundle: BoolProperty(
        name="Bundle of Wires",
        description="The cable is a bundle of wires: its diameter, mass and stiffness follow from the wires and "
        "the wrap (the rule and its sources: python -m solver_core presets)",
        default=False,
        update=_bundle_changed,
    )  # type: ignore
    wires: CollectionProperty(type=CableHarnessWire, description="The kinds of wire the bundle holds")  # type: ignore
    active_wire: IntProperty(name="Active Wire", description="The wire selected in the list", min=0)  # type: ignore
    wrap: EnumProperty(
        name="Wrap",
        items=WRAPS,
        default="loose",
        description="What holds the bundle's wires together",
        update=_bundle_changed,
    )  # type: ignore
    sheath: FloatProperty(
        name="Sheath",
        description="Thickness of the tape, sleeve or conduit wall around the wires (adds twice to the diameter)",
        min=0.0,
        default=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
        update=_bundle_changed,
    )  # type: ignore
    material: _material_property("the cable", "lv2017_harness", _settings_changed)  # type: ignore
    youngs_modulus: _modulus_property("the cable's", _settings_changed)  # type: ignore
    poisson_ratio: _poisson_property(_settings_changed)  # type: ignore
    density: _density_property("the cable's", _settings_changed)  # type: ignore
    min_bend_radius_allowed: FloatProperty(
        name="Allowed Bend Radius",
        description="Smallest bend radius the cable may have, in scene length units (0: no check)",
        min=0.0,
        default=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )  # type: ignore
    segments: IntProperty(
        name="Segments",
        description="Number of rod segments the cable is solved with (more: finer bends, slower solves)",
        min=2,
        soft_max=1000,
        default=60,
        update=_settings_changed,
    )  # type: ignore
    rest_shape: EnumProperty(
        name="Rest Shape",
        items=[
            ("STRAIGHT", "Straight", "The cable is unstressed when straight"),
            ("BENT", "Bent", "Pre-formed to a constant bend (a ring, or with twist a helix: a coiled cord)"),
            ("CURVE", "Shape", "Pre-formed to a stored shape (Set Rest Shape from the curve as it is now)"),
        ],
        default="STRAIGHT",
        description="The shape the cable springs back to when nothing holds it (moulded hoses, coiled cords, "
        "pre-bent bundles)",
        update=_settings_changed,
    )  # type: ignore
    rest_bend_radius: FloatProperty(
        name="Rest Bend Radius",
        description="Radius of the unstressed cable's constant bend (0: no bend, a twist alone)",
        min=0.0,
        default=0.1,
        subtype="DISTANCE",
        unit="LENGTH",
        update=_settings_changed,
    )  # type: ignore
    rest_bend_direction: FloatProperty(
        name="Bend Direction",
        description="Towards which side of the cable it bends, an angle about its axis measured from the start "
        "connector's local X axis (the cable's first director)",
        default=0.0,
        subtype="ANGLE",
        unit="ROTATION",
        update=_settings_changed,
    )  # type: ignore
    rest_twist: FloatProperty(
        name="Rest Twist (°/m)",
        description="Twist of the unstressed cable about its axis, in degrees per metre (with a bend: a helix)",
        default=0.0,
        update=_settings_changed,
    )  # type: ignore
    rest_route: CollectionProperty(
        type=CableHarnessPoint, description="The unstressed shape of a pre-formed cable (world, Blender units)"
    )  # type: ignore
    solver_model: EnumProperty(
        name="Model",
        items=[("cosserat", "Cosserat Rod", "Discrete Cosserat rod, quasi-static Newton solver")],
        default="cosserat",
        description="Not used: the model is the scene's (Cable Harness panel, Model), kept so that files "
        "saved with it open unchanged",
        options={"HIDDEN"},
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
    result_valid: BoolProperty(default=False, options={"HIDDEN"})  # type: ignore
    result_stale: BoolProperty(default=False, options={"HIDDEN"})  # type: ignore
    result_inputs: StringProperty(
        name="Result Inputs",
        description="Digest of the settings the last result was solved with (the panel compares it with the "
        "settings now to say the result is out of date)",
        options={"HIDDEN"},
    )  # type: ignore
    result_model: StringProperty(
        name="Solved With",
        description="The scene's Model and Motion when the last result was solved",
        options={"HIDDEN"},
    )  # type: ignore
    result_converged: BoolProperty(default=False, options={"HIDDEN"})  # type: ignore
    result_length: FloatProperty(
        name="Solved Length", description="Length of the solved centre line", subtype="DISTANCE", unit="LENGTH"
    )  # type: ignore
    result_min_bend_radius: FloatProperty(
        name="Min Bend Radius",
        description="Smallest bend radius along the solved cable (0: straight)",
        subtype="DISTANCE",
        unit="LENGTH",
    )  # type: ignore
    result_solve_ms: FloatProperty(name="Solve Time (ms)", description="Time the last solve took, in ms")  # type: ignore
    result_iterations: IntProperty(name="Iterations", description="Newton iterations of the last solve")  # type: ignore
    result_start_force: FloatProperty(
        name="Start Force (N)", description="Force the cable exerts on its start connector, in N"
    )  # type: ignore
    result_end_force: FloatProperty(
        name="End Force (N)", description="Force the cable exerts on its end connector, in N"
    )  # type: ignore
    result_message: StringProperty(name="Message", description="Why the last solve failed, or what to look at")  # type: ignore

    # the bevel depth the extension last gave the curve (scene_model.sync_cable_bevel): a different
    # depth on the curve was set by the user and is kept
    bevel_depth_set: FloatProperty(options={"HIDDEN"})  # type: ignore

    # what a bake made (so that Clear Bake removes exactly that)
    bake_action: StringProperty(options={"HIDDEN"})  # type: ignore
    bake_previous_action: StringProperty(options={"HIDDEN"})  # type: ignore


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

    show_physics: BoolProperty(
        name="Show Physics",
        default=True,
        description="Draw each solved cable coloured by how much of its allowed bend it uses, the forces on "
        "connectors and clips as arrows, contacts as dots, and failed cables in red",
    )  # type: ignore
    point_attributes: BoolProperty(
        name="Physics Attributes",
        default=False,
        description="After each solve, write every cable's centre line with its curvature (1/m), tension (N), "
        "twist rate (rad/m) and bend utilisation per point into a companion mesh '<cable> Physics', "
        "where Geometry Nodes and materials can read them (the last solve only; not baked)",
        update=_point_attributes_changed,
    )  # type: ignore
    arrow_length_per_newton: FloatProperty(
        name="Arrow Length per N",
        description="Length of a force arrow per newton of force, in the scene's length unit per N. Until you "
        "set it, each solve chooses it from the size of the solved harness (a twentieth of it per newton, rounded)",
        min=0.0,
        soft_max=1.0,
        default=0.02,
        subtype="DISTANCE",
        unit="LENGTH",
    )  # type: ignore
    # the arrow length per N a solve last chose (simulation.py): a different value was set by the user and is kept
    arrow_length_chosen: FloatProperty(
        name="Chosen Arrow Length per N",
        description="The arrow length per newton the extension last chose, in Blender units per N (0: none yet)",
        options={"HIDDEN"},
    )  # type: ignore

    # variation study (variation_study.py, study_runner.py)
    variations: CollectionProperty(type=CableHarnessVariation, description="The quantities a variation study varies")  # type: ignore
    active_variation: IntProperty(name="Active Variation", default=0, description="The variation selected in the list")  # type: ignore
    study_samples: IntProperty(
        name="Samples",
        description="Variants drawn from the Uniform and Normal variations (Corners multiply them by 3 each)",
        min=1,
        soft_max=1000,
        max=100000,
        default=50,
    )  # type: ignore
    study_seed: IntProperty(
        name="Seed",
        description="Seed of the random draws: the same seed draws the same variants again",
        min=0,
        default=1,
    )  # type: ignore
    study_workers: IntProperty(
        name="Workers",
        description="Processes solving variants side by side (0: one per CPU core)",
        min=0,
        soft_max=64,
        default=0,
    )  # type: ignore
    study_folder: StringProperty(
        name="Folder",
        description="Where studies keep their results (results.csv, summary.json, the shapes), one sub-folder "
        "per study; '//' is the .blend file's folder, an unsaved file uses the system's temporary folder",
        default="//cable_studies",
        subtype="DIR_PATH",
    )  # type: ignore
    show_envelope: BoolProperty(
        name="Show Envelope",
        default=True,
        description="Draw the solved shapes of the last study's converged variants over the cables",
    )  # type: ignore

    model: EnumProperty(
        name="Model",
        items=[
            (
                "cosserat",
                "Cosserat Rod",
                "Discrete Cosserat rod solved by Newton's method: everything (contact, clips, junctions, dynamics)",
            ),
            (
                "mass_spring",
                "Mass-Spring (Lv 2017)",
                "The mass-spring chain of Lv et al. 2017, relaxed to rest: cables held at their ends and "
                "rigid clips, resting on colliders at their points; no cable contact, quasi-static only",
            ),
            (
                "kirchhoff_cg",
                "Kirchhoff Rod (Linn et al.)",
                "The Kirchhoff rod of Linn et al. minimised by "
                "nonlinear CG: cables held at their two ends only, no colliders, quasi-static only",
            ),
            (
                "cosserat_pbd",
                "Cosserat Rod, PBD (Chen 2023)",
                "The Cosserat rod of Chen et al. 2023 solved by position-based dynamics (XPBD) to rest: "
                "cables held at their two ends only (pre-formed ones too), no colliders; Dynamic by XPBD steps",
            ),
        ],
        default="cosserat",
        description="The model every cable of the scene is solved with (a check of one model against "
        "another); a scene with what a model does not express is refused with the reason",
    )  # type: ignore
    motion: EnumProperty(
        name="Motion",
        items=[
            (
                "QUASI_STATIC",
                "Quasi-static",
                "Each solve finds the cables at rest where their holders are (an equilibrium, no inertia)",
            ),
            (
                "DYNAMIC",
                "Dynamic",
                "The cables have mass and damping and move in time: Simulate runs in real time, Bake at the "
                "scene's frame rate (one frame is 1/fps seconds), and a cable swings and settles",
            ),
        ],
        default="QUASI_STATIC",
        description="Whether Simulate and Bake find equilibria or follow the cables' motion in time",
    )  # type: ignore
    time_step: FloatProperty(
        name="Time Step (s)",
        description="Longest time step of the dynamic integrator, in seconds: a frame (or a tick of Simulate) "
        "is split into equal steps no longer than this",
        default=0.004,
        min=1e-5,
        max=0.1,
        precision=4,
    )  # type: ignore
    damping: FloatProperty(
        name="Damping (1/s)",
        description="Mass-proportional damping c, in 1/s: a force -c m v on every point of a cable (0: "
        "undamped; a swing of angular frequency w is damped c/(2w) of critical)",
        default=2.0,
        min=0.0,
        soft_max=50.0,
    )  # type: ignore

    def dynamics_document(self) -> dict | None:
        """The case's solver.dynamics (None: quasi-static)."""
        if self.motion != "DYNAMIC":
            return None
        return {"time_step": self.time_step, "damping": self.damping}

    def contact_document(self) -> dict:
        return {
            "friction_static": self.friction_static,
            "friction_dynamic": min(self.friction_dynamic, self.friction_static),
            "cable_cable": self.cable_cable,
        }


classes = (
    CableHarnessWire,
    CableHarnessClipRef,
    CableHarnessPoint,
    CableHarnessVariation,
    CableHarnessSettings,
    CableHarnessSceneSettings,
)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Object.cable_harness = PointerProperty(type=CableHarnessSettings)
    bpy.types.Scene.cable_harness = PointerProperty(type=CableHarnessSceneSettings)


def unregister():
    del bpy.types.Scene.cable_harness
    del bpy.types.Object.cable_harness
    _unregister_classes()
