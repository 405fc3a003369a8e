# SPDX-License-Identifier: GPL-3.0-or-later
"""Cable materials: from E, nu (or G), density and diameter to section stiffnesses.

For a solid round section of diameter d (Lv 2017, Eqs. 18-27 state the same relations):
A = pi d^2 / 4, I = pi d^4 / 64, polar moment I_p = pi d^4 / 32, G = E / (2 (1 + nu)),
stretch EA, bend EI, torsion G I_p, shear kappa G A with the circular-section shear coefficient
kappa = 6 (1 + nu) / (7 + 6 nu) (Cowper 1966), linear density rho A. Explicit overrides win.
"""

import math
import numbers
from dataclasses import dataclass

from ..errors import CaseError


@dataclass(frozen=True)
class SectionStiffness:
    """Stiffnesses of a cable cross-section (SI)."""

    stretch_stiffness: float  # EA [N]
    shear_stiffness: float  # kappa G A [N]
    bend_stiffness: float  # EI [N m^2]
    twist_stiffness: float  # G I_p [N m^2]
    linear_density: float  # [kg/m]


@dataclass(frozen=True)
class MaterialPreset:
    name: str
    description: str
    values: dict
    source: str


# Values come with their source. Effective (homogenised) moduli of real cables depend on the
# conductor lay and insulation; calibrate against a cantilever sag test when accuracy matters.
PRESETS = {
    p.name: p
    for p in (
        MaterialPreset(
            name="lv2017_harness",
            description="4 mm PVC-insulated harness cable measured by Lv et al.",
            values={"E": 126e6, "nu": 0.30, "linear_density": 0.030 / 0.300},
            source="Lv et al., J. Manuf. Syst. 43 (2017), Table 2: d = 4 mm, E = 126 MPa, nu = 0.30, 30 g over 300 mm",
        ),
        MaterialPreset(
            name="pvc_wire",
            description="Single PVC-insulated stranded wire (homogenised), same modulus as the Lv 2017 cable",
            values={"E": 126e6, "nu": 0.30, "density": 0.030 / 0.300 / (math.pi * 0.004**2 / 4.0)},
            source="Lv et al. 2017, Table 2, density from 30 g over 300 mm of a 4 mm cable; "
            "use the diameter of your wire",
        ),
    )
}

MATERIAL_KEYS = ("preset", "E", "nu", "G", "density", "linear_density", "EA", "EI", "GJ", "GA")
# Every material number lies in this range (SI: Pa, kg/m^3, kg/m, N, N m^2): beyond any real cable, and
# narrow enough that the section stiffnesses and the solver's energies stay finite in float64.
MATERIAL_RANGE = (1e-9, 1e15)


def _positive(material: dict, key: str, where: str) -> float:
    value = material[key]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise CaseError(f"{where}.{key} must be a positive number, got {_show(value)}")
    try:
        out = float(value)
    except (OverflowError, ValueError, TypeError):
        raise CaseError(f"{where}.{key} must be a positive number, got one too large for a double") from None
    if not math.isfinite(out) or out <= 0:
        raise CaseError(f"{where}.{key} must be a positive number, got {_show(value)}")
    if key != "nu" and not MATERIAL_RANGE[0] <= out <= MATERIAL_RANGE[1]:
        raise CaseError(f"{where}.{key} = {out:g} is out of range ({MATERIAL_RANGE[0]:g} to {MATERIAL_RANGE[1]:g})")
    return out


def _show(value) -> str:
    text = repr(value) if isinstance(value, (int, float, str)) else f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


def resolve_material(material: dict, where: str) -> dict:
    """Merge a preset (if named) with explicit values, which win."""
    if not isinstance(material, dict):
        raise CaseError(f"{where} must be an object")
    for key in material:
        if key not in MATERIAL_KEYS:
            raise CaseError(
                f"{where}.{_show(key) if not isinstance(key, str) or len(key) > 40 else key} is not a "
                f"known material key (known: {', '.join(MATERIAL_KEYS)})"
            )
    merged = {}
    if "preset" in material:
        name = material["preset"]
        if not isinstance(name, str) or name not in PRESETS:
            raise CaseError(f"{where}.preset {_show(name)} is unknown (known: {', '.join(sorted(PRESETS))})")
        merged.update(PRESETS[name].values)
    merged.update({k: v for k, v in material.items() if k != "preset"})
    return merged


def section_stiffness(material: dict, diameter: float, where: str = "material") -> SectionStiffness:
    """Derive the section stiffnesses of a solid round cable; explicit EA/EI/GJ/GA/linear_density win."""
    m = resolve_material(material, where)
    m = {key: _positive(m, key, where) for key in m}
    if "nu" in m and not m["nu"] < 0.5:
        raise CaseError(f"{where}.nu must be below 0.5, got {m['nu']!r}")
    area = math.pi * diameter**2 / 4.0
    inertia = math.pi * diameter**4 / 64.0
    polar = 2.0 * inertia
    E = m.get("E")
    if "G" in m:
        G = m["G"]
        nu = m.get("nu", E / (2.0 * G) - 1.0 if E else 0.3)
    elif E is not None:
        nu = m.get("nu", 0.3)
        G = E / (2.0 * (1.0 + nu))
    else:
        G, nu = None, m.get("nu", 0.3)
    nu = min(max(nu, 0.0), 0.499)
    needed = [k for k, have in (("EA", E), ("EI", E), ("GJ", G)) if k not in m and have is None]
    if needed:
        raise CaseError(f"{where} needs E (and nu or G) or explicit {', '.join(needed)}")
    EA = m.get("EA", E * area if E is not None else None)
    EI = m.get("EI", E * inertia if E is not None else None)
    GJ = m.get("GJ", G * polar if G is not None else None)
    kappa = 6.0 * (1.0 + nu) / (7.0 + 6.0 * nu)
    if "GA" in m:
        GA = m["GA"]
    elif G is not None:
        GA = kappa * G * area
    else:
        GA = kappa * EA / (2.0 * (1.0 + nu))
    if "linear_density" in m:
        rho_a = m["linear_density"]
    elif "density" in m:
        rho_a = m["density"] * area
    else:
        raise CaseError(f"{where} needs density or linear_density")
    out = SectionStiffness(EA, GA, EI, GJ, rho_a)
    for label, value in zip(("EA", "GA", "EI", "GJ", "linear density"), (EA, GA, EI, GJ, rho_a)):
        if not (math.isfinite(value) and value >= 1e-300):
            raise CaseError(f"{where} gives this diameter a section {label} of {value:g}, out of range")
    return out
