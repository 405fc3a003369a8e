# SPDX-License-Identifier: GPL-3.0-or-later
"""The demo files in demo_blends/ open with the extension and hold a routed harness."""

import bpy
import pytest
import zstandard
from helpers.blender_env import ROOT
from helpers.blender_scenes import open_bay


@pytest.mark.parametrize("name", ["equipment_bay.blend", "desk.blend", "branched_harness.blend"])
def test_demo_file_is_saved_in_a_format_blender_4_2_reads(name):
    # The manifest says Blender 4.2+: files saved by 5.0 (header "BLENDER17-01v0500") open only in
    # 4.5 and newer, so tools/dev.py demos saves them with bpy 4.2 ("BLENDER-v402": 64-bit pointers,
    # little-endian, version 4.2), which every later Blender opens.
    with open(ROOT / "demo_blends" / name, "rb") as f:
        head = f.read(12)
        if head[:4] == b"\x28\xb5\x2f\xfd":  # zstd-compressed (Save with Compression)
            f.seek(0)
            head = zstandard.ZstdDecompressor().stream_reader(f).read(12)
    assert head == b"BLENDER-v402"


@pytest.mark.parametrize("name, cables", [("equipment_bay.blend", 3), ("desk.blend", 2), ("branched_harness.blend", 9)])
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
    scene, _plug, first, last = open_bay()
    assert (last - first).length > 50.0  # millimetre scene: it travels more than 5 cm
    assert scene.unit_settings.scale_length == pytest.approx(0.001)
