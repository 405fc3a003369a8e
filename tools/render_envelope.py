# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/envelope.png: the power cable's swept envelope in the baked bay, as Swept Envelope makes it.

    .venv/bin/python -m tools.render_envelope        # after python3 tools/dev.py demo (reads out/demo.blend)

Opens the main job's out/demo.blend (the insertion baked), selects the power cable, runs Swept Envelope
through the extension and renders the bay at mid-insertion with the envelope drawn as a see-through
shell (Cycles). Only the envelope's display material is set here; the envelope object is the operator's.
"""

import sys

from tools.blender_session import ROOT, enable_extension, prepare_environment
from tools.main_job import RENDER_FRAME, render

OUT = ROOT / "out"


def main() -> int:
    prepare_environment()
    import bpy

    enable_extension()
    bpy.ops.wm.open_mainfile(filepath=str(OUT / "demo.blend"))
    scene = bpy.context.scene
    power = bpy.data.objects["power"]
    for ob in scene.objects:
        ob.select_set(ob is power)
    bpy.context.view_layer.objects.active = power
    if bpy.ops.cable_harness.swept_envelope() != {"FINISHED"}:
        raise SystemExit("[render envelope] Swept Envelope did not finish")
    envelope = bpy.data.objects[f"{power.name} Envelope"]
    shell = bpy.data.materials.new("envelope shell")
    shell.use_nodes = True
    bsdf = shell.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (1.0, 0.45, 0.05, 1.0)
    bsdf.inputs["Alpha"].default_value = 0.55
    envelope.data.materials.append(shell)
    render(scene, ROOT / "docs" / "envelope.png", RENDER_FRAME, 24, resolution=(960, 540))
    print(f"[render envelope] docs/envelope.png: {len(envelope.data.vertices)} vertices", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
