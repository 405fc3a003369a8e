# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators of the Blender layer."""

import bpy
from bpy.props import StringProperty

from ..solver_core import CaseError, load_case, solve_case


class CABLE_HARNESS_OT_solve_case_file(bpy.types.Operator):
    """Solve a harness case file (JSON) with the quasi-static solver and report the result"""

    bl_idname = "cable_harness.solve_case_file"
    bl_label = "Solve Case File"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="Case File", subtype="FILE_PATH")  # type: ignore

    def execute(self, context):
        try:
            result = solve_case(load_case(bpy.path.abspath(self.filepath)))
        except CaseError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        cables = result["steps"][-1]["cables"]
        failed = [cid for cid, c in cables.items() if not c["converged"]]
        if failed:
            self.report({"WARNING"}, f"not converged: {', '.join(failed)}")
        else:
            self.report({"INFO"}, f"solved {len(cables)} cables")
        return {"FINISHED"}


classes = (CABLE_HARNESS_OT_solve_case_file,)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
