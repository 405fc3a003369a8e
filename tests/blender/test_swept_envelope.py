# SPDX-License-Identifier: GPL-3.0-or-later
"""Swept Envelope after a Bake in a millimetre scene: a closed mesh object per baked cable, holding every
baked frame's centre line, its volume and least clearance reported, the file written in metres."""

import json
import struct

import bpy
import numpy as np
import pytest
from helpers.blender_scenes import place, simple_harness


def _floor(z_m, scale):
    mesh = bpy.data.meshes.new("floor")
    s = 1.0 / scale
    mesh.from_pydata([(-s, -s, 0), (s, -s, 0), (s, s, 0), (-s, s, 0)], [], [(0, 1, 2, 3)])
    ob = bpy.data.objects.new("Floor", mesh)
    bpy.context.scene.collection.objects.link(ob)
    ob.location = (0.0, 0.0, z_m / scale)
    ob.cable_harness.role = "COLLIDER"
    return ob


def test_the_envelope_of_a_baked_motion_holds_every_frame_and_is_closed(tmp_path):
    scale = 0.001
    _start, end, _clip, cable = simple_harness(unit_scale=scale)
    _floor(-0.11, scale)  # within the clearance read-out's 5 cm of the sagging cable
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 8
    end.keyframe_insert("location", frame=1)
    place(end, (0.28, 0.05, 0.01), scale)
    end.keyframe_insert("location", frame=8)
    scene.frame_set(1)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    path = tmp_path / "envelope.stl"
    assert bpy.ops.cable_harness.swept_envelope(filepath=str(path)) == {"FINISHED"}
    ob = bpy.data.objects[cable.name + " Envelope"]
    mesh = ob.data
    tris = np.empty(len(mesh.polygons) * 3, dtype=np.int32)
    mesh.polygons.foreach_get("vertices", tris)
    tris = tris.reshape(-1, 3)
    directed = {}
    for a, b in np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]).tolist():
        directed[(a, b)] = directed.get((a, b), 0) + 1
    assert all(directed.get((b, a)) == n for (a, b), n in directed.items())  # closed
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3).astype(np.float64) * scale  # m
    low, high = co.min(axis=0), co.max(axis=0)
    radius = 0.5 * cable.cable_harness.diameter * scale
    for frame in (1, 4, 8):  # every baked centre line lies inside the envelope's box, by a radius to a voxel
        scene.frame_set(frame)
        pts = np.empty(len(cable.data.splines[0].points) * 4, dtype=np.float32)
        cable.data.splines[0].points.foreach_get("co", pts)
        world = pts.reshape(-1, 4)[:, :3] * scale
        assert (world >= low + 0.7 * radius).all() and (world <= high - 0.7 * radius).all()
    data = path.read_bytes()
    (count,) = struct.unpack("<I", data[80:84])
    assert count == len(tris) and len(data) == 84 + 50 * count
    # the report gives the swept volume beside the motion's least clearance
    assert bpy.ops.cable_harness.export_report(directory=str(tmp_path), plots=False) == {"FINISHED"}
    (summary,) = json.loads((tmp_path / "report.json").read_text())["cables"]
    assert summary["swept_volume"] > 0.0 and summary["swept_voxel"] == pytest.approx(0.25 * radius, rel=1e-6)
    assert summary["min_clearance"] is not None and "swept envelope volume" in (tmp_path / "report.csv").read_text()


def test_without_a_bake_the_envelope_says_so():
    simple_harness()
    try:
        result = bpy.ops.cable_harness.swept_envelope()
    except RuntimeError as exc:  # the operator's ERROR report
        assert "Bake first" in str(exc)
    else:
        assert result == {"CANCELLED"}
