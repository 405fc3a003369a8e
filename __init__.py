# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender extension entry point.

Blender imports the folder holding blender_manifest.toml as one package (bl_ext.<repo>.cable_harness),
so the Blender layer and the solver are sub-packages of it; everything is delegated to cable_harness.
"""


def register():
    from .cable_harness import register as register_layer

    register_layer()


def unregister():
    from .cable_harness import unregister as unregister_layer

    unregister_layer()
