# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender extension entry point.

Blender imports the folder holding blender_manifest.toml as one package (bl_ext.<repo>.cable_harness),
so the Blender layer and the solver are sub-packages of it; everything is delegated to cable_harness.
bl_info lets Blender versions before the extension system (3.4 to 4.1) load the same folder as a
legacy add-on; Blender 4.2+ reads blender_manifest.toml instead.
"""

bl_info = {
    "name": "Cable Harness",
    "author": "cable_harness developers",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "3D View > Sidebar > Harness; Add > Cable Harness",
    "description": "Physically based cable harness routing and assembly simulation",
    "category": "Physics",
}


def register():
    from .cable_harness import register as register_layer

    register_layer()


def unregister():
    from .cable_harness import unregister as unregister_layer

    unregister_layer()
