# SPDX-License-Identifier: GPL-3.0-or-later
"""The operators, one module per kind of work: authoring, the clip list, a bundle's wire list, solving,
baking, case files, CAD import, reports, the formboard, KBL, the swept envelope, calibration and the
variation study.
Each registers its own classes; they share helpers through ``.common``, never each other's."""

from . import (
    authoring,
    bake,
    cad,
    calibration,
    case,
    clip_list,
    envelope,
    formboard,
    kbl,
    report,
    solve,
    study,
    wire_list,
)

_modules = (
    authoring,
    clip_list,
    wire_list,
    solve,
    bake,
    case,
    cad,
    report,
    formboard,
    kbl,
    envelope,
    calibration,
    study,
)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
