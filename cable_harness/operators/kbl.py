# SPDX-License-Identifier: GPL-3.0-or-later
"""Export KBL: the scene's harness solved and written as a KBL 2.4 SR-1 file (VDA 4964) for harness
design systems: nodes, segments with their centre curves and lengths, fixings, protections, wires."""

import os

import bpy
from bpy.props import FloatProperty, StringProperty

from ...solver_core import CaseError, kbl_harness, kbl_text
from .common import (
    NeedsSolver,
    registration_with_export_menu,
    report_written,
    solve_for_document,
    write_document,
)


class CABLE_HARNESS_OT_export_kbl(NeedsSolver, bpy.types.Operator):
    """Solve the scene's cables and write the harness as a KBL 2.4 SR-1 file (VDA 4964): connectors,
    junctions and clips as nodes, the solved centre lines as segments (B-splines, lengths in mm),
    coverings, wires and their routes; stiffnesses as extension data"""

    bl_idname = "cable_harness.export_kbl"
    bl_label = "Export KBL"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="File", description="The KBL file to write (.kbl, XML)", subtype="FILE_PATH")  # type: ignore
    filter_glob: StringProperty(default="*.kbl;*.xml", options={"HIDDEN"})  # type: ignore
    curve_tolerance: FloatProperty(  # type: ignore
        name="Curve Tolerance",
        description="Largest distance of a segment's centre curve (a B-spline) from the solved centre line, "
        "in millimetres",
        default=0.1,
        min=0.001,
        max=100.0,
    )

    def invoke(self, context, event):
        if not self.filepath:
            stem = os.path.splitext(bpy.path.basename(bpy.data.filepath))[0] or "harness"
            self.filepath = f"{stem}.kbl"
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        if not self.filepath:
            self.report({"ERROR"}, "choose a file for the KBL export (.kbl)")
            return {"CANCELLED"}
        path = bpy.path.ensure_ext(bpy.path.abspath(self.filepath), ".kbl")
        solved = solve_for_document(self, context, "KBL file")
        if solved is None:
            return {"CANCELLED"}
        case, result, failed = solved
        title = os.path.splitext(bpy.path.basename(bpy.data.filepath))[0] or context.scene.name
        try:
            harness = kbl_harness(case, result)
            text = kbl_text(harness, title, self.curve_tolerance * 1e-3)
        except CaseError as exc:
            self.report({"ERROR"}, f"no KBL file: {exc}")
            return {"CANCELLED"}
        if not write_document(self, path, text):
            return {"CANCELLED"}
        summary = (
            f"KBL written to {path}: {len(harness.nodes)} nodes, {len(harness.segments)} segments, "
            f"{len(harness.wires)} wires"
        )
        report_written(self, summary, failed)
        return {"FINISHED"}


def menu_export(self, context):
    self.layout.operator(CABLE_HARNESS_OT_export_kbl.bl_idname, text="Harness KBL 2.4 (.kbl)")


classes = (CABLE_HARNESS_OT_export_kbl,)
register, unregister = registration_with_export_menu(classes, menu_export)
