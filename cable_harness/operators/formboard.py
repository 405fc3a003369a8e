# SPDX-License-Identifier: GPL-3.0-or-later
"""Export Formboard: the scene's harness solved and laid flat at its solved lengths, as a 1:1 SVG."""

import os

import bpy
from bpy.props import StringProperty

from ...solver_core import CaseError, board_svg, formboard
from ..scene_model import CABLE, HarnessInputError, harness_objects
from ..simulation import HarnessSimulation
from .common import NeedsSolver, solvable_or_report


class CABLE_HARNESS_OT_export_formboard(NeedsSolver, bpy.types.Operator):
    """Solve the scene's cables and write their formboard: the harness tree laid flat at the solved lengths,
    dimensioned in mm, with clips, coverings and wires (SVG, 1:1 when printed at its size)"""

    bl_idname = "cable_harness.export_formboard"
    bl_label = "Export Formboard"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="File", description="The drawing to write (.svg)", subtype="FILE_PATH")  # type: ignore
    filter_glob: StringProperty(default="*.svg", options={"HIDDEN"})  # type: ignore

    def invoke(self, context, event):
        if not self.filepath:
            stem = os.path.splitext(bpy.path.basename(bpy.data.filepath))[0] or "harness"
            self.filepath = f"{stem}_formboard.svg"
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        if not self.filepath:
            self.report({"ERROR"}, "choose a file for the formboard (.svg)")
            return {"CANCELLED"}
        path = bpy.path.ensure_ext(bpy.path.abspath(self.filepath), ".svg")
        solvable, refused = solvable_or_report(self, context, harness_objects(context.scene, CABLE))
        if solvable is None:
            return {"CANCELLED"}
        try:
            simulation = HarnessSimulation(context.scene, solvable)
            report = simulation.tick(context)
            board = formboard(simulation.case, {"steps": [{"cables": report.results}]})
        except (HarnessInputError, CaseError) as exc:
            self.report({"ERROR"}, f"no formboard: {exc}")
            return {"CANCELLED"}
        title = bpy.path.basename(bpy.data.filepath) or context.scene.name
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(board_svg(board, title))
        except OSError as exc:
            self.report({"ERROR"}, f"cannot write {path}: {exc.strerror or exc}")
            return {"CANCELLED"}
        failed = sorted(set(report.failed) | set(refused))
        text = f"formboard of {len(board.runs)} runs written to {path}"
        if failed:
            self.report({"WARNING"}, f"{text}; not converged or left out: {', '.join(failed)}")
        else:
            self.report({"INFO"}, text)
        return {"FINISHED"}


def menu_export(self, context):
    self.layout.operator(CABLE_HARNESS_OT_export_formboard.bl_idname, text="Harness Formboard (.svg)")


classes = (CABLE_HARNESS_OT_export_formboard,)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.TOPBAR_MT_file_export.append(menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(menu_export)
    _unregister_classes()
