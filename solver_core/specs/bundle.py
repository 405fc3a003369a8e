# SPDX-License-Identifier: GPL-3.0-or-later
"""Bundles of wires (case format, Version 1 additions): a cable's diameter, mass and section
stiffnesses derived from its wire list and wrap.

Stiffness: each wire bends, twists and stretches about its own axis and the wires slip along each
other, so a bundle's stiffnesses are the sums of its wires' (EA, kappa G A, EI, G I_p: the lower
bound EI_min of Papailiou, IEEE Trans. Power Delivery 12 (1997) 1576-1588, for a stranded conductor
whose wires slip freely). That is the rule for a ``loose`` bundle. A taped, sleeved or conduit
bundle is stiffer, as friction makes its wires act together in part; no measured factor for that
was found to cite, so those wraps take the same sum, reported as a lower bound, unless the bundle
gives a ``covering_factor`` (measured, e.g. by a cantilever sag test of the bundle against the sum,
or assumed: ``covering_source``) that multiplies EI and GJ, clamped to the fully bonded bound; a
measured EI given on the cable (``material.EI``) wins.

Diameter: n equal wires of diameter d fit, at the densest, in the circle of diameter c_n d with
c_1..c_7 = 1, 2, 1 + 2/sqrt(3), 1 + sqrt(2), 1 + sqrt(2 (1 + 1/sqrt(5))), 3, 3 (Kravitz, Math.
Magazine 40 (1967) 65-71); for more wires the area rule D = sqrt(sum d_i^2 / phi) with the random
close packing fraction of disks phi = 0.82 (Berryman, Phys. Rev. A 27 (1983) 1053), as wires lie in
a bundle, not in the densest order. Wires of different diameters take their root mean square for
c_n. The wrap adds twice ``sheath`` (its thickness). Mass: the sum of the wires' (the sheath's own
mass is not known from the format and is left out). An explicit ``diameter`` on the cable wins.
"""

import math
from dataclasses import dataclass

from ..errors import CaseError, check_id
from .materials import section_stiffness

WRAPS = ("loose", "taped", "sleeved", "conduit")
RANDOM_CLOSE_PACKING = 0.82  # disks, Berryman 1983
# the densest packing of n equal circles in a circle: its diameter over theirs (Kravitz 1967)
DENSEST_ENCLOSING = (
    1.0,
    2.0,
    1.0 + 2.0 / math.sqrt(3.0),
    1.0 + math.sqrt(2.0),
    1.0 + math.sqrt(2.0 * (1.0 + 1.0 / math.sqrt(5.0))),
    3.0,
    3.0,
)
MAX_WIRES = 100000


MAX_WIRE_ID = 100  # characters


@dataclass(frozen=True)
class BundleWire:
    diameter: float
    material: dict  # as given (a preset name or numbers)
    count: int
    id: str | None = None  # names the circuit: the same id on each branch it runs through (wire_routes)


@dataclass(frozen=True)
class Bundle:
    """A cable's wires and wrap, and what follows from them."""

    wires: tuple
    wrap: str
    sheath: float
    diameter: float  # derived (over the wrap)
    section: dict  # derived EA, GA, EI, GJ, linear_density: material keys
    covering: dict | None = None  # the covering factor: {"factor", "source", "applied", "bound_EI", "clamped"}

    @property
    def wire_count(self) -> int:
        return sum(w.count for w in self.wires)

    @property
    def rule(self) -> str:
        text = "sum of the wires' stiffnesses (wires slipping freely: Papailiou 1997's lower bound)"
        if self.covering is not None:
            c = self.covering
            text += (
                f"; EI and GJ times the {self.wrap} covering factor {c['factor']:g} ({c['source']}), at most the "
                "fully bonded bound (the wires' own plus EA y^2 about the bundle's axis)"
            )
        elif self.wrap != "loose":
            text += f"; a {self.wrap} bundle is stiffer: give its covering_factor or its measured EI as material.EI"
        return text


RULES = (
    "bundles (cable.bundle): stiffnesses EA, GA, EI, GJ are the sums of the wires' (wires slipping "
    "freely: the lower bound EI_min of Papailiou, IEEE Trans. Power Delivery 12 (1997) 1576-1588); "
    "taped, sleeved and conduit bundles are stiffer by a factor not sourced here: give it as the bundle's "
    "covering_factor (covering_source measured or assumed; EI and GJ times it, at most the fully bonded "
    "bound) or a measured EI as material.EI. Diameter: the densest packing of n <= 7 equal wires "
    "(Kravitz, Math. Magazine 40 (1967) 65-71), else sqrt(sum d^2 / 0.82) (random close packing of disks, "
    "Berryman, Phys. Rev. A 27 (1983) 1053), plus twice the sheath. Mass: the sum of the wires'."
)


def bundle_diameter(diameters, counts=None) -> float:
    """The diameter of a bundle of wires, without its wrap (module docstring): ``counts[k]`` wires of
    diameter ``diameters[k]`` (one of each without ``counts``)."""
    counts = [1] * len(diameters) if counts is None else counts
    n = sum(counts)
    squares = sum(c * d * d for d, c in zip(diameters, counts))
    widest = max(diameters)
    if n <= len(DENSEST_ENCLOSING):
        return max(widest, DENSEST_ENCLOSING[n - 1] * math.sqrt(squares / n))
    return max(widest, math.sqrt(squares / RANDOM_CLOSE_PACKING))


def parse_bundle(obj, where: str, number, as_int) -> Bundle:
    """A ``bundle`` document; ``number`` and ``as_int`` are case.py's checked readers."""
    if not isinstance(obj, dict):
        raise CaseError(f"{where} must be an object with wires, wrap and sheath")
    unknown = sorted(set(obj) - {"wires", "wrap", "sheath", "covering_factor", "covering_source"})
    if unknown:
        raise CaseError(
            f"{where}.{unknown[0]} is not a field of a bundle (wires, wrap, sheath, covering_factor, covering_source)"
        )
    raw = obj.get("wires")
    if not isinstance(raw, list) or not raw:
        raise CaseError(f"{where}.wires must be a non-empty list of wires")
    wrap = obj.get("wrap", "loose")
    if wrap not in WRAPS:
        raise CaseError(f"{where}.wrap must be one of {', '.join(WRAPS)}, got {wrap!r}")
    sheath = (
        0.0 if obj.get("sheath") is None else number(obj["sheath"], f"{where}.sheath", non_negative=True, bound=1.0)
    )
    wires = []
    sums = {"EA": 0.0, "GA": 0.0, "EI": 0.0, "GJ": 0.0, "linear_density": 0.0}
    for i, w in enumerate(raw):
        at = f"{where}.wires[{i}]"
        if not isinstance(w, dict):
            raise CaseError(f"{at} must be an object with diameter, material and count")
        unknown = sorted(set(w) - {"diameter", "material", "count", "id"})
        if unknown:
            raise CaseError(f"{at}.{unknown[0]} is not a field of a wire (diameter, material, count, id)")
        wire_id = w.get("id")
        if wire_id is not None and (not isinstance(wire_id, str) or not wire_id.strip() or len(wire_id) > MAX_WIRE_ID):
            raise CaseError(f"{at}.id must be a non-empty text of at most {MAX_WIRE_ID} characters")
        if wire_id is not None:
            check_id(wire_id, f"{at}.id")
        if wire_id is not None and any(v.id == wire_id for v in wires):
            first = next(k for k, v in enumerate(wires) if v.id == wire_id)
            raise CaseError(f"{at}.id {wire_id!r} is given twice in this bundle (also wires[{first}])")
        for key in ("diameter", "material"):
            if key not in w:
                raise CaseError(f"{at}.{key} is missing")
        d = number(w["diameter"], f"{at}.diameter", positive=True, bound=1.0)
        count = as_int(w.get("count", 1), f"{at}.count", 1, MAX_WIRES)
        s = section_stiffness(w["material"], d, f"{at}.material")
        for key, value in zip(
            ("EA", "GA", "EI", "GJ", "linear_density"),
            (s.stretch_stiffness, s.shear_stiffness, s.bend_stiffness, s.twist_stiffness, s.linear_density),
        ):
            sums[key] += count * value
        wires.append(BundleWire(d, w["material"], count, wire_id))
    total = sum(w.count for w in wires)
    if total > MAX_WIRES:
        raise CaseError(f"{where}.wires hold {total} wires (at most {MAX_WIRES})")
    core = bundle_diameter([w.diameter for w in wires], [w.count for w in wires])
    covering = _covering(obj, where, wrap, number, sums, wires, core)
    return Bundle(tuple(wires), wrap, sheath, core + 2.0 * sheath, sums, covering)


COVERING_SOURCES = ("measured", "assumed")


def _covering(obj, where, wrap, number, sums, wires, core) -> dict | None:
    """Apply a covering factor to ``sums`` (EI and GJ), clamped to the fully bonded bound: the wires
    acting as one section, each adding EA y^2 (GA r^2 in torsion) about the bundle's axis, their centres
    taken as spread evenly over the disk they can reach (radius rho = (core - d) / 2: mean y^2 = rho^2 / 4,
    mean r^2 = rho^2 / 2). None without a factor."""
    if obj.get("covering_factor") is None:
        if obj.get("covering_source") is not None:
            raise CaseError(f"{where}.covering_source is given without a covering_factor")
        return None
    if wrap == "loose":
        raise CaseError(
            f"{where}.covering_factor: a loose bundle's wires slip freely; it applies to taped, "
            "sleeved or conduit bundles"
        )
    factor = number(obj["covering_factor"], f"{where}.covering_factor", positive=True, bound=1e6)
    if factor < 1.0:
        raise CaseError(f"{where}.covering_factor must be at least 1 (the wires slipping freely), got {factor:g}")
    source = obj.get("covering_source", "assumed")
    if source not in COVERING_SOURCES:
        raise CaseError(f"{where}.covering_source must be measured or assumed, got {source!r}")
    bound_EI, bound_GJ = sums["EI"], sums["GJ"]
    for w in wires:
        s = section_stiffness(w.material, w.diameter)
        rho = 0.5 * max(core - w.diameter, 0.0)
        bound_EI += w.count * s.stretch_stiffness * rho * rho / 4.0
        bound_GJ += w.count * s.shear_stiffness * rho * rho / 2.0
    EI, GJ = factor * sums["EI"], factor * sums["GJ"]
    clamped = EI > bound_EI or GJ > bound_GJ
    sums["EI"], sums["GJ"] = min(EI, bound_EI), min(GJ, bound_GJ)
    return {"factor": factor, "source": source, "bound_EI": bound_EI, "bound_GJ": bound_GJ, "clamped": clamped}


def bundle_to_dict(bundle: Bundle) -> dict:
    return {
        "wires": [
            {"diameter": w.diameter, "material": w.material, "count": w.count, **({"id": w.id} if w.id else {})}
            for w in bundle.wires
        ],
        "wrap": bundle.wrap,
        "sheath": bundle.sheath,
        **(
            {}
            if bundle.covering is None
            else {"covering_factor": bundle.covering["factor"], "covering_source": bundle.covering["source"]}
        ),
    }


def bundle_report(bundle: Bundle, diameter: float, section) -> dict:
    """What a result says of a bundle: the values the cable was solved with, and the rule."""
    return {
        "wires": bundle.wire_count,
        "wrap": bundle.wrap,
        "diameter": diameter,
        "derived_diameter": bundle.diameter,
        "EA": section.stretch_stiffness,
        "EI": section.bend_stiffness,
        "GJ": section.twist_stiffness,
        "linear_density": section.linear_density,
        "rule": bundle.rule,
        **({} if bundle.covering is None else {"covering": dict(bundle.covering)}),
    }
