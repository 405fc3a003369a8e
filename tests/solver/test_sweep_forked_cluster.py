# SPDX-License-Identifier: GPL-3.0-or-later
"""The command line's local Dask cluster (``--executor dask``): its workers are forked from the
sweep's process after the kernels were loaded there (issue 54, target 4; the first variant is
solved there too where the workers outnumber the cores), give the rows the standard library's
processes give, and a worker killed midway leaves its variants to the others. A process that runs
other threads cannot fork safely: it spawns its workers as before."""

import csv
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers.cases import cable, case
from helpers.processes import sweep_killing_a_worker

from solver_core.io import forking
from solver_core.io.sweep import parse_sweep, run_sweep

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
SMALL = case(cable(segments=8, end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}))
LENGTHS = [0.3, 0.29, 0.28, 0.27, 0.1]  # 0.1 m is shorter than its ends' distance: an invalid variant

# each forked worker writes, as it starts, how many compiled versions of the Newton kernel it holds
_RECORDING_WORKER_STARTS = (
    "import os, sys\n"
    "from solver_core.io import forked_cluster\n"
    "from solver_core.solve.newton import newton_iterations\n"
    "original = forked_cluster._serve\n"
    "import gc\n"
    "def serve(*args):\n"
    "    with open(os.path.join(sys.argv[1], str(os.getpid())), 'w') as fh:\n"
    "        fh.write(f'{os.getppid()} {len(newton_iterations.overloads)} {gc.get_freeze_count()}')\n"
    "    return original(*args)\n"
    "forked_cluster._serve = serve\n"
    "from solver_core.io.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def sweep_file(folder, vary, **more):
    path = folder / "sweep.json"
    path.write_text(json.dumps({"format": "cable-harness-sweep/1", "case": SMALL, "vary": vary, **more}))
    return str(path)


def table(path) -> list:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def cli(*args, **kwargs):
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600, **kwargs
    )


def test_the_workers_are_forked_with_the_kernels_and_give_the_same_rows(tmp_path):
    path = sweep_file(tmp_path, [{"path": "cables[0].length", "values": LENGTHS}])
    starts = tmp_path / "starts"
    starts.mkdir()
    dask = cli("-c", _RECORDING_WORKER_STARTS, str(starts), "sweep", path, "-o", str(tmp_path / "dask"),
               "--executor", "dask", "--workers", "2", "--no-plots")  # fmt: skip
    assert dask.returncode == 1 and dask.stderr.count("\n") == 0, dask.stderr  # the last variant is invalid
    recorded = [p.read_text().split() for p in starts.iterdir()]
    # two workers, children of the sweep's process, each holding the kernels from its start, and the
    # heap it inherited frozen (its collector never traverses it)
    assert len(recorded) == 2 and len({parent for parent, _, _ in recorded}) == 1, recorded
    assert all(int(kernels) > 0 and int(frozen) > 100_000 for _, kernels, frozen in recorded), recorded
    forked = cli("-m", "solver_core", "sweep", path, "-o", str(tmp_path / "forked"), "--executor", "processes",
                 "--workers", "2", "--no-plots")  # fmt: skip
    assert forked.returncode == 1, forked.stderr
    rows, want = table(tmp_path / "dask" / "results.csv"), table(tmp_path / "forked" / "results.csv")
    assert [float(r["cables[0].length"]) for r in rows] == LENGTHS
    assert [r["converged"] for r in rows] == ["true"] * 4 + ["false"]
    timeless = [{k: v for k, v in r.items() if not k.endswith("solve_ms")} for r in rows]
    assert timeless == [{k: v for k, v in r.items() if not k.endswith("solve_ms")} for r in want]


# which process solves each variant: the sweep's own, or a worker (issue 54, target 4)
_RECORDING_SOLVERS = (
    "import os, sys\n"
    "from solver_core.io import sweep\n"
    "sweep._cores = lambda: int(sys.argv[2])\n"
    "original = sweep.solve_variant\n"
    "def solve_variant(case_doc, index, *args, **kwargs):\n"
    "    open(os.path.join(sys.argv[1], f'{index}-{os.getpid()}'), 'w').close()\n"
    "    return original(case_doc, index, *args, **kwargs)\n"
    "sweep.solve_variant = solve_variant\n"
    "open(os.path.join(sys.argv[1], f'sweep-{os.getpid()}'), 'w').close()\n"
    "from solver_core.io.cli import main\n"
    "sys.exit(main(sys.argv[3:]))\n"
)


@pytest.mark.parametrize("executor", ["dask", "processes"])
def test_the_first_variant_is_solved_before_the_fork_only_where_workers_outnumber_cores(tmp_path, executor):
    # with a core each, the workers load the kernels the first variant adds side by side, and none
    # waits for a variant solved in the sweep's process; outnumbering the cores, those loads would
    # queue for them: the first variant is solved (its kernels loaded) once, before the fork
    path = sweep_file(tmp_path, [{"path": "cables[0].length", "values": LENGTHS}])
    tables = []
    for cores in (1, 64):
        record = tmp_path / f"solvers-{cores}"
        record.mkdir()
        done = cli("-c", _RECORDING_SOLVERS, str(record), str(cores), "sweep", path, "-o", str(tmp_path / str(cores)),
                   "--workers", "2", "--executor", executor, "--no-plots")  # fmt: skip
        assert done.returncode == 1 and done.stderr.count("\n") == 0, done.stderr  # the last variant is invalid
        names = [p.name.split("-") for p in record.iterdir()]
        (main,) = [pid for what, pid in names if what == "sweep"]
        solved = sorted((int(what), pid) for what, pid in names if what != "sweep")
        assert [index for index, _ in solved] == list(range(len(LENGTHS))), solved  # each variant once
        here = [index for index, pid in solved if pid == main]
        assert here == ([0] if cores == 1 else []), solved
        tables.append(
            [
                {k: v for k, v in r.items() if not k.endswith("solve_ms")}
                for r in table(tmp_path / str(cores) / "results.csv")
            ]
        )
    assert tables[0] == tables[1]  # the same rows either way


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the worker is found in /proc")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_killed_midway_leaves_its_variants_to_the_others(tmp_path, workers):
    # with one worker, the one started in its place (spawned: the sweep's process runs threads now)
    path = sweep_file(tmp_path, [{"path": "cables[0].length", "uniform": [0.25, 0.3]}], samples=2000)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "solver_core", "sweep", path, "-o", str(out), "--executor", "dask",
               "--workers", str(workers), "--no-plots"]  # fmt: skip
    at_kill, code, stdout, stderr = sweep_killing_a_worker(command, out / "results.csv", workers, cwd=ROOT, env=ENV)
    assert code == 0, stderr
    assert at_kill < 1000  # killed midway
    assert "2000 of 2000 variants converged" in stdout and stderr == "", stderr
    assert sorted(int(r["variant"]) for r in table(out / "results.csv")) == list(range(2000))


def test_a_process_running_other_threads_spawns_its_workers(tmp_path):
    # a lock another thread holds at a fork stays held in the child: no fork then
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert not forking.can_fork()
        sweep = parse_sweep({"format": "cable-harness-sweep/1", "case": SMALL,
                             "vary": [{"path": "cables[0].length", "values": LENGTHS[:2]}]})  # fmt: skip
        summary = run_sweep(sweep, str(tmp_path / "out"), workers=1, plots=False, executor="dask")
    finally:
        stop.set()
        other.join()
    assert summary["variants"] == 2 and summary["failed"] == []
    assert [float(r["cables[0].length"]) for r in table(tmp_path / "out" / "results.csv")] == LENGTHS[:2]
