# SPDX-License-Identifier: GPL-3.0-or-later
"""Calibrate from Tests: a cable's stiffness fitted to bench tests (solver_core.fit_stiffness, the
solver in the loop), stored by name in the material library beside the .blend and given to the active
cable as its custom material."""

import json
import math
import os

import bpy
from bpy.props import StringProperty

from ...solver_core import CaseError, fit_stiffness, library_text, read_library
from ..scene_model import metres_per_unit
from .common import active_cable


def _as_custom_material(settings, entry: dict, diameter_m: float) -> tuple:
    """(E in MPa, nu, density in kg/m^3) of a solid round section of ``diameter_m`` that has the fitted
    EI, GJ and mass per length."""
    inertia = math.pi * diameter_m**4 / 64.0
    E = entry["EI"] / inertia
    G = entry["GJ"] / (2.0 * inertia)
    nu = min(max(E / (2.0 * G) - 1.0, 0.0), 0.499)
    density = entry["linear_density"] / (math.pi * diameter_m**2 / 4.0)
    return E / 1e6, nu, density


class CABLE_HARNESS_OT_calibrate_from_tests(bpy.types.Operator):
    """Fit a cable's bending (and torsion) stiffness to bench tests in a calibration file (cantilever sag,
    three-point bend, twist) with the solver in the loop; store it in the material library beside the
    .blend and give it to the active cable"""

    bl_idname = "cable_harness.calibrate_from_tests"
    bl_label = "Calibrate from Tests"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(
        name="Tests", description="The calibration file (cable-harness-calibration/1 JSON)", subtype="FILE_PATH"
    )  # type: ignore
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})  # type: ignore
    library: StringProperty(
        name="Library",
        description="The material library the fit is stored in (JSON; made if missing), beside the .blend by default",
        default="//materials.json",
        subtype="FILE_PATH",
    )  # type: ignore

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        if self.library.startswith("//") and not bpy.data.filepath:
            self.report({"ERROR"}, "save the .blend first: the material library is kept beside it")
            return {"CANCELLED"}
        library_path = bpy.path.abspath(self.library)
        try:
            with open(bpy.path.abspath(self.filepath), encoding="utf-8") as fh:
                doc = json.load(fh)
            entry = fit_stiffness(doc)
            library = read_library(library_path, missing_ok=True)
            library[doc["name"]] = entry
            temp = library_path + ".tmp"
            with open(temp, "w", encoding="utf-8") as fh:
                fh.write(library_text(library))
            os.replace(temp, library_path)
        except (OSError, ValueError) as exc:
            self.report({"ERROR"}, f"no calibration: cannot read or write a file: {exc}")
            return {"CANCELLED"}
        except CaseError as exc:
            self.report({"ERROR"}, f"no calibration: {exc}")
            return {"CANCELLED"}
        fit = entry["fit"]
        interval = fit["EI_interval_95"]
        text = f"{doc['name']}: EI = {entry['EI']:.4g} N m^2"
        text += f" (95 %: {interval[0]:.4g} to {interval[1]:.4g})" if interval else f" ({fit.get('note')})"
        text += f", stored in {library_path}"
        cable = active_cable(context)
        if cable is not None and not cable.cable_harness.is_bundle:
            s = cable.cable_harness
            diameter_m = s.diameter * metres_per_unit(context.scene)
            s.material = "CUSTOM"
            s.youngs_modulus, s.poisson_ratio, s.density = _as_custom_material(s, entry, diameter_m)
            text += f"; given to {cable.name} ({s.youngs_modulus:.4g} MPa at its {diameter_m * 1e3:.3g} mm)"
        self.report({"INFO"}, text)
        return {"FINISHED"}


classes = (CABLE_HARNESS_OT_calibrate_from_tests,)

register, unregister = bpy.utils.register_classes_factory(classes)
