# SPDX-License-Identifier: GPL-3.0-or-later
"""Rebuild the demo files in demo_blends/: equipment_bay.step, equipment_bay.blend, desk.blend and
branched_harness.blend (and the same scenes as cases/equipment_bay.json, desk.json and
branched_harness.json).

    python3 tools/dev.py demos

Both scenes are routed (solved once) and saved ready to Simulate or Bake; the bay's insertion is
animated but not baked (the main job bakes it into out/demo.blend).
"""

import sys
from pathlib import Path

from tools.blender_session import enable_extension, prepare_environment

HERE = Path(__file__).resolve().parent


def _solve_all(bpy, scene_name):
    for ob in bpy.context.scene.objects:
        ob.select_set(False)
    if bpy.ops.cable_harness.solve() != {"FINISHED"}:
        raise SystemExit(f"[demos] {scene_name}: Solve failed")
    cables = [o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE"]
    failed = [o.name for o in cables if not o.cable_harness.result_converged]
    if failed:
        raise SystemExit(f"[demos] {scene_name}: not converged: {', '.join(failed)}")
    print(f"[demos] {scene_name}: {len(cables)} cables routed", flush=True)


def main() -> int:
    prepare_environment()
    import bpy

    enable_extension()
    from demo_blends.bay_geometry import write_step
    from demo_blends.scenes import build_branched_harness, build_desk, build_equipment_bay

    step = write_step(HERE / "equipment_bay.step")
    build_equipment_bay(str(step))
    _solve_all(bpy, "equipment bay")
    bpy.ops.wm.save_as_mainfile(filepath=str(HERE / "equipment_bay.blend"), compress=True)
    # the scenes as cases too, for the command line and the solver tests (tests/solver/test_demo_cases.py)
    if bpy.ops.cable_harness.export_case(filepath=str(HERE / "cases" / "equipment_bay.json")) != {"FINISHED"}:
        raise SystemExit("[demos] equipment bay: Export Harness Case failed")
    build_desk()
    _solve_all(bpy, "desk")
    bpy.ops.wm.save_as_mainfile(filepath=str(HERE / "desk.blend"), compress=True)
    if bpy.ops.cable_harness.export_case(filepath=str(HERE / "cases" / "desk.json")) != {"FINISHED"}:
        raise SystemExit("[demos] desk: Export Harness Case failed")
    build_branched_harness()
    _solve_all(bpy, "branched harness")
    bpy.ops.wm.save_as_mainfile(filepath=str(HERE / "branched_harness.blend"), compress=True)
    if bpy.ops.cable_harness.export_case(filepath=str(HERE / "cases" / "branched_harness.json")) != {"FINISHED"}:
        raise SystemExit("[demos] branched harness: Export Harness Case failed")
    print(
        f"[demos] wrote {step.name}, equipment_bay.blend, desk.blend, branched_harness.blend and their cases in {HERE}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
