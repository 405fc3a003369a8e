# SPDX-License-Identifier: GPL-3.0-or-later
"""One harness simulation tick: read the scene, find nearby collider triangles, solve, write curves.

``HarnessSimulation.tick`` is the single code path behind the modal Simulate operator (one call
per timer event), the one-shot Solve, Bake (one call per frame) and the tick benchmark. It keeps
object names (and session ids, to follow renames), never Blender objects, so undo, deletion and
file loads cannot leave it holding freed data. A cable whose settings change (length, diameter,
clips, ...) is rebuilt from its route; a cable whose connectors or clips merely moved is
warm-started from its last equilibrium. A collider dragged further than a fraction of a cable
radius since the last tick is followed in sub-steps (interpolated poses), as Bake does with
sub-frames: contact pushes a cable along only where the collider moves less than its radius per solve.
A drag too far for one tick's sub-steps is followed over the next ticks: the solver's colliders and
holders lag behind the scene's until they catch up, rather than let a collider pass through a cable.
The branches of a harness are solved with their junctions: a fixed junction's empty is read like a
connector, a free one's is moved to the solved frame.
"""

import json
import math
import time
from dataclasses import dataclass, field

import bpy
import numpy as np
from mathutils import Matrix, Vector

from ..solver_core import CaseError, Harness, JunctionMove, ObstacleSet
from . import follow, overlay, overlay_data
from .colliders import ColliderCache
from .point_attributes import remove_companion, write_point_attributes
from .scene_model import (
    CABLE,
    COLLIDER,
    HarnessInputError,
    attached,
    build_signature,
    cable_diameter,
    cable_document,
    cable_junctions,
    case_document,
    detached_notes,
    end_mounts,
    harness_objects,
    holder_frames,
    is_junction,
    metres_per_unit,
    mount_zone_radius,
    parse_scene_case,
    plain_message,
    result_inputs,
    rotation_of,
    with_harness_mates,
    write_cable_result,
)
from .still_cables import StillCables, too_near

# a tick solves again (from the same start) when the cables moved beyond the triangles fetched
BROAD_PHASE_ROUNDS = 4
# collider triangles are fetched this many contact reaches further out than needed, and reused by later
# ticks until some node has moved that far: wider, fewer fetches and more triangles in each solve
SKIN_REACHES = 1.0
MAX_TICKS_OWED = 4  # Simulate in a dynamic scene: the longest motion one tick solves, in ticks
# how far from a cable the clearance read-out looks for collider triangles
CLEARANCE_SEARCH_M = 0.05
# a force arrow's length per newton, chosen until the user sets one: this part of the solved harness's
# size (its cables' bounding-box diagonal), in any unit. In the equipment-bay demo (20 mm per N, loads
# of 0.7-9 N) the arrows are then 13-180 mm long: the smallest visible, the largest within the bay
ARROW_PART_OF_SIZE_PER_NEWTON = 0.05


@dataclass
class TickReport:
    read_ms: float = 0.0
    collide_ms: float = 0.0
    solve_ms: float = 0.0
    write_ms: float = 0.0
    solved: int = 0
    failed: dict = field(default_factory=dict)  # cable name -> message
    refused: set = field(default_factory=set)  # of ``failed``, those refused before any solve (bad input)
    results: dict = field(default_factory=dict)  # cable name -> result document entry
    # of ``results``, those of cables left where their last solve put them (nothing of theirs moved,
    # nothing came near them): carried over, already written
    carried: set = field(default_factory=set)
    warnings: list = field(default_factory=list)  # solver warnings new in this tick (e.g. a route inside a collider)
    candidate_triangles: int = 0
    to_follow: float = 0.0  # part of a fast collider drag the solver has still to follow (0: caught up)
    idle: bool = False  # nothing the cables depend on changed since the last tick: nothing solved

    @property
    def total_ms(self) -> float:
        return self.read_ms + self.collide_ms + self.solve_ms + self.write_ms

    def summary(self) -> str:
        if self.idle:
            return f"nothing moved since the last solve ({self.total_ms:.2f} ms)"
        text = (
            f"{self.solved} cable(s) in {self.total_ms:.1f} ms (read {self.read_ms:.1f}, collide "
            f"{self.collide_ms:.1f}, solve {self.solve_ms:.1f}, write {self.write_ms:.1f})"
        )
        if self.failed:
            text += "; " + "; ".join(f"{k}: {v}" for k, v in self.failed.items())
        if self.warnings:
            text += "; " + "; ".join(self.warnings)
        if self.to_follow > 0.0:
            text += f"; following a fast-moved collider ({100.0 * self.to_follow:.0f} % of its move to go)"
        return text

    @property
    def needs_attention(self) -> bool:
        return bool(self.failed or self.warnings)


def _find_object(name, uid):
    ob = bpy.data.objects.get(name)
    if ob is not None and (uid is None or getattr(ob, "session_uid", uid) == uid):
        return ob
    if uid is not None:
        for candidate in bpy.data.objects:
            if getattr(candidate, "session_uid", None) == uid:
                return candidate
    return None


class HarnessSimulation:
    def __init__(self, scene, cable_objects=None, seconds_per_tick=None):
        """``seconds_per_tick``: in a dynamic scene (Motion: Dynamic), the time each tick advances
        (Simulate: its timer's interval, so the motion runs in real time while the solve keeps up, and
        slower, never unstably, when it does not); None: the scene's time from one tick to the next
        (Bake: frames and sub-frames at the scene's frame rate)."""
        self.scene_name = scene.name
        self.mounts = {}  # the mount zones of the last tick: {collider name: [(centre, radius)]}, units
        self.seconds_per_tick = seconds_per_tick
        # dynamic scenes: the scene time [s] the cables' motion has reached (Bake), or the time a fixed
        # tick still owes them (Simulate: a tick that followed a drag only part of the way)
        self.simulated_until = None
        self.owed = 0.0
        self.scale = metres_per_unit(scene)
        cables = harness_objects(scene, CABLE) if cable_objects is None else list(cable_objects)
        if not cables:
            raise HarnessInputError("the scene has no cable (mark a curve as a cable or use Add > Cable Harness)")
        cables = with_harness_mates(scene, cables)  # a branched harness is solved whole
        self.cables = [(ob.name, getattr(ob, "session_uid", None)) for ob in cables]
        # each junction's rotation when the case was built: the case's frame of its outlets
        self.junction_frames = {j.name: rotation_of(j) for ob in cables for j in cable_junctions(scene, ob)}
        doc = case_document(scene, cables)  # raises HarnessInputError naming the first problem
        self.case = parse_scene_case(doc, self.scale, scene)
        self.solver_settings = self._solver_settings(scene)
        self.harness = Harness.from_case(self.case)
        self.signatures = {ob.name: build_signature(scene, ob, self.scale) for ob in cables}
        self.reported_warnings = set()
        self.colliders = ColliderCache()
        # the collider triangles last fetched: (_fetch_key, points fetched about, skin, ObstacleSet)
        self._fetched = None
        self.collider_poses = {}  # collider name -> world matrix (4 x 4 nested tuples) at the last tick
        # what the last tick solved from (inputs_key), when its solve settled: the same again is idle
        self.settled_inputs = None
        self.still = StillCables()  # the cables' inputs at their last converged solve, and its result
        self._own_inputs, self._shared_inputs = {}, None  # this tick's inputs_key, per cable and shared
        self._left_still = set()  # the cables the tick's last solve left where they were
        # per cable, the inputs_key part its holders' frames were last read at, and those frames
        self._frames_read = {}

    # ------------------------------------------------------------ one tick

    def tick(self, context, write=True) -> TickReport:
        report = TickReport()
        scene = bpy.data.scenes.get(self.scene_name) or context.scene
        t0 = time.perf_counter()
        poses = self._collider_poses(scene, context)
        inputs = self.inputs_key(scene, poses)
        if inputs is not None and inputs == self.settled_inputs:
            # quasi-static and nothing moved or changed: the cables are where the last tick left them
            report.idle = True
            report.read_ms = (time.perf_counter() - t0) * 1e3
            return report
        self.settled_inputs = None
        self._own_inputs = {} if inputs is None else {part[0]: part for part in inputs[0]}
        self._shared_inputs = None if inputs is None else inputs[1:]
        self._left_still = set()
        targets = self._read(scene, report)
        self.mounts = self._mount_zones(scene, context, targets, report)
        report.refused = set(report.failed)
        t1 = time.perf_counter()
        solve_ms = 0.0
        *substeps, (reached, tick_targets, tick_poses) = self._substeps(scene, context, targets, poses)
        duration, done = self._tick_seconds(scene), 0.0
        # in a dynamic scene, no time since the motion got here (a sub-frame it has passed, a repeated
        # tick): nothing moves, so nothing is solved and the colliders are taken where they were
        still = duration is not None and duration <= 1e-9 and self.harness_solved(targets)
        for t, sub_targets, sub_poses in [] if still else substeps:
            solve_ms += self._timed_solve(scene, context, sub_targets, report, sub_poses, duration, t - done)[0]
            done = t
        if still:
            pass
        elif tick_poses is None:
            self.collider_poses = poses
        else:  # the drag is followed as far as this tick's sub-steps reach; the next tick goes on from there
            self.collider_poses = {**poses, **{name: tuple(tuple(row) for row in m) for name, m in tick_poses.items()}}
            report.to_follow = 1.0 - reached
        ms, reports = (
            (0.0, {})
            if still
            else self._timed_solve(scene, context, tick_targets, report, tick_poses, duration, reached - done)
        )
        solve_ms += ms
        if duration is not None and self.seconds_per_tick is None and self.simulated_until is None and reports:
            self.simulated_until = _scene_seconds(scene)  # the first solve: the cables at rest now
        t2 = time.perf_counter()
        for name, cable_report in reports.items():
            report.results[name] = self.harness.cable_result(name, arrays=True)
            if cable_report.converged:
                report.solved += 1
            else:
                report.failed[name] = cable_report.message
        self._carry_still(report, write)
        self._remember_solved(reports, report, write)
        for name in report.failed:
            # refused input (e.g. a connector pulled out of reach): hold the last good state
            if name not in report.results and self.harness.has_cable(name) and self.harness.is_solved(name):
                report.results[name] = self.harness.cable_result(name, arrays=True)
        report.warnings = [w for w in self.harness.warnings if w not in self.reported_warnings]
        report.warnings += [w for w in self._detached_warnings(scene) if w not in self.reported_warnings]
        self.reported_warnings.update(report.warnings)
        solved_all = set(reports) | report.carried == set(targets)
        settled = inputs is not None and report.to_follow == 0.0 and bool(targets) and solved_all
        t3 = time.perf_counter()
        wrote_holders = self.write(report) if write else False
        if settled:
            # solved (or refused) whole: the same inputs give the same again. Read again once the scene
            # has taken what was written where that wrote a holder (a free junction's empty set to its
            # balance); the curves written are no input
            if wrote_holders:
                context.evaluated_depsgraph_get()
                inputs = self.inputs_key(scene, poses)
            self.settled_inputs = inputs
        t4 = time.perf_counter()
        # what is not solving between reading the scene and the results is fetching collider triangles
        report.read_ms, report.collide_ms = (t1 - t0) * 1e3, max(0.0, (t2 - t1) * 1e3 - solve_ms)
        report.solve_ms, report.write_ms = solve_ms, (t4 - t3) * 1e3
        return report

    def _carry_still(self, report: TickReport, write: bool) -> None:
        """The results of the cables this tick left where they were: carried over (unwritten ones, of a
        Bake sub-frame, written now)."""
        for name in self._left_still:
            report.results[name] = self.still.result(name)
            report.solved += 1
            if self.still.written(name) or not write:
                report.carried.add(name)
            else:
                self.still.mark_written(name)

    def _remember_solved(self, reports: dict, report: TickReport, write: bool) -> None:
        """Remember the inputs and results of the cables solved to this tick's inputs and converged; a
        cable solved only part of the way, or not converged, or refused, is forgotten."""
        whole = self._shared_inputs is not None and report.to_follow == 0.0
        for name, cable_report in reports.items():
            if whole and cable_report.converged and name in self._own_inputs:
                self.still.remember(name, self._own_inputs[name], self._shared_inputs, report.results[name], write)
            else:
                self.still.drop([name])
        self.still.drop(report.failed)

    def _unchanged(self, targets) -> set:
        """Of ``targets``, the cables this tick need not solve: solved to the same inputs before, and
        not a branch of a harness with junctions (those are solved whole)."""
        if self._shared_inputs is None:
            return set()
        own = {n: self._own_inputs[n] for n in targets if n in self._own_inputs and not self.harness.is_branch(n)}
        return {n for n in self.still.unchanged(own, self._shared_inputs) if self.harness.is_solved(n)}

    def inputs_key(self, scene, poses):
        """Everything a quasi-static tick solves from, read cheaply off the scene: each cable's name and
        build settings and the world matrix of every holder of it (connectors, clips, junctions),
        the collider poses and how often each collider's geometry changed, the contact settings and
        the scene's model. None where a tick must solve anyway: a dynamic scene moves on in time, and
        a cable gone or not a cable any more is reported by the tick."""
        if self.case.solver.dynamics is not None:
            return None
        parts = []
        for name, uid in self.cables:
            ob = _find_object(name, uid)
            if ob is None or ob.cable_harness.role != CABLE:
                return None
            s = ob.cable_harness
            holders = (s.start, s.end, *(ref.clip for ref in s.clips))
            # where each holder is (one deleted changes the signature: build_signature reads the
            # holders in the scene), which way round the cable passes each clip
            matrices = tuple(None if h is None else tuple(map(tuple, h.matrix_world)) for h in holders)
            passes = tuple(ref.reversed for ref in s.clips)
            # and the collider each end connector is Mounted On (its zone is cut out of that one)
            mounted = tuple(
                None if h is None else getattr(h.cable_harness.mounted_on, "name", None) for h in holders[:2]
            )
            parts.append((ob.name, build_signature(scene, ob, self.scale), matrices, passes, mounted))
        contact = tuple(sorted(scene.cable_harness.contact_document().items()))
        margins = tuple(getattr(bpy.data.objects.get(name), "cable_harness", None) for name in sorted(poses))
        margins = tuple(None if m is None else m.collider_margin for m in margins)
        colliders = tuple(sorted(poses.items())), self.colliders.geometry_changes(sorted(poses)), margins
        return tuple(parts), colliders, contact, self._solver_settings(scene)

    def _mount_zones(self, scene, context, targets, report) -> dict:
        """The zones about the connectors that sit on colliders (scene_model.end_mounts) where those
        colliders are no obstacle to their cables: {collider name: [(centre, radius)]}, world, Blender
        units. A connector moved since its cable's last solve gets zones along its way there (the
        solver moves it there in sub-steps against the same obstacles). A cable whose connector points
        into its collider is not solved: ``targets`` loses it, ``report`` says why."""
        colliders = harness_objects(scene, COLLIDER)
        zones = {}
        if not colliders:
            return zones
        depsgraph = context.evaluated_depsgraph_get()
        for name in list(targets):
            ob = bpy.data.objects.get(name)
            try:
                mounts = end_mounts(scene, ob, colliders, self.colliders, depsgraph)
            except HarnessInputError as exc:
                report.failed[name] = str(exc)
                del targets[name]
                continue
            for side, (holder, mount, outlet) in mounts.items():
                radius = mount_zone_radius(ob, mount, outlet)
                here = np.array(holder.matrix_world.translation)
                before = self._solved_end(name, side)
                steps = 0 if before is None else int(min(32, np.ceil(np.linalg.norm(here - before) / (0.5 * radius))))
                for k in range(steps + 1):
                    centre = here if steps == 0 else before + (here - before) * (k / steps)
                    zones.setdefault(mount.collider, []).append((centre, radius))
        return zones

    def _solved_end(self, name, side):
        """Where the solver holds a cable's end now (world, Blender units), or None."""
        if not self.harness.has_cable(name) or not self.harness.is_solved(name):
            return None
        frame = self.harness.held_end(name, side)
        return None if frame is None else np.asarray(frame.position) / self.scale

    def _detached_warnings(self, scene) -> list:
        """What the cables let go of because the user deleted it (scene_model.detached_notes)."""
        found = []
        for name, uid in self.cables:
            ob = _find_object(name, uid)
            if ob is not None and ob.cable_harness.role == CABLE:
                found += [f"cable {ob.name!r}: {note}" for note in detached_notes(scene, ob)]
        return found

    def harness_solved(self, targets) -> bool:
        return bool(targets) and all(self.harness.is_solved(n) for n in targets)

    def _tick_seconds(self, scene) -> float | None:
        """How long the motion of this tick lasts in a dynamic scene (None: quasi-static): Simulate's
        ``seconds_per_tick`` with what an earlier tick still owes; Bake's, the scene time since where
        the motion has got to (0 where the scene has not moved on: a sub-frame before it, a repeat)."""
        if self.case.solver.dynamics is None:
            return None
        if self.seconds_per_tick is not None:
            # what failed ticks leave owed is caught up with at most MAX_TICKS_OWED ticks at a time
            self.owed = min(self.owed + self.seconds_per_tick, MAX_TICKS_OWED * self.seconds_per_tick)
            return self.owed
        if self.simulated_until is None:
            return 1.0 / _frames_per_second(scene)
        return max(0.0, _scene_seconds(scene) - self.simulated_until)

    def _timed_solve(self, scene, context, targets, report, poses, duration, part):
        """``_solve`` over ``part`` of the tick's ``duration`` (None: quasi-static); a converged dynamic
        solve moves the motion's clock on by what it simulated."""
        seconds = None if duration is None else part * duration
        ms, reports = self._solve(scene, context, targets, report, poses, seconds)
        moved = seconds is not None and reports and all(r.converged for r in reports.values())
        if moved and self.harness_solved(targets):
            if self.seconds_per_tick is not None:
                self.owed = max(0.0, self.owed - seconds)
            elif self.simulated_until is not None:
                self.simulated_until += seconds
        return ms, reports

    def _collider_poses(self, scene, context) -> dict:
        depsgraph = context.evaluated_depsgraph_get()
        return {
            ob.name: tuple(tuple(row) for row in ob.evaluated_get(depsgraph).matrix_world)
            for ob in harness_objects(scene, COLLIDER)
        }

    def _substeps(self, scene, context, targets, poses) -> list:
        """The tick's solves as [(t, targets, collider poses)], t part of the way from the last tick's
        colliders to this one's: one solve at t = 1 (poses None: as in the scene) unless a collider moved
        too far since for contact to push the cables along (a fast drag). Then the colliders' matrices and
        the holders' frames are interpolated (matrices by polar decomposition, frames along the rotation
        geodesic), as Bake does with sub-frames, in the steps of follow.py:
        the last solve may stop short of t = 1, and the next tick follows on."""
        whole = (1.0, targets, None)
        if not self.collider_poses or not targets:
            return [whole]
        radius = min(self.harness.cable_radius(n) for n in targets)
        depsgraph = context.evaluated_depsgraph_get()
        move = 0.0
        moved = {}
        for ob in harness_objects(scene, COLLIDER):
            before = self.collider_poses.get(ob.name)
            if before is None or before == poses[ob.name]:
                continue
            box = follow.evaluated_box(ob, depsgraph)
            shift = follow.largest_move(follow.world_corners(box, before), follow.world_corners(box, poses[ob.name]))
            move = max(move, shift * self.scale)
            moved[ob.name] = (Matrix(before), Matrix(poses[ob.name]))
        needed = follow.steps_needed(move, radius)
        steps = []
        for k in range(1, min(needed, follow.MAX_FOLLOW_STEPS) + 1):
            t = k / needed
            if t >= 1.0:
                steps.append(whole)
                break
            sub_targets = {}
            for name, change in targets.items():
                solved = self.harness.is_solved(name)
                sub_targets[name] = self.harness.step_part(name, change, t) if solved else change
            steps.append((t, sub_targets, {name: a.lerp(b, t) for name, (a, b) in moved.items()}))
        return steps

    def _solve(self, scene, context, targets, report, poses, duration=None):
        """Solve the cables towards ``targets`` (``_solve_cables``), leaving out those whose inputs are
        unchanged since their last converged solve (``_unchanged``) while no cable solved comes near
        them; the tick carries their last results over. Returns (solve ms, {name: SolveReport})."""
        still = self._unchanged(targets)
        radius = {n: self.harness.cable_radius(n) for n in targets} if still else {}
        while still:  # those near a cable to solve now (touching it, say) are solved with it
            near = too_near(self._positions(still), self._positions(set(targets) - still), radius)
            if not near:
                break
            still -= near
        checkpoint = self.harness.checkpoint(targets) if still else None
        solve_ms = 0.0
        while True:
            moving = {n: change for n, change in targets.items() if n not in still}
            ms, reports = self._solve_cables(scene, context, moving, report, poses, duration) if moving else (0.0, {})
            solve_ms += ms
            near = too_near(self._positions(still), self._positions(moving), radius) if still and reports else set()
            if not near:
                break
            # a solved cable came near a still one: contact may move it, so both are solved together
            self.harness.restore(checkpoint)
            still -= near
        self._left_still = still
        return solve_ms, reports

    def _solve_cables(self, scene, context, targets, report, poses, duration=None):
        """Fetch the collider triangles around the cables (colliders at ``poses`` where given) and solve
        the cables towards ``targets`` (in a dynamic scene: a motion of ``duration`` seconds); returns
        (solve ms, {name: SolveReport})."""
        covered = {n: [p] for n, p in self._positions(targets).items()}  # where triangles were fetched
        reach = self._collide(scene, context, targets, report, covered, poses)
        checkpoint = self.harness.checkpoint(targets)
        solve_ms = 0.0
        reports = {}
        for _ in range(BROAD_PHASE_ROUNDS):
            t_solve = time.perf_counter()
            # all cables of the tick together: with cable-cable contact they are swept until they agree
            try:
                timed = {} if duration is None else {"duration": max(duration, 1e-9)}
                reports = self.harness.solve_step(
                    targets, cable_ids=list(targets), junction_moves=self.junction_moves(scene), **timed
                )
            except CaseError as exc:  # a step the solver refuses is that tick's failure, not a traceback
                report.failed.update({n: str(exc) for n in targets})
                return solve_ms, {}
            solve_ms += (time.perf_counter() - t_solve) * 1e3
            after = self._positions(targets)
            # how far each node ended from the nearest place (of the same node) triangles were fetched at
            outside = max(
                (
                    float(np.min([np.linalg.norm(after[n] - p, axis=1) for p in covered[n]], axis=0).max())
                    for n in targets
                ),
                default=0.0,
            )
            if outside <= 0.5 * reach:
                break
            # The cables moved further than the fetched triangles reach (a first solve, a big drag):
            # what lies where they went was not in the solve. Solve again from the same start with
            # the triangles around both places.
            self.harness.restore(checkpoint)
            for n in targets:
                covered[n].append(after[n])
            reach = self._collide(scene, context, targets, report, covered, poses)
        return solve_ms, reports

    def junction_moves(self, scene) -> dict:
        """Where the fixed junctions are now: {name: JunctionMove} (position and turn from the case's frame)."""
        moves = {}
        for jid, doc in self.harness.junction_documents().items():
            ob = bpy.data.objects.get(jid)
            if doc["fixed"] and is_junction(ob) and jid in self.junction_frames:
                position = np.array(ob.matrix_world.translation) * self.scale
                moves[jid] = JunctionMove(position, rotation_of(ob) @ self.junction_frames[jid].T)
        return moves

    def write_junctions(self) -> bool:
        """Move the free junctions' empties to their solved frames (their scale kept); every junction's
        read-out says what its branches pull it with. Returns whether a free junction's empty was
        written (moved, or set where it was)."""
        wrote = False
        for jid, doc in self.harness.junction_documents().items():
            ob = bpy.data.objects.get(jid)
            if not is_junction(ob):
                continue
            pulls = ", ".join(f"{b['cable']} {float(np.linalg.norm(b['force'])):.3g} N" for b in doc["branches"])
            state = "balanced" if doc["converged"] else "NOT balanced (last good state)"
            push = sum((np.asarray(c["force"]) for c in doc["contacts"]), np.zeros(3))
            if doc["contacts"]:
                state += f", resting on an obstacle ({float(np.linalg.norm(push)):.3g} N)"
            ob.cable_harness.junction_readout = f"{state}; branch pulls: {pulls}" if pulls else state
            if doc["fixed"] or jid not in self.junction_frames:
                continue
            R = np.asarray(doc["rotation"]) @ self.junction_frames[jid]
            location = Vector((np.asarray(doc["position"]) / self.scale).tolist())
            ob.matrix_world = Matrix.LocRotScale(location, Matrix(R.tolist()), ob.matrix_world.to_scale())
            wrote = True
        return wrote

    def _read(self, scene, report) -> dict:
        """Frames of every live cable's holders; rebuild cables whose settings changed (the whole
        harness when a branch's did: its junctions are built with it)."""
        targets = {}
        live = []
        # the scene's Model or Motion changed since the harness was built: built again, at rest
        rebuild = self._solver_settings(scene) != self.solver_settings
        self.harness.set_contact(scene.cable_harness.contact_document())
        for name, uid in self.cables:
            ob = _find_object(name, uid)
            if ob is None or ob.cable_harness.role != CABLE:
                report.failed[name] = "cable object deleted; dropped from the simulation"
                continue
            live.append((ob.name, uid))
            if ob.name != name:  # renamed while running: carry its solver session over
                self._rename(name, ob.name)
            try:
                own = self._own_inputs.get(ob.name)  # this tick's inputs_key read it already
                signature = own[1] if own is not None else build_signature(scene, ob, self.scale)
                branch = self.harness.is_branch(ob.name)
                if self.signatures.get(ob.name) != signature and (branch or cable_junctions(scene, ob)):
                    rebuild = True
                    continue
                if self.signatures.get(ob.name) != signature:
                    # settings changed: validate the whole cable as the case format does and rebuild it
                    # from its route; otherwise only its holders' frames are read
                    rebuilt = parse_scene_case(
                        {
                            "format": "cable-harness-case/1",
                            "gravity": self.case.gravity.tolist(),
                            "cables": [cable_document(scene, ob, self.scale)],
                            "solver": {"model": self.case.solver.model},  # its refusals too
                        },
                        self.scale,
                        scene,
                    )
                    self.harness.add_cable(rebuilt.cables[0])
                    self.signatures[ob.name] = signature
                    self.settled_inputs = None  # the rebuilt cable is solved afresh
                read = self._frames_read.get(ob.name)
                if own is not None and not branch and read is not None and read[0] == own:
                    # the same holders where they were, the same settings: the frames read then, which
                    # passed the reach check (a branch's ends follow its junctions: read every tick)
                    targets[ob.name] = read[1]
                    continue
                change = holder_frames(scene, ob, self.scale)
                self.harness.check_reach(ob.name, change)  # holders out of reach: no equilibrium to seek
                targets[ob.name] = change
                if own is not None and not branch:
                    self._frames_read[ob.name] = (own, change)
            except HarnessInputError as exc:
                report.failed[ob.name] = str(exc)
            except CaseError as exc:  # a step out of reach: in the scene's words and units
                report.failed[ob.name] = plain_message(str(exc), self.scale, scene)
        self.cables = live
        if rebuild:
            objects = [_find_object(name, uid) for name, uid in live]
            self.__init__(scene, [ob for ob in objects if ob is not None], self.seconds_per_tick)
            return self._read(scene, report)
        return targets

    @staticmethod
    def _solver_settings(scene) -> tuple:
        settings = scene.cable_harness
        return settings.model, repr(settings.dynamics_document())

    def _rename(self, old: str, new: str) -> None:
        self.harness.rename_cable(old, new)
        self.signatures[new] = self.signatures.pop(old, None)
        self._frames_read.pop(old, None)

    def _positions(self, targets) -> dict:
        return {n: self.harness.world_nodes(n) for n in targets}

    def _collide(self, scene, context, targets, report, points: dict, poses=None) -> float:
        """Broad phase: triangles of collider meshes within reach of ``points`` (per cable, a list of
        node arrays, world, m), handed to
        the solver as one mesh obstacle; its narrow phase (exact distances, contact forces) is the same
        as for case meshes. Returns the reach (m)."""
        reach = max((self.harness.contact_reach(n) for n in targets), default=0.0)
        colliders = harness_objects(scene, COLLIDER)
        if not colliders or not targets:
            if not self.harness.obstacles.empty:
                self.harness.set_obstacles(ObstacleSet())
            return np.inf
        depsgraph = context.evaluated_depsgraph_get()
        points_units = np.concatenate([p for n in targets for p in points[n]]) / self.scale
        key = (tuple(targets), self._fetch_key(colliders, poses, reach))
        fetched = self._fetched
        if (
            fetched is not None
            and fetched[0] == key
            and fetched[1].shape == points_units.shape
            and float(np.einsum("ij,ij->i", d := points_units - fetched[1], d).max(initial=0.0)) <= fetched[2] ** 2
        ):
            # no point has moved a skin's width since the triangles were fetched a skin further out:
            # every triangle within reach now was within reach plus the skin then (a Verlet list)
            report.candidate_triangles = len(fetched[3].triangles)
            if self.harness.obstacles is not fetched[3]:
                self.harness.set_obstacles(fetched[3])
            return reach
        skin = SKIN_REACHES * reach / self.scale
        triangles, sharp, folds = self.colliders.nearby_triangles(
            colliders, depsgraph, points_units, reach / self.scale + skin, poses, self.mounts
        )
        report.candidate_triangles = len(triangles)
        obstacles = ObstacleSet().with_triangles(triangles * self.scale, 0, sharp, folds)
        self._fetched = (key, points_units, skin, obstacles)
        self.harness.set_obstacles(obstacles)
        return reach

    def _fetch_key(self, colliders, poses, reach) -> tuple:
        """What the triangles fetched for the cables depend on besides where the cables are: the
        colliders, where they are (``poses`` or their world matrices), their geometry, the connectors'
        mount zones cut out of them, and the reach."""
        placed = tuple(
            (ob.name, poses[ob.name] if poses and ob.name in poses else tuple(map(tuple, ob.matrix_world)))
            for ob in colliders
        )
        zones = tuple(
            (name, tuple((tuple(np.asarray(c, dtype=float).tolist()), float(r)) for c, r in self.mounts[name]))
            for name in sorted(self.mounts)
        )
        changes = self.colliders.geometry_changes([ob.name for ob in colliders])
        margins = tuple(ob.cable_harness.collider_margin for ob in colliders)
        return placed, changes, margins, zones, reach

    def clearance(self, context, name: str, search_m: float = CLEARANCE_SEARCH_M):
        """(gap in m, arc length in m) of a solved cable to the scene's colliders; (None, None) when no
        collider comes within ``search_m`` of it."""
        scene = bpy.data.scenes.get(self.scene_name) or context.scene
        colliders = harness_objects(scene, COLLIDER)
        if not self.harness.has_cable(name) or not colliders:
            return None, None
        triangles, _, _ = self.colliders.nearby_triangles(
            colliders,
            context.evaluated_depsgraph_get(),
            self.harness.world_nodes(name) / self.scale,
            search_m / self.scale,
            mounts=self.mounts,  # a connector's own face is no clearance to it
        )
        return self.harness.clearance(name, triangles * self.scale, search_m)

    def write(self, report: TickReport) -> bool:
        """Write the tick's results to the scene; returns whether a free junction's empty was written."""
        wrote = self.write_junctions()
        scene = bpy.data.scenes.get(self.scene_name)
        settings = scene.cable_harness if scene is not None else None
        if settings is not None:
            self._choose_arrow_length(settings, report)
        for name in {*report.results, *report.failed} - report.carried:
            ob = bpy.data.objects.get(name)
            if ob is None or ob.cable_harness.role != CABLE:
                continue
            s = ob.cable_harness
            result = report.results.get(name)
            if result is not None:
                write_cable_result(ob, result, self.scale)
                if scene is not None:  # what the panel checks the result against
                    s.result_inputs = result_inputs(scene, ob)
                    s.result_model = _solved_with(scene)
                shown = self._show(scene, ob, result, name in report.failed)
                if settings is not None and settings.point_attributes:
                    converged = name not in report.failed
                    write_point_attributes(ob, result, self.scale, shown["utilisation"], converged)
                elif settings is not None:  # a file saved with it on: turned off without running its update
                    remove_companion(ob)
            if name in report.failed:
                # the curve keeps the last good state, but the panel must not call it this solve's result
                s.result_converged = False
                s.result_message = report.failed[name]
            own = [w for w in self.harness.warnings if f"cable {name!r}" in w]
            own += [] if scene is None else detached_notes(scene, ob)
            if own:  # shown in the panel next to the result
                s.result_message = "; ".join(filter(None, [s.result_message, *own]))
        return wrote

    def _choose_arrow_length(self, settings, report: TickReport) -> None:
        """The scene's arrow length per newton from the size of the cables solved (converged), unless the
        user set one: a value set in the file that is not the one chosen here last. It moves only when the
        size calls for three times more or less, so the arrows keep their scale while Simulate runs."""
        chosen = settings.arrow_length_chosen
        now = settings.arrow_length_per_newton
        ours = chosen > 0.0 and math.isclose(now, chosen, rel_tol=1e-6)
        if settings.is_property_set("arrow_length_per_newton") and not ours:
            return
        nodes = [np.asarray(r["nodes"]) for name, r in report.results.items() if name not in report.failed]
        if not nodes:
            return
        points = np.concatenate(nodes)
        size_m = float(np.linalg.norm(points.max(axis=0) - points.min(axis=0)))
        if not (math.isfinite(size_m) and size_m > 0.0):
            return
        wanted = _round_125(ARROW_PART_OF_SIZE_PER_NEWTON * size_m) / self.scale
        if ours and 1.0 / 3.0 < wanted / chosen < 3.0:
            return
        settings.arrow_length_per_newton = wanted
        settings.arrow_length_chosen = settings.arrow_length_per_newton  # as stored (single precision)

    def _show(self, scene, ob, result: dict, failed: bool) -> dict:
        """What the viewport overlay draws for this cable (overlay.py), returned too; ``scene``: None
        when it is gone."""
        s = ob.cable_harness
        settings = scene.cable_harness if scene is not None else None
        per_newton = (settings.arrow_length_per_newton if settings else 0.02) * self.scale
        clip_s = [ref.s * self.scale for ref in s.clips]
        shown = overlay_data.cable_overlay(
            result, self.scale, s.min_bend_radius_allowed * self.scale, per_newton, clip_s
        )
        if failed:
            points = shown["points"]
            start, end = (None, None) if scene is None else (attached(scene, s.start), attached(scene, s.end))
            targets = [(points[0], np.array(start.matrix_world.translation))] if start else []
            if end is not None:
                targets.append((points[-1], np.array(end.matrix_world.translation)))
            shown = overlay_data.mark_failed(shown, targets, 0.5 * cable_diameter(s) * 4.0)
        overlay.update(ob.name, shown)
        return shown


def _round_125(value: float) -> float:
    """``value`` (positive) to the nearest of 1, 2, 5 times a power of ten (a scale bar's steps)."""
    exponent = math.floor(math.log10(value))
    mantissa = value / 10.0**exponent
    step = min((1.0, 2.0, 5.0, 10.0), key=lambda m: abs(math.log(mantissa / m)))
    return step * 10.0**exponent


def _solved_with(scene) -> str:
    """The scene's Model and Motion, as the panel names them."""
    settings = scene.cable_harness
    names = settings.bl_rna.properties
    model = names["model"].enum_items[settings.model].name
    motion = names["motion"].enum_items[settings.motion].name
    return f"Model: {model}, Motion: {motion}"


def _frames_per_second(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def _scene_seconds(scene) -> float:
    """The scene's current time in seconds, sub-frame included."""
    return scene.frame_current_final / _frames_per_second(scene)


def collider_obstacles(scene, depsgraph, scale: float) -> list:
    """Every collider as a case-format mesh obstacle: evaluated geometry (modifiers applied), world
    space, metres."""
    obstacles = []
    for ob in harness_objects(scene, COLLIDER):
        evaluated = ob.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        try:
            mesh.calc_loop_triangles()
            vertices = np.empty(len(mesh.vertices) * 3)
            mesh.vertices.foreach_get("co", vertices)
            triangles = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
            mesh.loop_triangles.foreach_get("vertices", triangles)
        finally:
            evaluated.to_mesh_clear()
        M = np.array(evaluated.matrix_world)
        world = (vertices.reshape(-1, 3) @ M[:3, :3].T + M[:3, 3]) * scale
        if len(triangles):
            obstacles.append(
                {
                    "type": "mesh",
                    "name": ob.name,
                    "vertices": world.tolist(),
                    "triangles": triangles.reshape(-1, 3).tolist(),
                }
            )
    return obstacles


def export_case(scene, path: str, depsgraph=None) -> dict:
    doc = case_document(scene)
    if depsgraph is not None:
        doc["obstacles"] = collider_obstacles(scene, depsgraph, metres_per_unit(scene))
        # connectors sitting on colliders say so, so that the CLI cuts out the same mount zones
        colliders, cache = harness_objects(scene, COLLIDER), ColliderCache()
        for cable in doc["cables"]:
            ob = scene.objects.get(cable["id"])
            if ob is None or not colliders:
                continue
            for side, (_holder, mount, _outlet) in end_mounts(scene, ob, colliders, cache, depsgraph).items():
                cable[side]["mounted_on"] = mount.collider
    parse_scene_case(doc, metres_per_unit(scene), scene)  # refuse to write a case the solver would reject
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    return doc
