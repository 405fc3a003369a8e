# SPDX-License-Identifier: GPL-3.0-or-later
"""Sidebar panel (3D View > Harness) and the Add > Cable Harness menu."""

import re
import textwrap

import bpy

from . import study_runner, warmup
from .scene_model import (
    CABLE,
    CLIP,
    COLLIDER,
    CONNECTOR,
    JUNCTION,
    attached,
    cable_diameter,
    detached_notes,
    is_junction,
    metres_per_unit,
    result_is_stale,
)
from .variation_study import RELATIVE

# Blender cuts a label at its width and has no wrapping: a note is split into lines by an estimate
# of the characters that fit. The sidebar's default width (UI_SIDEBAR_PANEL_WIDTH) in pixels at UI
# scale 1, a label's mean character width there (the interface font, mixed case), and what a
# label in a box beside an icon does not get of the region's width.
SIDEBAR_PIXELS = 220
CHAR_PIXELS = 7.5
LABEL_MARGIN_PIXELS = 50
MIN_LINE_CHARS = 12


def line_chars(region_width: float | None, ui_scale: float = 1.0) -> int:
    """How many characters of a note fit on one label in a region ``region_width`` pixels wide (None:
    the sidebar's default width) at the interface's ``ui_scale``."""
    scale = ui_scale if ui_scale > 0.0 else 1.0
    width = region_width if region_width else SIDEBAR_PIXELS * scale
    return max(MIN_LINE_CHARS, int((width - LABEL_MARGIN_PIXELS * scale) / (CHAR_PIXELS * scale)))


def wrap_lines(text: str, chars: int) -> list[str]:
    """``text`` as lines of at most ``chars`` characters, broken between words (a longer word is split);
    nothing but the spaces at the breaks is left out."""
    return textwrap.wrap(text, chars, break_on_hyphens=False) or [""]


def _context_line_chars() -> int:
    """``line_chars`` of the region being drawn (the sidebar's default without one, e.g. headless)."""
    context = bpy.context
    region = getattr(context, "region", None)
    preferences = getattr(context, "preferences", None)
    scale = preferences.system.ui_scale if preferences is not None else 1.0
    return line_chars(region.width if region is not None else None, scale)


def _wrapped(layout, text: str, icon: str = "NONE") -> None:
    """``text`` as lines that fit the region's width, the icon on the first."""
    column = layout.column(align=True)
    for number, line in enumerate(wrap_lines(text, _context_line_chars())):
        column.label(text=line, icon=icon if number == 0 else ("NONE" if icon == "NONE" else "BLANK1"))


def _list_with_buttons(layout, list_type, data, prop, active_prop, operators):
    """A list with add and remove buttons beside it (cable_harness.<operators>_add and _remove);
    returns the button column, for more buttons."""
    row = layout.row()
    row.template_list(list_type, "", data, prop, data, active_prop, rows=3)
    buttons = row.column(align=True)
    buttons.operator(f"cable_harness.{operators}_add", icon="ADD", text="")
    buttons.operator(f"cable_harness.{operators}_remove", icon="REMOVE", text="")
    return buttons


# a list row at the sidebar's default width: the name's part, the values share the rest (their
# columns are named by a heading above the list)
NAME_PART = 0.45
WIRE_COUNT_PART = 0.35  # of a wire row's values: the count's column; the diameter has the rest


def _name_and_values(layout, alert=False):
    """A list row split into the name's column and a row for the values beside it (a split's columns
    are its items in the order they are made)."""
    split = layout.split(factor=NAME_PART, align=True)
    split.alert = alert
    name = split.column(align=True)
    return name, split.row(align=True)


def _list_heading(layout, *columns) -> None:
    """The names of a list's columns, above it, as its rows divide the width."""
    name, values = _name_and_values(layout.row())
    name.label(text=columns[0])
    for column in columns[1:]:
        values.label(text=column)


class CABLE_HARNESS_UL_clips(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        # a clip deleted from the scene no longer holds the cable: red until it is removed or undone
        deleted = item.clip is not None and attached(context.scene, item.clip) is None
        name, values = _name_and_values(layout, deleted)
        # the name as text: a picker's icon and clear button left no room for it at the default width
        # (the selected row's clip is chosen below the list)
        if item.clip is not None:
            name.label(text=item.clip.name, icon="EMPTY_ARROWS")
        else:
            name.label(text="(no clip)", icon="ERROR")
        values.prop(item, "s", text="")
        values.prop(item, "reversed", text="", icon="ARROW_LEFTRIGHT")


class CABLE_HARNESS_UL_wires(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        # the material has no room beside the numbers: the selected wire's is set below the list
        name, values = _name_and_values(layout)
        name.prop(item, "wire_id", text="")
        # a count needs two digits, a diameter five characters: split the width so, not evenly
        values = values.split(factor=WIRE_COUNT_PART, align=True)
        values.prop(item, "count", text="")
        values.prop(item, "diameter", text="")


class CABLE_HARNESS_UL_variations(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.label(text=item.cable.name if item.cable else "(no cable)", icon="CURVE_PATH")
        label = item.bl_rna.properties["quantity"].enum_items[item.quantity].name
        if item.quantity in ("CLIP_ARC", "CLIP_POSITION"):
            label += f" {item.clip_number}"
        if item.quantity in ("CLIP_POSITION", "END_POSITION"):
            label += f" {item.axis}"
        row.label(text=label)


class _SidebarPanel:
    """Where the extension's panels live: the 3D view's sidebar, tab Harness."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Harness"


class VIEW3D_PT_cable_harness(_SidebarPanel, bpy.types.Panel):
    bl_label = "Cable Harness"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        note = warmup.progress()
        if note:  # the kernels are compiled in the background (or that failed): Solve waits for it
            _wrapped(layout.box(), note, "TIME" if warmup.preparing() else "ERROR")
        motion = context.scene.cable_harness
        layout.prop(motion, "model")
        layout.row().prop(motion, "motion", expand=True)
        if motion.motion == "DYNAMIC":
            column = layout.column(align=True)
            column.prop(motion, "time_step")
            column.prop(motion, "damping")
        layout.operator("cable_harness.simulate", icon="PLAY")  # a row of its own: three cut its label
        row = layout.row(align=True)
        row.operator("cable_harness.solve", icon="CHECKMARK")
        row.operator("cable_harness.reset", icon="LOOP_BACK")
        row = layout.row(align=True)
        row.operator("cable_harness.bake", icon="REC")
        row.operator("cable_harness.clear_bake", icon="TRASH")
        row = layout.row(align=True)
        row.operator("cable_harness.export_report", icon="TEXT")
        row.operator("cable_harness.export_formboard", icon="FILE_IMAGE")
        row = layout.row(align=True)
        row.operator("cable_harness.export_kbl", icon="EXPORT")
        row.operator("cable_harness.swept_envelope", icon="MESH_ICOSPHERE")
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
            layout.prop(s, "mounted_on")
            layout.operator("cable_harness.snap_to_face", icon="SNAP_FACE")
        elif s.role == CLIP:
            layout.operator("cable_harness.snap_to_face", icon="SNAP_FACE")
            layout.prop(s, "clip_kind")
            layout.prop(s, "clip_length")
            layout.prop(s, "clip_compliant")
            if s.clip_compliant:
                layout.prop(s, "clip_translational_stiffness")
                layout.prop(s, "clip_rotational_stiffness")
        elif s.role == COLLIDER:
            layout.prop(s, "collider_margin")
        elif s.role == JUNCTION:
            layout.prop(s, "junction_fixed")
            layout.prop(s, "junction_mass")
            if not s.junction_fixed:
                _wrapped(layout, "Moved by Solve and Simulate to where its branches balance", "INFO")
            if s.junction_readout:
                _wrapped(layout, s.junction_readout, "NONE" if s.junction_readout.startswith("balanced") else "ERROR")
        elif s.role == CABLE:
            self._draw_cable(layout, s, detached_notes(context.scene, ob), result_is_stale(context.scene, ob))

    @staticmethod
    def _draw_bundle(layout, s):
        layout.label(text="Wires")
        _list_heading(layout, "ID", "Count", "Diameter")
        _list_with_buttons(layout, "CABLE_HARNESS_UL_wires", s, "wires", "active_wire", "wire")
        if len(s.wires):
            wire = s.wires[min(s.active_wire, len(s.wires) - 1)]
            layout.prop(wire, "material", text="Wire Material")
            if wire.material == "CUSTOM":
                layout.prop(wire, "youngs_modulus")
                layout.prop(wire, "poisson_ratio")
                layout.prop(wire, "density")
        layout.prop(s, "wrap")
        layout.prop(s, "sheath")
        unit = bpy.context.scene.unit_settings
        diameter = bpy.utils.units.to_string(unit.system, "LENGTH", cable_diameter(s) * unit.scale_length, precision=2)
        _wrapped(layout, f"Bundle diameter {diameter}, {sum(w.count for w in s.wires)} wires", "INFO")
        if s.wrap != "loose":
            _wrapped(layout, "Stiffness: the wires' sum, a lower bound for a wrapped bundle", "NONE")

    @staticmethod
    def _draw_clips(layout, s, detached=()):
        """The cable's clips in order, the selected one's object below them, and notes on deleted ones."""
        layout.label(text="Clips, start to end")
        _list_heading(layout, "Clip", "Arc Length")
        buttons = _list_with_buttons(layout, "CABLE_HARNESS_UL_clips", s, "clips", "active_clip", "clip")
        buttons.separator()
        buttons.operator("cable_harness.clip_move", icon="TRIA_UP", text="").direction = "UP"
        buttons.operator("cable_harness.clip_move", icon="TRIA_DOWN", text="").direction = "DOWN"
        if len(s.clips):
            layout.prop(s.clips[min(s.active_clip, len(s.clips) - 1)], "clip", text="Selected Clip")
        for note in detached:
            _wrapped(layout, note, "ERROR")

    @staticmethod
    def _draw_cable(layout, s, detached=(), stale=None):
        """``detached``: notes on the holders the user deleted, which the cable no longer holds to;
        ``stale``: the result is of other settings than the cable and scene have now (None: the
        settings changed since, as the cable's own flag says)."""
        stale = s.result_stale if stale is None else stale
        layout.prop(s, "start")
        if is_junction(s.start):
            layout.prop(s, "start_outlet")
        layout.prop(s, "end")
        if is_junction(s.end):
            layout.prop(s, "end_outlet")
        VIEW3D_PT_cable_harness._draw_clips(layout, s, detached)
        layout.prop(s, "length")
        layout.prop(s, "is_bundle")
        if s.is_bundle:
            VIEW3D_PT_cable_harness._draw_bundle(layout, s)
        else:
            layout.prop(s, "diameter")
        layout.prop(s, "segments")
        if not s.is_bundle:
            row = layout.row(align=True)
            row.prop(s, "material")
            row.operator("cable_harness.calibrate_from_tests", text="", icon="EXPERIMENTAL")
            if s.material == "CUSTOM":
                layout.prop(s, "youngs_modulus")
                layout.prop(s, "poisson_ratio")
                layout.prop(s, "density")
        layout.prop(s, "min_bend_radius_allowed", text="Bend Limit")
        layout.prop(s, "rest_shape")
        if s.rest_shape == "BENT":
            layout.prop(s, "rest_bend_radius")
            layout.prop(s, "rest_bend_direction")
            layout.prop(s, "rest_twist")
        elif s.rest_shape == "CURVE":
            layout.label(text=f"Stored shape: {len(s.rest_route)} points")
        layout.operator("cable_harness.set_rest_shape", icon="CURVE_BEZCURVE")
        box = layout.box()
        if not s.result_valid:
            box.label(text="Not solved yet")
            if s.result_message:  # why Solve left it out
                _wrapped(box, s.result_message, "ERROR")
            return
        if s.result_converged:
            box.label(text="Converged", icon="CHECKMARK")
        else:
            box.alert = True
            _wrapped(box, "NOT converged: the values below are of the last good state", "ERROR")
        if s.result_model:
            _wrapped(box, solved_with(s))
        if stale:
            _wrapped(box, "Settings changed since this result: solve again", "INFO")
        col = box.column()
        col.use_property_split = False  # "Name: value" in full width, not a cut label beside it
        col.active = s.result_converged and not stale
        col.prop(s, "result_length", emboss=False)
        col.prop(s, "result_min_bend_radius", emboss=False)
        col.prop(s, "result_start_force", emboss=False)
        col.prop(s, "result_end_force", emboss=False)
        col.prop(s, "result_iterations", emboss=False)
        col.prop(s, "result_solve_ms", emboss=False)
        if s.result_message:
            _wrapped(box, s.result_message, "ERROR")


def solved_with(settings) -> str:
    """The Model and Motion the cable's result was solved with (empty: not known, an older file)."""
    return settings.result_model


class VIEW3D_PT_cable_harness_contact(_SidebarPanel, bpy.types.Panel):
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


class VIEW3D_PT_cable_harness_files(_SidebarPanel, bpy.types.Panel):
    bl_label = "Case Files"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        row = self.layout.row(align=True)
        row.operator("cable_harness.export_case", icon="EXPORT")
        row.operator("cable_harness.import_case", icon="IMPORT")
        self.layout.operator("cable_harness.import_step", icon="IMPORT")


def _length_text(scene, metres, precision=3) -> str:
    metres = 0.0 if abs(metres) < 1e-9 else metres
    text = bpy.utils.units.to_string(
        scene.unit_settings.system,
        "LENGTH",
        metres / metres_per_unit(scene) * scene.unit_settings.scale_length,
        precision=precision,
    )
    # a value that rounds to zero is zero whatever its sign (a resting contact's clearance): not "-0 m"
    return text[1:] if text.startswith("-") and not re.search(r"[1-9]", text) else text


def _range_text(scene, low, high) -> str:
    """``low`` to ``high`` with as many digits as tell them apart (up to 7): not "66 cm to 66 cm"."""
    for precision in range(3, 8):
        a, b = _length_text(scene, low, precision), _length_text(scene, high, precision)
        if a != b or low == high:
            break
    return f"{a} to {b}"


# (output, label, how the panel shows its spread over the variants)
STUDY_OUTPUTS = (
    ("length", "Length", "range"),
    ("min_bend_radius", "Min bend radius", "min"),
    ("max_tension", "Max tension", "max"),
    ("peak_force", "Peak force", "max"),
    ("min_clearance", "Min clearance", "min"),
)


def study_lines(scene, study) -> list:
    """The panel's summary of a finished study: per cable, how many variants converged, the spread
    of each output and of the shape."""
    summary = study["summary"]
    lines = [f"{summary['converged']} of {summary['variants']} variants converged"]
    if summary["failed"]:
        shown = ", ".join(str(v) for v in summary["failed"][:8])
        lines.append(f"Not converged: variants {shown}{' ...' if len(summary['failed']) > 8 else ''}")
    for name, outputs in study["cables"].items():
        lines.append(f"{name}:")
        for key, label, kind in STUDY_OUTPUTS:
            if key not in outputs:
                continue
            o = outputs[key]
            if key == "max_tension" or key == "peak_force":
                lines.append(f"  {label} {o['max']:.3g} N (mean {o['mean']:.3g} N)")
            elif kind == "range":
                lines.append(f"  {label} {_range_text(scene, o['min'], o['max'])}")
            else:
                lines.append(f"  {label} {_length_text(scene, o['min'])} (mean {_length_text(scene, o['mean'])})")
        if "envelope" in outputs:
            e = outputs["envelope"]
            lines.append(
                f"  Shape spread {_length_text(scene, e['spread'])} at {100 * e['spread_at']:.0f} % of its length"
            )
    return lines


class VIEW3D_PT_cable_harness_study(_SidebarPanel, bpy.types.Panel):
    bl_label = "Variation Study"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        settings = context.scene.cable_harness
        _list_with_buttons(layout, "CABLE_HARNESS_UL_variations", settings, "variations", "active_variation", "study")
        if 0 <= settings.active_variation < len(settings.variations):
            v = settings.variations[settings.active_variation]
            box = layout.box()
            box.prop(v, "cable")
            box.prop(v, "quantity")
            if v.quantity in ("CLIP_ARC", "CLIP_POSITION"):
                box.prop(v, "clip_number")
            if v.quantity in ("CLIP_POSITION", "END_POSITION"):
                box.prop(v, "axis")
            box.prop(v, "distribution")
            box.prop(v, "tolerance_percent" if v.quantity in RELATIVE else "tolerance")
        layout.prop(settings, "study_samples")
        layout.prop(settings, "study_seed")
        layout.prop(settings, "study_workers")
        layout.prop(settings, "study_folder")
        if study_runner.running():
            fraction, text = study_runner.progress()
            if hasattr(layout, "progress"):  # Blender 4.0 and later
                layout.progress(factor=fraction, type="BAR", text=text)
            else:
                layout.label(text=text, icon="TIME")
            layout.operator("cable_harness.cancel_study", icon="CANCEL")
        else:
            layout.operator("cable_harness.run_study", icon="PLAY")
        if study_runner.message():
            _wrapped(layout, study_runner.message(), "ERROR")
        study = study_runner.result()
        if study is not None:
            column = layout.column(align=True)
            column.use_property_split = False
            column.prop(settings, "show_envelope")
            box = layout.box()
            box.alert = study["summary"]["converged"] < study["summary"]["variants"]
            for line in study_lines(context.scene, study):
                _wrapped(box, line)
            layout.operator("cable_harness.open_study_folder", icon="FILE_FOLDER")


class VIEW3D_MT_cable_harness_add(bpy.types.Menu):
    bl_idname = "VIEW3D_MT_cable_harness_add"
    bl_label = "Cable Harness"

    def draw(self, context):
        layout = self.layout
        layout.operator("cable_harness.add_connector", icon="EMPTY_SINGLE_ARROW")
        layout.operator("cable_harness.add_clip", icon="MESH_CIRCLE")
        layout.operator("cable_harness.add_junction", icon="EMPTY_ARROWS")
        layout.operator("cable_harness.make_cable", icon="CURVE_PATH")
        layout.operator("cable_harness.snap_to_face", icon="SNAP_FACE")


def _add_menu(self, context):
    self.layout.menu(VIEW3D_MT_cable_harness_add.bl_idname, icon="CURVE_PATH")


classes = (
    CABLE_HARNESS_UL_clips,
    CABLE_HARNESS_UL_wires,
    CABLE_HARNESS_UL_variations,
    VIEW3D_PT_cable_harness,
    VIEW3D_PT_cable_harness_contact,
    VIEW3D_PT_cable_harness_files,
    VIEW3D_PT_cable_harness_study,
    VIEW3D_MT_cable_harness_add,
)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.VIEW3D_MT_add.append(_add_menu)


def unregister():
    bpy.types.VIEW3D_MT_add.remove(_add_menu)
    _unregister_classes()
