# SPDX-License-Identifier: GPL-3.0-or-later
"""The operators, one module per kind of work: authoring, solving, baking, case files, CAD import and
reports. Each registers its own classes; they share helpers through ``..selection``, never each
other's."""

from . import authoring, bake, cad, case, report, solve

_modules = (authoring, solve, bake, case, cad, report)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
