# SPDX-License-Identifier: GPL-3.0-or-later
"""The main job: the equipment-bay demo routed, simulated, baked, saved, rendered and reported.

Run through ``python3 tools/dev.py demo`` (which makes the environment first). Headless, inside
the bpy module, with the extension loaded from this checkout:

1. write the bay as STEP (millimetres, named solids) with OpenCASCADE;
2. build the scene through the extension's operators: Import CAD (STEP), connectors, clips of every
   kind, three cables, the animated insertion of the power plug;
3. route the harness (Solve), then Bake the insertion frame by frame;
4. save out/demo.blend, render out/demo.png, write out/report.json, out/report.csv and the plots,
   and the power cable's swept envelope over the insertion, out/envelope.stl;
5. build the branched harness (a taped trunk, three free junctions, six branches), solve it and
   print where its junctions came to rest and what each branch pulls them with; save
   out/branched_harness.blend, draw its formboard, out/formboard.svg, and write it as KBL 2.4,
   out/harness.kbl (the bay's own KBL, with its wires and clips, is out/bay.kbl).
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

from tools import prebuild_kernels
from tools.blender_session import MODULE, ROOT, enable_extension, prepare_environment

OUT = ROOT / "out"
RENDER_FRAME = 30  # mid-insertion: the plug on its way, the power cable lifting off the floor


class Progress:
    def __init__(self, steps: int):
        self.steps, self.done, self.t0 = steps, 0, time.perf_counter()

    def __call__(self, text: str) -> None:
        self.done += 1
        print(f"[main job {self.done}/{self.steps} +{time.perf_counter() - self.t0:5.1f} s] {text}", flush=True)


def _operator(call, what):
    try:
        result = call()
    except RuntimeError as exc:  # an operator's ERROR report
        raise SystemExit(f"[main job] {what} failed: {exc}") from None
    if result != {"FINISHED"}:
        raise SystemExit(f"[main job] {what} did not finish: {result}")


def render(scene, path: Path, frame: int, samples: int, resolution=(1280, 720)) -> None:
    scene.frame_set(frame)
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = True
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = str(path)
    scene.view_settings.view_transform = (
        "AgX"
        if "AgX" in [i.identifier for i in scene.view_settings.bl_rna.properties["view_transform"].enum_items]
        else "Filmic"
    )
    import bpy

    bpy.ops.render.render(write_still=True)


def _kernels_ready() -> str:
    """Load the extension with the solver's kernels compiled, and say how they came: built as the
    Linux zip ships them (tools/prebuild_kernels.py), once per solver version on this machine and
    kept for the user, so that the routing solves without compiling."""
    t = time.perf_counter()
    try:
        kernels, how = prebuild_kernels.provide()
    except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"[main job] the kernels could not be built ahead ({exc}); compiling them in Blender", flush=True)
        kernels, how = None, "compiled"
    prepare_environment(kernels)
    enable_extension()
    # Where the built kernels do not serve (a CPU chosen with NUMBA_CPU_NAME), as an interactive Blender
    # does on enabling the extension: compiled in a separate process into .venv/numba-cache.
    warmup = sys.modules[f"{MODULE}.cable_harness.warmup"]
    if not warmup.kernels_are_warm():
        how = "compiled"
        if warmup.start(force=True) and not warmup.wait(3600):
            raise SystemExit("[main job] compiling the solver's kernels failed (see .venv/numba-cache/warmup.log)")
    seconds = time.perf_counter() - t
    if how == "compiled":
        return f"compiled in {seconds:.0f} s (once per solver version on this machine)"
    where = "copied from the user's store" if how == "copied" else "compiled before"
    return f"were {where} (ready in {seconds:.1f} s)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=24, help="Cycles samples of the picture (denoised)")
    parser.add_argument("--no-render", action="store_true", help="skip the picture")
    args = parser.parse_args(argv)
    progress = Progress(13)
    OUT.mkdir(exist_ok=True)

    progress(f"extension loaded into the bpy module; the solver's kernels {_kernels_ready()}")
    import bpy

    from demo_blends.bay_geometry import write_step
    from demo_blends.scenes import build_equipment_bay

    step_path = write_step(OUT / "equipment_bay.step")
    progress(f"CAD: wrote {step_path.relative_to(ROOT)} (millimetres, 7 named solids)")

    names = build_equipment_bay(str(step_path))
    scene = bpy.context.scene
    colliders = [o.name for o in scene.objects if o.cable_harness.role == "COLLIDER"]
    progress(f"scene: imported {len(colliders)} parts through Import CAD (STEP); cables {', '.join(names['cables'])}")

    t = time.perf_counter()
    cables = [bpy.data.objects[n] for n in names["cables"]]
    for ob in scene.objects:  # nothing selected: Solve and Bake take every cable of the scene
        ob.select_set(False)
    _operator(lambda: bpy.ops.cable_harness.solve(), "routing (Solve)")
    for ob in cables:
        s = ob.cable_harness
        if not s.result_converged:
            raise SystemExit(f"[main job] routing {ob.name} did not converge: {s.result_message}")
    progress(f"routed {len(cables)} cables in {time.perf_counter() - t:.1f} s")

    t = time.perf_counter()
    _operator(lambda: bpy.ops.cable_harness.bake(), "baking the insertion")
    frames = scene.frame_end - scene.frame_start + 1
    marker = sys.modules[f"{MODULE}.cable_harness.operators.bake"].FAILED_MARKER
    failed = sorted((m.frame, m.name) for m in scene.timeline_markers if m.name.startswith(marker))
    if failed:
        # the bake keys only converged frames and marks the rest; a demo with gaps is a failed job
        listed = ", ".join(f"{frame} ({name[len(marker) :]})" for frame, name in failed[:10])
        raise SystemExit(f"[main job] the bake did not converge at {len(failed)} of {frames} frames: {listed}")
    progress(f"baked the insertion of the power plug: {frames} frames in {time.perf_counter() - t:.1f} s")

    blend = OUT / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    progress(f"saved {blend.relative_to(ROOT)}")

    if args.no_render:
        progress("picture skipped (--no-render)")
    else:
        t = time.perf_counter()
        render(scene, OUT / "demo.png", RENDER_FRAME, args.samples)
        progress(
            f"rendered out/demo.png (frame {RENDER_FRAME}, Cycles {args.samples} samples) in "
            f"{time.perf_counter() - t:.1f} s"
        )

    power = bpy.data.objects[names["cables"][0]]
    for ob in scene.objects:
        ob.select_set(ob is power)
    envelope = lambda: bpy.ops.cable_harness.swept_envelope(filepath=str(OUT / "envelope.stl"))  # noqa: E731
    _operator(envelope, "the swept envelope")
    progress(f"swept envelope of {power.name} over the insertion: out/envelope.stl")
    _operator(lambda: bpy.ops.cable_harness.export_report(directory=str(OUT)), "writing the report")
    import json

    summary_text = sys.modules[f"{MODULE}.cable_harness.report"].summary_text
    print(summary_text(json.loads((OUT / "report.json").read_text())), flush=True)
    _operator(lambda: bpy.ops.cable_harness.export_kbl(filepath=str(OUT / "bay.kbl")), "writing the bay's KBL file")
    progress("report: out/report.json, out/report.csv, out/bend_radius.png, out/forces.png; KBL: out/bay.kbl")

    from demo_blends.scenes import build_branched_harness

    t = time.perf_counter()
    harness = build_branched_harness()
    for ob in bpy.context.scene.objects:
        ob.select_set(False)
    _operator(lambda: bpy.ops.cable_harness.solve(), "solving the branched harness")
    failed = [n for n in harness["cables"] if not bpy.data.objects[n].cable_harness.result_converged]
    if failed:
        raise SystemExit(f"[main job] branched harness: not converged: {', '.join(failed)}")
    progress(
        f"branched harness: {len(harness['cables'])} branches and {len(harness['junctions'])} free junctions "
        f"solved in {time.perf_counter() - t:.1f} s"
    )
    _print_junctions(bpy, harness)
    bpy.ops.wm.save_as_mainfile(filepath=str(OUT / "branched_harness.blend"))
    progress("saved out/branched_harness.blend")
    _operator(
        lambda: bpy.ops.cable_harness.export_formboard(filepath=str(OUT / "formboard.svg")), "drawing the formboard"
    )
    progress("formboard: out/formboard.svg (the branched harness laid flat at its solved lengths, 1:1)")
    _operator(lambda: bpy.ops.cable_harness.export_kbl(filepath=str(OUT / "harness.kbl")), "writing the KBL file")
    progress("KBL 2.4 SR-1: out/harness.kbl (nodes, segments with their centre curves, coverings)")
    return 0


def _print_junctions(bpy, harness) -> None:
    """Each junction's resting place (mm) and the pull of its branches (N), from a solve of the scene."""
    simulation = sys.modules[f"{MODULE}.cable_harness.simulation"]
    sim = simulation.HarnessSimulation(bpy.context.scene, [bpy.data.objects[n] for n in harness["cables"]])
    sim.tick(bpy.context, write=False)
    for jid, doc in sim.harness.junctions.junction_documents().items():
        where = ", ".join(f"{1000.0 * v:.1f}" for v in doc["position"])
        pulls = "; ".join(f"{b['cable']} {sum(f * f for f in b['force']) ** 0.5:.2f} N" for b in doc["branches"])
        print(f"  {jid} at ({where}) mm: {pulls}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
