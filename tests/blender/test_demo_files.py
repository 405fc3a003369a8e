# SPDX-License-Identifier: GPL-3.0-or-later
"""The demo files in demo_blends/ open with the extension and hold a routed harness."""

import bpy
import pytest
from helpers.blender_env import ROOT


@pytest.mark.parametrize("name, cables", [("equipment_bay.blend", 3), ("desk.blend", 2)])
def test_demo_file_opens_with_a_routed_harness(name, cables):
    bpy.ops.wm.open_mainfile(filepath=str(ROOT / "demo_blends" / name))
    scene = bpy.context.scene
    found = [o for o in scene.objects if o.cable_harness.role == "CABLE"]
    assert len(found) == cables
    assert all(o.cable_harness.result_valid and o.cable_harness.result_converged for o in found)
    assert [o for o in scene.objects if o.cable_harness.role == "COLLIDER"]
    # and it solves again as saved, to the state it was saved in
    for ob in scene.objects:
        ob.select_set(False)
    lengths = {o.name: o.cable_harness.result_length for o in found}
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    for o in found:
        assert o.cable_harness.result_converged
        assert o.cable_harness.result_length == pytest.approx(lengths[o.name], rel=1e-3)


def test_bay_plug_is_animated_into_its_socket():
    bpy.ops.wm.open_mainfile(filepath=str(ROOT / "demo_blends" / "equipment_bay.blend"))
    scene = bpy.context.scene
    plug = bpy.data.objects["B_power_plug"]
    scene.frame_set(scene.frame_start)
    first = plug.matrix_world.translation.copy()
    scene.frame_set(scene.frame_end)
    last = plug.matrix_world.translation.copy()
    assert (last - first).length > 50.0  # millimetre scene: it travels more than 5 cm
    assert scene.unit_settings.scale_length == pytest.approx(0.001)
