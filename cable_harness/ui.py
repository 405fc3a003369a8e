# SPDX-License-Identifier: GPL-3.0-or-later
"""Sidebar panel (3D View > Harness) and the Add > Cable Harness menu."""

import textwrap

import bpy

from . import warmup
from .scene_model import CABLE, CLIP, COLLIDER, CONNECTOR

# characters per line of the panel's notes at the sidebar's default width
NOTE_WIDTH = 30


def _wrapped(layout, text: str, icon: str = "NONE") -> None:
    """``text`` as lines that fit the sidebar (a label is cut at its width, and the default one is
    narrow), the icon on the first."""
    column = layout.column(align=True)
    for number, line in enumerate(textwrap.wrap(text, NOTE_WIDTH) or [""]):
        column.label(text=line, icon=icon if number == 0 else ("NONE" if icon == "NONE" else "BLANK1"))


class CABLE_HARNESS_UL_clips(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.prop(item, "clip", text="")
        row.prop(item, "s", text="s")
        row.prop(item, "reversed", text="", icon="ARROW_LEFTRIGHT")


class VIEW3D_PT_cable_harness(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Harness"
    bl_label = "Cable Harness"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        note = warmup.progress()
        if note:  # the kernels are compiled in the background (or that failed): Solve waits for it
            _wrapped(layout.box(), note, "TIME" if warmup.preparing() else "ERROR")
        layout.operator("cable_harness.simulate", icon="PLAY")  # a row of its own: three cut its label
        row = layout.row(align=True)
        row.operator("cable_harness.solve", icon="CHECKMARK")
        row.operator("cable_harness.reset", icon="LOOP_BACK")
        row = layout.row(align=True)
        row.operator("cable_harness.bake", icon="REC")
        row.operator("cable_harness.clear_bake", icon="TRASH")
        layout.operator("cable_harness.export_report", icon="TEXT")
        view = context.scene.cable_harness
        column = layout.column(align=True)
        column.use_property_split = False  # checkbox labels in full width, not cut in a split column
        column.prop(view, "show_physics")
        if view.show_physics:
            column.prop(view, "arrow_length_per_newton", text="Arrow Length / N")
        column.prop(view, "point_attributes")
        ob = context.active_object
        if ob is None:
            layout.label(text="Select a connector, clip, cable or collider")
            return
        s = ob.cable_harness
        layout.prop(s, "role")
        if s.role == CONNECTOR:
            layout.prop(s, "roll_free")
        elif s.role == CLIP:
            layout.prop(s, "clip_kind")
            layout.prop(s, "clip_length")
            layout.prop(s, "clip_compliant")
            if s.clip_compliant:
                layout.prop(s, "clip_translational_stiffness")
                layout.prop(s, "clip_rotational_stiffness")
        elif s.role == COLLIDER:
            layout.prop(s, "collider_margin")
        elif s.role == CABLE:
            self._draw_cable(layout, s)

    @staticmethod
    def _draw_cable(layout, s):
        layout.prop(s, "start")
        layout.prop(s, "end")
        layout.label(text="Clips (in order along the cable)")
        row = layout.row()
        row.template_list("CABLE_HARNESS_UL_clips", "", s, "clips", s, "active_clip", rows=3)
        buttons = row.column(align=True)
        buttons.operator("cable_harness.clip_add", icon="ADD", text="")
        buttons.operator("cable_harness.clip_remove", icon="REMOVE", text="")
        buttons.separator()
        buttons.operator("cable_harness.clip_move", icon="TRIA_UP", text="").direction = "UP"
        buttons.operator("cable_harness.clip_move", icon="TRIA_DOWN", text="").direction = "DOWN"
        layout.prop(s, "length")
        layout.prop(s, "diameter")
        layout.prop(s, "segments")
        layout.prop(s, "material")
        if s.material == "CUSTOM":
            layout.prop(s, "youngs_modulus")
            layout.prop(s, "poisson_ratio")
            layout.prop(s, "density")
        layout.prop(s, "min_bend_radius_allowed", text="Bend Limit")
        _wrapped(layout, "Model: discrete Cosserat rod, quasi-static")
        box = layout.box()
        if not s.result_valid:
            box.label(text="Not solved yet")
            return
        if s.result_converged:
            box.label(text="Converged", icon="CHECKMARK")
        else:
            box.alert = True
            _wrapped(box, "NOT converged: the values below are of the last good state", "ERROR")
        if s.result_stale:
            _wrapped(box, "Settings changed since this result: solve again", "INFO")
        col = box.column()
        col.use_property_split = False  # "Name: value" in full width, not a cut label beside it
        col.active = s.result_converged and not s.result_stale
        col.prop(s, "result_length", emboss=False)
        col.prop(s, "result_min_bend_radius", emboss=False)
        col.prop(s, "result_start_force", emboss=False)
        col.prop(s, "result_end_force", emboss=False)
        col.prop(s, "result_iterations", emboss=False)
        col.prop(s, "result_solve_ms", emboss=False)
        if s.result_message:
            _wrapped(box, s.result_message, "ERROR")


class VIEW3D_PT_cable_harness_contact(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Harness"
    bl_label = "Contact"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        settings = context.scene.cable_harness
        layout.prop(settings, "friction_static")
        layout.prop(settings, "friction_dynamic")
        layout.prop(settings, "cable_cable")


class VIEW3D_PT_cable_harness_files(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Harness"
    bl_label = "Case Files"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        row = self.layout.row(align=True)
        row.operator("cable_harness.export_case", icon="EXPORT")
        row.operator("cable_harness.import_case", icon="IMPORT")
        self.layout.operator("cable_harness.import_step", icon="IMPORT")


class VIEW3D_MT_cable_harness_add(bpy.types.Menu):
    bl_idname = "VIEW3D_MT_cable_harness_add"
    bl_label = "Cable Harness"

    def draw(self, context):
        layout = self.layout
        layout.operator("cable_harness.add_connector", icon="EMPTY_SINGLE_ARROW")
        layout.operator("cable_harness.add_clip", icon="MESH_CIRCLE")
        layout.operator("cable_harness.make_cable", icon="CURVE_PATH")


def _add_menu(self, context):
    self.layout.menu(VIEW3D_MT_cable_harness_add.bl_idname, icon="CURVE_PATH")


classes = (
    CABLE_HARNESS_UL_clips,
    VIEW3D_PT_cable_harness,
    VIEW3D_PT_cable_harness_contact,
    VIEW3D_PT_cable_harness_files,
    VIEW3D_MT_cable_harness_add,
)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.VIEW3D_MT_add.append(_add_menu)


def unregister():
    bpy.types.VIEW3D_MT_add.remove(_add_menu)
    _unregister_classes()
