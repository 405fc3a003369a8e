# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the demo scenes with the extension's own operators (run inside bpy with the extension on).

- ``build_equipment_bay``: an equipment bay imported from STEP (millimetres) through Import CAD, two
  devices with sockets, brackets, a tray; three cables through fixed, rotating, sliding and compliant
  clips, one of them resting on a tray; the power plug is inserted into its socket over an animated path (frames 1-60).
- ``build_desk``: a desk with a monitor and a lamp for artists, in metres, from Blender primitives.
"""

from __future__ import annotations

import bpy
from mathutils import Matrix, Vector

from . import bay_geometry as bay

INSERTION_FRAMES = (1, 60)


def _reset_scene(unit_scale: float, length_unit: str, name: str):
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.name = name
    scene.unit_settings.system = "METRIC"
    scene.unit_settings.scale_length = unit_scale
    scene.unit_settings.length_unit = length_unit
    return scene


def _orient(ob, location, axis, up=(0.0, 0.0, 1.0)):
    """Place a connector or clip with its local Z along ``axis`` (and local X as close to ``up`` as
    it can be, which fixes the roll of the cable's cross-section)."""
    z = Vector(axis).normalized()
    x = Vector(up) - Vector(up).dot(z) * z
    if x.length < 1e-6:
        x = Vector((1.0, 0.0, 0.0)) - z.x * z
    x.normalize()
    y = z.cross(x)
    ob.matrix_world = Matrix.Translation(Vector(location)) @ Matrix((x, y, z)).transposed().to_4x4()


def _add(kind, name, location, axis, up=(0.0, 0.0, 1.0)):
    getattr(bpy.ops.cable_harness, f"add_{kind}")()
    ob = bpy.context.active_object
    ob.name = name
    _orient(ob, location, axis, up)
    return ob


def _cable(name, start, end, clips, diameter, length, material, segments, colour):
    for ob in bpy.context.selected_objects:
        ob.select_set(False)
    for ob in [start, end, *clips]:
        if ob is not None:
            ob.select_set(True)
    bpy.context.view_layer.objects.active = start
    bpy.context.view_layer.update()
    result = bpy.ops.cable_harness.make_cable(segments=segments, diameter=diameter, solve=False)
    if result != {"FINISHED"}:
        raise RuntimeError(f"could not make cable {name}")
    ob = bpy.context.active_object
    ob.name = name
    ob.data.name = name
    s = ob.cable_harness
    drawn = [ref.s for ref in s.clips]
    s.length = length
    for ref, arc in zip(s.clips, drawn):  # the clips stay where they were drawn along the cable
        ref.s = arc
    s.material = material
    ob.data.materials.append(_material(f"{name} insulation", colour, roughness=0.45))
    return ob


def _material(name, colour, roughness=0.6, metallic=0.0):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    if bsdf is not None:
        bsdf.inputs["Base Color"].default_value = (*colour, 1.0)
        bsdf.inputs["Roughness"].default_value = roughness
        bsdf.inputs["Metallic"].default_value = metallic
    mat.diffuse_color = (*colour, 1.0)
    return mat


def _box_mesh(name, size):
    import bmesh

    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=size, verts=bm.verts)
    bm.to_mesh(mesh)
    bm.free()
    return mesh


def _look(camera_location, target, lens=35.0, sun_rotation=(0.7, 0.15, 0.6)):
    scene = bpy.context.scene
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.data.lens = lens
    cam.data.clip_start = 0.001 / scene.unit_settings.scale_length  # 1 mm
    cam.data.clip_end = 100.0 / scene.unit_settings.scale_length
    cam.location = camera_location
    direction = Vector(target) - Vector(camera_location)
    cam.rotation_euler = direction.to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 3.0
    sun.data.angle = 0.2
    sun.rotation_euler = sun_rotation
    scene.collection.objects.link(sun)
    world = bpy.data.worlds.new("World")
    world.use_nodes = True
    background = world.node_tree.nodes.get("Background")
    if background is not None:
        background.inputs["Color"].default_value = (0.55, 0.6, 0.68, 1.0)
        background.inputs["Strength"].default_value = 0.6
    scene.world = world


def build_equipment_bay(step_path: str) -> dict:
    """The bay scene from a STEP file written by bay_geometry.write_step. Returns object names."""
    scene = _reset_scene(0.001, "MILLIMETERS", "Equipment Bay")
    scene.cable_harness.cable_cable = True  # the power and signal lines share the brackets
    result = bpy.ops.cable_harness.import_step(filepath=str(step_path), linear_deflection=0.2)
    if result != {"FINISHED"}:
        raise RuntimeError(f"Import CAD failed for {step_path}")
    colours = {
        "panel": (0.62, 0.64, 0.66),
        "device": (0.12, 0.18, 0.28),
        "bracket": (0.75, 0.55, 0.2),
        "tray": (0.35, 0.38, 0.4),
    }
    for ob in scene.objects:
        if ob.type == "MESH":
            key = next((k for k in colours if ob.name.startswith(k)), "panel")
            ob.data.materials.append(
                _material(f"{ob.name} finish", colours[key], metallic=0.3 if key != "device" else 0.0)
            )

    plus_x, minus_x = (1.0, 0.0, 0.0), (-1.0, 0.0, 0.0)
    a = {k: _add("connector", f"A_{k}", p, plus_x) for k, p in bay.DEVICE_A_SOCKETS.items()}
    b = {k: _add("connector", f"B_{k}", p, minus_x) for k, p in bay.DEVICE_B_SOCKETS.items() if k != "power"}
    # the plug of the power cable starts pulled out and tilted, then goes into its socket
    socket = Vector(bay.DEVICE_B_SOCKETS["power"])
    plug = _add("connector", "B_power_plug", socket + Vector((-110.0, -40.0, 45.0)), (-0.6, 0.3, -0.74))
    # a visible plug body behind the connector (its local -Z), moving with it; not a collider
    body = bpy.data.objects.new("plug_body", _box_mesh("plug_body", (18.0, 12.0, 26.0)))
    body.data.materials.append(_material("plug housing", (0.08, 0.08, 0.09), roughness=0.35))
    scene.collection.objects.link(body)
    body.parent = plug
    body.location = (0.0, 0.0, -13.0)
    y_clip = bay.BRACKET_FACE_Y + 14.0
    x1, x2 = bay.BRACKET_X
    clips = {
        "power_1": _add("clip", "clip_power_fixed", (x1, y_clip, 112.0), plus_x),
        "power_2": _add("clip", "clip_power_compliant", (x2, y_clip, 112.0), plus_x),
        "signal_1": _add("clip", "clip_signal_rotating", (x1, y_clip, 86.0), plus_x),
        "signal_2": _add("clip", "clip_signal_sliding", (x2, y_clip, 86.0), plus_x),
    }
    clips["signal_1"].cable_harness.clip_kind = "rotating"
    clips["signal_2"].cable_harness.clip_kind = "sliding"
    clips["signal_2"].cable_harness.clip_length = 20.0
    compliant = clips["power_2"].cable_harness
    compliant.clip_compliant = True
    compliant.clip_translational_stiffness = 400.0  # N/m: a plastic fir-tree clip on a thin bracket
    compliant.clip_rotational_stiffness = 0.5  # N m/rad

    cables = {
        "power": _cable(
            "power",
            a["power"],
            plug,
            [clips["power_1"], clips["power_2"]],
            6.0,
            640.0,
            "pvc_wire",
            80,
            (0.75, 0.08, 0.05),
        ),
        "signal": _cable(
            "signal",
            a["signal"],
            b["signal"],
            [clips["signal_1"], clips["signal_2"]],
            4.0,
            660.0,
            "lv2017_harness",
            70,
            (0.95, 0.75, 0.1),
        ),
        "sensor": _cable("sensor", a["sensor"], b["sensor"], [], 4.0, 540.0, "lv2017_harness", 70, (0.1, 0.35, 0.8)),
    }
    for cable in cables.values():
        cable.cable_harness.min_bend_radius_allowed = 5.0 * cable.cable_harness.diameter

    # the insertion: approach, align with the socket axis, push in 5 mm
    first, last = INSERTION_FRAMES
    path = [(first, plug.matrix_world.copy())]
    for frame, location, axis in (
        (first + 15, socket + Vector((-70.0, -10.0, -10.0)), (-0.9, 0.1, 0.3)),
        (first + 35, socket + Vector((-25.0, 0.0, 0.0)), minus_x),
        (last - 12, socket + Vector((5.0, 0.0, 0.0)), minus_x),
    ):
        _orient(plug, location, axis)
        path.append((frame, plug.matrix_world.copy()))
    for frame, matrix in path:
        plug.matrix_world = matrix
        plug.keyframe_insert("location", frame=frame)
        plug.keyframe_insert("rotation_euler", frame=frame)
    plug.matrix_world = path[0][1]
    scene.frame_start, scene.frame_end = first, last
    scene.frame_set(first)
    _look((980.0, -380.0, 520.0), (450.0, 320.0, 70.0), lens=30.0)
    return {"cables": sorted(cables), "plug": plug.name, "clips": sorted(c.name for c in clips.values())}


def build_desk() -> dict:
    """An artist's desk in metres: a monitor cable over the desk edge to the floor and a lamp cable."""
    scene = _reset_scene(1.0, "METERS", "Desk")
    parts = {}
    for name, size, location, colour in (
        ("floor", (3.0, 3.0, 0.02), (0.0, 0.0, -0.01), (0.5, 0.45, 0.4)),
        ("desk_top", (1.4, 0.7, 0.03), (0.0, 0.0, 0.735), (0.55, 0.38, 0.22)),
        ("monitor", (0.6, 0.05, 0.36), (0.0, 0.15, 1.05), (0.05, 0.05, 0.06)),
        ("monitor_stand", (0.08, 0.08, 0.15), (0.0, 0.17, 0.82), (0.1, 0.1, 0.1)),
        ("wall", (3.0, 0.02, 2.0), (0.0, 0.45, 1.0), (0.85, 0.85, 0.8)),
    ):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=location)
        ob = bpy.context.active_object
        ob.name = name
        ob.scale = size
        bpy.ops.object.transform_apply(scale=True)
        ob.cable_harness.role = "COLLIDER"
        ob.data.materials.append(_material(name, colour))
        parts[name] = ob
    monitor_port = _add("connector", "monitor_port", (0.2, 0.19, 0.95), (0.0, 0.0, -1.0), up=(1.0, 0.0, 0.0))
    outlet = _add("connector", "wall_outlet", (0.55, 0.43, 0.3), (0.0, -1.0, 0.0))
    grommet = _add("clip", "desk_grommet", (0.4, 0.3, 0.76), (0.0, 0.0, -1.0))
    grommet.cable_harness.clip_kind = "sliding"
    grommet.cable_harness.clip_length = 0.03
    # a hole through the desk top for the grommet: the cable passes it, not the board
    bpy.ops.mesh.primitive_cylinder_add(radius=0.03, depth=0.2, location=(0.4, 0.3, 0.735))
    hole = bpy.context.active_object
    modifier = parts["desk_top"].modifiers.new("grommet hole", "BOOLEAN")
    modifier.object = hole
    modifier.operation = "DIFFERENCE"
    hole.hide_render = hole.hide_viewport = True
    power = _cable("monitor_power", monitor_port, outlet, [grommet], 0.007, 1.0, "pvc_wire", 80, (0.05, 0.05, 0.05))
    # 2 cm above the top, leaving the lamp's base towards the front of the desk: 0.5 m of this cord
    # standing straight up would be beyond its self-weight buckling length (Greenhill: 0.23 m)
    lamp_socket = _add("connector", "lamp_base", (-0.5, 0.2, 0.77), (0.0, -1.0, 0.0))
    lamp = _cable("lamp_cord", lamp_socket, None, [], 0.004, 0.5, "lv2017_harness", 50, (0.9, 0.9, 0.88))
    scene.frame_start, scene.frame_end = 1, 40
    _look((1.9, -2.1, 1.7), (0.1, 0.15, 0.7), lens=40.0)
    return {"cables": [power.name, lamp.name]}


def _bundle(ob, wires, wrap):
    """Make a cable a bundle of (count, diameter m, material) wires with the given wrap."""
    s = ob.cable_harness
    bpy.context.view_layer.objects.active = ob
    scale = bpy.context.scene.unit_settings.scale_length
    for count, diameter, material in wires:
        if bpy.ops.cable_harness.wire_add() != {"FINISHED"}:
            raise RuntimeError(f"could not add a wire to {ob.name}")
        wire = s.wires[-1]
        wire.count, wire.diameter, wire.material = count, diameter / scale, material
    s.wrap = wrap
    s.is_bundle = True


def build_branched_harness() -> dict:
    """A branched harness above a formboard, in millimetres: a taped trunk from the main connector
    breaks out at three free junctions into six branches to the connectors of three devices, hanging
    between them (a junction's own contact with obstacles is not modelled yet: the board lies below
    its reach). Returns object names."""
    _reset_scene(0.001, "MILLIMETERS", "Branched Harness")
    mm = 1000.0

    def at(x, y, z):
        return (x * mm, y * mm, z * mm)

    bpy.ops.mesh.primitive_cube_add(size=1.0, location=at(0.55, 0.0, -0.3))
    board = bpy.context.active_object
    board.name = "formboard"
    board.scale = (1.3 * mm, 0.7 * mm, 0.02 * mm)
    bpy.ops.object.transform_apply(scale=True)
    board.cable_harness.role = "COLLIDER"
    board.data.materials.append(_material("formboard", (0.62, 0.5, 0.36)))
    main = _add("connector", "main_connector", at(0.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    junction_places = {"J1": (0.3, 0.0, 0.0), "J2": (0.6, 0.04, 0.0), "J3": (0.9, 0.0, 0.0)}
    junctions = {}
    for name, place in junction_places.items():
        bpy.ops.cable_harness.add_junction()
        j = bpy.context.active_object
        j.name = name
        j.location = at(*place)
        j.cable_harness.junction_mass = 0.01  # its tape and sleeve, kg
        junctions[name] = j
    # leaves: (junction, connector name, place); each connector faces back along its branch
    leaves = [
        ("J1", "sensor_a", (0.42, -0.26, 0.0)),
        ("J2", "pump", (0.72, 0.28, 0.0)),
        ("J2", "valve", (0.75, -0.22, 0.0)),
        ("J3", "ecu_1", (1.15, 0.2, 0.0)),
        ("J3", "ecu_2", (1.2, 0.0, 0.0)),
        ("J3", "ecu_3", (1.12, -0.22, 0.0)),
    ]
    taped = [(4, 0.0016, "pvc_wire"), (8, 0.001, "pvc_wire")]
    trunk = [
        ("trunk_1", main, junctions["J1"], 0.32, taped),
        ("trunk_2", junctions["J1"], junctions["J2"], 0.33, [(3, 0.0016, "pvc_wire"), (7, 0.001, "pvc_wire")]),
        ("trunk_3", junctions["J2"], junctions["J3"], 0.33, [(2, 0.0016, "pvc_wire"), (5, 0.001, "pvc_wire")]),
    ]
    colours = [(0.08, 0.08, 0.09), (0.75, 0.2, 0.12), (0.15, 0.35, 0.75), (0.9, 0.75, 0.1)]
    cables = []
    for name, start, end, length, wires in trunk:
        ob = _cable(name, start, end, [], 0.004, length * mm, "pvc_wire", 60, colours[0])
        _bundle(ob, wires, "taped")
        cables.append(ob.name)
    for k, (jname, cname, place) in enumerate(leaves):
        j = junctions[jname]
        outward = Vector(place) - Vector(junction_places[jname])
        connector = _add("connector", cname, at(*place), tuple(-outward.normalized()))
        ob = _cable(
            f"branch_{cname}",
            j,
            connector,
            [],
            0.0025 / 0.001,
            1.1 * outward.length * mm,
            "pvc_wire",
            40,
            colours[1 + k % 3],
        )
        cables.append(ob.name)
    _look(at(0.6, -1.4, 0.9), at(0.6, 0.0, -0.05), lens=40.0)
    return {"cables": cables, "junctions": list(junctions)}
