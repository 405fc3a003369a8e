# SPDX-License-Identifier: GPL-3.0-or-later
"""Export Formboard: the scene's harness solved and laid flat at its solved lengths, as a 1:1 SVG."""

import os

import bpy
from bpy.props import StringProperty

from ...solver_core import CaseError, board_dxf, board_svg, formboard
from .common import (
    NeedsSolver,
    registration_with_export_menu,
    report_written,
    solve_for_document,
    write_document,
)


class CABLE_HARNESS_OT_export_formboard(NeedsSolver, bpy.types.Operator):
    """Solve the scene's cables and write their formboard: the harness tree laid flat at the solved lengths,
    dimensioned in mm, with clips, coverings and wires (SVG, 1:1 when printed at its size; DXF for a file
    ending .dxf where the ezdxf package is installed)"""

    bl_idname = "cable_harness.export_formboard"
    bl_label = "Export Formboard"
    bl_options = {"REGISTER"}

    filepath: StringProperty(
        name="File", description="The drawing to write (.svg; or .dxf where ezdxf is installed)", subtype="FILE_PATH"
    )  # type: ignore
    filter_glob: StringProperty(default="*.svg;*.dxf", options={"HIDDEN"})  # type: ignore

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
        path = bpy.path.abspath(self.filepath)
        dxf = path.lower().endswith(".dxf")
        path = path if dxf else bpy.path.ensure_ext(path, ".svg")
        solved = solve_for_document(self, context, "formboard")
        if solved is None:
            return {"CANCELLED"}
        case, result, failed = solved
        try:
            board = formboard(case, result)
        except CaseError as exc:
            self.report({"ERROR"}, f"no formboard: {exc}")
            return {"CANCELLED"}
        title = bpy.path.basename(bpy.data.filepath) or context.scene.name
        try:
            text = board_dxf(board, title) if dxf else board_svg(board, title)
        except CaseError as exc:  # DXF without ezdxf
            self.report({"ERROR"}, f"no formboard: {exc}")
            return {"CANCELLED"}
        if not write_document(self, path, text):
            return {"CANCELLED"}
        report_written(self, f"formboard of {len(board.runs)} runs written to {path}", failed)
        return {"FINISHED"}


def menu_export(self, context):
    self.layout.operator(CABLE_HARNESS_OT_export_formboard.bl_idname, text="Harness Formboard (.svg)")


classes = (CABLE_HARNESS_OT_export_formboard,)
register, unregister = registration_with_export_menu(classes, menu_export)
