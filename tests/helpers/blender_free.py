# SPDX-License-Identifier: GPL-3.0-or-later
"""Import the Blender layer's bpy-free modules (follow, report, scene_model, ...) in the solver tests.

Inside Blender the repository is one package (bl_ext.<repo>.cable_harness) with cable_harness and
solver_core below it, and the layer imports the solver relatively (``..solver_core``). The same
package is made here from the checkout under a name of its own, without running its register()."""

import importlib
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "cable_harness_checkout"


def layer_module(name: str):
    """The module ``cable_harness.<name>`` of this checkout."""
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
        )
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.cable_harness.{name}")
