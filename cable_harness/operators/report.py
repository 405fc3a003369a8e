# SPDX-License-Identifier: GPL-3.0-or-later
"""Export Report: the last bake's measurements as report.json, report.csv and plots."""

import os

import bpy
from bpy.props import BoolProperty, StringProperty

from ..report import BAKE_LOG_TEXT, write_report
from .common import bake_log


class CABLE_HARNESS_OT_export_report(bpy.types.Operator):
    """Write the last bake's report (length, bend radius, clearance, peak forces per cable) to a folder"""

    bl_idname = "cable_harness.export_report"
    bl_label = "Export Report"
    bl_options = {"REGISTER"}

    directory: StringProperty(
        name="Folder", description="Where report.json, report.csv and the plots are written", subtype="DIR_PATH"
    )  # type: ignore
    plots: BoolProperty(
        name="Plots", default=True, description="Also write bend_radius.png and forces.png (needs matplotlib)"
    )  # type: ignore

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        try:
            log = bake_log(bpy.data)
        except ValueError as exc:
            self.report({"ERROR"}, f"the bake log text {BAKE_LOG_TEXT!r} is not valid JSON: {exc}")
            return {"CANCELLED"}
        if log is None:
            self.report({"ERROR"}, "nothing to report: bake the cables first (the report summarises a bake)")
            return {"CANCELLED"}
        if not self.directory:
            self.report({"ERROR"}, "choose a folder for the report")
            return {"CANCELLED"}
        folder = bpy.path.abspath(self.directory)
        try:
            written = write_report(log, folder, plots=self.plots)
        except (ValueError, KeyError) as exc:
            self.report({"ERROR"}, f"the bake log cannot be summarised ({exc}); bake again")
            return {"CANCELLED"}
        except OSError as exc:
            self.report({"ERROR"}, f"cannot write the report to {folder}: {exc}")
            return {"CANCELLED"}
        if written["plots_skipped"]:
            self.report({"WARNING"}, written["plots_skipped"])
        names = ", ".join(os.path.basename(str(p)) for p in written["files"])
        self.report({"INFO"}, f"report written to {folder}: {names}")
        return {"FINISHED"}


classes = (CABLE_HARNESS_OT_export_report,)

register, unregister = bpy.utils.register_classes_factory(classes)
