# SPDX-License-Identifier: GPL-3.0-or-later
"""A user's library of measured materials (``cable-harness-materials/1``): the stiffnesses fitted to
bench tests (io/calibration.py), kept by name in a JSON file, and usable in cases as presets
(``"material": {"preset": NAME}``) once the library is loaded (the CLI's ``--materials``)."""

import json
import math
import os

from ..errors import CaseError
from .case import read_json
from .materials import PRESETS, MaterialPreset

LIBRARY_FORMAT = "cable-harness-materials/1"
SECTION_KEYS = ("EA", "EI", "GJ", "GA", "linear_density")  # what a case takes from an entry


def read_library(path, missing_ok=False) -> dict:
    """{name: entry} of a library file; an empty library where ``missing_ok`` and it does not exist."""
    if missing_ok and not os.path.exists(path):
        return {}
    doc = read_json(path, "material library")
    if not isinstance(doc, dict) or doc.get("format") != LIBRARY_FORMAT or not isinstance(doc.get("materials"), dict):
        raise CaseError(f"{path}: not a material library (format {LIBRARY_FORMAT!r} with a materials object)")
    for name, entry in doc["materials"].items():
        where = f"{path}: materials.{name}"
        if not isinstance(entry, dict):
            raise CaseError(f"{where} must be an object")
        for key in SECTION_KEYS:
            value = entry.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise CaseError(f"{where}.{key} must be a positive number, got {value!r}")
    return dict(doc["materials"])


def library_text(materials: dict) -> str:
    return json.dumps({"format": LIBRARY_FORMAT, "materials": materials}, indent=1, allow_nan=False) + "\n"


def use_library(materials: dict, path: str = "the library") -> list:
    """Make the library's materials presets of this process (names of the built-in presets are refused);
    returns their names."""
    for name, entry in materials.items():
        if name in PRESETS and not PRESETS[name].source.startswith("measured"):
            raise CaseError(f"{path}: material {name!r} has the name of a built-in preset; rename it")
        fit = entry.get("fit") if isinstance(entry.get("fit"), dict) else {}
        interval = fit.get("EI_interval_95")
        numbers = isinstance(interval, list) and len(interval) == 2 and all(_finite(v) for v in interval)
        text = f", EI 95 % interval {interval[0]:.4g}-{interval[1]:.4g} N m^2" if numbers else ""
        diameter = entry.get("diameter")
        size = f", {1e3 * diameter:.2f} mm" if _finite(diameter) else ""
        reference = fit.get("reference")
        if isinstance(reference, str) and reference.strip():
            text += f" ({' '.join(reference.split())[:300]})"
        PRESETS[name] = MaterialPreset(
            name=name,
            description=f"measured cable{size}",
            values={key: float(entry[key]) for key in SECTION_KEYS},
            source=f"measured: fitted to {fit.get('tests', '?')!s:.20} bench test(s){text}, {path}",
        )
    return list(materials)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
