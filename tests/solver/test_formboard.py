# SPDX-License-Identifier: GPL-3.0-or-later
"""The formboard (solver_core/io/formboard.py): a solved harness laid flat. Runs on the board are as
long as the solved centre lines (read back from the SVG's coordinates), no two runs cross on random
trees of 1-30 branches (checked by an exact segment test that is itself checked on crossings made on
purpose), clips sit at their arc positions, wires are cut to the lengths of the runs they follow, and
the command line writes the drawing or refuses in one line."""

import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from helpers.cases import AT_ORIGIN, at, branch, cable, case, connector, wire

from solver_core import CaseError, parse_case, solve_case
from solver_core.io.formboard import board_svg, formboard
from solver_core.io.formboard_layout import Run, lay_out, runs_cross

SVG = "{http://www.w3.org/2000/svg}"


def y_harness():
    """A taped trunk from a connector to J1 and two branches on to connectors; wire "a" runs trunk >
    left, wire "b" trunk > right."""
    cables = [
        branch("trunk", 0.31, AT_ORIGIN, at("J1", [1, 0, 0]), [wire("a"), wire("b")]),
        branch("left", 0.21, at("J1", [1, 1, 0]), connector([0.42, 0.12, 0.0], [1, 0, 0]), [wire("a")]),
        branch("right", 0.17, at("J1", [1, -1, 0]), connector([0.42, -0.10, 0.0], [1, 0, 0]), [wire("b")]),
    ]
    cables[0]["clips"] = [{"s": 0.105, "frame": {"position": [0.1, 0.0, -0.003], "tangent": [1.0, 0.0, 0.0]}}]
    return case(*cables, junctions=[{"id": "J1", "position": [0.3, 0.0, 0.0]}])


@pytest.fixture(scope="module")
def solved():
    doc = y_harness()
    return doc, solve_case(parse_case(doc))


def test_runs_on_the_board_are_the_solved_lengths(solved):
    doc, result = solved
    board = formboard(doc, result)
    lengths = {cid: c["length"] for cid, c in result["steps"][0]["cables"].items()}
    svg = ET.fromstring(board_svg(board, "Y", date="2026-11-29"))
    lines = [e for e in svg.iter(f"{SVG}line") if "run" in e.get("class", "").split()]
    assert sorted(e.get("data-cable") for e in lines) == sorted(lengths)
    for e in lines:
        x1, y1, x2, y2 = (float(e.get(k)) for k in ("x1", "y1", "x2", "y2"))
        drawn_mm = np.hypot(x2 - x1, y2 - y1)
        assert abs(drawn_mm - 1e3 * lengths[e.get("data-cable")]) < 1e-5  # the drawing is in mm, 1:1
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    for cid, length in lengths.items():  # dimensioned to the nearest mm
        assert any(t.startswith(f"{cid}: {round(1e3 * length)} mm") for t in texts), (cid, texts)
    assert svg.get("width").endswith("mm") and not board.crossings()


def test_clips_coverings_and_wires_are_on_the_board(solved):
    doc, result = solved
    board = formboard(doc, result)
    trunk = next(r for r in board.runs if r.cable == "trunk")
    assert trunk.clips == [0.105] and trunk.covering == "taped" and trunk.wires == ["a", "b"]
    lengths = {r.cable: r.length for r in board.runs}
    cut = {w[0]: w[4] for w in board.wires}
    assert cut == pytest.approx({"a": lengths["trunk"] + lengths["left"], "b": lengths["trunk"] + lengths["right"]})
    svg = board_svg(board, "Y", date="2026-11-29")
    assert f"a: trunk start to left end via trunk &gt; left: cut {round(1e3 * cut['a'])} mm" in svg
    # the clip's mark crosses the trunk at its share of the case's length along the drawn run
    root = ET.fromstring(svg)
    line = next(e for e in root.iter(f"{SVG}line") if e.get("data-cable") == "trunk")
    a = np.array([float(line.get("x1")), float(line.get("y1"))])
    b = np.array([float(line.get("x2")), float(line.get("y2"))])
    mark = next(e for e in root.iter(f"{SVG}line") if e.get("class") == "clip")
    middle = 0.5 * np.array(
        [float(mark.get("x1")) + float(mark.get("x2")), float(mark.get("y1")) + float(mark.get("y2"))]
    )
    assert np.allclose(middle, a + (b - a) * 0.105 / 0.31, atol=1e-3)


def random_tree(rng, branches):
    vertices, runs = ["v0"], []
    for k in range(1, branches + 1):
        parent = rng.choice(vertices)
        vertices.append(f"v{k}")
        runs.append(Run(f"c{k}", parent, f"v{k}", rng.choice([rng.uniform(0.005, 0.05), rng.uniform(0.05, 3.0)])))
    return vertices, runs


@pytest.mark.parametrize("seed", range(4))
def test_no_two_runs_cross_on_random_trees_of_1_to_30_branches(seed):
    rng = random.Random(seed)
    for _ in range(60):
        vertices, runs = random_tree(rng, rng.randint(1, 30))
        positions = lay_out(vertices, runs, 0.1)
        for r in runs:
            assert abs(np.linalg.norm(positions[r.a] - positions[r.b]) - r.length) < 1e-12
        assert runs_cross(positions, runs) == []


def test_several_trees_are_laid_apart_without_crossing():
    rng = random.Random(7)
    vertices, runs = [], []
    for t in range(4):
        v, r = random_tree(rng, rng.randint(1, 8))
        vertices += [f"{t}{x}" for x in v]
        runs += [Run(f"{t}{x.key}", f"{t}{x.a}", f"{t}{x.b}", x.length) for x in r]
    assert runs_cross(lay_out(vertices, runs, 0.05), runs) == []


def test_the_crossing_check_sees_crossings_and_overlaps():
    p = {k: np.array(v, float) for k, v in {"a": (0, 0), "b": (1, 1), "c": (0, 1), "d": (1, 0), "e": (2, 2)}.items()}
    assert runs_cross(p, [Run("ab", "a", "b", 1), Run("cd", "c", "d", 1)]) == [("ab", "cd")]
    assert runs_cross(p, [Run("ab", "a", "b", 1), Run("ae", "a", "e", 1)]) == [("ab", "ae")]  # along each other
    assert runs_cross(p, [Run("ab", "a", "b", 1), Run("be", "b", "e", 1)]) == []  # end to end, straight on
    assert runs_cross(p, [Run("ac", "a", "c", 1), Run("db", "d", "b", 1)]) == []  # parallel, apart


def test_a_loop_is_refused_by_name():
    with pytest.raises(ValueError, match="loop"):
        lay_out(["a", "b"], [Run("x", "a", "b", 1.0), Run("y", "b", "a", 1.0)], 0.1)


def test_single_cables_are_boards_of_one_run_each():
    doc = case(cable(id="W1"), cable(id="W2", start={"position": [0, 0.1, 0], "tangent": [1, 0, 0]}))
    board = formboard(doc)
    assert len(board.runs) == 2 and not board.crossings()
    assert {kind for kind, _ in board.vertices.values()} == {"connector", "free end"}


def test_the_command_line_writes_the_board_or_refuses_in_one_line(tmp_path, solved):
    import json

    doc, _ = solved
    path = tmp_path / "y.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "board.svg"

    def run(*args):
        return subprocess.run([sys.executable, "-m", "solver_core", "formboard", *args], capture_output=True, text=True)

    done = run(str(path), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert ET.parse(out).getroot().tag == f"{SVG}svg"
    for args, words in (
        ((str(path), "-o", str(tmp_path / "board.pdf")), "SVG .* or DXF"),
        ((str(path), "-o", str(out), "--step", "3"), "step must be an integer from 0 to 0"),
        ((str(tmp_path / "none.json"), "-o", str(out)), "none.json"),
        ((str(path), "-o", str(out), "--result", str(path)), "result: no steps"),
        ((str(path), "-o", str(out), "--step", "1.5"), "invalid int value"),
    ):
        refused = run(*args)
        assert refused.returncode == 2 and re.search(words, refused.stderr), refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


def test_the_dxf_board_has_the_solved_lengths_and_dimensions_them(solved, tmp_path):
    """The DXF (ezdxf): mm units, every run a LINE at its solved length, an aligned DIMENSION that a CAD
    program measures as the same length and labels to the nearest mm, the clip's mark at its share of
    the trunk, and an audit without errors; the command line writes it too."""
    import io
    import json

    ezdxf = pytest.importorskip("ezdxf")
    from solver_core.io.formboard_dxf import board_dxf

    doc, result = solved
    board = formboard(doc, result)
    dxf = ezdxf.read(io.StringIO(board_dxf(board, "Y", date="2026-11-30")))
    assert not dxf.audit().has_errors and dxf.units == 4  # millimetres
    lengths = {cid: c["length"] for cid, c in result["steps"][0]["cables"].items()}
    msp = dxf.modelspace()
    runs = sorted(e.dxf.start.distance(e.dxf.end) for e in msp.query('LINE[layer=="RUNS"]'))
    assert runs == pytest.approx(sorted(1e3 * v for v in lengths.values()), abs=1e-6)
    dimensions = msp.query("DIMENSION")
    assert sorted(d.get_measurement() for d in dimensions) == pytest.approx(runs, abs=1e-6)
    shown = sorted(int(e.text) for d in dimensions for e in dxf.blocks.get(d.dxf.geometry) if e.dxftype() == "MTEXT")
    assert shown == sorted(round(1e3 * v) for v in lengths.values())
    trunk = next(r for r in board.runs if r.cable == "trunk")
    a, b = (board.positions[v] * 1e3 for v in (trunk.start, trunk.end))
    (mark,) = msp.query('LINE[layer=="CLIPS"]')
    middle = 0.5 * (np.array(mark.dxf.start)[:2] + np.array(mark.dxf.end)[:2])
    assert np.allclose(middle, a + (b - a) * 0.105 / 0.31, atol=1e-6)
    path = tmp_path / "y.json"
    path.write_text(json.dumps(doc))
    done = subprocess.run(
        [sys.executable, "-m", "solver_core", "formboard", str(path), "-o", str(tmp_path / "b.dxf")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert len(ezdxf.readfile(str(tmp_path / "b.dxf")).modelspace().query("DIMENSION")) == 3


def test_without_ezdxf_a_dxf_board_is_refused_in_one_line(solved, monkeypatch):
    from solver_core.io.formboard_dxf import board_dxf, dxf_available

    monkeypatch.setitem(sys.modules, "ezdxf", None)  # as in a Python without it
    assert not dxf_available()
    with pytest.raises(CaseError, match="ezdxf"):
        board_dxf(formboard(*solved), "Y")


def test_a_result_of_another_case_is_refused_by_name(solved):
    _, result = solved
    with pytest.raises(CaseError, match="no cable 'W1'"):
        formboard(case(cable()), result)


@pytest.mark.parametrize(
    "steps, words",
    [
        ([1], r"no steps\[0\]\.cables"),
        ([{"cables": {"trunk": {}}}], r"cables\.trunk\.length must be a positive length"),
        ([{"cables": {"trunk": {"length": -1.0, "converged": True}}}], "positive length"),
        ([{"cables": {"trunk": {"length": 1e308, "converged": True}}}], "positive length"),
        ([{"cables": {"trunk": {"length": 0.3, "converged": "yes"}}}], "converged must be true or false"),
        ([{"cables": {"trunk": None}}], "must be a cable's result"),
    ],
)
def test_a_malformed_result_is_refused_by_name(steps, words):
    with pytest.raises(CaseError, match=words):
        formboard(y_harness(), {"steps": steps})
