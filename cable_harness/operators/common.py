# SPDX-License-Identifier: GPL-3.0-or-later
"""What the operators share: the cables a command acts on (the selected ones, or all of the scene's, or
the active one) and their centre lines, linking a new object as the active, only selected one, and
one solve reported to an operator."""

import json

import bpy
import numpy as np

from .. import warmup
from ..report import BAKE_LOG_TEXT
from ..scene_model import (
    CABLE,
    HarnessInputError,
    harness_objects,
    mark_refused_cables,
    refused_text,
    solvable_cables,
)
from ..simulation import HarnessSimulation

# the display size of a new connector or clip empty, in metres of the scene
MARKER_SIZE_M = 0.02


def bake_log(blend_data) -> dict | None:
    """The last bake's log (the text block Bake writes), or None; ValueError if it is not JSON."""
    text = blend_data.texts.get(BAKE_LOG_TEXT)
    return None if text is None else json.loads(text.as_string())


def store_bake_log(blend_data, log: dict) -> None:
    """Write the bake log back into its text block (a value per line: Blender's text editor is slow
    with one long line)."""
    text = blend_data.texts.get(BAKE_LOG_TEXT) or blend_data.texts.new(BAKE_LOG_TEXT)
    text.from_string(json.dumps(log, allow_nan=False, indent=0))


def cables_in_context(context) -> list:
    """The selected cables, or every cable of the scene when none is selected."""
    chosen = [o for o in context.selected_objects if o.cable_harness.role == CABLE and o.type == "CURVE"]
    return chosen or harness_objects(context.scene, CABLE)


def active_cable(context):
    """The active object if it is a cable, else None."""
    ob = context.active_object
    if ob is not None and ob.cable_harness.role == CABLE and ob.type == "CURVE":
        return ob
    return None


def active_cable_or_report(operator, context):
    """The active cable; without one, an error on ``operator`` saying how to get one, and None."""
    cable = active_cable(context)
    if cable is None:
        operator.report({"ERROR"}, "make a cable the active object (click it last)")
    return cable


class RemoveListItem:
    """Operator mixin: remove the item selected in one of the active cable's lists (``list_name``,
    selected by ``active_name``); the selection stays in place and the result goes stale."""

    bl_options = {"REGISTER", "UNDO"}
    list_name = ""
    active_name = ""
    empty_message = ""

    def execute(self, context):
        cable = active_cable(context)
        if cable is None or not len(getattr(cable.cable_harness, self.list_name)):
            self.report({"ERROR"}, self.empty_message)
            return {"CANCELLED"}
        s = cable.cable_harness
        items = getattr(s, self.list_name)
        index = min(max(getattr(s, self.active_name), 0), len(items) - 1)
        items.remove(index)
        setattr(s, self.active_name, max(min(index, len(items) - 1), 0))
        s.result_stale = True
        self.removed(cable)
        return {"FINISHED"}

    def removed(self, cable) -> None:
        """What else follows the removal (the bundle's bevel)."""


def centre_line(ob) -> np.ndarray:
    """The cable's current centre line (world, Blender units): its curve, else its drawn route."""
    if len(ob.data.splines) == 1 and len(ob.data.splines[0].points) >= 2:
        points = ob.data.splines[0].points
        co = np.empty(len(points) * 4, dtype=np.float32)
        points.foreach_get("co", co)
        M = np.array([list(row) for row in ob.matrix_world])
        return co.reshape(-1, 4)[:, :3].astype(np.float64) @ M[:3, :3].T + M[:3, 3]
    return np.array([p.co for p in ob.cable_harness.route], dtype=np.float64).reshape(-1, 3)


def link_new_object(context, ob) -> None:
    """Link ``ob`` into the active collection and make it the active, only selected object."""
    (context.collection or context.scene.collection).objects.link(ob)
    for other in context.selected_objects:
        other.select_set(False)
    ob.select_set(True)
    context.view_layer.objects.active = ob


def run_solve(operator, context, cables=None):
    """Solve the cables once (those of the context by default) and report the outcome on ``operator``;
    returns the tick report, or None when the scene's input was refused."""
    cables = cables or cables_in_context(context)
    solvable, refused = solvable_or_report(operator, context, cables)
    if solvable is None:
        return None
    try:
        report = HarnessSimulation(context.scene, solvable).tick(context)
    except HarnessInputError as exc:
        operator.report({"ERROR"}, str(exc))
        mark_refused_cables(context.scene, cables)
        return None
    text = report.summary() + (f"; not solved: {refused_text(refused)}" if refused else "")
    operator.report({"WARNING"} if report.needs_attention or refused else {"INFO"}, text)
    return report


def solve_for_document(operator, context, what: str):
    """The scene's cables solved once for a document (formboard, KBL): (case, result document, the
    names of cables not converged or left out), or None with an error on ``operator``."""
    solvable, refused = solvable_or_report(operator, context, harness_objects(context.scene, CABLE))
    if solvable is None:
        return None
    try:
        simulation = HarnessSimulation(context.scene, solvable)
        report = simulation.tick(context)
    except HarnessInputError as exc:
        operator.report({"ERROR"}, f"no {what}: {exc}")
        return None
    return simulation.case, {"steps": [{"cables": report.results}]}, sorted(set(report.failed) | set(refused))


def write_document(operator, path: str, text: str) -> bool:
    """Write ``text`` to ``path`` (UTF-8); False with an error on ``operator`` where it cannot."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        operator.report({"ERROR"}, f"cannot write {path}: {exc.strerror or exc}")
        return False
    return True


def report_written(operator, text: str, failed: list) -> None:
    """What a document operator wrote, and which cables it holds in their last good state."""
    if failed:
        operator.report({"WARNING"}, f"{text}; not converged or left out: {', '.join(failed)}")
    else:
        operator.report({"INFO"}, text)


def registration_with_export_menu(classes, menu):
    """(register, unregister) of ``classes`` and ``menu`` as an entry of File > Export."""
    register_classes, unregister_classes = bpy.utils.register_classes_factory(classes)

    def register():
        register_classes()
        bpy.types.TOPBAR_MT_file_export.append(menu)

    def unregister():
        bpy.types.TOPBAR_MT_file_export.remove(menu)
        unregister_classes()

    return register, unregister


def solvable_or_report(operator, context, cables) -> tuple:
    """The cables that can be solved and, by name, why each of the others cannot (they say so in
    their read-outs); (None, {}) with an error on ``operator`` when none can."""
    try:
        solvable, refused = solvable_cables(context.scene, cables)
    except HarnessInputError as exc:
        operator.report({"ERROR"}, str(exc))
        mark_refused_cables(context.scene, cables)
        return None, {}
    mark_refused_cables(context.scene, [ob for ob in cables if ob.name in refused])
    return solvable, refused


class NeedsSolver:
    """Mixin of the operators that solve: not available (the reason as the button's tooltip) while
    the solver's kernels are compiled in the background (warmup.py)."""

    @classmethod
    def poll(cls, context):
        if warmup.preparing():
            cls.poll_message_set(warmup.progress())
            return False
        return True
