# SPDX-License-Identifier: GPL-3.0-or-later
"""Dragging the equipment bay's power plug along its insertion in Simulate, 1 mm per tick, as a user
does: every tick converges within half the Newton budget. The power and signal cables touch there, and
at some positions their rest state sits where a contact's Hessian jumps (a node on the very end of the
other cable's segment): Newton's refinement steps must not cycle across the jump (newton._refinement),
or the tick spends its whole budget and then the slow pseudo-time path."""

import sys

import bpy
from helpers.blender_scenes import open_bay


def test_every_tick_of_a_millimetre_drag_of_the_bay_plug_converges_well_within_the_budget(extension):
    scene, plug, first, inserted = open_bay()
    along = (inserted - first).normalized()
    cables = [ob for ob in scene.objects if ob.cable_harness.role == "CABLE"]
    simulation = sys.modules[f"{extension.__name__}.cable_harness.simulation"].HarnessSimulation(scene, cables)
    assert not simulation.tick(bpy.context).failed
    start = plug.location.copy()
    millimetre = 0.001 / scene.unit_settings.scale_length
    for step in range(1, 20):
        plug.location = start + along * millimetre * step
        bpy.context.view_layer.update()
        report = simulation.tick(bpy.context)
        assert not report.failed, report.failed
        iterations = {name: result["iterations"] for name, result in report.results.items()}
        assert {"power", "signal"} <= set(iterations), iterations  # the dragged cable and the one it touches
        assert max(iterations.values()) <= 100, (step, iterations)
