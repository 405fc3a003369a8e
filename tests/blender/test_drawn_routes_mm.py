# SPDX-License-Identifier: GPL-3.0-or-later
"""Routes drawn as users draw them (tests/helpers/drapes.py: tight over, under or round a part, with
slack; one diameter clear of it or snapped onto its faces), imported into a scene in millimetres and
solved there: the cable stays on the side it was drawn and rests where the solver puts the same case
given in metres (the Blender layer converts the scene's units, the solver works in SI)."""

import json
import sys

import bpy
import numpy as np
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import curve_world_points
from helpers.drapes import drape_case, far_side

SNAPPED = 1e-4  # metres


@pytest.mark.parametrize(
    "kind, side, seed, clear",
    [
        ("box", "over", 11, None),
        ("thin plate", "under", 12, None),
        ("cylinder", "round", 13, None),
        ("sphere", "under", 14, None),
        # snapped onto the part (0.1 mm off its faces): the cable's centre line starts inside it
        ("box", "over", 21, SNAPPED),
        ("thin plate", "over", 24, SNAPPED),
    ],
)
def test_a_route_drawn_in_a_millimetre_scene_stays_on_its_side_as_in_metres(tmp_path, kind, side, seed, clear):
    solver = sys.modules[f"{MODULE}.solver_core"]
    drawn = drape_case(np.random.default_rng(seed), kind, side, segments=24, slack=0.2, clear=clear)
    doc, obstacle = drawn["case"], drawn["case"]["obstacles"][0]
    path = tmp_path / "drape.json"
    path.write_text(json.dumps(doc))
    solved = solver.solve_case(solver.load_case(str(path)))["steps"][0]["cables"]["W"]
    assert solved["converged"]
    metres = np.array(solved["nodes"])
    assert not far_side(metres, obstacle, side)
    bpy.context.scene.unit_settings.scale_length = 0.001
    assert bpy.ops.cable_harness.import_case(filepath=str(path)) == {"FINISHED"}
    cable = next(o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE")
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert cable.cable_harness.result_converged
    millimetres = curve_world_points(cable, 0.001)
    assert not far_side(millimetres, obstacle, side)
    # the drape is symmetric about the route's vertical plane: where round-off lets it lean to one side,
    # either mirror image is the same cable
    images = [millimetres, millimetres * [1.0, -1.0, 1.0]]
    assert min(np.abs(image - metres).max() for image in images) < 1e-5 * drawn["size"] + 1e-6
