# SPDX-License-Identifier: GPL-3.0-or-later
"""``sweep --scheduler`` on a cluster started as the README says (issue 55, item 2): a real
``dask scheduler`` that cannot import solver_core and a ``dask worker`` that can, on localhost ports;
then the cluster lost midway (every worker killed, the scheduler killed) and an address that accepts
TCP but never answers. Each ends within the cluster timeout with one line naming what was lost, and
a rerun resumes. Every process is started and stopped here, every wait bounded."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.cases import cable, case

pytest.importorskip("distributed")


ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SMALL = case(cable(segments=8, end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}))
TIMEOUT = "4"  # --cluster-timeout of these tests [s]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask_command(role):
    """``dask scheduler`` / ``dask worker`` from this environment (the module where no script is installed)."""
    script = BIN / "dask"
    if script.exists():
        return [str(script), role]
    return [sys.executable, "-m", f"distributed.cli.dask_{role}"]


def launch(command, cwd, env):
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def stop(process):
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def workers_of(address) -> int:
    from distributed import Client

    with Client(address, timeout=5) as client:
        return len(client.nthreads())


def sweep_file(folder, samples):
    doc = {
        "format": "cable-harness-sweep/1",
        "case": SMALL,
        "samples": samples,
        "vary": [{"path": "cables[0].length", "uniform": [0.25, 0.3]}],
    }
    (folder / "sweep.json").write_text(json.dumps(doc))
    return str(folder / "sweep.json")


def start_sweep(folder, address):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "solver_core", "sweep", str(folder / "sweep.json"), "-o", str(folder / "out")]
        + ["--scheduler", address, "--cluster-timeout", TIMEOUT, "--no-plots"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def rows(folder) -> int:
    table = folder / "out" / "results.csv"
    return table.read_text().count("\n") - 1 if table.exists() else 0


def test_a_cluster_as_documented_then_lost_midway(tmp_path):
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    # the scheduler runs where solver_core cannot be imported (the rows below show it never needs to)
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    scheduler = launch(
        [*dask_command("scheduler"), "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
        tmp_path,
        bare,
    )
    # a worker must import solver_core: started with PYTHONPATH naming the repository folder
    worker_env = dict(bare, PYTHONPATH=str(ROOT))
    worker_command = [*dask_command("worker"), address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"]
    first = launch(worker_command, tmp_path, worker_env)
    second = None
    try:
        wait_for(lambda: workers_of(address) == 1, 60, "the worker to join")
        sweep_file(tmp_path, 4000)
        # every worker killed midway: the sweep ends within its cluster timeout, the rows kept
        process = start_sweep(tmp_path, address)
        wait_for(lambda: rows(tmp_path) >= 2, 120, "the first rows")
        stop(first)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 2, err
        assert err.count("\n") == 1 and "every worker was lost" in err and "run the sweep again" in err, err
        kept = rows(tmp_path)
        assert kept >= 2
        # another worker, and the same sweep again: it resumes; then the scheduler is killed
        second = launch(worker_command, tmp_path, worker_env)
        wait_for(lambda: workers_of(address) == 1, 60, "the second worker to join")
        process = start_sweep(tmp_path, address)
        wait_for(lambda: rows(tmp_path) >= kept + 2, 120, "rows of the rerun")
        stop(scheduler)
        out, err = process.communicate(timeout=60)
        assert f"4000 variants, {kept} already in" in out
        assert process.returncode == 2, err
        assert err.count("\n") == 1 and "the connection to the scheduler was lost" in err, err
        assert "run the sweep again to resume" in err
    finally:
        for p in (first, second, scheduler):
            if p is not None:
                stop(p)


def test_an_address_that_accepts_but_never_answers(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def accept():
        with contextlib.suppress(OSError):
            while True:
                held.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    args = ["sweep", sweep_file(tmp_path, 3), "-o", str(tmp_path / "out"), "--scheduler", address]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "solver_core", *args, "--cluster-timeout", "2"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.close()
        for c in held:
            c.close()
    assert done.returncode == 2 and time.monotonic() - started < 30, done.stderr
    assert done.stderr.count("\n") == 1 and f"--scheduler {address}: no Dask scheduler answered" in done.stderr
