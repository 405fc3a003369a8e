# SPDX-License-Identifier: GPL-3.0-or-later
"""Bundles of wires (case format `bundle`, bundle.py): derived diameter, mass and stiffness, what wins
over them, refusals by name, and a loose bundle of n equal wires against one cable and a closed form."""

import json
import math

import numpy as np
import pytest
from helpers.cases import WIRE, cable, case, first, solve

from solver_core import CaseError, case_to_dict, parse_case
from solver_core.specs.bundle import RANDOM_CLOSE_PACKING, bundle_diameter

D_WIRE = 0.0016


def bundled(count=5, wrap="loose", sheath=0.0, **overrides):
    c = cable(**{"segments": 20, **overrides})
    c.pop("diameter")
    c.pop("material")
    c["bundle"] = {"wires": [{"diameter": D_WIRE, "material": dict(WIRE), "count": count}], "wrap": wrap}
    if sheath:
        c["bundle"]["sheath"] = sheath
    c.update(overrides)
    return c


@pytest.mark.parametrize(
    "n, ratio",
    [(1, 1.0), (2, 2.0), (3, 1 + 2 / math.sqrt(3)), (4, 1 + math.sqrt(2)), (6, 3.0), (7, 3.0)],
)
def test_a_few_equal_wires_take_their_densest_circle(n, ratio):
    assert bundle_diameter([D_WIRE] * n) == pytest.approx(ratio * D_WIRE, rel=1e-12)


def test_many_wires_take_the_area_of_random_close_packing():
    diameters = [0.001] * 40 + [0.002] * 20
    expected = math.sqrt((40 * 0.001**2 + 20 * 0.002**2) / RANDOM_CLOSE_PACKING)
    assert bundle_diameter(diameters) == pytest.approx(expected, rel=1e-12)
    # never narrower than its widest wire, nor than the densest packing's area
    assert bundle_diameter([0.01] + [0.0001] * 10) >= 0.01 and bundle_diameter([0.01, 0.0001]) >= 0.01
    for n in (8, 19, 61, 500):
        assert bundle_diameter([D_WIRE] * n) > math.sqrt(n / (math.pi / (2 * math.sqrt(3)))) * D_WIRE


def test_counts_give_the_diameter_of_the_wires_listed_one_by_one():
    for diameters, counts in (([D_WIRE], [5]), ([0.001, 0.002], [40, 20]), ([0.001, 0.002], [2, 1])):
        listed = [d for d, c in zip(diameters, counts) for _ in range(c)]
        assert bundle_diameter(diameters, counts) == pytest.approx(bundle_diameter(listed), rel=1e-14)


def test_diameter_section_and_mass_follow_the_wires_and_the_sheath():
    spec = parse_case(case(bundled(count=5, sheath=0.0003))).cables[0]
    area, inertia = math.pi * D_WIRE**2 / 4, math.pi * D_WIRE**4 / 64
    E, G = WIRE["E"], WIRE["E"] / (2 * 1.3)
    assert spec.diameter == pytest.approx(bundle_diameter([D_WIRE] * 5) + 0.0006, rel=1e-12)
    s = spec.section
    assert s.bend_stiffness == pytest.approx(5 * E * inertia, rel=1e-12)
    assert s.twist_stiffness == pytest.approx(5 * G * 2 * inertia, rel=1e-12)
    assert s.stretch_stiffness == pytest.approx(5 * E * area, rel=1e-12)
    assert s.linear_density == pytest.approx(5 * WIRE["density"] * area, rel=1e-12)


def test_an_explicit_diameter_and_measured_stiffness_win():
    c = bundled(count=12, wrap="taped", diameter=0.008, material={"EI": 0.002})
    spec = parse_case(case(c)).cables[0]
    assert spec.diameter == 0.008 and spec.section.bend_stiffness == 0.002
    loose = parse_case(case(bundled(count=12))).cables[0].section
    assert spec.section.stretch_stiffness == pytest.approx(loose.stretch_stiffness, rel=1e-12)


def test_the_case_is_written_back_as_given():
    for c in (bundled(count=3, sheath=0.0002), bundled(count=3, diameter=0.005, material={"EI": 1e-3})):
        spec = parse_case(case(c)).cables[0]
        written = case_to_dict(parse_case(case(c)))["cables"][0]
        assert ("diameter" in written) == ("diameter" in c) and ("material" in written) == ("material" in c)
        again = parse_case(json.loads(json.dumps(case_to_dict(parse_case(case(c)))))).cables[0]
        assert again.diameter == spec.diameter and again.section == spec.section and again.bundle == spec.bundle


def test_a_loose_bundle_is_one_cable_of_n_times_its_wire():
    n = 7
    bundle = solve(case(bundled(count=n)))
    spec = parse_case(case(bundled(count=n))).cables[0]
    s = spec.section
    one = cable(
        segments=20,
        diameter=spec.diameter,
        material={
            "EA": s.stretch_stiffness,
            "GA": s.shear_stiffness,
            "EI": s.bend_stiffness,
            "GJ": s.twist_stiffness,
            "linear_density": s.linear_density,
        },
    )
    single = solve(case(one))
    assert np.array_equal(np.array(first(bundle)["nodes"]), np.array(first(single)["nodes"]))
    report = first(bundle)["bundle"]
    assert report["wires"] == n and report["EI"] == s.bend_stiffness and report["diameter"] == spec.diameter


def test_a_loose_bundle_of_equal_wires_sags_as_one_wire():
    # weight and stiffness both scale with n: a short cantilever's tip deflection is w L^4 / (8 EI)
    # whatever n (Euler-Bernoulli, small deflection)
    length = 0.05
    tips = []
    for n in (1, 4, 30):
        doc = case(bundled(count=n, length=length, segments=40))
        tips.append(first(solve(doc))["nodes"][-1][2])
    area, inertia = math.pi * D_WIRE**2 / 4, math.pi * D_WIRE**4 / 64
    expected = -WIRE["density"] * area * 9.81 * length**4 / (8 * WIRE["E"] * inertia)
    for tip in tips:
        assert tip == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda b: b.update(wires=[]), "bundle.wires"),
        (lambda b: b.update(wires="12 wires"), "bundle.wires"),
        (lambda b: b.update(wrap="braided"), "bundle.wrap"),
        (lambda b: b.update(sheath=-0.001), "bundle.sheath"),
        (lambda b: b.update(colour="red"), "bundle.colour"),
        (lambda b: b["wires"][0].update(count=0), "bundle.wires[0].count"),
        (lambda b: b["wires"][0].update(count=2.5), "bundle.wires[0].count"),
        (lambda b: b["wires"][0].update(diameter=-1), "bundle.wires[0].diameter"),
        (lambda b: b["wires"][0].pop("material"), "bundle.wires[0].material"),
        (lambda b: b["wires"][0].update(material={"preset": "gold"}), "bundle.wires[0].material"),
        (lambda b: b["wires"][0].update(gauge=18), "bundle.wires[0].gauge"),
        (lambda b: b["wires"].append(7), "bundle.wires[1]"),
    ],
)
def test_bad_bundles_are_refused_by_name(change, field):
    c = bundled()
    change(c["bundle"])
    with pytest.raises(CaseError, match=r"cables\[0\]\." + field.replace("[", r"\[").replace("]", r"\]")):
        parse_case(case(c))


def test_a_bundle_takes_no_material_moduli():
    c = bundled(material={"E": 1e9})
    with pytest.raises(CaseError, match=r"cables\[0\]\.material\.E: with a bundle"):
        parse_case(case(c))
    c = bundled(count=1, length=0.001)
    with pytest.raises(CaseError, match=r"cables\[0\]\.bundle \(its diameter\)"):
        parse_case(case(c))


def _sheet(count, wrap="taped", **covering):
    c = bundled(count, wrap)
    c["bundle"].update(covering)
    return parse_case(case(c)).cables[0]


def test_a_covering_factor_multiplies_the_sum_and_is_reported_with_its_source():
    loose = parse_case(case(bundled(7))).cables[0].section
    taped = _sheet(7, covering_factor=2.5, covering_source="measured")
    assert taped.section.bend_stiffness == pytest.approx(2.5 * loose.bend_stiffness, rel=1e-12)
    assert taped.section.twist_stiffness == pytest.approx(2.5 * loose.twist_stiffness, rel=1e-12)
    assert taped.section.stretch_stiffness == pytest.approx(loose.stretch_stiffness, rel=1e-12)
    result = first(solve(case(bundled(7, "taped") | {"bundle": taped_doc(2.5, "measured")})))
    report = result["bundle"]["covering"]
    assert report["factor"] == 2.5 and report["source"] == "measured" and not report["clamped"]
    assert "covering factor 2.5 (measured)" in result["bundle"]["rule"]
    # assumed unless said otherwise, and kept through case_to_dict
    assumed = case(bundled(7, "taped") | {"bundle": taped_doc(1.5)})
    back = case_to_dict(parse_case(assumed))["cables"][0]["bundle"]
    assert back["covering_factor"] == 1.5 and back["covering_source"] == "assumed"


def taped_doc(factor, source=None):
    doc = {
        "wires": [{"diameter": D_WIRE, "material": dict(WIRE), "count": 7}],
        "wrap": "taped",
        "covering_factor": factor,
    }
    if source:
        doc["covering_source"] = source
    return doc


def test_a_covering_factor_stops_at_the_fully_bonded_bound():
    # seven equal wires: one at the centre, six on a ring; the bound takes their centres spread evenly
    # over the disk of radius rho = (3 d - d) / 2 = d: EI_bond = 7 (EI_w + EA_w d^2 / 4)
    E, d = WIRE["E"], D_WIRE
    EI_w, EA_w = E * math.pi * d**4 / 64, E * math.pi * d**2 / 4
    bound = 7 * (EI_w + EA_w * d * d / 4)
    huge = _sheet(7, covering_factor=1000.0)
    assert huge.section.bend_stiffness == pytest.approx(bound, rel=1e-12)
    assert huge.bundle.covering["clamped"] and bound / (7 * EI_w) == pytest.approx(5.0, rel=1e-12)


@pytest.mark.parametrize(
    "wrap, covering, words",
    [
        ("loose", {"covering_factor": 2.0}, "loose bundle"),
        ("taped", {"covering_factor": 0.5}, "at least 1"),
        ("taped", {"covering_factor": "2"}, "covering_factor"),
        ("taped", {"covering_factor": 2.0, "covering_source": "guessed"}, "measured or assumed"),
        ("taped", {"covering_source": "measured"}, "without a covering_factor"),
    ],
)
def test_bad_covering_factors_are_refused_by_name(wrap, covering, words):
    with pytest.raises(CaseError, match=words):
        _sheet(7, wrap, **covering)
