# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake never moves a cable through an obstacle on its way between frames: a connector keyed to jump
across and down past a box in one frame (Bake solves it at sub-frames, and the solver splits what is
left), with every state of every solve recorded (helpers.iterates) and every motion between them
checked by the independent swept test (helpers.swept), as tests/solver/test_swept_sessions.py does
for Simulate's ticks."""

import json
import sys

import bpy
import numpy as np
from helpers.blender_env import MODULE
from helpers.drapes import drape_case
from helpers.iterates import IterateRecorder, passes_through_count


def test_a_connector_keyed_across_a_box_in_one_frame_never_bakes_the_cable_through_it(tmp_path, monkeypatch):
    drawn = drape_case(np.random.default_rng(7), kind="box", side="over", segments=14, slack=0.25)
    doc, obstacle = drawn["case"], drawn["case"]["obstacles"][0]
    path = tmp_path / "drape.json"
    path.write_text(json.dumps(doc))
    assert bpy.ops.cable_harness.import_case(filepath=str(path)) == {"FINISHED"}
    scene = bpy.context.scene
    end_at = np.asarray(doc["cables"][0]["end"]["position"])
    connectors = [o for o in scene.objects if o.cable_harness.role == "CONNECTOR"]
    end = min(connectors, key=lambda o: np.linalg.norm(np.array(o.matrix_world.translation) - end_at))
    scene.frame_start, scene.frame_end = 1, 2
    scene.frame_set(1)
    end.keyframe_insert("location", frame=1)
    # across the route and down past the box's top, 30 % and 20 % of its size in one frame
    end.location = end.location + type(end.location)((0.0, 0.3 * drawn["size"], -0.2 * drawn["size"]))
    end.keyframe_insert("location", frame=2)
    scene.frame_set(1)
    equilibrium = sys.modules[f"{MODULE}.solver_core.solve.equilibrium"]
    recorder = IterateRecorder(equilibrium)
    monkeypatch.setattr(equilibrium, "minimise_rod_energy", recorder)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    assert len(recorder.paths) > 2  # the first solve, and the frame's sub-frames
    radius = 0.5 * doc["cables"][0]["diameter"]
    assert passes_through_count(recorder, obstacle, radius) == 0
