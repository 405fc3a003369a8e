# SPDX-License-Identifier: GPL-3.0-or-later
"""Sweeps where Dask is not installed (Blender's own Python, nor matplotlib): the variants run in forked processes of
the standard library, or one after another, with the rows a Dask run gives; ``--shapes`` keeps each
variant's solved centre lines, equal to those of a direct solve. Run in a child process, where the
``distributed`` package is made unimportable (and no Dask thread of another test is forked)."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.cases import cable, case

from solver_core import solve_case

ROOT = Path(__file__).resolve().parents[2]
BASE = case(
    cable(
        segments=16,
        end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        clips=[{"s": 0.15, "frame": {"position": [0.1, 0, -0.03], "tangent": [1, 0, 0]}}],
    ),
)
LENGTHS = [0.3, 0.29, 0.28, 0.1]  # 0.1 m cannot reach the clip at s = 0.15: an invalid variant

_WITHOUT_DASK = (
    "import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
    "sys.modules['matplotlib'] = None\n"
    "from solver_core.io.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _python(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def run_without_dask(*args):
    return _python("-c", _WITHOUT_DASK, *args)


def sweep_file(folder):
    doc = {
        "format": "cable-harness-sweep/1",
        "case": BASE,
        "vary": [{"path": "cables[0].length", "values": LENGTHS}],
    }
    path = folder / "sweep.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("workers", ["1", "2"])
def test_rows_and_shapes_without_dask(tmp_path, workers):
    out = tmp_path / "out"
    done = run_without_dask("sweep", str(sweep_file(tmp_path)), "-o", str(out), "--workers", workers, "--shapes")
    assert done.returncode == 1, done.stderr  # the last variant is invalid; the study is complete
    assert "Traceback" not in done.stderr
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["cables[0].length"]) for r in rows] == LENGTHS
    for index, length in enumerate(LENGTHS[:3]):
        doc = json.loads(json.dumps(BASE))
        doc["cables"][0]["length"] = length
        want = solve_case(doc)["steps"][-1]["cables"]["W1"]
        assert rows[index]["converged"] == "true"
        assert float(rows[index]["W1.length"]) == pytest.approx(want["length"], rel=1e-12)
        with np.load(out / "shapes" / f"{index}.npz") as shapes:
            assert list(shapes.keys()) == ["c0"]
            np.testing.assert_allclose(shapes["c0"], np.array(want["nodes"]), rtol=0, atol=1e-12)
    assert rows[3]["converged"] == "false" and rows[3]["message"].startswith("invalid variant")
    assert not (out / "shapes" / "3.npz").exists()  # nothing was solved, no shape to draw
    summary = json.loads((out / "summary.json").read_text())
    assert summary["variants"] == 4 and summary["failed"] == [3]
    assert summary["plots"] == [] and summary["plots_skipped"] == "matplotlib is not installed"


def test_a_scheduler_without_dask_is_refused_by_name(tmp_path):
    done = run_without_dask("sweep", str(sweep_file(tmp_path)), "-o", str(tmp_path / "out"), "--scheduler", "tcp://x:1")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "--scheduler needs the dask and distributed packages" in done.stderr


def test_forked_processes_on_request_where_dask_is_installed(tmp_path):
    # what Blender's panel asks for: Dask's workers are new interpreters, which cannot import the
    # solver under Blender's package name
    args = ["-m", "solver_core", "sweep", str(sweep_file(tmp_path)), "-o", str(tmp_path / "out")]
    done = _python(*args, "--executor", "processes", "--workers", "2", "--no-plots")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "distributed" not in done.stdout + done.stderr
    with open(tmp_path / "out" / "results.csv", newline="") as fh:
        assert [r["converged"] for r in csv.DictReader(fh)] == ["true", "true", "true", "false"]
    refused = _python(*args, "--executor", "processes", "--scheduler", "tcp://127.0.0.1:1")
    assert refused.returncode == 2 and refused.stderr.strip().endswith("--scheduler needs --executor dask")


_RECORDING_WORKER_STARTS = (
    "import os, sys; sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
    "sys.modules['matplotlib'] = None\n"
    "from solver_core.io import worker_pool\n"
    "from solver_core.solve.newton import newton_iterations\n"
    "import gc\n"
    "original = worker_pool._start_worker\n"
    "def start(*args):\n"
    "    with open(os.path.join(sys.argv[1], str(os.getpid())), 'w') as fh:\n"
    "        fh.write(f'{len(newton_iterations.overloads)} {gc.get_freeze_count()}')\n"
    "    return original(*args)\n"
    "worker_pool._start_worker = start\n"
    "from solver_core.io.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def test_forked_workers_start_with_the_kernels_loaded(tmp_path):
    # the kernels are loaded once, before the fork: a worker that loaded its own paid numba's code
    # generator and the kernels on every core (0.3 s; the fixed cost that kept 16 workers under 13x)
    starts = tmp_path / "starts"
    starts.mkdir()
    args = [str(starts), "sweep", str(sweep_file(tmp_path)), "-o", str(tmp_path / "out"), "--workers", "2"]
    done = _python("-c", _RECORDING_WORKER_STARTS, *args, "--no-plots")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    loaded = [[int(n) for n in p.read_text().split()] for p in starts.iterdir()]
    # the kernels, and the inherited heap frozen (the worker's collector never traverses it)
    assert len(loaded) == 2 and all(kernels > 0 and frozen > 100_000 for kernels, frozen in loaded), loaded


_FREEZE_COUNTS = (
    "import gc, sys\n"
    "if sys.argv[3] == 'processes': sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
    "from solver_core.io.sweep import load_sweep, run_sweep\n"
    "before = gc.get_freeze_count()\n"
    "summary = run_sweep(load_sweep(sys.argv[1]), sys.argv[2], workers=2, plots=False, executor=sys.argv[3])\n"
    "print(before, gc.get_freeze_count(), summary['variants'], summary['failed'])\n"
)


@pytest.mark.parametrize("executor", ["processes", "dask"])
def test_a_sweep_leaves_its_callers_collector_as_it_was(tmp_path, executor):
    # the heap is frozen only while the workers are forked: a program that runs a sweep keeps
    # collecting what it frees later
    if executor == "dask":
        pytest.importorskip("distributed")
    done = _python("-c", _FREEZE_COUNTS, str(sweep_file(tmp_path)), str(tmp_path / "out"), executor)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.split() == ["0", "0", "4", "[3]"], done.stdout
