# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake: solve every frame of the scene's range (following animated connectors, clips and colliders)
and key the cable curves; Clear Bake removes exactly what a bake made."""

import bpy
import numpy as np

from .. import follow
from ..baking import bake_cable, bake_junction, clear_bake
from ..report import LOG_FORMAT
from ..scene_model import (
    COLLIDER,
    HarnessInputError,
    attached,
    cable_diameter,
    harness_objects,
    held_clips,
    is_junction,
    point_tilts,
    refused_text,
)
from ..simulation import CLEARANCE_SEARCH_M, HarnessSimulation
from .common import NeedsSolver, cables_in_context, solvable_or_report, store_bake_log


def _holders(scene, ob) -> list[dict]:
    """The holders the cable is solved with (in the order of its result's forces): deleted ones are not."""
    s = ob.cable_harness
    start, end = attached(scene, s.start), attached(scene, s.end)

    def kind(h):
        return "junction" if h is not None and h.cable_harness.role == "JUNCTION" else "connector"

    holders = [{"key": "start", "object": start.name if start else "", "kind": kind(start)}]
    if end is not None:
        holders.append({"key": "end", "object": end.name, "kind": kind(end)})
    for i, ref in enumerate(held_clips(scene, s)):
        c = ref.clip.cable_harness if ref.clip else None
        kind = "clip" if c is None else f"{c.clip_kind} clip" + (", compliant" if c.clip_compliant else "")
        holders.append({"key": f"clip {i + 1}", "object": ref.clip.name if ref.clip else "", "kind": kind})
    return holders


def _junction_name(holder):
    return holder.name if holder is not None and is_junction(holder) else None


def _wires(s, scale) -> list[dict]:
    """The cable's wires for the bill of materials (SI): a bundle's list, or the cable as one wire."""
    if not s.is_bundle:
        return [{"diameter": s.diameter * scale, "material": s.material, "count": 1}]
    return [
        {
            "diameter": w.diameter * scale,
            "material": w.material,
            "count": w.count,
            **({"id": w.wire_id.strip()} if w.wire_id.strip() else {}),
        }
        for w in s.wires
    ]


def _frame_record(frame: int, result: dict, gap, gap_s) -> dict:
    radii = np.array([np.inf if r is None else r for r in result["bend_radii"]])
    worst = int(np.argmin(radii)) if radii.size else -1
    forces = {"start": float(np.linalg.norm(result["end_forces"]["start"]["force"]))}
    if "end" in result["end_forces"]:
        forces["end"] = float(np.linalg.norm(result["end_forces"]["end"]["force"]))
    for i, clip in enumerate(result["clip_forces"]):
        forces[f"clip {i + 1}"] = float(np.linalg.norm(clip["force"]))
    finite = worst >= 0 and np.isfinite(radii[worst])
    return {
        "frame": frame,
        "converged": bool(result["converged"]),
        "length": result["length"],
        "min_bend_radius": float(radii[worst]) if finite else None,
        "min_bend_radius_s": float(result["bend_radius_s"][worst]) if finite else None,
        "bend_radii": list(result["bend_radii"]),
        "bend_radius_s": np.asarray(result["bend_radius_s"]).tolist(),
        "clearance": gap,
        "clearance_s": gap_s,
        "forces": forces,
    }


# A frame whose solve fails is tried again from the last frame in this many sub-frames (a smaller
# change per solve) before it is given up as not converged: only for a cable that converged at the
# last frame and whose solve failed (refused input, or a cable that has not converged since, fails
# the same way in sub-frames: each retry cost a second or more per sub-frame for nothing).
RETRY_SUBFRAMES = 4
# timeline markers of frames where a cable did not converge: "<prefix><cable name>"
FAILED_MARKER = "not converged: "


def clear_failure_markers(scene, cable_names) -> int:
    """Remove the not-converged markers an earlier bake of these cables left on the timeline."""
    names = {FAILED_MARKER + n for n in cable_names}
    doomed = [m for m in scene.timeline_markers if m.name in names]
    for marker in doomed:
        scene.timeline_markers.remove(marker)
    return len(doomed)


class _BakeRun:
    """Frame-by-frame state of one bake (names only, no Blender objects)."""

    def __init__(self, context, cables):
        scene = context.scene
        self.simulation = HarnessSimulation(scene, cables)
        self.frames = list(range(scene.frame_start, scene.frame_end + 1, max(scene.frame_step, 1)))
        self.index = 0
        self.original_frame = scene.frame_current
        # per cable: the frames it converged at, and its points and tilts there (only those are keyed)
        self.samples = {name: ([], [], []) for name, _ in self.simulation.cables}
        # per free junction: the frames all its branches converged at, and its world matrix there
        self.junction_samples = {}
        cables = [bpy.data.objects[name] for name, _ in self.simulation.cables]  # with their harness mates
        clear_failure_markers(scene, self.samples)
        self.corners = None
        self.failures = []
        self.failed_last = set()  # the cables that did not converge at the last frame
        scale = self.simulation.scale
        self.log = {
            "format": LOG_FORMAT,
            "scene": scene.name,
            "frame_range": [self.frames[0], self.frames[-1]],
            "cables": {
                ob.name: {
                    "rest_length": ob.cable_harness.length * scale,
                    "diameter": cable_diameter(ob.cable_harness) * scale,
                    "material": ob.cable_harness.material,
                    "allowed_bend_radius": ob.cable_harness.min_bend_radius_allowed * scale,
                    "clearance_search": CLEARANCE_SEARCH_M,
                    "holders": _holders(scene, ob),
                    "from": getattr(attached(scene, ob.cable_harness.start), "name", ""),
                    "to": getattr(attached(scene, ob.cable_harness.end), "name", ""),
                    # the ends held by junctions: where the bill of materials routes wires on
                    "from_junction": _junction_name(attached(scene, ob.cable_harness.start)),
                    "to_junction": _junction_name(attached(scene, ob.cable_harness.end)),
                    "wires": _wires(ob.cable_harness, scale),
                }
                for ob in cables
            },
            "frames": {ob.name: [] for ob in cables},
            "junctions": {},
        }

    @property
    def done(self) -> bool:
        return self.index >= len(self.frames)

    def _follow_colliders(self, context, previous: int, frame: int, before, after) -> None:
        """Solve at sub-frames between ``previous`` and ``frame`` when a collider moves too far
        between them (corners ``before`` and ``after``) for contact to push the cables along (it would
        pass through them)."""
        if before is None or after is None or before.shape != after.shape:
            return
        radius = 0.5 * min(c["diameter"] for c in self.log["cables"].values())
        count = min(follow.MAX_FOLLOW_STEPS, follow.steps_needed(follow.largest_move(before, after), radius))
        for k in range(1, count):
            t = previous + (frame - previous) * k / count
            context.scene.frame_set(int(np.floor(t)), subframe=float(t - np.floor(t)))
            self.simulation.tick(context, write=False)
        if count > 1:
            context.scene.frame_set(frame)

    def _solve_frame(self, context):
        report = self.simulation.tick(context)
        while report.to_follow > 0.0:  # each tick follows the rest of the move further (follow.py)
            report = self.simulation.tick(context)
        return report

    def _worth_retrying(self, report) -> bool:
        """Whether smaller steps may mend this frame: a solve failed of a cable that converged at the
        last frame (not one refused before solving, nor one failing since an earlier frame)."""
        return self.index > 0 and bool(set(report.failed) - report.refused - self.failed_last)

    def _retry_in_subframes(self, context, previous: int, frame: int, report):
        """Solve the failed cables again from their last converged state in smaller steps: sub-frames
        between ``previous`` and ``frame``; the last one is the frame itself."""
        for k in range(1, RETRY_SUBFRAMES):
            t = previous + (frame - previous) * k / RETRY_SUBFRAMES
            context.scene.frame_set(int(np.floor(t)), subframe=float(t - np.floor(t)))
            self.simulation.tick(context, write=False)
        context.scene.frame_set(frame)
        return self._solve_frame(context)

    def step(self, context) -> None:
        frame = self.frames[self.index]
        context.scene.frame_set(frame)
        corners = follow.collider_corners(
            harness_objects(context.scene, COLLIDER), context.evaluated_depsgraph_get(), self.simulation.scale
        )
        if self.index > 0:
            self._follow_colliders(context, self.frames[self.index - 1], frame, self.corners, corners)
        self.corners = corners  # where the colliders were at the last solved frame
        report = self._solve_frame(context)
        if self._worth_retrying(report):
            report = self._retry_in_subframes(context, self.frames[self.index - 1], frame, report)
        self.failed_last = set(report.failed)
        for name, result in report.results.items():
            ob = bpy.data.objects.get(name)
            if ob is None or name not in self.samples or name in report.failed:
                continue
            M_inv = np.linalg.inv(np.array([list(r) for r in ob.matrix_world]))
            nodes = np.asarray(result["nodes"]) / self.simulation.scale
            local = nodes @ M_inv[:3, :3].T + M_inv[:3, 3]
            self.samples[name][0].append(frame)
            self.samples[name][1].append(local)
            self.samples[name][2].append(point_tilts(np.asarray(result["directors"])))
            gap, gap_s = self.simulation.clearance(context, name)
            self.log["frames"].setdefault(name, []).append(_frame_record(frame, result, gap, gap_s))
        for name, message in report.failed.items():
            # no result: not keyed (playback interpolates between the frames that converged), marked on
            # the timeline and logged as such, so that the report takes no value from it
            self.failures.append(f"frame {frame}: {name}: {message}")
            if name in self.samples:
                context.scene.timeline_markers.new(FAILED_MARKER + name, frame=frame)
                self.log["frames"].setdefault(name, []).append({"frame": frame, "converged": False, "message": message})
        self._sample_junctions(frame, report)
        self.index += 1

    def _sample_junctions(self, frame: int, report) -> None:
        harness = self.simulation.harness
        documents = harness.junction_documents()
        for jid, doc in documents.items():
            branches = [b["cable"] for b in doc["branches"]]
            converged = not any(cid in report.failed for cid in branches)
            record = {"frame": frame, "converged": converged, "fixed": doc["fixed"]}
            if converged:
                record["position"] = doc["position"]
                record["pulls"] = {
                    f"{b['cable']} ({b['end']})": float(np.linalg.norm(b["force"])) for b in doc["branches"]
                }
                # what the obstacles push the junction itself with (N; 0 when clear)
                record["push"] = float(np.linalg.norm(np.sum([c["force"] for c in doc["contacts"]], axis=0)))
            self.log["junctions"].setdefault(jid, []).append(record)
        for jid, doc in documents.items():
            ob = bpy.data.objects.get(jid)
            if doc["fixed"] or ob is None:
                continue
            if not any(cid in report.failed for cid in harness.branches_at(jid)):
                self.junction_samples.setdefault(jid, []).append((frame, ob.matrix_world.copy()))

    def finish(self, context) -> int:
        baked = 0
        for name, (frames, points, tilts) in self.samples.items():
            ob = bpy.data.objects.get(name)
            if ob is None or not points:
                continue
            bake_cable(ob, np.array(frames, dtype=np.float64), np.array(points), np.array(tilts))
            baked += 1
        for name, samples in self.junction_samples.items():
            ob = bpy.data.objects.get(name)
            if ob is not None:
                bake_junction(ob, samples)
        # one value per line: Blender's text block takes a long line in time quadratic in its length
        # (the bay's 0.5 MB log on one line: 3.6 s, most of the whole bake; so: 5 ms)
        store_bake_log(bpy.data, self.log)
        context.scene.frame_set(self.original_frame)
        return baked


class CABLE_HARNESS_OT_bake(NeedsSolver, bpy.types.Operator):
    """Solve every frame of the scene range, warm-started from the previous frame, and key the cables"""

    bl_idname = "cable_harness.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    _run = None
    _timer = None
    _refused = {}  # cable name -> why it is not baked

    def _begin(self, context) -> bool:
        solvable, self._refused = solvable_or_report(self, context, cables_in_context(context))
        if solvable is None:
            return False
        try:
            self._run = _BakeRun(context, solvable)
        except HarnessInputError as exc:
            self.report({"ERROR"}, str(exc))
            return False
        context.window_manager.progress_begin(0, len(self._run.frames))
        return True

    def _end(self, context):
        context.window_manager.progress_end()
        baked = self._run.finish(context)
        not_baked = f"; not baked: {refused_text(self._refused)}" if self._refused else ""
        if self._run.failures:
            self.report(
                {"WARNING"},
                f"baked {baked} cable(s); {len(self._run.failures)} frame(s) did not converge (not keyed, "
                f"marked on the timeline), first: {self._run.failures[0]}{not_baked}",
            )
        else:
            level = {"WARNING"} if self._refused else {"INFO"}
            self.report(level, f"baked {baked} cable(s) over {len(self._run.frames)} frames{not_baked}")
        return {"FINISHED"}

    def execute(self, context):
        if not self._begin(context):
            return {"CANCELLED"}
        while not self._run.done:
            self._run.step(context)
            context.window_manager.progress_update(self._run.index)
            if bpy.app.background and (self._run.index % 10 == 0 or self._run.done):
                # no status bar without a window: show progress on the console
                print(f"cable_harness: baked frame {self._run.index}/{len(self._run.frames)}", flush=True)
        return self._end(context)

    def invoke(self, context, event):
        if not self._begin(context):
            return {"CANCELLED"}
        self._timer = context.window_manager.event_timer_add(0.001, window=context.window)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type == "ESC" and event.value == "PRESS":
            self._stop_timer(context)
            context.window_manager.progress_end()
            context.scene.frame_set(self._run.original_frame)
            self.report({"INFO"}, "bake cancelled, nothing keyed")
            return {"CANCELLED"}
        if event.type == "TIMER":
            self._run.step(context)
            context.window_manager.progress_update(self._run.index)
            if context.area is not None:
                context.area.header_text_set(
                    f"Baking cables: frame {self._run.index}/{len(self._run.frames)} (Esc: cancel)"
                )
            if self._run.done:
                self._stop_timer(context)
                return self._end(context)
            return {"RUNNING_MODAL"}
        return {"PASS_THROUGH"}

    def _stop_timer(self, context):
        if self._timer is not None:
            context.window_manager.event_timer_remove(self._timer)
            self._timer = None
        if context.area is not None:
            context.area.header_text_set(None)


class CABLE_HARNESS_OT_clear_bake(bpy.types.Operator):
    """Remove the keyframes a bake made on the selected cables (all if none is selected)"""

    bl_idname = "cable_harness.clear_bake"
    bl_label = "Clear Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        cables = cables_in_context(context)
        clear_failure_markers(context.scene, [ob.name for ob in cables])
        cleared = sum(clear_bake(ob) for ob in cables)
        self.report({"INFO"}, f"cleared the bake of {cleared} cable(s)")
        return {"FINISHED"}


classes = (CABLE_HARNESS_OT_bake, CABLE_HARNESS_OT_clear_bake)


register, unregister = bpy.utils.register_classes_factory(classes)
