# SPDX-License-Identifier: GPL-3.0-or-later
"""Signals sent to the command line while it works (issue 55, items 1 and 4): Blender's Cancel Study
sends SIGTERM to a sweep, a terminal Ctrl-C sends SIGINT to the whole process group, a closed terminal
SIGHUP. Each must end the run within seconds with one line on stderr and 128 + the signal's number,
leave no worker process behind, no temporary file beside the output, and what was written before
(a sweep's rows, a previous result) intact. Real processes and real signals, every wait bounded."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.cases import cable, case
from helpers.processes import children, running

from solver_core.io import cli
from solver_core.io.sweep import read_rows

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
SMALL = cable(segments=8, end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]})


def start(*args, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "solver_core", *args],
        cwd=ROOT,
        env=ENV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def finish(process, timeout=30):
    """(exit status, stdout, stderr) once the process has ended and its pipes are closed: a child
    that outlives it and holds the pipes fails the test rather than hanging it."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        ended = process.poll() is not None
        for pid in [process.pid, *children(process.pid)]:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL) if pid == process.pid else os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=5)
        what = "its pipes stayed open (held by its workers)" if ended else "it did not end"
        raise AssertionError(f"{timeout} s after the signal {what}") from None
    return process.returncode, out, err


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="the process checks read /proc")


# ---------------------------------------------------------------- item 1: a sweep's forked workers


@pytest.mark.parametrize(
    "how",
    [
        "SIGTERM to the parent",
        "SIGINT to the process group",
        "SIGTERM to a one-process sweep",
        "SIGTERM to a local Dask cluster's sweep",
        "SIGINT to a local Dask cluster's process group",
    ],
)
def test_a_signalled_sweep_stops_its_workers_and_keeps_its_rows(tmp_path, how):
    doc = {
        "format": "cable-harness-sweep/1",
        "case": case(SMALL),
        "samples": 5000,  # far more than are solved before the signal
        "vary": [{"path": "cables[0].length", "uniform": [0.25, 0.3]}],
    }
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    out = tmp_path / "out"
    alone = how.endswith("one-process sweep")  # as Blender's study with one worker: variants in the sweep's process
    workers_asked = "1" if alone else "2"
    args = [
        "sweep",
        str(tmp_path / "sweep.json"),
        "-o",
        str(out),
        "--executor",
        "dask" if "Dask" in how else "processes",  # Dask's workers are forked from the sweep's process too
        "--workers",
        workers_asked,
    ]
    process = start(*args, "--no-plots", start_new_session=True)
    workers = []
    try:
        table = out / "results.csv"
        wait_for(lambda: table.exists() and table.read_text().count("\n") >= 4, 120, "the first rows")
        workers = children(process.pid)
        assert len(workers) >= (0 if alone else 2), workers
        if how.startswith("SIGTERM"):
            process.send_signal(signal.SIGTERM)
            code = 128 + signal.SIGTERM
        else:
            os.killpg(process.pid, signal.SIGINT)
            code = 130
        returncode, _, err = finish(process)
        # the workers are gone within seconds of the parent's exit
        wait_for(lambda: not any(running(w) for w in workers), 10, "the workers to end")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        for w in workers:  # a failed test must not leave its processes behind either
            if running(w):
                os.kill(w, signal.SIGKILL)
    assert returncode == code, err
    assert err.count("\n") == 1 and "interrupted by" in err and "run the sweep again to resume" in err, err
    columns = table.read_text().splitlines()[0].split(",")
    kept = read_rows(str(table), columns)
    assert 3 <= len(kept) < 5000 and all(r["converged"] for r in kept.values())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_variant_interrupted_inside_a_kernel_stops_the_sweep_without_a_row(monkeypatch, signum):
    # Cancel Study sends SIGTERM to a study solving in one process. Arriving while a kernel runs, the
    # interruption surfaces as numba's SystemError, which the variant's own error handling took for a
    # failed variant: the study wrote a failed row and went on to its end within Cancel's grace time.
    from solver_core.io import run_case, signals
    from solver_core.io.sweep import solve_variant

    def interrupted_in_a_kernel(*args, **kwargs):
        try:
            raise signals.Interrupted(signum)
        except signals.Interrupted as exc:
            raise SystemError("CPUDispatcher(<function x>) returned a result with an exception set") from exc

    monkeypatch.setattr(run_case, "iter_steps", interrupted_in_a_kernel)
    with pytest.raises(signals.Interrupted) as stopped:
        solve_variant(case(SMALL), 0, {})
    assert stopped.value.signum == signum

    # an error of the solver's own (no signal) is still the variant's failed row
    def broken(*args, **kwargs):
        raise SystemError("something else")

    monkeypatch.setattr(run_case, "iter_steps", broken)
    row = solve_variant(case(SMALL), 0, {})
    assert not row["converged"] and row["message"] == "internal error: SystemError: something else"


# ---------------------------------------------------------------- item 4: a solve


def steps_case(n_steps):
    """A small cable whose end moves back and forth for ``n_steps`` steps: long enough to be signalled."""
    steps = [
        {"cables": {"W1": {"end": {"position": [0.2 - 0.05 * (k % 2), 0, 0], "tangent": [1, 0, 0]}}}}
        for k in range(n_steps)
    ]
    return case(SMALL, steps=steps)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signalled_solve_exits_cleanly_and_leaves_no_temporary(tmp_path, signum):
    (tmp_path / "case.json").write_text(json.dumps(steps_case(2000)))
    result = tmp_path / "r.jsonl"
    result.write_text("the previous result\n")
    process = start("solve", str(tmp_path / "case.json"), "-o", str(result))
    try:
        lines = []
        wait_for(lambda: lines.append(process.stdout.readline()) or "step 3 " in lines[-1], 120, "step 3")
        process.send_signal(signum)
        returncode, _, err = finish(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert returncode == 128 + signum, err
    assert err == f"interrupted by {signum.name}\n"
    assert result.read_text() == "the previous result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.json", "r.jsonl"]


def test_an_interruption_inside_a_compiled_kernel_is_an_interruption(tmp_path, monkeypatch, capsys):
    from solver_core.io import signals

    # numba's dispatcher turns a KeyboardInterrupt raised while its kernel ran into a SystemError
    def interrupted_in_a_kernel(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(<function x>) returned a result with an exception set") from exc

    (tmp_path / "case.json").write_text(json.dumps(case(SMALL)))
    monkeypatch.setattr(cli, "solve_to", interrupted_in_a_kernel)
    assert cli.main(["solve", str(tmp_path / "case.json"), "-o", str(tmp_path / "r.json")]) == 130
    assert capsys.readouterr().err == "interrupted by SIGINT\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.json"]
    assert signal.getsignal(signal.SIGTERM) is not signals._raise  # the handlers are given back


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    from solver_core.io.output_files import AtomicOutput, remove_stale_temporaries

    target = tmp_path / "r.json"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".r.json.{dead_pid}.k2j4h1.tmp"
    live = tmp_path / f".r.json.{os.getppid()}.a8b7c6.tmp"  # a running process (our parent) is writing it
    other = tmp_path / f".q.json.{dead_pid}.zzzzzz.tmp"  # another output's
    for p in (stale, live, other):
        p.write_text("partial")
    out = AtomicOutput(str(target))
    out.write("{}\n")
    out.commit()
    assert not stale.exists() and live.exists() and other.exists()
    assert target.read_text() == "{}\n"
    assert remove_stale_temporaries(str(tmp_path), "q.json") == [other.name]


NEWTON_UNDER_SIGNALS = """
import inspect, signal, sys
import numpy as np
import solver_core.solve.equilibrium as equilibrium
from solver_core import Harness, parse_case
calls, real = [], equilibrium.minimise_rod_energy
equilibrium.minimise_rod_energy = lambda *a: calls.append(a) or real(*a)
h = Harness.from_case(parse_case(__import__("json").loads(sys.argv[1])))
h.solve_step()
args = list(calls[0])
args[list(inspect.signature(real).parameters).index("max_iterations")] = 0  # a call that returns at once
class Stop(BaseException):
    pass
def stop(signum, frame):
    raise Stop
signal.signal(signal.SIGALRM, stop)
stopped = 0
for trial in range(3000):
    try:
        signal.setitimer(signal.ITIMER_REAL, 2e-5)
        while True:
            real(*args)
    except BaseException as exc:  # Stop, or numba's SystemErrors around it (signals.py)
        seen = exc
        while seen is not None and not isinstance(seen, Stop):
            seen = seen.__cause__ or seen.__context__
        if seen is None:
            raise
        stopped += 1
signal.setitimer(signal.ITIMER_REAL, 0.0)
print(stopped)
"""


def test_signals_handled_as_the_newton_kernel_returns_never_crash_the_process():
    # A Python signal handler runs at the next Python bytecode; a kernel returning a named tuple ran
    # its class's __new__ (Python) while numba boxed it, and a handler raising there (Cancel's SIGTERM
    # turned into Interrupted) crashed the process with a segfault. 3000 alarms, each raising while
    # the kernel is called back to back: the process ends normally having caught every one (as such,
    # or as numba's SystemError around it).
    run = subprocess.run(
        [sys.executable, "-c", NEWTON_UNDER_SIGNALS, json.dumps(case(SMALL))],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-500:])
    assert run.stdout.split() == ["3000"]
