# SPDX-License-Identifier: GPL-3.0-or-later
"""The Variation Study panel: variations become the right sweep entries (SI, about the scene's values),
a study runs in the background and its rows equal direct solves, its summary and envelope are shown,
failed variants are counted as failures and left out of the envelope, bad input is refused by name,
and a cancelled study resumes."""

import csv
import json
import os
import signal
import sys
import time

import bpy
import numpy as np
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import StandIn, simple_harness


class _Extension:
    """The extension's modules by short name, looked up once it is enabled (after collection)."""

    NAMES = {
        "study_runner": "cable_harness.study_runner",
        "study_ops": "cable_harness.operators.study",
        "variation_study": "cable_harness.variation_study",
        "ui": "cable_harness.ui",
        "overlay": "cable_harness.overlay",
        "solver": "solver_core",
    }

    def __getattr__(self, name):
        return sys.modules[f"{MODULE}.{self.NAMES[name]}"]


ext = _Extension()


def add_variation(cable, quantity, distribution="UNIFORM", tolerance=0.002, percent=10.0, clip=1, axis="Z"):
    settings = bpy.context.scene.cable_harness
    v = settings.variations.add()
    v.cable, v.quantity, v.distribution = cable, quantity, distribution
    v.tolerance, v.tolerance_percent, v.clip_number, v.axis = tolerance, percent, clip, axis
    return v


def run_study(folder, samples=3, workers=1, timeout=600):
    settings = bpy.context.scene.cable_harness
    settings.study_samples, settings.study_workers, settings.study_folder = samples, workers, str(folder)
    assert bpy.ops.cable_harness.run_study() == {"FINISHED"}
    assert ext.study_runner.wait(timeout), ext.study_runner.message()
    # the envelope is shown when the study's result is read back (no call of show_study here)
    return ext.study_runner.result()


def test_each_variation_is_a_sweep_entry_about_the_scene_value_in_si():
    start, end, clip, cable = simple_harness(unit_scale=0.001)  # a millimetre scene
    s = cable.cable_harness
    s.material = "CUSTOM"
    s.youngs_modulus, s.density = 200.0, 1400.0
    add_variation(cable, "LENGTH", "UNIFORM", tolerance=2.0)
    add_variation(cable, "CLIP_POSITION", "CORNERS", tolerance=3.0, axis="Z")
    add_variation(cable, "CLIP_ARC", "NORMAL", tolerance=1.5)
    add_variation(cable, "END_POSITION", "UNIFORM", tolerance=1.0, axis="Y")
    add_variation(cable, "DIAMETER", "NORMAL", tolerance=0.1)
    add_variation(cable, "YOUNGS_MODULUS", "UNIFORM", percent=10.0)
    add_variation(cable, "MASS", "CORNERS", percent=5.0)
    bpy.context.scene.cable_harness.study_samples = 7
    doc = ext.variation_study.sweep_document(bpy.context.scene)
    c = doc["case"]["cables"][0]
    L, clip_z, arc = s.length * 0.001, c["clips"][0]["frame"]["position"][2], c["clips"][0]["s"]
    assert clip_z == pytest.approx(-0.06, abs=1e-6) and arc == pytest.approx(s.clips[0].s * 0.001)
    want = [
        {"path": "cables[0].length", "uniform": [L - 0.002, L + 0.002]},
        {"path": "cables[0].clips[0].frame.position[2]", "values": [clip_z - 0.003, clip_z, clip_z + 0.003]},
        {"path": "cables[0].clips[0].s", "normal": [arc, 0.0015]},
        {"path": "cables[0].end.position[1]", "uniform": [-0.001, 0.001]},
        {"path": "cables[0].diameter", "normal": [c["diameter"], 0.0001]},
        {"path": "cables[0].material.E", "uniform": [0.9 * 200e6, 1.1 * 200e6]},
        {"path": "cables[0].material.density", "values": [0.95 * 1400.0, 1400.0, 1.05 * 1400.0]},
    ]
    assert [v["path"] for v in doc["vary"]] == [w["path"] for w in want]
    for got, w in zip(doc["vary"], want):
        key = next(k for k in w if k != "path")
        assert list(got) == ["path", key]
        np.testing.assert_allclose(got[key], w[key], rtol=1e-6, atol=1e-9)
    assert doc["samples"] == 7 and "route" not in c
    sweep = ext.solver.parse_sweep(doc)  # the solver's own check of the document
    assert len(sweep.variants()) == 7 * 3 * 3


def test_a_preset_material_varies_the_value_its_preset_gives():
    *_, cable = simple_harness()
    cable.cable_harness.material = "lv2017_harness"  # E 126 MPa and a mass per length, no density
    add_variation(cable, "MASS", "UNIFORM", percent=20.0)
    add_variation(cable, "YOUNGS_MODULUS", "NORMAL", percent=5.0)
    doc = ext.variation_study.sweep_document(bpy.context.scene)
    assert doc["vary"][0]["path"] == "cables[0].material.linear_density"
    np.testing.assert_allclose(doc["vary"][0]["uniform"], [0.08, 0.12])
    assert doc["vary"][1]["path"] == "cables[0].material.E"
    np.testing.assert_allclose(doc["vary"][1]["normal"], [126e6, 6.3e6])


@pytest.mark.parametrize(
    "setup,message",
    [
        (lambda cable: None, "the study has no variation"),
        (lambda cable: add_variation(None, "LENGTH"), "variation 1: choose one of the scene's cables"),
        (lambda cable: add_variation(cable, "CLIP_ARC", clip=3), "variation 1: cable 'Cable' has no clip 3"),
        (lambda cable: add_variation(cable, "LENGTH", tolerance=0.0), "variation 1: the tolerance is zero"),
        (
            lambda cable: (add_variation(cable, "LENGTH"), add_variation(cable, "LENGTH", "NORMAL")),
            "variation 2: varies the same value as an earlier variation",
        ),
    ],
)
def test_a_study_that_cannot_be_built_is_refused_by_name(tmp_path, setup, message):
    *_, cable = simple_harness()
    cable.name = "Cable"
    setup(cable)
    bpy.context.scene.cable_harness.study_folder = str(tmp_path)
    op = StandIn(ext.study_ops.CABLE_HARNESS_OT_run_study)
    assert op.execute(bpy.context) == {"CANCELLED"}
    assert op.reports[0][0] == {"ERROR"}
    assert op.reports[0][1].startswith(message), op.reports
    assert not ext.study_runner.running() and not os.listdir(tmp_path)


def read_rows(folder):
    with open(os.path.join(folder, "results.csv"), newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_study_runs_in_the_background_and_its_rows_equal_direct_solves(tmp_path):
    start, end, clip, cable = simple_harness(segments=24)
    L = cable.cable_harness.length
    add_variation(cable, "LENGTH", "UNIFORM", tolerance=0.002)
    add_variation(cable, "CLIP_POSITION", "CORNERS", tolerance=0.003, axis="Z")
    study = run_study(tmp_path, samples=2, workers=2)  # forked workers: Blender's Python has no Dask
    summary = study["summary"]
    assert summary["variants"] == summary["converged"] == 6 and summary["failed"] == []
    (folder,) = [tmp_path / d for d in os.listdir(tmp_path)]
    assert folder.name.startswith("study-") and ext.study_runner.folder() == str(folder)
    rows = read_rows(folder)
    # each row is the solve of its own case: the exported base case with the row's values set
    base = json.loads((folder / "study.json").read_text())["case"]
    for row in rows[:2]:
        doc = json.loads(json.dumps(base))
        doc["cables"][0]["length"] = float(row["cables[0].length"])
        doc["cables"][0]["clips"][0]["frame"]["position"][2] = float(row["cables[0].clips[0].frame.position[2]"])
        want = ext.solver.solve_case(doc)["steps"][-1]["cables"][cable.name]
        assert float(row[f"{cable.name}.length"]) == pytest.approx(want["length"], rel=1e-9)
        with np.load(folder / "shapes" / f"{row['variant']}.npz") as shapes:
            np.testing.assert_allclose(shapes["c0"], np.array(want["nodes"]), atol=1e-12)
    outputs = study["cables"][cable.name]
    lengths = [float(r["cables[0].length"]) for r in rows]
    assert L - 0.002 <= min(lengths) < max(lengths) <= L + 0.002
    assert outputs["length"]["min"] == pytest.approx(min(lengths), rel=1e-3)
    envelope = outputs["envelope"]
    assert envelope["lines"].shape == (6, 25, 3)
    np.testing.assert_allclose(envelope["lines"][:, 0], np.zeros((6, 3)), atol=1e-9)  # held at the connectors
    np.testing.assert_allclose(envelope["lines"][:, -1], np.tile([0.3, 0.0, 0.0], (6, 1)), atol=1e-9)
    mean = envelope["lines"].mean(axis=0)
    spread = np.linalg.norm(envelope["lines"] - mean, axis=2).max()
    assert envelope["spread"] == pytest.approx(spread) and 0.0 < spread < 0.05
    drawn = ext.overlay.envelope(cable.name)
    assert drawn.shape == (6 * 24 * 2, 3)
    lines = ext.ui.study_lines(bpy.context.scene, study)
    assert lines[0] == "6 of 6 variants converged" and lines[1] == f"{cable.name}:"
    assert any(line.strip().startswith("Shape spread") for line in lines)
    # the variants' union as a mesh: every variant's centre line lies inside it
    assert bpy.ops.cable_harness.swept_envelope(source="STUDY") == {"FINISHED"}
    mesh = bpy.data.objects[f"{cable.name} Study Envelope"].data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    points = envelope["lines"].reshape(-1, 3)
    assert len(mesh.polygons) > 0 and (points >= co.min(axis=0)).all() and (points <= co.max(axis=0)).all()


def test_failed_variants_are_failures_and_stay_out_of_the_envelope(tmp_path):
    *_, cable = simple_harness(segments=16)
    L = cable.cable_harness.length
    # the shortest corner cannot reach from one connector to the other 0.3 m away
    add_variation(cable, "LENGTH", "CORNERS", tolerance=L - 0.25)
    study = run_study(tmp_path)
    summary = study["summary"]
    assert summary["variants"] == 3 and summary["failed"] == [0] and summary["converged"] == 2
    rows = read_rows(os.path.join(tmp_path, os.listdir(tmp_path)[0]))
    assert rows[0]["converged"] == "false" and rows[0]["message"]
    assert study["cables"][cable.name]["envelope"]["lines"].shape[0] == 2
    lines = ext.ui.study_lines(bpy.context.scene, study)
    assert lines[:2] == ["2 of 3 variants converged", "Not converged: variants 0"]


def test_a_cancelled_study_resumes_where_it_stopped(tmp_path):
    *_, cable = simple_harness(segments=16)
    add_variation(cable, "LENGTH", "UNIFORM", tolerance=0.002)
    settings = bpy.context.scene.cable_harness
    settings.study_samples, settings.study_workers, settings.study_folder = 400, 1, str(tmp_path)
    assert bpy.ops.cable_harness.run_study() == {"FINISHED"}
    assert ext.study_runner.running()
    # the study (one process, ~10 ms a variant) is held still while its rows are counted: on a loaded
    # machine it once solved all 400 between the count and the Cancel
    sweep = ext.study_runner._state["process"]
    deadline = time.monotonic() + 300
    folder = None
    while time.monotonic() < deadline:
        os.kill(sweep.pid, signal.SIGSTOP)
        found = os.listdir(tmp_path)
        folder = os.path.join(tmp_path, found[0]) if found else None
        if folder and os.path.exists(os.path.join(folder, "results.csv")) and len(read_rows(folder)) >= 3:
            break
        os.kill(sweep.pid, signal.SIGCONT)
        time.sleep(0.02)
    fraction, text = ext.study_runner.progress()
    assert 0.0 <= fraction < 1.0 and ("variants solved" in text or text.startswith("Starting"))
    os.kill(sweep.pid, signal.SIGCONT)  # Cancel's SIGTERM is handled as soon as it runs again
    assert bpy.ops.cable_harness.cancel_study() == {"FINISHED"}
    assert not ext.study_runner.running() and ext.study_runner.result() is None
    assert ext.study_runner.message() == "the study stopped: cancelled"
    done_before = read_rows(folder)
    assert 3 <= len(done_before) < 400
    # the same study again: same folder, the rows already there are kept, the rest solved
    assert ext.study_runner.wait(0) is False
    assert bpy.ops.cable_harness.run_study() == {"FINISHED"}
    assert ext.study_runner.wait(600), ext.study_runner.message()
    assert ext.study_runner.folder() == folder
    rows = read_rows(folder)
    assert [int(r["variant"]) for r in rows] == list(range(400))
    by_variant = {r["variant"]: r for r in rows}
    for r in done_before:
        assert by_variant[r["variant"]][f"{cable.name}.solve_ms"] == r[f"{cable.name}.solve_ms"]  # not solved again
    assert ext.study_runner.result()["summary"]["variants"] == 400


def test_another_file_shows_no_study(tmp_path):
    *_, cable = simple_harness(segments=16)
    add_variation(cable, "LENGTH", "UNIFORM", tolerance=0.002)
    run_study(tmp_path, samples=2)
    name = cable.name  # (the object is gone once another file is loaded)
    assert ext.study_runner.result() is not None and ext.overlay.envelope(name) is not None
    settings = bpy.context.scene.cable_harness
    settings.study_samples = 400
    assert bpy.ops.cable_harness.run_study() == {"FINISHED"} and ext.study_runner.running()
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert not ext.study_runner.running()
    assert ext.study_runner.result() is None and ext.study_runner.message() == ""
    assert ext.overlay.envelope(name) is None
