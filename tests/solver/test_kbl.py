# SPDX-License-Identifier: GPL-3.0-or-later
"""KBL export and import (solver_core/io/kbl*.py). Every file written validates against the published
KBL 2.4 SR-1 schema (tests/data/kbl24_sr1.xsd); read back, random trees of 1-30 branches give the
topology, lengths, wire routes, protections and fixings they were made from; the centre curves' B-spline
basis is scipy's and the fitted curves stay within their tolerance of the solved centre line; malformed
files and options are refused in one line."""

import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.cases import AT_ORIGIN, _points_segments_distance, at, branch, case, connector, wire
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from scipy.interpolate import BSpline

from solver_core import CaseError, kbl_harness, kbl_text, parse_case, read_kbl, solve_case
from solver_core.io.kbl_curves import basis_matrix, clamped_knots, curve_points, fit_centre_curve
from solver_core.io.kbl_read import parse_kbl

SCHEMA = etree.XMLSchema(etree.parse(str(Path(__file__).parents[1] / "data" / "kbl24_sr1.xsd")))
TOLERANCE = 1e-4


def assert_valid(text: str) -> None:
    doc = etree.fromstring(text.encode())
    if not SCHEMA.validate(doc):
        raise AssertionError("; ".join(f"line {e.line}: {e.message}" for e in list(SCHEMA.error_log)[:5]))


# ---------------------------------------------------------------- centre curves


def distance_to_curve(points, dense):
    """The largest distance of ``points`` from a curve sampled densely (the polyline through its samples)."""
    return float(_points_segments_distance(np.asarray(points), dense[:-1], dense[1:]).min(axis=1).max())


@pytest.mark.parametrize("count, degree", [(2, 1), (3, 2), (4, 3), (7, 3), (12, 3), (6, 2)])
def test_the_basis_is_scipys_clamped_uniform_b_spline(count, degree):
    u = np.linspace(0.0, 1.0, 101)
    knots = clamped_knots(count, degree)
    assert len(knots) == count + degree + 1
    reference = BSpline.design_matrix(u, knots, degree).toarray()
    assert np.allclose(basis_matrix(u, count, degree), reference, atol=1e-13)
    control = np.random.default_rng(count).normal(size=(count, 3))
    points = curve_points(control, degree, np.array([0.0, 1.0]))
    assert np.allclose(points, control[[0, -1]])  # clamped: it starts and ends at its end points


def test_a_fitted_curve_stays_within_its_tolerance_of_the_polyline():
    t = np.linspace(0.0, 4 * np.pi, 161)
    helix = np.c_[0.05 * np.cos(t), 0.05 * np.sin(t), 0.02 * t]
    for tolerance in (1e-3, 1e-4, 1e-5):
        control, degree, deviation = fit_centre_curve(helix, tolerance)
        assert degree == 3 and deviation <= tolerance
        assert distance_to_curve(helix, curve_points(control, degree, np.linspace(0.0, 1.0, 20001))) <= tolerance
    assert len(fit_centre_curve(helix, 1e-5)[0]) > len(fit_centre_curve(helix, 1e-3)[0])


def test_a_straight_piece_of_two_points_is_a_line():
    control, degree, deviation = fit_centre_curve(np.array([[0.0, 0, 0], [0.1, 0, 0]]), TOLERANCE)
    assert degree == 1 and len(control) == 2 and deviation == 0.0


# ---------------------------------------------------------------- random trees


def random_tree_case(rng: random.Random, branches: int):
    """A harness whose tree of ``branches`` cables has junctions where two or more cables meet and
    connectors at its leaves, some wires routed leaf to leaf through it, taped bundles, clips and a
    made-up solved result (each cable a bent polyline between its ends). Returns (case document,
    result document, {wire id: (start leaf, end leaf, [(cable, forward)])})."""
    parent = {0: None}
    for k in range(1, branches + 1):
        parent[k] = rng.randrange(k)
    children = {v: [k for k in parent if parent[k] == v] for v in parent}
    degree = {v: len(children[v]) + (parent[v] is not None) for v in parent}
    place = {v: np.array([rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1)]) for v in parent}
    leaves = [v for v in parent if degree[v] == 1]

    # wires from leaf to leaf along the tree's path
    def path(a, b):
        up = [a]
        while parent[up[-1]] is not None:
            up.append(parent[up[-1]])
        down = [b]
        while down[-1] not in up:
            down.append(parent[down[-1]])
        meet = down[-1]
        return up[: up.index(meet) + 1] + down[-2::-1]

    routes = {}
    for k in range(rng.randint(0, 4) if len(leaves) >= 2 else 0):
        a, b = rng.sample(leaves, 2)
        vertices = path(a, b)
        hops = []
        for x, y in zip(vertices, vertices[1:]):
            child = y if parent.get(y) == x else x
            hops.append((f"c{child}", parent[child] == x))  # forward: the wire runs the cable start to end
        routes[f"w{k}"] = (a, b, hops)
    cables, result = [], {}
    for k in range(1, branches + 1):
        a, b = parent[k], k
        direction = place[b] - place[a]
        distance = float(np.linalg.norm(direction))
        ends = []
        for v, side in ((a, "start"), (b, "end")):
            ends.append(at(f"J{v}", direction) if degree[v] > 1 else connector(place[v], direction))
        wires = [wire(w) for w, (_a, _b, hops) in routes.items() if any(c == f"c{k}" for c, _f in hops)]
        c = branch(f"c{k}", 1.2 * distance, ends[0], ends[1], wires or [wire(None, count=rng.randint(1, 3))])
        c["bundle"]["wrap"] = rng.choice(["taped", "loose", "sleeved"])
        if rng.random() < 0.4:
            s = [rng.uniform(0.1, 0.9) * c["length"] for _ in range(rng.randint(1, 2))]
            c["clips"] = [
                {
                    "s": x,
                    "frame": {
                        "position": list(place[a] + direction * x / c["length"]),
                        "tangent": list(direction / distance),
                    },
                }
                for x in sorted(s)
            ]
        cables.append(c)
        n = rng.randint(2, 30)
        u = np.linspace(0.0, 1.0, n + 1)
        bulge = np.cross(direction, [0.3, 0.5, 0.8]) * 0.2 * np.sin(np.pi * u)[:, None]
        nodes = place[a] + u[:, None] * direction + bulge
        length = float(np.sum(np.linalg.norm(np.diff(nodes, axis=0), axis=1)))
        result[f"c{k}"] = {"nodes": nodes.tolist(), "length": length, "converged": rng.random() < 0.9}
    junctions = [{"id": f"J{v}", "position": list(place[v])} for v in parent if degree[v] > 1]
    doc = case(*cables, junctions=junctions)
    return doc, {"steps": [{"cables": result}]}, routes


@pytest.mark.parametrize("seed", range(3))
def test_random_trees_of_1_to_30_branches_read_back_as_written(seed):
    rng = random.Random(seed)
    for _ in range(8):
        doc, result, routes = random_tree_case(rng, rng.randint(1, 30))
        solved = result["steps"][0]["cables"]
        harness = kbl_harness(doc, result)
        text = kbl_text(harness, "tree", TOLERANCE, date="2026-11-30")
        assert_valid(text)
        back = parse_kbl(etree_to_element(text))
        cables = {c["id"]: c for c in doc["cables"]}
        # nodes: every cable end and clip, junctions once
        junctions = {j["id"] for j in doc["junctions"]}
        expected_nodes = set(junctions) | {f"{c} {side}" for c in cables for side in ("start", "end")} - {
            f"{c} {side}" for c, d in cables.items() for side in ("start", "end") if "junction" in d[side]
        }
        expected_nodes |= {f"{c} clip {k + 1}" for c, d in cables.items() for k in range(len(d.get("clips", [])))}
        assert set(back.nodes) == expected_nodes
        for cid, d in cables.items():
            pieces = [s for label, s in back.segments.items() if label.rsplit(" ", 1)[0] == cid]
            assert len(pieces) == len(d.get("clips", [])) + 1
            # lengths: the pieces of a cable add up to its solved length (written to the nanometre)
            assert abs(sum(s.length for s in pieces) - solved[cid]["length"]) < 1e-9 * len(pieces)
            first, last = pieces[0], pieces[-1]
            start = d["start"]["junction"] if "junction" in d["start"] else f"{cid} start"
            end = d["end"]["junction"] if "junction" in d["end"] else f"{cid} end"
            assert (first.start, last.end) == (start, end)
            assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
            assert all(s.data["cable"] == cid for s in pieces)
            assert all(s.data["converged"] == ("true" if solved[cid]["converged"] else "false") for s in pieces)
            covered = d["bundle"]["wrap"] != "loose"
            assert all(s.protections == ([f"{cid} {d['bundle']['wrap']}"] if covered else []) for s in pieces)
            assert [s.fixings for s in pieces] == [[]] + [[f"{cid} clip {k + 1}"] for k in range(len(pieces) - 1)]
            # the centre curves lie within the tolerance of the solved centre line's nodes
            nodes = np.asarray(solved[cid]["nodes"])
            dense = np.vstack([s.curve_points(2001) for s in pieces])
            assert distance_to_curve(nodes, dense) <= TOLERANCE
        for wid, (a, b, hops) in routes.items():
            got = back.wires[wid]
            expected = []
            for cid, forward in hops:
                pieces = sorted(
                    (s for s in back.segments if s.rsplit(" ", 1)[0] == cid), key=lambda s: int(s.rsplit(" ", 1)[1])
                )
                expected += pieces if forward else pieces[::-1]
            ends = [_leaf_label(a, cables), _leaf_label(b, cables)]
            if got["ends"] == ends[::-1]:  # the case names a wire's ends in an order of its own
                expected, ends = expected[::-1], ends[::-1]
            assert (got["segments"], got["ends"]) == (expected, ends)
            assert abs(got["length"] - sum(solved[c]["length"] for c, _f in hops)) < 1e-9


def _leaf_label(v, cables):
    """The connector node of tree vertex v (a leaf): the end of the cable that reaches it, or the start of
    the one that leaves the root."""
    return (
        f"c{v} end"
        if f"c{v}" in cables
        else next(f"{c} start" for c, d in cables.items() if "junction" not in d["start"])
    )


def etree_to_element(text):
    import xml.etree.ElementTree as ET

    return ET.fromstring(text)


# ---------------------------------------------------------------- a solved harness


@pytest.fixture(scope="module")
def solved_y():
    cables = [
        branch("trunk", 0.31, AT_ORIGIN, at("J1", [1, 0, 0]), [wire("a"), wire("b")]),
        branch("left", 0.21, at("J1", [1, 1, 0]), connector([0.42, 0.12, 0.0], [1, 0, 0]), [wire("a")]),
        branch("right", 0.17, at("J1", [1, -1, 0]), connector([0.42, -0.10, 0.0], [1, 0, 0]), [wire("b")]),
    ]
    cables[0]["clips"] = [{"s": 0.105, "frame": {"position": [0.1, 0.0, -0.003], "tangent": [1.0, 0.0, 0.0]}}]
    cables[0]["bundle"]["covering_factor"] = 2.0
    doc = case(*cables, junctions=[{"id": "J1", "position": [0.3, 0.0, 0.0]}])
    return doc, solve_case(parse_case(doc))


def test_a_solved_harness_validates_and_carries_its_stiffness(solved_y, tmp_path):
    doc, result = solved_y
    path = tmp_path / "y.kbl"
    path.write_text(kbl_text(kbl_harness(doc, result), "Y harness", date="2026-11-30"), encoding="utf-8")
    assert_valid(path.read_text(encoding="utf-8"))
    back = read_kbl(str(path))
    solved = result["steps"][0]["cables"]
    trunk = parse_case(doc).cable("trunk")
    assert [s for s in back.segments] == ["trunk 1", "trunk 2", "left 1", "right 1"]
    assert sum(back.segments[s].length for s in ("trunk 1", "trunk 2")) == pytest.approx(
        solved["trunk"]["length"], abs=1e-9
    )
    data = back.segments["trunk 2"].data
    assert float(data["EI_N_m2"]) == trunk.section.bend_stiffness  # exactly: written as the double's repr
    assert float(data["GJ_N_m2"]) == trunk.section.twist_stiffness
    assert float(data["arc_start_mm"]) == pytest.approx(105.0) and float(data["arc_end_mm"]) == pytest.approx(310.0)
    assert back.nodes["J1"][0] == "junction" and back.nodes["trunk clip 1"][0] == "clip"
    assert back.wires["a"]["segments"] == ["trunk 1", "trunk 2", "left 1"]
    assert back.wires["a"]["ends"] == ["trunk start", "left end"]
    assert back.wires["a"]["length"] == pytest.approx(solved["trunk"]["length"] + solved["left"]["length"], abs=1e-9)
    text = path.read_text(encoding="utf-8")
    assert "cable_harness:covering_factor" in text and "<Protection_type>taped</Protection_type>" in text


# ---------------------------------------------------------------- bad input


def good_text():
    doc, result, _routes = random_tree_case(random.Random(5), 4)
    return kbl_text(kbl_harness(doc, result), "t", date="2026-11-30")


def after(mark, text, old, new):
    """``text`` with the first ``old`` after ``mark`` replaced."""
    i = text.index(mark)
    return text[:i] + text[i:].replace(old, new, 1)


def node_coordinate(text, value):
    """``text`` with the first coordinate of the first node's point set to ``value``."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text)
    point = root.find("Node").findtext("Cartesian_point")
    next(e for e in root.findall("Cartesian_point") if e.get("id") == point).find("Coordinates").text = value
    return ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda t: after("<Node ", t, "<Cartesian_point>Cartesian_point_", "<Cartesian_point>nowhere_"), "nowhere"),
        (
            lambda t: t.replace(
                "<Unit_name>mm</Unit_name>\n  <Si_unit_name>metre", "<Unit_name>g</Unit_name>\n  <Si_unit_name>gram", 1
            ),
            "not a length unit",
        ),
        (lambda t: node_coordinate(t, "nan"), "Cartesian_point"),
        (lambda t: node_coordinate(t, "1e999"), "Cartesian_point"),
        (lambda t: node_coordinate(t, "one"), "not a number"),
        (lambda t: t.replace("<Degree>", "<Degree>9", 1), "degree"),
        (lambda t: t[: len(t) // 2], "not XML"),
        (lambda t: t.replace("kbl:KBL_container", "kbl:Other"), "KBL_container"),
    ],
)
def test_malformed_files_are_refused_by_name(tmp_path, change, field):
    path = tmp_path / "bad.kbl"
    path.write_text(change(good_text()), encoding="utf-8")
    with pytest.raises(CaseError, match=field):
        read_kbl(str(path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_damaged_element_is_a_case_error_or_read(data):
    """A text or element changed anywhere: read, or refused with a CaseError (never another exception)."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(GOOD)
    elements = [e for e in root.iter() if e is not root]
    target = data.draw(st.sampled_from(elements))
    action = data.draw(st.sampled_from(["text", "drop", "empty"]))
    if action == "text":
        target.text = data.draw(st.one_of(st.text(max_size=12), st.floats(allow_nan=True).map(str)))
    elif action == "drop":
        for parent in root.iter():
            if target in list(parent):
                parent.remove(target)
                break
    else:
        target.text, target[:] = None, []
    try:
        parse_kbl(root)
    except CaseError as exc:
        assert "\n" not in str(exc)


GOOD = good_text()


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "solver_core", *args], capture_output=True, text=True, timeout=600)


def test_the_command_line_writes_and_reads_kbl(tmp_path, solved_y):
    import json

    doc, result = solved_y
    (tmp_path / "y.json").write_text(json.dumps(doc))
    (tmp_path / "r.json").write_text(json.dumps(result))
    out = run_cli("kbl", str(tmp_path / "y.json"), "--result", str(tmp_path / "r.json"), "-o", str(tmp_path / "y.kbl"))
    assert out.returncode == 0, out.stderr
    assert "4 segments, 2 wires" in out.stdout
    assert_valid((tmp_path / "y.kbl").read_text(encoding="utf-8"))
    read = run_cli("read-kbl", str(tmp_path / "y.kbl"))
    assert read.returncode == 0 and json.loads(read.stdout)["wires"]["b"]["segments"] == [
        "trunk 1",
        "trunk 2",
        "right 1",
    ]
    for bad, says in (
        (["--tolerance", "0"], "--tolerance"),
        (["--step", "3"], "step"),
        (["--result", str(tmp_path / "y.json")], "result"),
    ):
        out = run_cli("kbl", str(tmp_path / "y.json"), "-o", str(tmp_path / "z.kbl"), *bad)
        assert out.returncode == 2 and says in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    out = run_cli("read-kbl", str(tmp_path / "y.json"))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "z.kbl").exists()


# ---------------------------------------------------------------- named connectors


def test_ends_naming_one_connector_share_its_node_and_contacts(tmp_path):
    """Two cables from connector X1 to X2 and X3: one X1 node and occurrence holding both wires' ends;
    the formboard labels the ends by name; the name survives writing the case back."""
    from solver_core import case_to_dict, formboard

    x1 = AT_ORIGIN | {"connector": "X1"}
    a = branch("a", 0.3, x1, connector([0.25, 0.05, 0.0], [1, 0, 0]) | {"connector": "X2"}, [wire(None)])
    b = branch("b", 0.3, x1, connector([0.25, -0.05, 0.0], [1, 0, 0]) | {"connector": "X3"}, [wire(None)])
    doc = case(a, b)
    parsed = parse_case(doc)
    assert parsed.cable("a").connectors == ("X1", "X2")
    assert parse_case(case_to_dict(parsed)).cable("b").connectors == ("X1", "X3")
    result = solve_case(parsed)
    text = kbl_text(kbl_harness(doc, result), "named", date="2026-11-30")
    assert_valid(text)
    path = tmp_path / "named.kbl"
    path.write_text(text, encoding="utf-8")
    back = read_kbl(str(path))
    assert sorted(back.nodes) == ["X1", "X2", "X3"]
    assert back.segments["a 1"].start == back.segments["b 1"].start == "X1"
    assert {w["ends"][0] for w in back.wires.values()} == {"X1"}
    assert text.count("<Contact_points ") == 4 and text.count("<Connector_occurrence ") == 3
    labels = {label for _kind, label in formboard(doc, result).vertices.values()}
    assert labels == {"X1", "X2", "X3"}


@pytest.mark.parametrize(
    "end, says",
    [
        ({"connector": ""}, "connector must be a non-empty text"),
        ({"connector": 7}, "connector must be a non-empty text"),
        ({"connector": "X\n1"}, "control character"),
    ],
)
def test_a_bad_connector_name_is_refused_by_name(end, says):
    doc = case(branch("a", 0.3, AT_ORIGIN | end, connector([0.25, 0.0, 0.0], [1, 0, 0]), [wire(None)]))
    with pytest.raises(CaseError, match=f"cables\\[0\\].start.connector.*{says}|{says}"):
        parse_case(doc)


def test_a_junction_end_naming_a_connector_is_refused():
    trunk = branch("t", 0.3, AT_ORIGIN, at("J1", [1, 0, 0]) | {"connector": "X9"}, [wire(None)])
    leaf = branch("l", 0.2, at("J1", [1, 0, 0]), connector([0.45, 0.0, 0.0], [1, 0, 0]), [wire(None)])
    other = branch("o", 0.2, at("J1", [1, 1, 0]), connector([0.4, 0.1, 0.0], [1, 0, 0]), [wire(None)])
    with pytest.raises(CaseError, match="cables\\[0\\].end.connector: a junction end has no connector"):
        parse_case(case(trunk, leaf, other, junctions=[{"id": "J1", "position": [0.3, 0.0, 0.0]}]))


# ---------------------------------------------------------------- what a fuzz run found


def kbl_of(text, tmp_path, name="f.kbl"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


def kilometres(text, value):
    """``text`` with the first segment's Physical_length given as ``value`` km."""
    unit = '<Unit id="unit_km"><Si_unit_name>metre</Si_unit_name><Si_prefix>kilo</Si_prefix></Unit>'
    text = re.sub(
        r"(<Physical_length [^>]*>\s*<Unit_component>)unit_mm(</Unit_component>\s*<Value_component>)[^<]*",
        rf"\g<1>unit_km\g<2>{value}",
        text,
        count=1,
    )
    return text.replace("</kbl:KBL_container>", unit + "</kbl:KBL_container>")


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda t: t.replace('encoding="UTF-8"', 'encoding="x-bogus"', 1), "not XML"),
        (lambda t: re.sub(r"<Length_value .*?</Length_value>", "", t, count=1, flags=re.S), "no Length_value"),
        (lambda t: after("<Extremities ", t, "<Position_on_wire>0.0<", "<Position_on_wire>abc<"), "not a number"),
        (lambda t: after("<Extremities ", t, "<Position_on_wire>0.0<", "<Position_on_wire>nan<"), "not finite"),
        (lambda t: after("<Routing ", t, "<Routed_wire>Connection_", "<Routed_wire>gone_"), "gone_"),
        (lambda t: kilometres(t, "1e306"), "too large a length"),
    ],
)  # fmt: skip
def test_damaged_files_found_by_a_fuzz_run_are_refused_by_name(tmp_path, change, says):
    seed = next(k for k in range(100) if random_tree_case(random.Random(k), 4)[2])  # a tree with wires
    text = kbl_text(kbl_harness(*random_tree_case(random.Random(seed), 4)[:2]), "t", date="2026-11-30")
    with pytest.raises(CaseError, match=says):
        read_kbl(kbl_of(change(text), tmp_path))


def test_a_pipe_is_refused_before_it_is_read(tmp_path):
    import os

    fifo = tmp_path / "pipe.kbl"
    os.mkfifo(fifo)
    with pytest.raises(CaseError, match="not a regular file"):
        read_kbl(str(fifo))


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda c: c.update(nodes=(np.asarray(c["nodes"]) * 1e200).tolist()), "within 1e"),
        (lambda c: c.update(min_bend_radius=float("nan")), "min_bend_radius"),
        (lambda c: c.update(min_bend_radius=-1.0), "min_bend_radius"),
        (lambda c: c.update(length=5e-324), "length must be a positive length"),
    ],
)
def test_results_that_no_solve_gives_are_refused(change, says):
    doc, result, _routes = random_tree_case(random.Random(4), 3)
    change(result["steps"][0]["cables"]["c1"])
    with pytest.raises(CaseError, match=says):
        kbl_harness(doc, result)


@pytest.mark.parametrize("title", ["A\x01B", "A\ufffeB", "A\udcffB", "x" * 201, ""])
def test_a_title_xml_cannot_hold_is_refused(title):
    from solver_core import board_svg, formboard

    doc, result, _routes = random_tree_case(random.Random(4), 3)
    with pytest.raises(CaseError, match="title"):
        kbl_text(kbl_harness(doc, result), title)
    with pytest.raises(CaseError, match="title"):
        board_svg(formboard(doc, result), title)


def test_a_long_noisy_centre_line_is_several_curves_within_the_tolerance():
    from solver_core.io.kbl_curves import MAX_PIECE_POINTS, fit_centre_curves

    rng = np.random.default_rng(7)
    t = np.linspace(0.0, 1.0, 3001)
    points = np.c_[t, 0.05 * np.sin(9 * t), np.zeros_like(t)] + rng.normal(scale=2e-5, size=(3001, 3))
    curves = fit_centre_curves(points, TOLERANCE)
    assert len(curves) == int(np.ceil(3000 / (MAX_PIECE_POINTS - 1)))
    assert all(deviation <= TOLERANCE for _control, _degree, deviation in curves)
    dense = np.vstack([curve_points(c, d, np.linspace(0.0, 1.0, 400)) for c, d, _dev in curves])
    assert distance_to_curve(points, dense) <= TOLERANCE
    assert np.allclose(dense[0], points[0]) and np.allclose(dense[-1], points[-1])


def test_names_that_look_like_other_nodes_stay_other_nodes(tmp_path):
    """A connector named like another cable's end, a cable named "junction" beside a junction "end": every
    node is its own, with an Id of its own, and the formboard is still a tree."""
    from solver_core import formboard

    plain = branch("power", 0.3, AT_ORIGIN, connector([0.25, 0.05, 0.0], [1, 0, 0]), [wire(None)])
    named = branch(
        "other", 0.3, AT_ORIGIN | {"connector": "power start"}, connector([0.25, -0.05, 0.0], [1, 0, 0]), [wire(None)]
    )
    trunk = branch("junction", 0.3, connector([0.0, 0.3, 0.0], [1, 0, 0]), at("end", [1, 0, 0]), [wire(None)])
    legs = [
        branch(f"leg{k}", 0.2, at("end", [1, y, 0]), connector([0.45, 0.3 + y, 0.0], [1, 0, 0]), [wire(None)])
        for k, y in ((1, 0.1), (2, -0.1))
    ]
    doc = case(plain, named, trunk, *legs, junctions=[{"id": "end", "position": [0.3, 0.3, 0.0]}])
    result = solve_case(parse_case(doc))
    harness = kbl_harness(doc, result)
    labels = [n.label for n in harness.nodes.values()]
    assert len(labels) == len(set(labels)) == 2 + 2 + 1 + 1 + 2  # power x2, other's end, junction trunk x1 + J, legs
    back = read_kbl(kbl_of(kbl_text(harness, "names", date="2026-11-30"), tmp_path))
    assert len(back.nodes) == len(labels) and "power start #2" in back.nodes
    formboard(doc, result)  # a tree: no loop through "junction end"
