# SPDX-License-Identifier: GPL-3.0-or-later
"""What the scripts run in a real Blender window share (tools/gui_smoke_test.sh): the outcome they
log and write as JSON, the 3D view to act in, screenshots."""

import json
import os
import traceback

import bpy

OUT = os.environ["CABLE_HARNESS_GUI_OUT"]
MODULE = os.environ.get("CABLE_HARNESS_MODULE", "cable_harness")
outcome = {"blender": bpy.app.version_string, "steps": []}


def log(step):
    outcome["steps"].append(step)
    print(f"[gui smoke] {step}", flush=True)


def finish(ok, error=None):
    """Write the outcome (out/gui_smoke.json, which the shell reads) and quit Blender."""
    outcome["ok"] = ok
    if error:
        outcome["error"] = error
    with open(os.path.join(OUT, "gui_smoke.json"), "w") as fh:
        json.dump(outcome, fh, indent=1)
    bpy.ops.wm.quit_blender()


def view3d():
    win = bpy.context.window_manager.windows[0]
    area = next(a for a in win.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")
    return {"window": win, "area": area, "region": region}


def screenshot(path):
    """The window as a PNG at ``path`` (a name alone: in OUT)."""
    path = path if os.path.dirname(path) else os.path.join(OUT, path)
    with bpy.context.temp_override(**view3d()):
        bpy.ops.screen.screenshot(filepath=path)
    log(f"screenshot {os.path.basename(path)}")


def guarded(callback):
    """``callback`` (a timer's, or the script's main) ending the run with its traceback when it
    raises: an exception in a timer is only printed, and the run would wait for the shell's timeout."""

    def run():
        try:
            return callback()
        except Exception:
            finish(False, traceback.format_exc())
            return None

    return run
