# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blender layer: properties, operators, panels, scene <-> solver model, colliders, baking.

Registration is layered (as Blender's bundled add-ons do): each sub-module registers its own
classes, and unregister runs in reverse. The solver is imported only after the numba cache
location is configured.
"""

from . import dependencies, numba_cache

ROOT_PACKAGE = __package__.rpartition(".")[0] or __package__

_modules = []


def register():
    dependencies.check()  # one sentence, not a traceback, where Blender's Python lacks numba
    numba_cache.configure(ROOT_PACKAGE)
    from . import colliders, operators, overlay, props, ui

    _modules[:] = [props, colliders, operators, ui, overlay]
    for module in _modules:
        module.register()
    from . import warmup

    warmup.start()  # compiles the solver's kernels in another process when the cache is cold


def unregister():
    from . import warmup

    warmup.cancel()
    for module in reversed(_modules):
        module.unregister()
    _modules.clear()
