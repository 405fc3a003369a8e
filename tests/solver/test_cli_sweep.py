# SPDX-License-Identifier: GPL-3.0-or-later
"""Variation sweeps (``python -m solver_core sweep``): rows equal direct solves, grids covered exactly,
resume after an interruption, an existing Dask cluster through --scheduler."""

import contextlib
import copy
import csv
import io
import itertools
import json

import numpy as np
import pytest
from helpers.cases import cable, case

pytest.importorskip("distributed")

from solver_core import solve_case  # noqa: E402
from solver_core.io.cli import main  # noqa: E402
from solver_core.io.sweep import load_sweep  # noqa: E402

BASE = case(
    cable(
        segments=20,
        end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        clips=[{"s": 0.15, "frame": {"position": [0.1, 0, -0.03], "tangent": [1, 0, 0]}}],
    ),
    obstacles=[{"type": "plane", "point": [0, 0, -0.1], "normal": [0, 0, 1]}],
)


def run_cli(*args):
    """The command line in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def scheduler():
    """A Dask cluster of its own, in this process (one worker thread), used through --scheduler."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    yield cluster.scheduler_address
    cluster.close()


def write_sweep(folder, vary, **extra):
    (folder / "case.json").write_text(json.dumps(BASE))
    doc = {"format": "cable-harness-sweep/1", "case": "case.json", "vary": vary, **extra}
    (folder / "sweep.json").write_text(json.dumps(doc))
    return folder / "sweep.json"


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def direct(assignment):
    """The outputs of one variant solved directly: its document edited by hand, solve_case, the result read."""
    doc = copy.deepcopy(BASE)
    c = doc["cables"][0]
    if "cables[0].length" in assignment:
        c["length"] = assignment["cables[0].length"]
    if "cables[0].clips[0].frame.position[2]" in assignment:
        c["clips"][0]["frame"]["position"][2] = assignment["cables[0].clips[0].frame.position[2]"]
    if "cables[0].material.E" in assignment:
        c["material"]["E"] = assignment["cables[0].material.E"]
    result = solve_case(doc)["steps"][-1]["cables"]["W1"]
    forces = [np.linalg.norm(f["force"]) for f in [*result["end_forces"].values(), *result["clip_forces"]]]
    nodes = np.array(result["nodes"])
    return {
        "converged": result["converged"],
        "length": result["length"],
        "min_bend_radius": result["min_bend_radius"],
        "peak_force": max(forces),
        "min_clearance": float(nodes[:, 2].min() + 0.1 - 0.002),  # above the plane z = -0.1, less the radius
        "max_tension": 126e6 * np.pi * 0.002**2 * result["max_strain"]
        if "cables[0].material.E" not in assignment
        else assignment["cables[0].material.E"] * np.pi * 0.002**2 * result["max_strain"],
    }


def test_rows_equal_direct_solves_through_a_scheduler(tmp_path, scheduler):
    vary = [
        {"path": "cables[0].length", "uniform": [0.29, 0.31]},
        {"path": "cables[0].clips[0].frame.position[2]", "normal": [-0.03, 0.002]},
    ]
    sweep_file = write_sweep(tmp_path, vary, samples=3, seed=7)
    code, out, err = run_cli(
        "sweep", str(sweep_file), "-o", str(tmp_path / "out"), "--scheduler", scheduler, "--no-plots"
    )
    assert code == 0, err
    rows = read_csv(tmp_path / "out" / "results.csv")
    draws = load_sweep(sweep_file).variants()
    assert [int(r["variant"]) for r in rows] == [0, 1, 2] and len(draws) == 3
    rng = np.random.default_rng(7)  # the documented draws: uniform column, then normal column
    lengths, heights = rng.uniform(0.29, 0.31, 3), rng.normal(-0.03, 0.002, 3)
    for row, length, height in zip(rows, lengths, heights):
        assert float(row["cables[0].length"]) == length
        assert float(row["cables[0].clips[0].frame.position[2]"]) == height
        want = direct({"cables[0].length": length, "cables[0].clips[0].frame.position[2]": height})
        assert row["converged"] == row["W1.converged"] == "true"
        for key in ("length", "min_bend_radius", "peak_force", "min_clearance", "max_tension"):
            assert float(row[f"W1.{key}"]) == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    radii = [float(r["W1.min_bend_radius"]) for r in rows]
    s = summary["outputs"]["W1.min_bend_radius"]
    assert (s["min"], s["max"]) == (min(radii), max(radii)) and s["worst"]["variant"] == int(np.argmin(radii))
    assert summary["variants"] == summary["converged"] == 3


def test_a_grid_covers_the_grid_exactly_and_failures_are_rows(tmp_path, scheduler):
    vary = [
        {"path": "cables[0].material.E", "values": [1e8, 1.26e8]},
        {"path": "cables[0].length", "values": [0.3, 0.29, 0.1]},
    ]  # 0.1 m cannot span 0.2 m
    code, out, err = run_cli(
        "sweep", str(write_sweep(tmp_path, vary)), "-o", str(tmp_path / "out"), "--scheduler", scheduler
    )
    assert code == 1, err  # some variants failed; the study is complete
    rows = read_csv(tmp_path / "out" / "results.csv")
    got = [(float(r["cables[0].material.E"]), float(r["cables[0].length"])) for r in rows]
    assert got == list(itertools.product([1e8, 1.26e8], [0.3, 0.29, 0.1]))
    for r in rows:
        if float(r["cables[0].length"]) == 0.1:
            assert r["converged"] == "false" and r["W1.length"] == ""
            assert r["message"].startswith("invalid variant: cables[0].clips[0].s = 0.15")
        else:
            assert r["converged"] == "true"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["failed"] == [2, 5] and summary["converged"] == 4
    assert sorted(summary["plots"]) == sorted(
        f"plots/W1.{m}.png"
        for m in ("length", "min_bend_radius", "max_tension", "peak_force", "min_clearance", "solve_ms")
    )
    assert all((tmp_path / "out" / p).stat().st_size > 0 for p in summary["plots"])


def test_an_interrupted_sweep_resumes(tmp_path, scheduler):
    vary = [{"path": "cables[0].length", "values": [0.3, 0.295, 0.29, 0.285]}]
    sweep_file = write_sweep(tmp_path, vary)
    args = ("sweep", str(sweep_file), "-o", str(tmp_path / "out"), "--scheduler", scheduler, "--no-plots", "-q")
    assert run_cli(*args)[0] == 0
    table = tmp_path / "out" / "results.csv"
    complete = table.read_text().splitlines(keepends=True)
    # interrupted after two rows, the third cut short while being written
    table.write_text("".join(complete[:3]) + complete[3][:20])
    assert run_cli(*args)[0] == 0
    again = table.read_text().splitlines(keepends=True)
    assert again[:3] == complete[:3]  # kept as they were (their solve times too): not solved again
    before, after = read_csv_text(complete), read_csv_text(again)
    for b, a in zip(before[2:], after[2:]):
        for key in ("W1.length", "W1.min_bend_radius", "W1.peak_force"):
            assert float(a[key]) == pytest.approx(float(b[key]), rel=1e-9)
    assert [r["variant"] for r in after] == ["0", "1", "2", "3"]
    # another sweep into the same folder is refused
    write_sweep(tmp_path, [{"path": "cables[0].length", "values": [0.3]}])
    code, _, err = run_cli(*args)
    assert code == 2 and "holds the results of another sweep" in err


def read_csv_text(lines):
    return list(csv.DictReader(lines))


def test_one_worker_on_this_machine_by_default(tmp_path):
    vary = [{"path": "cables[0].length", "values": [0.3, 0.29]}]
    code, out, err = run_cli(
        "sweep", str(write_sweep(tmp_path, vary)), "-o", str(tmp_path / "out"), "--workers", "1", "--no-plots"
    )
    assert code == 0, err
    assert "2 of 2 variants converged" in out
    assert len(read_csv(tmp_path / "out" / "results.csv")) == 2


@pytest.mark.parametrize(
    "doc,message",
    [
        ({"format": "cable-harness-sweep/2"}, "sweep.format"),
        ({"vary": []}, "sweep.vary must be a non-empty list"),
        (
            {"vary": [{"path": "cables[0].lenght", "values": [1]}]},
            "sweep.vary[0].path: the case has no cables[0].lenght",
        ),
        ({"vary": [{"path": "cables[9].length", "values": [1]}]}, "sweep.vary[0].path: the case has no cables[9]"),
        ({"vary": [{"path": "cables[0]..length", "values": [1]}]}, "sweep.vary[0].path"),
        ({"vary": [{"path": "cables[0].length", "uniform": [0.3]}]}, "sweep.vary[0].uniform"),
        ({"vary": [{"path": "cables[0].length", "uniform": [0.3, 0.2]}]}, "sweep.vary[0].uniform"),
        ({"vary": [{"path": "cables[0].length", "normal": [0.3, "x"]}]}, "sweep.vary[0].normal[1]"),
        ({"vary": [{"path": "cables[0].length", "values": [0.3], "normal": [0.3, 0.1]}]}, "exactly one of"),
        ({"vary": [{"path": "cables[0].length", "values": [0.3]}], "samples": 5}, "sweep.samples"),
        ({"case": "missing.json"}, "cannot read case file"),
        ({"seed": -1}, "sweep.seed"),
    ],
)
def test_invalid_sweep_files_name_the_field(tmp_path, doc, message):
    full = {"format": "cable-harness-sweep/1", "case": BASE, "vary": [{"path": "cables[0].length", "values": [0.3]}]}
    full.update(doc)
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(full))
    code, _, err = run_cli("sweep", str(path), "-o", str(tmp_path / "out"))
    assert code == 2 and message in err and err.count("\n") == 1, err
