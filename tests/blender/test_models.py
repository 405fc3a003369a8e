# SPDX-License-Identifier: GPL-3.0-or-later
"""The scene's Model (Cable Harness panel): the case it writes, a cable solved with each model agreeing
with the Cosserat rod, a model without contact refused, not run through a collider, and the mass-spring
chain resting on one."""

import sys

import bpy
import numpy as np
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import curve_world_points, simple_harness


def _scene_model():
    return sys.modules[f"{MODULE}.cable_harness.scene_model"]


@pytest.mark.parametrize("model", ["kirchhoff_cg", "cosserat_pbd"])
def test_each_model_solves_the_scene_where_the_cosserat_rod_does(model):
    """The connectors' normals ask for half a turn of twist (both along X while the cable turns over
    between them): two mirror-image equilibria, either side of the plane, equally valid; each model may
    settle in either, so the shapes are compared with the mirror allowed."""
    _start, _end, _clip, cable = simple_harness(with_clip=False, segments=20)
    scene = bpy.context.scene
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    rod = curve_world_points(cable)
    scene.cable_harness.model = model
    assert _scene_model().case_document(scene, [cable])["solver"]["model"] == model
    assert bpy.ops.cable_harness.reset() == {"FINISHED"}
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert cable.cable_harness.result_converged, cable.cable_harness.result_message
    ours = curve_world_points(cable)
    mirrored = ours * np.array([1.0, -1.0, 1.0])
    gap = min(np.abs(ours - rod).max(), np.abs(mirrored - rod).max())
    assert gap < 2e-4  # two discretisations of one cable at 20 segments


def _solved_above_a_collider(model: str, height: float):
    """The simple harness's cable solved with ``model`` above a collider plane at z = ``height``."""
    _start, _end, _clip, cable = simple_harness(with_clip=False, segments=20)
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.15, 0.0, height))
    bpy.context.active_object.cable_harness.role = "COLLIDER"
    bpy.context.scene.cable_harness.model = model
    bpy.ops.object.select_all(action="DESELECT")
    cable.select_set(True)
    bpy.context.view_layer.objects.active = cable
    bpy.ops.cable_harness.solve()
    return cable


def test_a_model_without_contact_is_refused_next_to_a_collider():
    cable = _solved_above_a_collider("kirchhoff_cg", -0.03)
    assert not cable.cable_harness.result_converged
    assert "no contact" in cable.cable_harness.result_message


def test_the_mass_spring_chain_rests_on_a_collider():
    """Lv 2017's chain meets obstacles at its points (mass_spring_contact.py): a collider half way
    between the drawn route (lowest at z = -0.03) and where the chain hangs without it (-0.116) is taken,
    not refused, and the chain rests on it."""
    cable = _solved_above_a_collider("mass_spring", -0.06)
    assert cable.cable_harness.result_converged, cable.cable_harness.result_message
    lowest = curve_world_points(cable)[:, 2].min()
    assert -0.06 <= lowest < -0.05
