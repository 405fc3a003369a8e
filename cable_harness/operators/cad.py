# SPDX-License-Identifier: GPL-3.0-or-later
"""Import CAD (STEP): one mesh object per part, in the scene's units, ready to be a collider."""

import os

import bpy
import numpy as np
from bpy.props import BoolProperty, FloatProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from ..cad_import import CadKernelMissing, CadReadError, read_step
from ..scene_model import COLLIDER, metres_per_unit


def mesh_from_triangles(name: str, vertices: np.ndarray, triangles: np.ndarray):
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(vertices))
    mesh.vertices.foreach_set("co", vertices.astype(np.float32).ravel())
    mesh.loops.add(triangles.size)
    mesh.loops.foreach_set("vertex_index", triangles.astype(np.int32).ravel())
    mesh.polygons.add(len(triangles))
    mesh.polygons.foreach_set("loop_start", np.arange(0, triangles.size, 3, dtype=np.int32))
    # CAD faces are tessellated flat facets: smooth shading across their sharp edges looks wrong
    mesh.polygons.foreach_set("use_smooth", np.zeros(len(triangles), dtype=bool))
    mesh.update()
    mesh.validate()
    return mesh


def import_step(context, filepath, linear_deflection_mm=0.2, angular_deflection=0.35, as_colliders=True):
    """Read a STEP file into a new collection; returns the created objects (raises CadKernelMissing,
    CadReadError)."""
    wm = context.window_manager
    wm.progress_begin(0, 100)
    try:
        parts = read_step(
            filepath,
            linear_deflection_mm,
            angular_deflection,
            progress=lambda k, n: wm.progress_update(int(90 * k / max(n, 1))),
        )
        # the parts arrive in millimetres; the scene may count in metres, millimetres, ...
        units_per_mm = 1e-3 / metres_per_unit(context.scene)
        collection = bpy.data.collections.new(os.path.splitext(os.path.basename(filepath))[0])
        context.scene.collection.children.link(collection)
        objects = []
        for part in parts:
            ob = bpy.data.objects.new(
                part.name, mesh_from_triangles(part.name, part.vertices_mm * units_per_mm, part.triangles)
            )
            collection.objects.link(ob)
            if as_colliders:
                ob.cable_harness.role = COLLIDER
            objects.append(ob)
        wm.progress_update(100)
        return objects
    finally:
        wm.progress_end()


class CABLE_HARNESS_OT_import_step(bpy.types.Operator, ImportHelper):
    """Import the parts of a STEP file as meshes (and mark them as colliders for the cables)"""

    bl_idname = "cable_harness.import_step"
    bl_label = "Import CAD (STEP)"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".step"
    filter_glob: StringProperty(default="*.step;*.stp;*.STEP;*.STP", options={"HIDDEN"})  # type: ignore
    linear_deflection: FloatProperty(
        name="Chord Tolerance (mm)",
        description="Largest distance between the tessellation and the CAD surface",
        min=0.001,
        soft_max=5.0,
        default=0.2,
    )  # type: ignore
    angular_deflection: FloatProperty(
        name="Angle Tolerance",
        description="Largest angle between neighbouring facets of a curved face",
        min=0.01,
        max=1.5,
        default=0.35,
        subtype="ANGLE",
    )  # type: ignore
    as_colliders: BoolProperty(
        name="Mark as Colliders", default=True, description="Cables rest on and wrap around the imported parts"
    )  # type: ignore

    def execute(self, context):
        if not os.path.isfile(self.filepath):
            self.report({"ERROR"}, f"no such file: {self.filepath}")
            return {"CANCELLED"}
        try:
            objects = import_step(
                context, self.filepath, self.linear_deflection, self.angular_deflection, self.as_colliders
            )
        except CadKernelMissing as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except CadReadError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        triangles = sum(len(o.data.polygons) for o in objects)
        self.report(
            {"INFO"}, f"imported {len(objects)} part(s), {triangles} triangles, from {os.path.basename(self.filepath)}"
        )
        return {"FINISHED"}


def menu_import(self, context):
    self.layout.operator(CABLE_HARNESS_OT_import_step.bl_idname, text="CAD (STEP) for Cable Harness (.step)")


def register():
    bpy.utils.register_class(CABLE_HARNESS_OT_import_step)
    bpy.types.TOPBAR_MT_file_import.append(menu_import)


def unregister():
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)
    bpy.utils.unregister_class(CABLE_HARNESS_OT_import_step)
