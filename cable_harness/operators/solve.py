# SPDX-License-Identifier: GPL-3.0-or-later
"""Solving: one-shot Solve, interactive Simulate (modal, timer driven) and Reset to the drawn route."""

import traceback

import bpy
import numpy as np
from bpy.props import IntProperty

from ...solver_core import CaseError
from .. import overlay
from ..scene_model import (
    HarnessInputError,
    ensure_cable_curve,
    mark_refused_cables,
    metres_per_unit,
    plain_message,
    refused_text,
    write_curve_points,
)
from ..simulation import HarnessSimulation
from .common import NeedsSolver, cables_in_context, run_solve, solvable_or_report

TICK_SECONDS = 1.0 / 30.0

# Simulations that are running, so that a file load or unregister can stop them; bumping the
# generation tells every running modal operator to finish at its next event.
_state = {"generation": 0, "timers": []}


def _status_text(context, text) -> None:
    workspace = getattr(context, "workspace", None)
    if workspace is not None:
        workspace.status_text_set(text)


class CABLE_HARNESS_OT_solve(NeedsSolver, bpy.types.Operator):
    """Solve the equilibrium of the selected cables (all cables if none is selected) once"""

    bl_idname = "cable_harness.solve"
    bl_label = "Solve"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        return {"FINISHED"} if run_solve(self, context) is not None else {"CANCELLED"}


class CABLE_HARNESS_OT_simulate(NeedsSolver, bpy.types.Operator):
    """Solve the cables continuously while you move connectors, clips and colliders (Esc ends)"""

    bl_idname = "cable_harness.simulate"
    bl_label = "Simulate"
    bl_options = {"REGISTER"}

    ticks: IntProperty(
        name="Ticks", description="Ticks to run when called from a script (no event loop)", min=1, default=1
    )  # type: ignore

    _timer = None
    _simulation = None
    _generation = 0
    _refused = {}  # cable name -> why it is left out of this Simulate

    def _start(self, context) -> bool:
        cables = cables_in_context(context)
        solvable, self._refused = solvable_or_report(self, context, cables)
        if solvable is None:
            return False
        try:
            self._simulation = HarnessSimulation(context.scene, solvable, seconds_per_tick=TICK_SECONDS)
        except HarnessInputError as exc:
            self.report({"ERROR"}, str(exc))
            mark_refused_cables(context.scene, cables)
            return False
        self._generation = _state["generation"]
        return True

    def step(self, context):
        """One tick: what the TIMER event runs; also called directly by tests and benchmarks."""
        report = self._simulation.tick(context)
        # in the status bar: the header shows what a transform (G, R, S) reads out meanwhile
        _status_text(context, f"Cable Harness: {report.summary()}  (Esc: stop)")
        return report

    def _guarded_step(self, context):
        """``step``, or the reason Simulate cannot go on (None, reason): a setting changed meanwhile
        that Solve would refuse (e.g. a Model without cable contact while it is on). Simulate runs
        until Esc, so whatever a tick raises ends it with the reason instead of a traceback, its timer
        and status text gone."""
        try:
            return self.step(context), None
        except HarnessInputError as exc:
            reason = str(exc)
        except CaseError as exc:
            reason = plain_message(str(exc), metres_per_unit(context.scene), context.scene)
        except Exception as exc:  # a fault of the extension: the console keeps the traceback for a report
            traceback.print_exc()
            reason = f"an internal error ({type(exc).__name__}: {exc}); please report it"
        names = [name for name, _uid in self._simulation.cables] if self._simulation is not None else []
        cables = [ob for ob in map(bpy.data.objects.get, names) if ob is not None]
        try:  # the refused cables say why in their read-outs, as after Solve
            mark_refused_cables(context.scene, cables)
        except Exception:
            traceback.print_exc()
        return None, reason

    def execute(self, context):
        if not self._start(context):
            return {"CANCELLED"}
        report = None
        for _ in range(self.ticks):
            report, reason = self._guarded_step(context)
            if report is None:
                _status_text(context, None)
                self.report({"ERROR"}, f"Simulate stopped: {reason}")
                return {"CANCELLED"}
        text = report.summary() + (f"; not solved: {refused_text(self._refused)}" if self._refused else "")
        self.report({"WARNING" if report.needs_attention or self._refused else "INFO"}, text)
        return {"FINISHED"}

    def invoke(self, context, event):
        if not self._start(context):
            return {"CANCELLED"}
        if self._refused:
            self.report({"WARNING"}, f"Simulate leaves out: {refused_text(self._refused)}")
        wm = context.window_manager
        self._timer = wm.event_timer_add(TICK_SECONDS, window=context.window)
        _state["timers"].append(self._timer)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if self._generation != _state["generation"]:
            return self._finish(context, "stopped: the file was reloaded or the extension disabled")
        # Esc only: right-click opens the context menu (and cancels a transform) while simulating
        if event.type == "ESC" and event.value == "PRESS":
            return self._finish(context, None)
        if event.type == "TIMER":  # events do not say which timer fired; every timer event ticks
            report, reason = self._guarded_step(context)
            if report is None:
                return self._finish(context, f"stopped: {reason}", "ERROR")
            if not report.results and report.failed:
                return self._finish(context, "; ".join(f"{k}: {v}" for k, v in report.failed.items()))
        return {"PASS_THROUGH"}

    def _finish(self, context, message, level="WARNING"):
        if self._timer is not None:
            context.window_manager.event_timer_remove(self._timer)
            if self._timer in _state["timers"]:
                _state["timers"].remove(self._timer)
            self._timer = None
        _status_text(context, None)
        if message:
            self.report({level}, f"Simulate {message}")
        self._simulation = None
        return {"FINISHED"}


def resample_polyline(points: np.ndarray, n: int) -> np.ndarray:
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    cum = np.concatenate(([0.0], np.cumsum(seg)))
    t = np.linspace(0.0, cum[-1], n)
    return np.column_stack([np.interp(t, cum, points[:, k]) for k in range(3)])


class CABLE_HARNESS_OT_reset(bpy.types.Operator):
    """Put the selected cables (all if none is selected) back on their drawn routes"""

    bl_idname = "cable_harness.reset"
    bl_label = "Reset"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        for ob in cables_in_context(context):
            s = ob.cable_harness
            if len(s.route) < 2:
                continue
            route = np.array([p.co for p in s.route])
            points = resample_polyline(route, s.segments + 1)
            ensure_cable_curve(ob, len(points))
            write_curve_points(ob, points, np.zeros(len(points)))
            s.result_valid = False
            s.result_message = ""
            overlay.forget(ob.name)
        return {"FINISHED"}


@bpy.app.handlers.persistent
def _stop_on_load(*_args):
    _state["generation"] += 1


classes = (CABLE_HARNESS_OT_solve, CABLE_HARNESS_OT_simulate, CABLE_HARNESS_OT_reset)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.app.handlers.load_pre.append(_stop_on_load)


def unregister():
    _state["generation"] += 1
    wm = bpy.context.window_manager
    for timer in _state["timers"]:
        if wm is not None:
            wm.event_timer_remove(timer)
    _state["timers"].clear()
    if _stop_on_load in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_stop_on_load)
    _unregister_classes()
