# SPDX-License-Identifier: GPL-3.0-or-later
"""One harness simulation tick: read the scene, find nearby collider triangles, solve, write curves.

``HarnessSimulation.tick`` is the single code path behind the modal Simulate operator (one call
per timer event), the one-shot Solve, Bake (one call per frame) and the tick benchmark. It keeps
object names (and session ids, to follow renames), never Blender objects, so undo, deletion and
file loads cannot leave it holding freed data. A cable whose settings change (length, diameter,
clips, ...) is rebuilt from its route; a cable whose connectors or clips merely moved is
warm-started from its last equilibrium.
"""

import json
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from ..solver_core import CableChange, Harness
from ..solver_core.contact import ObstacleSet
from ..solver_core.case import parse_frame
from .colliders import ColliderCache
from .scene_model import (CABLE, COLLIDER, HarnessInputError, case_document, cable_document, harness_objects,
                          metres_per_unit, parse_scene_case, write_cable_result)


@dataclass
class TickReport:
    read_ms: float = 0.0
    collide_ms: float = 0.0
    solve_ms: float = 0.0
    write_ms: float = 0.0
    solved: int = 0
    failed: dict = field(default_factory=dict)  # cable name -> message
    results: dict = field(default_factory=dict)  # cable name -> result document entry
    candidate_triangles: int = 0

    @property
    def total_ms(self) -> float:
        return self.read_ms + self.collide_ms + self.solve_ms + self.write_ms

    def summary(self) -> str:
        text = (f"{self.solved} cable(s) in {self.total_ms:.1f} ms (read {self.read_ms:.1f}, collide "
                f"{self.collide_ms:.1f}, solve {self.solve_ms:.1f}, write {self.write_ms:.1f})")
        if self.failed:
            text += "; " + "; ".join(f"{k}: {v}" for k, v in self.failed.items())
        return text


def _find_object(name, uid):
    ob = bpy.data.objects.get(name)
    if ob is not None and (uid is None or getattr(ob, "session_uid", uid) == uid):
        return ob
    if uid is not None:
        for candidate in bpy.data.objects:
            if getattr(candidate, "session_uid", None) == uid:
                return candidate
    return None


def _static_signature(doc: dict) -> str:
    """Everything of a cable document except where its holders are: a change means rebuild."""
    static = dict(doc)
    static["start"] = {"free_roll": "normal" not in doc["start"]}
    static["end"] = None if doc["end"] is None else {"free_roll": "normal" not in doc["end"]}
    static["clips"] = [{k: v for k, v in c.items() if k != "frame"} for c in doc["clips"]]
    static.pop("route", None)
    return json.dumps(static, sort_keys=True)


class HarnessSimulation:
    def __init__(self, scene, cable_objects=None):
        self.scene_name = scene.name
        self.scale = metres_per_unit(scene)
        cables = harness_objects(scene, CABLE) if cable_objects is None else list(cable_objects)
        if not cables:
            raise HarnessInputError("the scene has no cable (mark a curve as a cable or use Add > Cable Harness)")
        self.cables = [(ob.name, getattr(ob, "session_uid", None)) for ob in cables]
        doc = case_document(scene, cables)  # raises HarnessInputError naming the first problem
        self.case = parse_scene_case(doc)
        self.harness = Harness.from_case(self.case)
        self.signatures = {c["id"]: _static_signature(c) for c in doc["cables"]}
        self.colliders = ColliderCache()

    # ------------------------------------------------------------ one tick

    def tick(self, context, write=True) -> TickReport:
        report = TickReport()
        scene = bpy.data.scenes.get(self.scene_name) or context.scene
        t0 = time.perf_counter()
        targets = self._read(scene, report)
        t1 = time.perf_counter()
        self._collide(scene, context, targets, report)
        t2 = time.perf_counter()
        for name, change in targets.items():
            cable_report = self.harness.solve_cable(name, self.harness.changed_boundary(name, change))
            result = self.harness.cable_result(name)
            report.results[name] = result
            if cable_report.converged:
                report.solved += 1
            else:
                report.failed[name] = cable_report.message
        for name in report.failed:
            # refused input (e.g. a connector pulled out of reach): hold the last good state
            session = self.harness.cables.get(name)
            if name not in report.results and session is not None and session.solved:
                report.results[name] = self.harness.cable_result(name)
        t3 = time.perf_counter()
        if write:
            self.write(report)
        t4 = time.perf_counter()
        report.read_ms, report.collide_ms = (t1 - t0) * 1e3, (t2 - t1) * 1e3
        report.solve_ms, report.write_ms = (t3 - t2) * 1e3, (t4 - t3) * 1e3
        return report

    def _read(self, scene, report) -> dict:
        """Frames of every live cable's holders; rebuild cables whose settings changed."""
        targets = {}
        live = []
        for name, uid in self.cables:
            ob = _find_object(name, uid)
            if ob is None or ob.cable_harness.role != CABLE:
                report.failed[name] = "cable object deleted; dropped from the simulation"
                continue
            live.append((ob.name, uid))
            if ob.name != name:  # renamed while running: carry its solver session over
                self._rename(name, ob.name)
            try:
                # the route matters only when a cable is (re)built: not read on ordinary ticks
                doc = cable_document(ob, self.scale, with_route=False)
                parse_scene_case({"format": "cable-harness-case/1", "gravity": self.case.gravity.tolist(),
                                  "cables": [doc]})
                signature = _static_signature(doc)
                if self.signatures.get(ob.name) != signature:
                    rebuilt = parse_scene_case({"format": "cable-harness-case/1",
                                                "gravity": self.case.gravity.tolist(),
                                                "cables": [cable_document(ob, self.scale)]})
                    self.harness.add_cable(rebuilt.cables[0])
                    self.signatures[ob.name] = signature
            except HarnessInputError as exc:
                report.failed[ob.name] = str(exc)
                continue
            targets[ob.name] = CableChange(
                start=parse_frame(doc["start"], "start"),
                end=None if doc["end"] is None else parse_frame(doc["end"], "end"),
                clips={i: parse_frame(c["frame"], f"clips[{i}]") for i, c in enumerate(doc["clips"])})
        self.cables = live
        return targets

    def _rename(self, old: str, new: str) -> None:
        self.harness.cables[new] = self.harness.cables.pop(old)
        self.signatures[new] = self.signatures.pop(old, None)

    def _collide(self, scene, context, targets, report) -> None:
        """Broad phase: triangles of collider meshes near the cables, handed to the solver as one mesh
        obstacle; its narrow phase (exact distances, contact forces) is the same as for case meshes."""
        colliders = harness_objects(scene, COLLIDER)
        if not colliders or not targets:
            if not self.harness.obstacles.empty:
                self.harness.set_obstacles(ObstacleSet())
            return
        depsgraph = context.evaluated_depsgraph_get()
        points = [self.harness.cables[n].state.positions + self.harness.cables[n].model.origin for n in targets]
        # everything a tick's solve may reach: a few diameters and a couple of segments around the cable
        reach = max(max(4.0 * s.model.cable.diameter, 2.0 * float(s.model.rest_len.max()))
                    for s in (self.harness.cables[n] for n in targets))
        points_units = np.concatenate(points) / self.scale
        triangles, sharp = self.colliders.nearby_triangles(colliders, depsgraph, points_units, reach / self.scale)
        report.candidate_triangles = len(triangles)
        self.harness.set_obstacles(ObstacleSet().with_triangles(triangles * self.scale, 0, sharp))

    def write(self, report: TickReport) -> None:
        for name, result in report.results.items():
            ob = bpy.data.objects.get(name)
            if ob is not None:
                write_cable_result(ob, result, self.scale)


def export_case(scene, path: str) -> dict:
    doc = case_document(scene)
    parse_scene_case(doc)  # refuse to write a case the solver would reject
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    return doc
