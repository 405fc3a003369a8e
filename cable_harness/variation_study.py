# SPDX-License-Identifier: GPL-3.0-or-later
"""A variation study of the scene: its variations as a sweep document, and a finished study read back.

Each variation names a cable, a quantity (length, diameter, a clip's arc position or place, the end
connector's place, Young's modulus, mass) and a tolerance about the scene's value: drawn uniformly
within +-tolerance, from a normal distribution with the tolerance as its standard deviation, or the
three corners -tolerance, nominal, +tolerance (a grid). The document is the sweep file of ``python -m
solver_core sweep`` (SI units); ``study_runner`` runs it in the background, and ``read_study`` turns its
folder into what the panel and the viewport show: the summary per cable and the envelope of the
solved shapes (every converged variant's centre line, and how far it strays from their mean).
"""

import json
import os

import numpy as np

from ..solver_core import PRESETS, SWEEP_FORMAT, parse_sweep
from .scene_model import CABLE, HarnessInputError, case_document, metres_per_unit

QUANTITIES = [
    ("LENGTH", "Length", "The cable's length, +- a length"),
    ("DIAMETER", "Diameter", "The cable's outer diameter, +- a length"),
    ("CLIP_ARC", "Clip Arc Position", "Where along the cable a clip holds it, +- a length of cable"),
    ("CLIP_POSITION", "Clip Position", "A clip's place along one world axis, +- a length"),
    ("END_POSITION", "End Connector Position", "The end connector's place along one world axis, +- a length"),
    ("YOUNGS_MODULUS", "Young's Modulus", "The material's Young's modulus, +- a percentage of it"),
    ("MASS", "Mass", "The material's density (or mass per length), +- a percentage of it"),
]
RELATIVE = {"YOUNGS_MODULUS", "MASS"}  # tolerances in percent of the value; the others are lengths
DISTRIBUTIONS = [
    ("UNIFORM", "Uniform", "Drawn uniformly between nominal - tolerance and nominal + tolerance"),
    ("NORMAL", "Normal", "Drawn from a normal distribution about the nominal, the tolerance its standard deviation"),
    ("CORNERS", "Corners", "Exactly nominal - tolerance, nominal and nominal + tolerance (crossed with the others)"),
]
AXES = {"X": 0, "Y": 1, "Z": 2}


def _field(cable_doc: dict, variation, where: str) -> tuple:
    """(path inside the cable, nominal value in SI) of what ``variation`` varies."""
    q = variation.quantity
    if q in ("LENGTH", "DIAMETER"):
        key = q.lower()
        return key, cable_doc[key]
    if q in ("CLIP_ARC", "CLIP_POSITION"):
        k = variation.clip_number - 1
        if not 0 <= k < len(cable_doc["clips"]):
            raise HarnessInputError(f"{where}: cable {cable_doc['id']!r} has no clip {variation.clip_number}")
        clip = cable_doc["clips"][k]
        if q == "CLIP_ARC":
            return f"clips[{k}].s", clip["s"]
        axis = AXES[variation.axis]
        return f"clips[{k}].frame.position[{axis}]", clip["frame"]["position"][axis]
    if q == "END_POSITION":
        if cable_doc["end"] is None:
            raise HarnessInputError(f"{where}: cable {cable_doc['id']!r} has a free end, no end connector")
        axis = AXES[variation.axis]
        return f"end.position[{axis}]", cable_doc["end"]["position"][axis]
    material = cable_doc["material"]
    values = PRESETS[material["preset"]].values if "preset" in material else material
    if q == "YOUNGS_MODULUS":
        return "material.E", values["E"]
    key = "density" if "density" in values else "linear_density"
    return f"material.{key}", values[key]


def vary_entry(cable_doc: dict, index: int, variation, scale: float, where: str) -> dict:
    """The sweep's ``vary`` entry of one variation of the cable ``cables[index]``."""
    path, nominal = _field(cable_doc, variation, where)
    if variation.quantity in RELATIVE:
        spread = abs(nominal) * variation.tolerance_percent / 100.0
    else:
        spread = variation.tolerance * scale
    if not spread > 0.0:
        raise HarnessInputError(f"{where}: the tolerance is zero (nothing would vary)")
    entry = {"path": f"cables[{index}].{path}"}
    if variation.distribution == "UNIFORM":
        entry["uniform"] = [nominal - spread, nominal + spread]
    elif variation.distribution == "NORMAL":
        entry["normal"] = [nominal, spread]
    else:
        entry["values"] = [nominal - spread, nominal, nominal + spread]
    return entry


def sweep_document(scene, obstacles=()) -> dict:
    """The scene's study as a sweep document (format cable-harness-sweep/1): its cables and
    ``obstacles`` as the base case, its variations as ``vary``. Raises HarnessInputError naming the
    variation that cannot be built."""
    settings = scene.cable_harness
    if not len(settings.variations):
        raise HarnessInputError("the study has no variation (add one with +)")
    case = case_document(scene)
    case["obstacles"] = list(obstacles)
    for doc in case["cables"]:
        doc.pop("route", None)  # every variant starts from the solver's own initial guess
    index = {doc["id"]: i for i, doc in enumerate(case["cables"])}
    scale = metres_per_unit(scene)
    vary, seen = [], set()
    for number, variation in enumerate(settings.variations, start=1):
        where = f"variation {number}"
        ob = variation.cable
        if ob is None or ob.cable_harness.role != CABLE or ob.name not in index:
            raise HarnessInputError(f"{where}: choose one of the scene's cables")
        entry = vary_entry(case["cables"][index[ob.name]], index[ob.name], variation, scale, where)
        if entry["path"] in seen:
            raise HarnessInputError(f"{where}: varies the same value as an earlier variation")
        seen.add(entry["path"])
        vary.append(entry)
    doc = {"format": SWEEP_FORMAT, "case": case, "vary": vary, "seed": settings.study_seed}
    if any("values" not in v for v in vary):
        doc["samples"] = settings.study_samples
    return doc


def study_digest(doc: dict) -> str:
    """The sweep's digest (which names its folder: the same study resumes there, another gets its own)."""
    return parse_sweep(doc).digest()


def _envelope(shapes: list) -> dict:
    """Per cable the converged variants' centre lines (metres) and how far each node strays from the
    mean of them: the largest such distance and the node's arc fraction."""
    stack = np.stack(shapes)
    deviation = np.linalg.norm(stack - stack.mean(axis=0), axis=2).max(axis=0)
    node = int(np.argmax(deviation))
    return {"lines": stack, "spread": float(deviation[node]), "spread_at": node / max(1, stack.shape[1] - 1)}


def read_study(folder: str) -> dict:
    """What a finished study in ``folder`` shows: {"summary": summary.json, "cables": {id: {"envelope":
    ..., outputs...}}}. Variants without a shape file (not converged, or not solved) are left out of the
    envelope."""
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    with open(os.path.join(folder, "sweep.json"), encoding="utf-8") as fh:
        columns = json.load(fh)["columns"]
    ids = [c[: -len(".converged")] for c in columns if c.endswith(".converged")]
    failed = set(summary["failed"])
    shapes = {cid: [] for cid in ids}
    shape_dir = os.path.join(folder, "shapes")
    for variant in range(summary["variants"]):
        path = os.path.join(shape_dir, f"{variant}.npz")
        if variant in failed or not os.path.exists(path):
            continue
        with np.load(path) as data:
            for k, cid in enumerate(ids):
                shapes[cid].append(data[f"c{k}"])
    cables = {}
    for cid in ids:
        outputs = {key[len(cid) + 1 :]: value for key, value in summary["outputs"].items() if key.startswith(cid + ".")}
        lines = shapes[cid]
        if lines and len({len(line) for line in lines}) == 1:
            outputs["envelope"] = _envelope(lines)
        cables[cid] = outputs
    return {"summary": summary, "cables": cables}


def envelope_segments(envelope: dict, metres_per_unit_: float) -> np.ndarray:
    """The envelope's centre lines as line-segment end points (world, Blender units) for the overlay."""
    lines = envelope["lines"] / metres_per_unit_
    a, b = lines[:, :-1], lines[:, 1:]
    return np.stack([a, b], axis=2).reshape(-1, 3)
