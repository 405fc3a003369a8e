# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's screenshots, taken in a real Blender window (``bash tools/gui_smoke_test.sh screenshots``).

With an empty kernel cache, enables the extension as an add-on and shoots the panel while the
solver's kernels compile in the background (docs/first_solve.png); once they are ready, imports the
equipment bay's case, solves it, turns the viewport's physics drawing on (bend colours, force arrows,
contact dots) and shoots the window (docs/viewport.png). Writes the outcome as JSON and quits.
"""

import os
import sys

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # Blender runs this file as a script
from gui_session import MODULE, OUT, finish, guarded, log, outcome, screenshot, view3d  # noqa: E402

DOCS = os.environ["CABLE_HARNESS_DOCS"]
ROOT = os.environ["CABLE_HARNESS_ROOT"]
state = {"waited": 0}


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


def warmup_module():
    return sys.modules[f"{MODULE}.cable_harness.warmup"]


@guarded
def shoot_progress():
    note = warmup_module().progress()
    log(f"while compiling, the panel says: {note!r}")
    outcome["progress_note"] = note
    screenshot(os.path.join(DOCS, "first_solve.png"))
    bpy.app.timers.register(wait_for_kernels, first_interval=2.0)
    return None


@guarded
def wait_for_kernels():
    if warmup_module().preparing():
        state["waited"] += 2
        return 2.0
    log(f"kernels ready after about {state['waited']} s more")
    route_the_bay()
    return None


def route_the_bay():
    for ob in list(bpy.data.objects):  # the connector that gave the sidebar its tabs
        bpy.data.objects.remove(ob)
    case = os.path.join(ROOT, "demo_blends", "cases", "equipment_bay.json")
    result = bpy.ops.cable_harness.import_case(filepath=case, scene_settings=True)
    log(f"import case: {sorted(result)}")
    scene = bpy.context.scene
    scene.cable_harness.show_physics = True
    for ob in scene.objects:
        ob.select_set(False)  # Solve then solves every cable
    result = bpy.ops.cable_harness.solve()
    cables = [o for o in scene.objects if o.cable_harness.role == "CABLE"]
    converged = [o.name for o in cables if o.cable_harness.result_converged]
    log(f"solve: {sorted(result)}; converged: {converged} of {[o.name for o in cables]}")
    outcome["converged"] = len(converged) == len(cables) and len(cables) > 0
    scene.cable_harness.arrow_length_per_newton = 0.02
    with bpy.context.temp_override(**view3d()):
        space = view3d()["area"].spaces.active
        space.shading.type = "SOLID"
        space.region_3d.view_rotation = (0.78, 0.45, 0.2, 0.38)
        for ob in scene.objects:
            ob.select_set(ob.cable_harness.role in ("CABLE", "CONNECTOR", "CLIP"))
        bpy.ops.view3d.view_selected()
        for ob in scene.objects:
            ob.select_set(False)
    bpy.app.timers.register(shoot_viewport, first_interval=1.0)


@guarded
def shoot_viewport():
    screenshot(os.path.join(DOCS, "viewport.png"))
    finish(outcome.get("converged", False), None if outcome.get("converged") else "the bay did not converge")
    return None


@guarded
def main():
    show_panel()
    bpy.ops.preferences.addon_enable(module=MODULE)
    log("add-on enabled")
    # a connector, so that the sidebar has the same tabs (Item, Tool, View, Harness) as in the
    # smoke test, where the shell clicks the Harness tab
    bpy.ops.cable_harness.add_connector()
    open(os.path.join(OUT, "gui_smoke.ready"), "w").close()  # the shell may click the UI now
    bpy.app.timers.register(shoot_progress, first_interval=8.0)


main()
