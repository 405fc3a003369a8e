# SPDX-License-Identifier: GPL-3.0-or-later
"""Processes as Linux's /proc shows them: a process's children, and whether one still runs (the
tests of signalled sweeps and killed workers)."""

import os


def children(pid) -> list:
    """The pids whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def running(pid) -> bool:
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def sweep_killing_a_worker(command, results, workers: int, **popen) -> tuple:
    """Run the sweep ``command`` in a session of its own, SIGKILL one of its ``workers`` worker
    processes once results.csv (``results``) holds a few rows, and let it finish: (rows in the
    table at the kill, exit status, stdout, stderr). The sweep is killed whole if the test fails."""
    import signal
    import subprocess
    import time

    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, **popen,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (results.exists() and results.read_text().count("\n") > 8 and len(children(process.pid)) >= workers):
            assert time.monotonic() < deadline and process.poll() is None, "no rows from the workers"
            time.sleep(0.05)
        os.kill(children(process.pid)[0], signal.SIGKILL)
        at_kill = results.read_text().count("\n") - 1
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return at_kill, process.returncode, stdout, stderr
