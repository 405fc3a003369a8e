# SPDX-License-Identifier: GPL-3.0-or-later
"""Connectors mounted on a collider's face: the cable leaves the face (its mount zone is no obstacle),
an outlet into the face is refused by name, and Snap to Face puts a holder on a face."""

import json
import math
import sys

import bpy
import numpy as np
from helpers.blender_scenes import curve_world_points, place

RADIUS = 0.002  # the cables' (4 mm diameter)
TOP = 0.0  # the device's top face (z); the device spans x, y in -0.1 .. 0.1


def _device():
    """A box collider 0.2 x 0.2 x 0.1 m whose top face is z = 0 (six quads, twelve triangles)."""
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, -0.05))
    ob = bpy.context.active_object
    ob.name = "Device"
    ob.scale = (0.2, 0.2, 0.1)
    ob.cable_harness.role = "COLLIDER"
    bpy.context.view_layer.update()
    return ob


def _mounted_harness(height=0.0, tilt=0.0):
    """The device, a connector on its top face (``height`` above it, its outlet tilted by ``tilt`` about
    x from the face normal), another 0.3 m away and 0.15 m up, and a cable between them."""
    device = _device()
    bpy.ops.cable_harness.add_connector()
    mounted = bpy.context.active_object
    place(mounted, (0.0, 0.0, TOP + height), 1.0, (tilt, 0.0, 0.0))
    bpy.ops.cable_harness.add_connector()
    other = bpy.context.active_object
    place(other, (0.3, 0.0, 0.15), 1.0, (0.0, 0.0, 0.0))
    bpy.ops.object.select_all(action="DESELECT")
    for ob in (mounted, other):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = mounted
    assert bpy.ops.cable_harness.make_cable(segments=40, solve=False) == {"FINISHED"}
    cable = next(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE")
    return device, mounted, cable


def _simulation(extension):
    return sys.modules[f"{extension.__name__}.cable_harness.simulation"].HarnessSimulation(bpy.context.scene)


def _inside_device(points, margin=0.0):
    """The points within the device's box (shrunk by ``margin``)."""
    lo, hi = np.array([-0.1, -0.1, -0.1]) + margin, np.array([0.1, 0.1, TOP]) - margin
    return np.all((points > lo) & (points < hi), axis=1)


def _assert_rests_clear(cable, connector, zone):
    """No node inside the device, and beyond the mount zone every node over its top a radius clear."""
    nodes = curve_world_points(cable)
    assert not _inside_device(nodes, 1e-6).any()
    far = np.linalg.norm(nodes - np.array(connector.matrix_world.translation), axis=1) > zone
    over = far & (np.abs(nodes[:, 0]) < 0.1) & (np.abs(nodes[:, 1]) < 0.1)
    assert (nodes[over, 2] >= TOP + 0.99 * RADIUS).all()


def test_a_connector_exactly_on_a_face_leaves_it(extension):
    _device_ob, connector, cable = _mounted_harness()
    report = _simulation(extension).tick(bpy.context)
    assert not report.failed and not report.warnings, report.summary()
    assert cable.cable_harness.result_converged
    _assert_rests_clear(cable, connector, 3.0 * RADIUS * 1.01)


def test_a_connector_a_millimetre_off_the_face_gives_no_warning(extension):
    _device_ob, connector, cable = _mounted_harness(height=0.001)
    report = _simulation(extension).tick(bpy.context)
    assert not report.failed and not report.warnings, report.summary()
    _assert_rests_clear(cable, connector, 0.001 + 3.0 * RADIUS * 1.01)


def test_a_connector_on_a_face_with_its_outlet_tilted_30_degrees_solves(extension):
    _device_ob, connector, cable = _mounted_harness(tilt=math.radians(30.0))
    report = _simulation(extension).tick(bpy.context)
    assert not report.failed and not report.warnings, report.summary()
    _assert_rests_clear(cable, connector, 3.0 * RADIUS * 1.01)


def test_an_outlet_into_its_face_is_refused_by_name(extension):
    _device_ob, connector, cable = _mounted_harness(tilt=math.radians(150.0))
    report = _simulation(extension).tick(bpy.context)
    message = report.failed[cable.name]
    assert f"connector {connector.name!r} points its outlet into 'Device'" in message
    assert "turn the outlet away from 'Device'" in message
    assert "non-finite" not in message and ";" not in message  # one line, one reason


def test_a_connector_dragged_along_a_face_and_over_its_edge_converges_every_tick(extension):
    _device_ob, connector, cable = _mounted_harness()
    simulation = _simulation(extension)
    assert not simulation.tick(bpy.context).failed
    iterations = []
    for x in np.arange(0.01, 0.141, 0.01):  # the face ends at x = 0.1
        connector.location.x = x
        bpy.context.view_layer.update()
        report = simulation.tick(bpy.context)
        assert not report.failed and not report.warnings, (x, report.summary())
        iterations.append(cable.cable_harness.result_iterations)
        assert not _inside_device(curve_world_points(cable), 1e-6).any()
    # a step of 1 cm is a small move: a handful of Newton iterations, not a fight with the face
    assert max(iterations) <= 60, iterations


def test_snap_to_face_puts_a_connector_on_the_face_with_its_outlet_along_the_normal():
    device = _device()
    bpy.ops.cable_harness.add_connector()
    connector = bpy.context.active_object
    place(connector, (0.03, 0.02, 0.05), 1.0, (0.4, -0.3, 0.2))
    bpy.ops.cable_harness.add_clip()
    clip = bpy.context.active_object
    place(clip, (-0.04, 0.03, 0.02), 1.0, (0.3, 1.2, 0.0))
    bpy.ops.object.select_all(action="DESELECT")
    for ob in (connector, clip, device):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = device
    assert bpy.ops.cable_harness.snap_to_face() == {"FINISHED"}
    bpy.context.view_layer.update()
    M = np.array(connector.matrix_world)
    assert np.allclose(M[:3, 3], (0.03, 0.02, TOP), atol=1e-6)
    assert np.allclose(M[:3, 2] / np.linalg.norm(M[:3, 2]), (0.0, 0.0, 1.0), atol=1e-6)
    assert connector.cable_harness.mounted_on == device
    C = np.array(clip.matrix_world)
    assert np.allclose(C[:3, 3], (-0.04, 0.03, TOP + RADIUS), atol=1e-6)  # a new cable's radius above it
    assert abs(C[2, 2]) < 1e-6  # its axis along the face


def test_an_exported_case_says_mounted_on_and_solves_in_the_cli(extension, tmp_path):
    _device_ob, connector, cable = _mounted_harness()
    path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(path)) == {"FINISHED"}
    doc = json.loads(path.read_text())
    assert doc["cables"][0]["start"]["mounted_on"] == "Device"
    solver = sys.modules[f"{extension.__name__}.solver_core"]
    result = solver.solve_case(solver.parse_case(doc))
    assert result["steps"][0]["cables"][cable.name]["converged"]


def test_import_case_gives_a_mounted_connector_its_mounted_on(extension, tmp_path):
    _mounted_harness()
    path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(path)) == {"FINISHED"}
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.cable_harness.import_case(filepath=str(path), colliders=True) == {"FINISHED"}
    connector = bpy.data.objects["Cable start"]
    assert connector.cable_harness.mounted_on == bpy.data.objects["Device"]
