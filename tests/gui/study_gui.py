# SPDX-License-Identifier: GPL-3.0-or-later
"""A Variation Study in a real Blender window (``bash tools/gui_smoke_test.sh study``).

Enables the extension as an add-on (waiting for the background compile if the cache is cold),
imports the equipment bay's case with its colliders, solves it, varies each cable's length by +-1 %
and the signal cable's first clip by +-5 mm in z, runs the study in the background (the window
stays live: the script only polls), draws the envelope of the converged variants' shapes and shoots
the window (docs/study.png). Writes the outcome as JSON and quits.
"""

import os
import sys

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # Blender runs this file as a script
from gui_session import MODULE, OUT, finish, guarded, log, outcome, screenshot, view3d  # noqa: E402

DOCS = os.environ["CABLE_HARNESS_DOCS"]
ROOT = os.environ["CABLE_HARNESS_ROOT"]
state = {"waited": 0, "polls": 0}


def module(name):
    return sys.modules[f"{MODULE}.cable_harness.{name}"]


@guarded
def wait_for_kernels():
    if module("warmup").preparing():
        state["waited"] += 2
        return 2.0
    log(f"kernels ready after about {state['waited']} s")
    start_study()
    return None


def start_study():
    for ob in list(bpy.data.objects):
        bpy.data.objects.remove(ob)
    case = os.path.join(ROOT, "demo_blends", "cases", "equipment_bay.json")
    log(f"import case: {sorted(bpy.ops.cable_harness.import_case(filepath=case, scene_settings=True))}")
    scene = bpy.context.scene
    for ob in scene.objects:
        ob.select_set(False)
    log(f"solve: {sorted(bpy.ops.cable_harness.solve())}")
    settings = scene.cable_harness
    cables = sorted((o for o in scene.objects if o.cable_harness.role == "CABLE"), key=lambda o: o.name)
    for ob in cables:
        v = settings.variations.add()
        v.cable, v.quantity, v.distribution = ob, "LENGTH", "UNIFORM"
        v.tolerance = 0.01 * ob.cable_harness.length
    signal = next((o for o in cables if len(o.cable_harness.clips)), None)
    if signal is not None:
        v = settings.variations.add()
        v.cable, v.quantity, v.distribution, v.axis = signal, "CLIP_POSITION", "UNIFORM", "Z"
        v.tolerance = 0.005 / scene.unit_settings.scale_length
    settings.study_samples, settings.study_workers = 16, 2
    settings.study_folder = os.path.join(OUT, "gui_study")
    log(f"run study: {sorted(bpy.ops.cable_harness.run_study())}")
    bpy.app.timers.register(wait_for_study, first_interval=2.0)


@guarded
def wait_for_study():
    runner = module("study_runner")
    if runner.running():
        state["polls"] += 1
        if state["polls"] % 10 == 1:
            log(f"progress: {runner.progress()[1]}")
        return 1.0
    runner.wait(0.0)
    sys.modules[f"{MODULE}.cable_harness.operators.study"].show_study(bpy.context.scene)
    study = runner.result()
    if study is None:
        finish(False, f"the study did not finish: {runner.message()}")
        return None
    summary = study["summary"]
    log(f"study: {summary['converged']} of {summary['variants']} variants converged")
    for line in module("ui").study_lines(bpy.context.scene, study):
        log(line)
    outcome["converged"] = summary["converged"]
    with bpy.context.temp_override(**view3d()):
        space = view3d()["area"].spaces.active
        space.shading.type = "SOLID"
        space.region_3d.view_rotation = (0.78, 0.45, 0.2, 0.38)
        for ob in bpy.context.scene.objects:
            ob.select_set(ob.cable_harness.role in ("CABLE", "CONNECTOR", "CLIP"))
        bpy.ops.view3d.view_selected()
        for ob in bpy.context.scene.objects:
            ob.select_set(False)
    bpy.app.timers.register(shoot, first_interval=1.0)
    return None


@guarded
def shoot():
    screenshot(os.path.join(DOCS, "study.png"))
    finish(outcome.get("converged", 0) > 0, None if outcome.get("converged") else "no variant converged")
    return None


@guarded
def main():
    area = view3d()["area"]
    area.spaces.active.show_region_ui = True
    bpy.ops.preferences.addon_enable(module=MODULE)
    log("add-on enabled")
    open(os.path.join(OUT, "gui_smoke.ready"), "w").close()
    bpy.app.timers.register(wait_for_kernels, first_interval=2.0)


main()
