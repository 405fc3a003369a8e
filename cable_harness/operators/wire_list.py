# SPDX-License-Identifier: GPL-3.0-or-later
"""The wire list of a bundle cable: add a kind of wire (a copy of the selected one), remove one."""

import bpy

from ..scene_model import sync_cable_bevel
from .common import RemoveListItem, active_cable_or_report

_COPIED = ("diameter", "count", "material", "youngs_modulus", "poisson_ratio", "density")


class CABLE_HARNESS_OT_wire_add(bpy.types.Operator):
    """Add a kind of wire to the active cable's bundle (a copy of the one selected in the list)"""

    bl_idname = "cable_harness.wire_add"
    bl_label = "Add Wire"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        cable = active_cable_or_report(self, context)
        if cable is None:
            return {"CANCELLED"}
        s = cable.cable_harness
        source = s.wires[min(s.active_wire, len(s.wires) - 1)] if len(s.wires) else None
        wire = s.wires.add()
        if source is not None:
            for name in _COPIED:
                setattr(wire, name, getattr(source, name))
        s.is_bundle = True
        s.active_wire = len(s.wires) - 1
        s.result_stale = True
        return {"FINISHED"}


class CABLE_HARNESS_OT_wire_remove(RemoveListItem, bpy.types.Operator):
    """Remove the wire selected in the list from the active cable's bundle"""

    bl_idname = "cable_harness.wire_remove"
    bl_label = "Remove Wire"
    list_name, active_name = "wires", "active_wire"
    empty_message = "the active cable's bundle has no wire to remove"

    def removed(self, cable) -> None:
        sync_cable_bevel(cable)


classes = (CABLE_HARNESS_OT_wire_add, CABLE_HARNESS_OT_wire_remove)


register, unregister = bpy.utils.register_classes_factory(classes)
