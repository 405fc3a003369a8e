# SPDX-License-Identifier: GPL-3.0-or-later
"""Swept Envelope: the space the baked cables occupy over the bake's frames, as mesh objects, with the
motion's least clearance to the scene (from the bake log: frame and place)."""

import os

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, StringProperty

from ...solver_core import CaseError, obj_text, stl_text, swept_envelope
from .. import study_runner
from ..scene_model import cable_diameter, metres_per_unit
from .common import bake_log, cables_in_context, registration_with_export_menu, store_bake_log

ENVELOPE_SUFFIX = " Envelope"


def _baked_states(scene, ob, frames) -> list:
    """The cable's centre line (world, m) at each of ``frames``, as its bake plays back."""
    scale = metres_per_unit(scene)
    states = []
    for frame in frames:
        scene.frame_set(frame)
        points = ob.data.splines[0].points
        co = np.empty(len(points) * 4, dtype=np.float32)
        points.foreach_get("co", co)
        local = co.reshape(-1, 4)[:, :3].astype(np.float64)
        M = np.array([list(row) for row in ob.matrix_world])
        states.append((local @ M[:3, :3].T + M[:3, 3]) * scale)
    return states


def _least_clearance(records) -> tuple | None:
    """(gap m, frame, arc length m) of the smallest clearance the bake log records, or None."""
    found = [r for r in records if r.get("converged") and r.get("clearance") is not None]
    if not found:
        return None
    worst = min(found, key=lambda r: r["clearance"])
    return worst["clearance"], worst["frame"], worst.get("clearance_s")


def _mesh_object(context, name, envelope, scale):
    """The envelope as mesh object ``name`` (replacing an earlier one of that name), in scene units."""
    old = bpy.data.objects.get(name)
    if old is not None:
        mesh = old.data
        bpy.data.objects.remove(old)
        if mesh is not None and mesh.users == 0:
            bpy.data.meshes.remove(mesh)
    mesh = bpy.data.meshes.new(name)
    verts = (envelope.vertices / scale).astype(np.float32)
    tris = envelope.triangles.astype(np.int32)
    mesh.vertices.add(len(verts))
    mesh.vertices.foreach_set("co", verts.ravel())
    mesh.loops.add(tris.size)
    mesh.loops.foreach_set("vertex_index", tris.ravel())
    mesh.polygons.add(len(tris))
    mesh.polygons.foreach_set("loop_start", np.arange(0, tris.size, 3, dtype=np.int32))
    mesh.update()
    ob = bpy.data.objects.new(name, mesh)
    context.scene.collection.objects.link(ob)
    ob.display_type = "WIRE"
    return ob


class CABLE_HARNESS_OT_swept_envelope(bpy.types.Operator):
    """Build the space each baked cable (the selected ones, or all) sweeps over the bake's frames as a
    closed mesh "<cable> Envelope" and report its volume and the motion's least clearance with its frame"""

    bl_idname = "cable_harness.swept_envelope"
    bl_label = "Swept Envelope"
    bl_options = {"REGISTER", "UNDO"}

    source: EnumProperty(
        name="Of",
        description="What the envelope is of: the baked motion, or the last Variation Study's variants together",
        items=(
            ("BAKE", "Bake", "The space the baked motion sweeps, frame by frame"),
            ("STUDY", "Variation Study", "The space the last study's converged variants fill together"),
        ),
        default="BAKE",
    )  # type: ignore
    voxel: FloatProperty(
        name="Resolution",
        description="Side of the envelope's voxels, in scene units (0: a quarter of each cable's radius)",
        default=0.0,
        min=0.0,
        subtype="DISTANCE",
    )  # type: ignore
    filepath: StringProperty(
        name="File",
        description="Also write the envelopes to this .stl or .obj file (metres; with several cables, one "
        "file each, named after it)",
        default="",
        subtype="FILE_PATH",
    )  # type: ignore

    choose_file: BoolProperty(options={"HIDDEN", "SKIP_SAVE"})  # type: ignore  # File > Export: ask for it
    filter_glob: StringProperty(default="*.stl;*.obj", options={"HIDDEN"})  # type: ignore

    def invoke(self, context, event):
        if not self.choose_file:
            return self.execute(context)
        if not self.filepath:
            stem = os.path.splitext(bpy.path.basename(bpy.data.filepath))[0] or "harness"
            self.filepath = f"{stem}_envelope.stl"
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        if self.source == "STUDY":
            return self._study(context)
        scene = context.scene
        try:
            log = bake_log(bpy.data)
        except ValueError as exc:
            self.report({"ERROR"}, f"the bake log is not valid JSON: {exc}")
            return {"CANCELLED"}
        cables = [ob for ob in cables_in_context(context) if ob.cable_harness.bake_action]
        if log is None or not cables:
            self.report({"ERROR"}, "no baked cable: Bake first (the envelope is that of the baked motion)")
            return {"CANCELLED"}
        scale = metres_per_unit(scene)
        frame = scene.frame_current
        lines = []
        try:
            for ob in cables:
                records = log["frames"].get(ob.name, [])
                frames = [r["frame"] for r in records if r.get("converged")]
                if not frames:
                    continue
                radius = 0.5 * cable_diameter(ob.cable_harness) * scale
                voxel = self.voxel * scale if self.voxel > 0.0 else 0.25 * radius
                envelope = swept_envelope(_baked_states(scene, ob, frames), radius, voxel)
                _mesh_object(context, ob.name + ENVELOPE_SUFFIX, envelope, scale)
                if self.filepath:
                    self._write(envelope, ob.name, len(cables) > 1)
                # the report (Export Report) gives the swept volume beside the motion's least clearance
                log.setdefault("envelopes", {})[ob.name] = {"volume": envelope.volume, "voxel": voxel}
                text = f"{ob.name}: {envelope.volume * 1e6:.4g} cm^3 at {voxel * 1e3:.3g} mm"
                least = _least_clearance(records)
                if least is not None:
                    gap, at, s = least
                    where = "" if s is None else f", s = {s * 1e3:.0f} mm"
                    text += f", least clearance {gap * 1e3:.3g} mm at frame {at}{where}"
                lines.append(text)
        except (CaseError, OSError) as exc:
            self.report({"ERROR"}, f"no envelope: {exc}")
            return {"CANCELLED"}
        finally:
            scene.frame_set(frame)
        store_bake_log(bpy.data, log)
        if not lines:
            self.report({"ERROR"}, "no converged baked frame to build an envelope from")
            return {"CANCELLED"}
        self.report({"INFO"}, "Envelope " + "; ".join(lines))
        return {"FINISHED"}

    def _study(self, context):
        """The union of the last study's converged variants of each cable, as "<cable> Study Envelope"."""
        study = study_runner.result()
        if study is None:
            self.report({"ERROR"}, "no study: run a Variation Study first")
            return {"CANCELLED"}
        scale = metres_per_unit(context.scene)
        lines = []
        try:
            for name, outputs in study["cables"].items():
                ob = bpy.data.objects.get(name)
                if ob is None or "envelope" not in outputs:
                    continue
                radius = 0.5 * cable_diameter(ob.cable_harness) * scale
                voxel = self.voxel * scale if self.voxel > 0.0 else 0.25 * radius
                variants = list(outputs["envelope"]["lines"])
                envelope = swept_envelope(variants, radius, voxel, motion=False)
                _mesh_object(context, name + " Study" + ENVELOPE_SUFFIX, envelope, scale)
                if self.filepath:
                    self._write(envelope, name, len(study["cables"]) > 1)
                lines.append(
                    f"{name}: {len(variants)} variants, {envelope.volume * 1e6:.4g} cm^3 at {voxel * 1e3:.3g} mm"
                )
        except (CaseError, OSError) as exc:
            self.report({"ERROR"}, f"no envelope: {exc}")
            return {"CANCELLED"}
        if not lines:
            self.report({"ERROR"}, "the last study has no converged variant of a cable in this scene")
            return {"CANCELLED"}
        self.report({"INFO"}, "Study envelope " + "; ".join(lines))
        return {"FINISHED"}

    def _write(self, envelope, name, several) -> None:
        path = bpy.path.abspath(self.filepath)
        stem, ext = os.path.splitext(path)
        ext = ext.lower() if ext.lower() in (".stl", ".obj") else ".stl"
        target = f"{stem}_{bpy.path.clean_name(name)}{ext}" if several else stem + ext
        if ext == ".stl":
            with open(target, "wb") as fh:
                fh.write(stl_text(envelope, name))
        else:
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(obj_text(envelope, name))


def menu_export(self, context):
    op = self.layout.operator(CABLE_HARNESS_OT_swept_envelope.bl_idname, text="Harness Swept Envelope (.stl/.obj)")
    op.choose_file = True


classes = (CABLE_HARNESS_OT_swept_envelope,)
register, unregister = registration_with_export_menu(classes, menu_export)
