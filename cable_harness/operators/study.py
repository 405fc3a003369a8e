# SPDX-License-Identifier: GPL-3.0-or-later
"""The variation study: add and remove variations, run the study in the background, cancel it, show
its envelope, and open its folder."""

import json
import os
import tempfile

import bpy

from .. import overlay, study_runner
from ..scene_model import CABLE, HarnessInputError, metres_per_unit
from ..simulation import collider_obstacles
from ..variation_study import envelope_segments, study_digest, sweep_document
from .common import NeedsSolver


def study_root(scene) -> str:
    """The folder studies go to (the scene's setting; a relative one in the temporary folder while the
    .blend file has never been saved)."""
    folder = scene.cable_harness.study_folder or "//cable_studies"
    if folder.startswith("//") and not bpy.data.filepath:
        return os.path.join(tempfile.gettempdir(), "cable_harness_studies", folder[2:] or "cable_studies")
    return bpy.path.abspath(folder)


def show_study(scene) -> None:
    """Draw the last study's envelopes over the cables they belong to."""
    overlay.clear_envelopes()
    study = study_runner.result()
    if study is None:
        return
    scale = metres_per_unit(scene)
    for name, outputs in study["cables"].items():
        if "envelope" in outputs and bpy.data.objects.get(name) is not None:
            overlay.show_envelope(name, envelope_segments(outputs["envelope"], scale))


DEFAULT_TOLERANCE_M = 0.002


class CABLE_HARNESS_OT_study_add(bpy.types.Operator):
    """Add a variation to the study (for the active cable, when one is active)"""

    bl_idname = "cable_harness.study_add"
    bl_label = "Add Variation"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        settings = context.scene.cable_harness
        variation = settings.variations.add()
        # 2 mm whatever the scene's unit (the property's default is in Blender units: 2 um in mm scenes)
        variation.tolerance = DEFAULT_TOLERANCE_M / metres_per_unit(context.scene)
        ob = context.active_object
        if ob is not None and ob.cable_harness.role == CABLE and ob.type == "CURVE":
            variation.cable = ob
        settings.active_variation = len(settings.variations) - 1
        return {"FINISHED"}


class CABLE_HARNESS_OT_study_remove(bpy.types.Operator):
    """Remove the selected variation from the study"""

    bl_idname = "cable_harness.study_remove"
    bl_label = "Remove Variation"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return len(context.scene.cable_harness.variations) > 0

    def execute(self, context):
        settings = context.scene.cable_harness
        index = min(settings.active_variation, len(settings.variations) - 1)
        settings.variations.remove(index)
        settings.active_variation = max(0, index - 1)
        return {"FINISHED"}


class CABLE_HARNESS_OT_run_study(NeedsSolver, bpy.types.Operator):
    """Solve variants of the scene's cables in the background, the study's variations drawn about the
    scene's values; the panel shows the progress, then the spread of every output and the envelope of
    the shapes. A study run again (same scene, same variations) resumes where it stopped"""

    bl_idname = "cable_harness.run_study"
    bl_label = "Run Study"

    @classmethod
    def poll(cls, context):
        if study_runner.running():
            cls.poll_message_set("a study is running")
            return False
        return super().poll(context)

    def execute(self, context):
        scene = context.scene
        try:
            obstacles = collider_obstacles(scene, context.evaluated_depsgraph_get(), metres_per_unit(scene))
            doc = sweep_document(scene, obstacles)
            digest = study_digest(doc)
        except HarnessInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except ValueError as exc:  # the solver refused the base case (CaseError)
            self.report({"ERROR"}, f"the scene's case is refused: {exc}")
            return {"CANCELLED"}
        folder = os.path.join(study_root(scene), f"study-{digest}")
        try:
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "study.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
            study_runner.forget()
            overlay.clear_envelopes()
            # shown from the runner's own timer when it ends: a second timer of ours, still registered
            # when Blender quits mid-study, crashed Blender 4.2's exit
            study_runner.start(path, folder, scene.cable_harness.study_workers, lambda: show_study(bpy.context.scene))
        except OSError as exc:
            self.report({"ERROR"}, f"cannot write the study to {folder}: {exc.strerror or exc}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"study started in {folder}")
        return {"FINISHED"}


class CABLE_HARNESS_OT_cancel_study(bpy.types.Operator):
    """Stop the running study (what it solved so far stays: Run Study resumes it)"""

    bl_idname = "cable_harness.cancel_study"
    bl_label = "Cancel Study"

    @classmethod
    def poll(cls, context):
        return study_runner.running()

    def execute(self, context):
        study_runner.cancel()
        self.report({"INFO"}, "study cancelled; Run Study resumes it")
        return {"FINISHED"}


class CABLE_HARNESS_OT_open_study_folder(bpy.types.Operator):
    """Open the last study's folder (results.csv, summary.json, the shapes) in the file browser"""

    bl_idname = "cable_harness.open_study_folder"
    bl_label = "Open Study Folder"

    @classmethod
    def poll(cls, context):
        return bool(study_runner.folder()) and os.path.isdir(study_runner.folder())

    def execute(self, context):
        bpy.ops.wm.path_open(filepath=study_runner.folder())
        return {"FINISHED"}


classes = (
    CABLE_HARNESS_OT_study_add,
    CABLE_HARNESS_OT_study_remove,
    CABLE_HARNESS_OT_run_study,
    CABLE_HARNESS_OT_cancel_study,
    CABLE_HARNESS_OT_open_study_folder,
)

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


@bpy.app.handlers.persistent
def _forget_on_load(*_args):
    # a study belongs to the file it was run in: another file shows none (the folder keeps its rows,
    # and the same study run again in the first file resumes)
    study_runner.cancel()
    study_runner.forget()
    overlay.clear_envelopes()


def register():
    _register_classes()
    bpy.app.handlers.load_pre.append(_forget_on_load)


def unregister():
    if _forget_on_load in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_forget_on_load)
    study_runner.cancel()
    study_runner.forget()
    _unregister_classes()
