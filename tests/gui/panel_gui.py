# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/panel.png, taken in a real Blender window (``bash tools/gui_smoke_test.sh panel``).

A millimetre scene (unit scale 0.001) with two connectors, two clips and a bundle of wires between
them, solved; the sidebar's Harness tab at its default width shows the cable's clip list and wire
list, and the viewport the solved cable with its force arrows (their length per newton chosen by
the solve from the scene's size). Writes the outcome as JSON and quits.
"""

import math
import os
import sys

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # Blender runs this file as a script
from gui_session import MODULE, finish, guarded, log, outcome, screenshot, view3d  # noqa: E402

DOCS = os.environ["CABLE_HARNESS_DOCS"]
state = {"waited": 0}
MM = 0.001


def show_panel():
    area = view3d()["area"]
    area.spaces.active.show_region_ui = True
    for region in area.regions:
        if region.type == "UI":
            try:
                region.active_panel_category = "Harness"
            except (AttributeError, TypeError):  # not settable before Blender 4.x
                pass
    for ob in list(bpy.data.objects):
        bpy.data.objects.remove(ob)


def _place(ob, location_mm, rotation=(0.0, 0.0, 0.0)):
    ob.location = location_mm
    ob.rotation_euler = rotation
    bpy.context.view_layer.update()


@guarded
def wait_for_kernels():
    if sys.modules[f"{MODULE}.cable_harness.warmup"].preparing():
        state["waited"] += 2
        return 2.0
    log(f"kernels ready after about {state['waited']} s")
    build_and_solve()
    return None


def build_and_solve():
    for ob in list(bpy.data.objects):  # the connector that gave the sidebar its tabs
        bpy.data.objects.remove(ob)
    scene = bpy.context.scene
    scene.unit_settings.scale_length = MM
    scene.unit_settings.length_unit = "MILLIMETERS"
    holders = []
    for location, rotation in (((0.0, 0.0, 0.0), (math.pi, 0.0, 0.0)), ((300.0, 0.0, 0.0), (math.pi, 0.0, 0.0))):
        bpy.ops.cable_harness.add_connector()
        _place(bpy.context.active_object, location, rotation)
        holders.append(bpy.context.active_object)
    for location in ((100.0, 20.0, -60.0), (200.0, 20.0, -60.0)):
        bpy.ops.cable_harness.add_clip()
        _place(bpy.context.active_object, location, (0.0, math.pi / 2.0, 0.0))
        holders.append(bpy.context.active_object)
    for ob in scene.objects:
        ob.select_set(ob in holders)
    bpy.context.view_layer.objects.active = holders[0]
    bpy.ops.cable_harness.make_cable(segments=40, solve=False)
    cable = next(o for o in scene.objects if o.cable_harness.role == "CABLE")
    s = cable.cable_harness
    s.is_bundle = True
    for wire_id, count, diameter in (("W12", 4, 1.6), ("W13", 2, 1.0), ("SHIELD", 1, 2.5)):
        wire = s.wires.add()
        wire.wire_id, wire.count, wire.diameter = wire_id, count, diameter
    scene.cable_harness.show_physics = True
    for ob in scene.objects:
        ob.select_set(False)
    result = bpy.ops.cable_harness.solve()
    log(f"solve: {sorted(result)}; converged: {s.result_converged}; {s.result_message!r}")
    log(f"arrow length per N: {scene.cable_harness.arrow_length_per_newton:.3g} mm")
    outcome["converged"] = bool(s.result_converged)
    with bpy.context.temp_override(**view3d()):
        space = view3d()["area"].spaces.active
        space.shading.type = "SOLID"
        space.overlay.show_axis_x = space.overlay.show_axis_y = False
        space.region_3d.view_rotation = (0.77, 0.62, 0.07, 0.09)  # from the front, a little from above
        for ob in scene.objects:
            ob.select_set(ob == cable)
        bpy.ops.view3d.view_selected()
    bpy.context.view_layer.objects.active = cable  # the panel shows its clip and wire lists
    cable.select_set(False)  # no orange outline next to the orange arrows
    # the shell clicks the sidebar's Harness tab (Blender 3.4 cannot choose it from Python)
    open(os.path.join(os.environ["CABLE_HARNESS_GUI_OUT"], "gui_smoke.click"), "w").close()
    bpy.app.timers.register(shoot, first_interval=4.0)


@guarded
def shoot():
    screenshot(os.path.join(DOCS, "panel.png"))
    finish(outcome.get("converged", False), None if outcome.get("converged") else "the cable did not converge")
    return None


@guarded
def main():
    show_panel()
    bpy.ops.preferences.addon_enable(module=MODULE)
    log("add-on enabled")
    bpy.ops.cable_harness.add_connector()  # the sidebar's tabs as in the smoke test (the shell clicks Harness)
    open(os.path.join(os.environ["CABLE_HARNESS_GUI_OUT"], "gui_smoke.ready"), "w").close()
    bpy.app.timers.register(wait_for_kernels, first_interval=4.0)


main()
