# SPDX-License-Identifier: GPL-3.0-or-later
"""GUI smoke test, run inside a real Blender window (see tools/gui_smoke_test.sh).

Loads the extension as an add-on, builds a harness with the Add menu operators, starts the modal
Simulate operator in the 3D view, drags the end connector with a timer the way a user would,
takes screenshots, checks that the cable followed, writes the outcome as JSON and quits.
"""

import math
import os
import sys

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # Blender runs this file as a script
from gui_session import MODULE, OUT, finish, guarded, log, outcome, screenshot, view3d  # noqa: E402


def build():
    bpy.ops.preferences.addon_enable(module=MODULE)
    log("add-on enabled")
    for ob in list(bpy.data.objects):
        bpy.data.objects.remove(ob)
    scene = bpy.context.scene
    scene.cursor.location = (0.0, 0.0, 0.0)
    bpy.ops.cable_harness.add_connector()
    start = bpy.context.active_object
    start.location = (-0.15, 0.0, 0.1)
    bpy.ops.cable_harness.add_connector()
    end = bpy.context.active_object
    end.location = (0.15, 0.0, 0.1)
    bpy.ops.cable_harness.add_clip()
    clip = bpy.context.active_object
    clip.location = (0.0, 0.03, -0.02)
    bpy.context.view_layer.update()
    for ob in (start, end, clip):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = start
    bpy.ops.cable_harness.make_cable(segments=60, diameter=0.008)
    cable = next(o for o in scene.objects if o.cable_harness.role == "CABLE")
    log(f"cable made, solved: {cable.cable_harness.result_converged}")
    with bpy.context.temp_override(**view3d()):
        for area in [view3d()["area"]]:
            space = area.spaces.active
            space.region_3d.view_location = (0.0, 0.0, 0.02)
            space.region_3d.view_distance = 0.6
            space.region_3d.view_rotation = (0.82, 0.42, 0.17, 0.34)
            space.shading.type = "SOLID"
            space.overlay.show_floor = True
            space.show_region_ui = True  # the sidebar, where the Harness panel lives
    for region in view3d()["area"].regions:
        if region.type == "UI":
            try:
                region.active_panel_category = "Harness"
            except (AttributeError, TypeError):  # not settable before Blender 4.x
                pass
    return start, end, cable


state = {"tick": 0}


def drag():
    end = bpy.data.objects["Connector.001"]
    t = state["tick"]
    end.location.x = 0.15 - 0.004 * t
    end.location.y = 0.05 * math.sin(t / 8.0)
    state["tick"] += 1
    if state["tick"] <= 25:
        return 0.1
    bpy.app.timers.register(check, first_interval=0.5)
    return None


@guarded
def check():
    cable = bpy.data.objects["Cable"]
    end = bpy.data.objects["Connector.001"]
    pts = cable.data.splines[0].points
    last = cable.matrix_world @ pts[len(pts) - 1].co.xyz
    gap = (last - end.matrix_world.translation).length
    outcome["end_gap_m"] = gap
    outcome["header_checked"] = True
    log(f"cable end is {gap * 1000:.3f} mm from the dragged connector")
    screenshot("gui_smoke.png")
    finish(gap < 1e-4, None if gap < 1e-4 else "the cable did not follow the connector")
    return None


@guarded
def start_simulation():
    with bpy.context.temp_override(**view3d()):
        result = bpy.ops.cable_harness.simulate("INVOKE_DEFAULT")
    log(f"simulate invoked: {sorted(result)}")
    open(os.path.join(OUT, "gui_smoke.ready"), "w").close()  # the shell may click the UI now
    bpy.app.timers.register(drag, first_interval=1.5)
    return None


@guarded
def main():
    build()
    bpy.app.timers.register(start_simulation, first_interval=1.0)


main()
