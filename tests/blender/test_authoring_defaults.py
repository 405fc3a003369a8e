# SPDX-License-Identifier: GPL-3.0-or-later
"""What a new user gets without setting anything: new connectors give an untwisted cable, coincident
connectors are named, and the Variation Study's tolerance and read-outs follow the scene's unit."""

import math
import re
import sys

import bpy
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import place


def _module(name):
    return sys.modules[f"{MODULE}.cable_harness.{name}"]


def _two_new_connectors(offset_m, unit_scale=1.0):
    """Two connectors as Add Connector makes them, the second moved by ``offset_m``, and a cable
    between them drawn and solved with Cable Between Selected."""
    bpy.context.scene.unit_settings.scale_length = unit_scale
    bpy.ops.cable_harness.add_connector()
    first = bpy.context.active_object
    bpy.ops.cable_harness.add_connector()
    second = bpy.context.active_object
    place(second, offset_m, unit_scale)
    bpy.ops.object.select_all(action="DESELECT")
    for ob in (first, second):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = first
    assert bpy.ops.cable_harness.make_cable(segments=30) == {"FINISHED"}
    cable = next(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE")
    return first, second, cable


def _total_twist(cable) -> float:
    """The solved cable's twist from end to end (rad): the curve's last tilt, written from its directors."""
    points = cable.data.splines[0].points
    return points[len(points) - 1].tilt - points[0].tilt


def test_two_new_connectors_give_an_untwisted_u():
    for offset in ((0.3, 0.0, 0.0), (0.0, 0.25, 0.0), (0.2, -0.2, 0.05)):
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
        first, second, cable = _two_new_connectors(offset)
        assert cable.cable_harness.result_converged, cable.cable_harness.result_message
        assert abs(_total_twist(cable)) < 0.05, (offset, _total_twist(cable))
        # the outlets stay where Add Connector pointed them: down
        for ob in (first, second):
            assert ob.matrix_world.col[2][2] < -0.999


def test_a_connector_the_user_turned_keeps_its_roll():
    bpy.ops.cable_harness.add_connector()
    first = bpy.context.active_object
    bpy.ops.cable_harness.add_connector()
    second = bpy.context.active_object
    place(second, (0.3, 0.0, 0.0), 1.0, (math.pi, 0.0, 0.7))  # turned about its outlet by the user
    first.rotation_euler = (math.pi, 0.0, 0.3)
    bpy.context.view_layer.update()
    before = [ob.matrix_world.copy() for ob in (first, second)]
    bpy.ops.object.select_all(action="DESELECT")
    for ob in (first, second):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = first
    assert bpy.ops.cable_harness.make_cable(segments=20, solve=False) == {"FINISHED"}
    assert [ob.matrix_world for ob in (first, second)] == before


def test_coincident_connectors_are_named_not_an_ultimate_strain():
    bpy.ops.cable_harness.add_connector()
    first = bpy.context.active_object
    bpy.ops.cable_harness.add_connector()
    second = bpy.context.active_object  # at the same 3D cursor
    for ob in (first, second):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = first
    named = f"its connectors {first.name!r} and {second.name!r} coincide"
    with pytest.raises(RuntimeError, match=re.escape(named)):  # the operator's error report
        bpy.ops.cable_harness.make_cable(segments=30)
    cable = next(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE")
    message = cable.cable_harness.result_message
    assert named in message and "strain" not in message, message


def test_a_new_variation_varies_by_2_mm_in_a_millimetre_scene():
    bpy.context.scene.unit_settings.scale_length = 0.001
    assert bpy.ops.cable_harness.study_add() == {"FINISHED"}
    variation = bpy.context.scene.cable_harness.variations[0]
    assert math.isclose(variation.tolerance * 0.001, 0.002, rel_tol=1e-6)


def test_study_read_outs_tell_close_values_apart_and_show_no_minus_zero():
    scene = bpy.context.scene
    scene.unit_settings.scale_length = 0.001
    study = {
        "summary": {"converged": 3, "variants": 3, "failed": []},
        "cables": {
            "Cable": {
                "length": {"min": 0.66012, "max": 0.66047, "mean": 0.6603},
                "min_clearance": {"min": -3e-7, "mean": 0.0012},
            }
        },
    }
    lines = _module("ui").study_lines(scene, study)
    length = next(line for line in lines if line.strip().startswith("Length"))
    low, high = length.strip()[len("Length ") :].split(" to ")
    assert low != high, length
    clearance = next(line for line in lines if "clearance" in line)
    assert "-0" not in clearance, clearance
