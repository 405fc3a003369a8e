# SPDX-License-Identifier: GPL-3.0-or-later
"""The command line's sweep on one machine by default: worker processes of the standard library
forked from the sweep's process (issue 54, target 4: no scheduler to start or talk to), Dask with
``--scheduler`` or ``--executor dask``. A worker that dies leaves its variants to a new pool; a
variant that kills its worker every time gets a row saying so; workers that keep dying end the sweep
in one line, the rows kept; a process running other threads spawns its workers rather than fork
it."""

import csv
import json
import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers.cases import cable, case
from helpers.processes import sweep_killing_a_worker

from solver_core.io import forking, worker_pool
from solver_core.io import sweep as sweep_module
from solver_core.io.sweep import parse_sweep, run_sweep

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
SMALL = case(cable(segments=8, end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}))
LENGTHS = [0.3, 0.29, 0.28, 0.27]
TWO_WORKERS = ("--workers", "2", "--no-plots")  # the default executor


def sweep_doc(vary, **more) -> dict:
    return {"format": "cable-harness-sweep/1", "case": SMALL, "vary": vary, **more}


def sweep_file(folder, vary, **more):
    path = folder / "sweep.json"
    path.write_text(json.dumps(sweep_doc(vary, **more)))
    return str(path)


def table(path) -> list:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def cli(*args):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)


# which executor run_sweep was given, and whether the Dask path was taken
_RECORDING_EXECUTOR = (
    "import sys\n"
    "from solver_core.io import sweep\n"
    "solve = sweep._solve\n"
    "def recorded(sweep_, todo, sink, executor, *args):\n"
    "    print('executor', executor)\n"
    "    return solve(sweep_, todo, sink, executor, *args)\n"
    "sweep._solve = recorded\n"
    "from solver_core.io.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('distributed imported', 'distributed' in sys.modules)\n"
    "sys.exit(code)\n"
)


def test_worker_processes_by_default_and_dask_on_request(tmp_path):
    path = sweep_file(tmp_path, [{"path": "cables[0].length", "values": LENGTHS}])
    tables = {}
    for name, extra in [("default", []), ("dask", ["--executor", "dask"])]:
        if name == "dask":
            pytest.importorskip("distributed")
        done = cli("-c", _RECORDING_EXECUTOR, "sweep", path, "-o", str(tmp_path / name), "--workers", "2",
                   "--no-plots", *extra)  # fmt: skip
        assert done.returncode == 0 and done.stderr == "", done.stderr
        want = "processes" if name == "default" else "dask"
        assert f"executor {want}" in done.stdout and f"distributed imported {name == 'dask'}" in done.stdout
        tables[name] = [
            {k: v for k, v in r.items() if not k.endswith("solve_ms")} for r in table(tmp_path / name / "results.csv")
        ]
    assert [float(r["cables[0].length"]) for r in tables["default"]] == LENGTHS
    if "dask" in tables:
        assert tables["dask"] == tables["default"]  # the same rows either way


class _Chosen(Exception):
    pass


def test_a_scheduler_means_dask(tmp_path):
    # the choice run_sweep makes: Dask where a scheduler is named, else this machine's processes
    seen = []
    original = sweep_module._solve

    def recorded(sweep, todo, sink, executor, scheduler, *args):
        seen.append((executor, scheduler))
        raise _Chosen

    sweep_module._solve = recorded
    try:
        sweep = parse_sweep(sweep_doc([{"path": "cables[0].length", "values": LENGTHS[:1]}]))
        for k, scheduler in enumerate((None, "tcp://127.0.0.1:1")):
            with pytest.raises(_Chosen):
                run_sweep(sweep, str(tmp_path / str(k)), scheduler=scheduler, plots=False)
    finally:
        sweep_module._solve = original
    assert seen == [("processes", None), ("dask", "tcp://127.0.0.1:1")]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the worker is found in /proc")
def test_a_worker_killed_midway_leaves_its_variants_to_a_new_pool(tmp_path):
    path = sweep_file(tmp_path, [{"path": "cables[0].length", "uniform": [0.25, 0.3]}], samples=2000)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "solver_core", "sweep", path, "-o", str(out), *TWO_WORKERS]
    at_kill, code, stdout, stderr = sweep_killing_a_worker(command, out / "results.csv", 2, cwd=ROOT, env=ENV)
    assert code == 0, stderr
    assert at_kill < 1000  # killed midway
    assert "2000 of 2000 variants converged" in stdout and stderr == "", stderr
    assert sorted(int(r["variant"]) for r in table(out / "results.csv")) == list(range(2000))  # each once


# variant 3 kills the process that solves it, every time
_KILLING_VARIANT = (
    "import os, signal, sys\n"
    "from solver_core.io import sweep\n"
    "original = sweep.solve_variant\n"
    "def solve_variant(case_doc, index, *args, **kwargs):\n"
    "    if index == 3:\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    return original(case_doc, index, *args, **kwargs)\n"
    "sweep.solve_variant = solve_variant\n"
    "from solver_core.io.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_a_variant_that_kills_its_worker_every_time_gets_a_row_saying_so(tmp_path):
    # the pool's death takes every task not yet returned; the variants being solved then are solved
    # again alone, and the one whose lone worker dies too is a row, as an invalid variant is
    path = sweep_file(tmp_path, [{"path": "cables[0].length", "uniform": [0.25, 0.3]}], samples=40)
    out = tmp_path / "out"
    done = cli("-c", _KILLING_VARIANT, "sweep", path, "-o", str(out), *TWO_WORKERS)
    assert done.returncode == 1 and done.stderr == "", done.stderr  # a variant failed
    assert "39 of 40 variants converged" in done.stdout, done.stdout
    rows = table(out / "results.csv")
    assert [int(r["variant"]) for r in rows] == list(range(40))  # each once
    assert [r["variant"] for r in rows if r["converged"] != "true"] == ["3"]
    assert rows[3]["message"].startswith("its worker process died while solving it, 3 times, 2 of them alone")
    # run again into the same folder: that variant is tried again (memory may have run out then), no other
    again = cli("-c", _KILLING_VARIANT, "sweep", path, "-o", str(out), *TWO_WORKERS)
    assert again.returncode == 1 and again.stderr == "", again.stderr
    assert "40 variants, 39 already in" in again.stdout and "1 to solve" in again.stdout, again.stdout
    assert table(out / "results.csv") == rows


# every worker dies as it starts: no variant is to blame
_DYING_WORKERS = (
    "import os, signal, sys\n"
    "from solver_core.io import worker_pool\n"
    "def start(*args):\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n"
    "worker_pool._start_worker = start\n"
    "from solver_core.io.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_workers_that_keep_dying_end_the_sweep_in_one_line(tmp_path):
    path = sweep_file(tmp_path, [{"path": "cables[0].length", "uniform": [0.25, 0.3]}], samples=40)
    out = tmp_path / "out"
    done = cli("-c", _DYING_WORKERS, "sweep", path, "-o", str(out), *TWO_WORKERS)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"died {worker_pool.LOST_POOLS_IN_A_ROW} times in a row before any returned its rows" in done.stderr
    assert "not solved: variants 0, 1, 2, 3, 4, ...; the rows solved so far are kept" in done.stderr
    assert "run the sweep again to resume" in done.stderr


# every worker gets a SIGTERM before it has its own signal handlers, as when a broken pool stops
# workers that were just forked
_TERMINATED_AS_THEY_START = (
    "import os, signal, sys, time\n"
    "from solver_core.io import signals\n"
    "original = signals.for_worker\n"
    "def for_worker(parent):\n"
    "    os.kill(os.getpid(), signal.SIGTERM)\n"
    "    time.sleep(0.2)\n"
    "    original(parent)\n"
    "signals.for_worker = for_worker\n"
    "from solver_core.io.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_a_worker_stopped_as_it_starts_ends_quietly(tmp_path):
    # with the parent's handlers it would raise the sweep's interruption wherever it was and print
    # a traceback; held until its own handlers are in place, the SIGTERM just ends it
    path = sweep_file(tmp_path, [{"path": "cables[0].length", "values": LENGTHS}])
    done = cli("-c", _TERMINATED_AS_THEY_START, "sweep", path, "-o", str(tmp_path / "out"), *TWO_WORKERS)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "died 3 times in a row before any returned its rows" in done.stderr


def test_a_process_running_other_threads_spawns_its_workers(tmp_path):
    # a lock another thread holds at a fork stays held in the child: the pool is spawned then
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    methods = []
    get_context = multiprocessing.get_context

    def recorded(method=None):
        methods.append(method)
        return get_context(method)

    multiprocessing.get_context = recorded
    try:
        assert not forking.can_fork()
        sweep = parse_sweep(sweep_doc([{"path": "cables[0].length", "values": LENGTHS}]))
        summary = run_sweep(sweep, str(tmp_path / "out"), workers=2, plots=False)
    finally:
        multiprocessing.get_context = get_context
        stop.set()
        other.join()
    assert methods == ["spawn"], methods
    assert summary["variants"] == 4 and summary["failed"] == []
    assert [float(r["cables[0].length"]) for r in table(tmp_path / "out" / "results.csv")] == LENGTHS
