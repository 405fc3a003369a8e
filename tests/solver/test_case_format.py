# SPDX-License-Identifier: GPL-3.0-or-later
"""Case validation (every bad field named), round trips, materials and the command line."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.cases import cable, case
from helpers.obstacles import box

from solver_core import PRESETS, CaseError, case_to_dict, parse_case, section_stiffness, solve_case

ROOT = Path(__file__).resolve().parents[2]


def _with(path, value, base=None):
    """A valid case with one field (dotted path, list indices as ints) replaced or removed."""
    doc = base or case(
        cable(
            end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
            clips=[
                {
                    "s": 0.1,
                    "kind": "fixed",
                    "length": 0.01,
                    "frame": {"position": [0.08, 0, 0.01], "tangent": [1, 0, 0]},
                }
            ],
        )
    )
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


BAD = [
    (("cables", 0, "length"), 0.0, "cables[0].length"),
    (("cables", 0, "length"), -1.0, "cables[0].length"),
    (("cables", 0, "diameter"), 0.0, "cables[0].diameter"),
    (("cables", 0, "diameter"), "thick", "cables[0].diameter"),
    (("cables", 0, "material", "E"), -5.0, "cables[0].material.E"),
    (("cables", 0, "material", "EI"), 0.0, "cables[0].material.EI"),
    (("cables", 0, "material", "density"), KeyError, "cables[0].material needs density"),
    (("cables", 0, "material", "preset"), "unobtainium", "cables[0].material.preset"),
    (("cables", 0, "segments"), 1, "cables[0].segments"),
    (("cables", 0, "segments"), 10.5, "cables[0].segments"),
    (("cables", 0, "start", "tangent"), [0, 0, 0], "cables[0].start.tangent"),
    (("cables", 0, "start", "tangent"), [2, 0, 0], "cables[0].start.tangent"),
    (("cables", 0, "start", "normal"), [1, 0, 0], "cables[0].start.normal must be perpendicular"),
    (("cables", 0, "start", "position"), [0, 0], "cables[0].start.position"),
    (("cables", 0, "end", "position"), [0.5, 0, 0], "start and end of cable 'W1' are"),
    (("cables", 0, "clips", 0, "s"), 0.4, "cables[0].clips[0].s"),
    (("cables", 0, "clips", 0, "s"), 0.004, "cables[0].clips[0].s"),
    (("cables", 0, "clips", 0, "kind"), "glued", "cables[0].clips[0].kind"),
    (("cables", 0, "clips", 0, "length"), -0.01, "cables[0].clips[0].length"),
    (("cables", 0, "clips", 0, "frame", "position"), [0.3, 0, 0], "clips[0] of cable 'W1' are"),
    (("cables", 0, "colour"), "red", "cables[0].colour is not a known key"),
    (("cables", 0, "material", "youngs"), 1e9, "cables[0].material.youngs is not a known material key"),
    (("gravity",), [0, 0, "down"], "gravity[2]"),
    (("format",), "cable-harness-case/9", "case.format"),
    (("solver",), {"model": "cosserat_xpbd"}, "solver.model 'cosserat_xpbd' is not available; use one of"),
    (("solver",), {"tolerance": 0}, "solver.tolerance"),
    (("solver",), {"max_iterations": 0}, "solver.max_iterations"),
    (("steps",), [{"cables": {"W9": {}}}], "steps[0].cables.W9: there is no cable"),
    (
        ("steps",),
        [{"cables": {"W1": {"clips": {"3": {"frame": {"position": [0, 0, 0], "tangent": [1, 0, 0]}}}}}}],
        "steps[0].cables.W1.clips.3",
    ),
    (
        ("steps",),
        [{"cables": {"W1": {"end": {"position": [1.0, 0, 0], "tangent": [1, 0, 0]}}}}],
        "steps[0].cables.W1: start and end",
    ),
    (("obstacles",), [{"type": "cube"}], "obstacles[0].type"),
    (
        ("obstacles",),
        [{"type": "mesh", "vertices": [[0, 0, 0]], "triangles": [[0, 1, 2]]}],
        "obstacles[0].triangles refers to a vertex index",
    ),
    (("contact",), {"friction_static": -0.1}, "contact.friction_static"),
]


@pytest.mark.parametrize("path,value,message", BAD, ids=[m for _, _, m in BAD])
def test_invalid_field_is_rejected_with_its_name(path, value, message):
    with pytest.raises(CaseError) as err:
        parse_case(_with(path, value))
    assert message in str(err.value)


def test_duplicate_cable_ids_are_rejected():
    with pytest.raises(CaseError, match=r"cables\[1\].id 'W1' is used twice"):
        parse_case(case(cable(), cable()))


def test_a_mesh_obstacle_keeps_its_name_and_refuses_one_that_is_not_text():
    mesh = {"type": "mesh", "vertices": [[0, 0, -1], [1, 0, -1], [0, 1, -1]], "triangles": [[0, 1, 2]]}
    assert parse_case(case(obstacles=[dict(mesh, name="bracket")])).obstacles[0]["name"] == "bracket"
    assert "name" not in parse_case(case(obstacles=[mesh])).obstacles[0]
    with pytest.raises(CaseError, match=r"obstacles\[0\]\.name must be a string, got 7"):
        parse_case(case(obstacles=[dict(mesh, name=7)]))


def test_clips_that_overlap_along_the_cable_are_rejected():
    clip = {"s": 0.1, "length": 0.02, "frame": {"position": [0.1, 0, 0], "tangent": [1, 0, 0]}}
    with pytest.raises(CaseError, match="overlaps"):
        parse_case(
            case(cable(clips=[clip, dict(clip, s=0.11, frame={"position": [0.11, 0, 0], "tangent": [1, 0, 0]})]))
        )


def test_case_round_trips_through_its_document():
    doc = _with(
        ("steps",), [{"cables": {"W1": {"end": {"position": [0.19, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}}}}]
    )
    doc["cables"][0]["loads"] = [{"s": 0.2, "force": [0, 0, -1.0], "moment": [0, 0.1, 0]}]
    doc["cables"][0]["route"] = [[0, 0, 0], [0.1, 0, -0.05], [0.2, 0, 0]]
    first = parse_case(doc)
    again = parse_case(json.loads(json.dumps(case_to_dict(first))))
    assert case_to_dict(again) == case_to_dict(first)
    assert again.cables[0].section == first.cables[0].section


def test_tangents_rounded_by_cad_export_are_accepted_and_normalised():
    c = parse_case(case(cable(start={"position": [0, 0, 0], "tangent": [0.7071, 0.7071, 0]}))).cables[0]
    assert np.linalg.norm(c.start.tangent) == pytest.approx(1.0, abs=1e-15)


class TestMaterials:
    def test_solid_round_section_relations(self):
        # Lv 2017, Eqs. 18-27: EA, EI = E pi d^4/64, GJ = G pi d^4/32 with G = E / 2(1 + nu)
        E, nu, rho, d = 126e6, 0.3, 1500.0, 0.004
        s = section_stiffness({"E": E, "nu": nu, "density": rho}, d)
        G = E / (2 * (1 + nu))
        assert s.stretch_stiffness == pytest.approx(E * math.pi * d**2 / 4, rel=1e-14)
        assert s.bend_stiffness == pytest.approx(E * math.pi * d**4 / 64, rel=1e-14)
        assert s.twist_stiffness == pytest.approx(G * math.pi * d**4 / 32, rel=1e-14)
        assert s.linear_density == pytest.approx(rho * math.pi * d**2 / 4, rel=1e-14)
        kappa = 6 * (1 + nu) / (7 + 6 * nu)
        assert s.shear_stiffness == pytest.approx(kappa * G * math.pi * d**2 / 4, rel=1e-14)

    def test_shear_modulus_given_instead_of_poisson(self):
        s = section_stiffness({"E": 2e9, "G": 0.5e9, "density": 1000.0}, 0.01)
        assert s.twist_stiffness == pytest.approx(0.5e9 * math.pi * 0.01**4 / 32)

    def test_overrides_win(self):
        s = section_stiffness(
            {"E": 1e9, "nu": 0.3, "density": 1000, "EI": 0.5, "GJ": 0.25, "EA": 99.0, "linear_density": 0.2}, 0.004
        )
        assert (s.bend_stiffness, s.twist_stiffness, s.stretch_stiffness, s.linear_density) == (0.5, 0.25, 99.0, 0.2)

    def test_presets_resolve_and_cite_a_source(self):
        for name, preset in PRESETS.items():
            s = section_stiffness({"preset": name}, 0.004)
            assert s.bend_stiffness > 0 and s.linear_density > 0
            assert preset.source
        lv = section_stiffness({"preset": "lv2017_harness"}, 0.004)
        assert lv.linear_density == pytest.approx(0.1)  # 30 g over 300 mm
        assert lv.bend_stiffness == pytest.approx(126e6 * math.pi * 0.004**4 / 64)


class TestCommandLine:
    def _run(self, *args):
        return subprocess.run([sys.executable, "-m", "solver_core", *args], cwd=ROOT, capture_output=True, text=True)

    def test_help_explains_the_command(self):
        out = self._run("--help")
        assert out.returncode == 0 and "solve" in out.stdout
        out = self._run("solve", "--help")
        assert out.returncode == 0 and "RESULT" in out.stdout.upper()

    def test_solve_writes_a_result_document(self, tmp_path):
        case_file = tmp_path / "case.json"
        case_file.write_text(json.dumps(case(cable(segments=20))))
        out_file = tmp_path / "result.json"
        run = self._run("solve", str(case_file), "-o", str(out_file))
        assert run.returncode == 0, run.stderr
        result = json.loads(out_file.read_text())
        assert result["format"] == "cable-harness-result/1"
        c = result["steps"][0]["cables"]["W1"]
        assert len(c["nodes"]) == 21 and len(c["directors"]) == 20
        assert c["min_bend_radius"] > 0 and c["converged"] is True
        for key in (
            "length",
            "max_twist_rate",
            "end_forces",
            "clip_forces",
            "contacts",
            "iterations",
            "residual",
            "energy",
            "solve_ms",
        ):
            assert key in c

    def test_invalid_case_exits_non_zero_with_one_line_naming_the_field(self, tmp_path):
        case_file = tmp_path / "case.json"
        case_file.write_text(json.dumps(case(cable(diameter=-0.004))))
        run = self._run("solve", str(case_file))
        assert run.returncode == 2
        assert run.stderr.strip().count("\n") == 0 and "cables[0].diameter" in run.stderr

    def test_unreadable_and_malformed_files(self, tmp_path):
        assert "cannot read case file" in self._run("solve", str(tmp_path / "missing.json")).stderr
        bad = tmp_path / "bad.json"
        bad.write_text("{not json")
        run = self._run("solve", str(bad))
        assert run.returncode == 2 and "not valid JSON" in run.stderr

    def test_non_converged_case_exits_one_and_still_writes_a_result(self, tmp_path):
        case_file = tmp_path / "case.json"
        doc = case(
            cable(end={"position": [0.2, 0.05, 0.0], "tangent": [0, 1, 0], "normal": [0, 0, 1]}),
            solver={"max_iterations": 1},
        )
        case_file.write_text(json.dumps(doc))
        out_file = tmp_path / "r.json"
        run = self._run("solve", str(case_file), "-o", str(out_file), "-q")
        assert run.returncode == 1
        c = json.loads(out_file.read_text())["steps"][0]["cables"]["W1"]
        assert c["converged"] is False and "last good state" in c["message"]


def test_solver_core_never_imports_blender():
    code = (
        "import sys, solver_core, solver_core.io.cli; print(any(m.split('.')[0] in ('bpy', 'mathutils', 'bmesh') "
        "for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    import ast

    for path in (ROOT / "solver_core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            for name in names:
                assert name.split(".")[0] not in ("bpy", "mathutils", "bmesh", "gpu"), path
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert not node.module.startswith("solver_core"), f"{path}: use relative imports inside solver_core"


def test_an_allowed_bend_radius_is_carried_through_parse_and_write():
    doc = case(cable(allowed_bend_radius=0.025))
    spec = parse_case(doc)
    assert spec.cables[0].allowed_bend_radius == 0.025
    assert case_to_dict(spec)["cables"][0]["allowed_bend_radius"] == 0.025
    assert parse_case(case(cable())).cables[0].allowed_bend_radius is None


@pytest.mark.parametrize("bad", [0.0, -1.0, "5", float("nan")])
def test_a_bad_allowed_bend_radius_is_refused_by_name(bad):
    with pytest.raises(CaseError, match="allowed_bend_radius"):
        parse_case(case(cable(allowed_bend_radius=bad)))


def _mounted_case(tangent=(0.0, 0.0, 1.0), height=0.0, mount="Device"):
    """A cable leaving a connector on the top face (z = 0) of a named box obstacle."""
    device = {**box((-0.1, -0.1, -0.1), (0.1, 0.1, 0.0)), "name": "Device"}
    normal = [1.0, 0.0, 0.0] if abs(tangent[0]) < 0.9 else [0.0, 1.0, 0.0]
    start = {"position": [0.0, 0.0, height], "tangent": list(tangent), "normal": normal, "mounted_on": mount}
    end = {"position": [0.3, 0.0, 0.15], "tangent": [0.0, 0.0, -1.0], "normal": [1.0, 0.0, 0.0]}
    return case(cable(length=0.45, start=start, end=end), obstacles=[device])


def test_a_connector_mounted_on_a_mesh_round_trips_and_leaves_its_face():
    parsed = parse_case(_mounted_case())
    assert parsed.cables[0].start_mount == "Device"
    written = case_to_dict(parsed)
    assert written["cables"][0]["start"]["mounted_on"] == "Device"
    assert set(written["obstacles"][0]) == {"type", "vertices", "triangles", "name"}
    assert parse_case(written).cables[0].start_mount == "Device"
    result = solve_case(parsed)["steps"][0]["cables"]["W1"]
    assert result["converged"], result.get("message")


def test_mounted_on_is_checked():
    with pytest.raises(CaseError, match=r"cables\[0\]\.start\.mounted_on 'Bracket' names no mesh obstacle"):
        parse_case(_mounted_case(mount="Bracket"))
    with pytest.raises(CaseError, match=r"cables\[0\]\.start: its outlet points into obstacle 'Device'.*turn"):
        parse_case(_mounted_case(tangent=(0.0, 0.0, -1.0)))
    # farther from the mesh than it could sit on it: no zone, nothing refused
    far = parse_case(_mounted_case(tangent=(0.0, 0.0, -1.0), height=0.05))
    assert "mount_zones" not in far.obstacles[0]
