# SPDX-License-Identifier: GPL-3.0-or-later
"""A variation study run in the background: ``python -m solver_core sweep`` in another process, with
its progress polled by a timer, and its result read back when it ends (variation_study.read_study).

The sweep runs as Blender's own Python under Blender's package name (warmup.solver_command), writing
into the study's folder; Blender stays responsive, and closing it or Cancel leaves a folder that the
same study resumes from. One study at a time.
"""

import os
import re
import subprocess
import time

import bpy

from .variation_study import read_study
from .warmup import solver_command, solver_environment, stop, waited

_PROGRESS = re.compile(r"(\d+)/(\d+) variants solved")
_PLANNED = re.compile(r"(\d+) variants, (\d+) already in .*, (\d+) to solve")
_state = {"process": None, "folder": "", "log": "", "started": 0.0, "message": "", "study": None, "on_finished": None}


def start(sweep_path: str, folder: str, workers: int, on_finished=None) -> None:
    """Run the sweep file into ``folder`` (created) in the background; ``on_finished()`` is called
    once when its result has been read back (from this module's timer, or ``wait``)."""
    if running():
        raise RuntimeError("a study is running already")
    os.makedirs(folder, exist_ok=True)
    log = os.path.join(folder, "study.log")
    # not on Dask: its workers are new interpreters, which cannot import the solver under Blender's
    # package name; forked processes inherit it
    args = ["sweep", sweep_path, "-o", folder, "--shapes", "--no-plots", "--executor", "processes"]
    if workers > 0:
        args += ["--workers", str(workers)]
    env = solver_environment()
    env["PYTHONUNBUFFERED"] = "1"  # the progress lines reach the log as they are printed
    with open(log, "wb") as out:
        _state["process"] = subprocess.Popen(
            solver_command("solver_core", *args),
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _state.update(folder=folder, log=log, started=time.monotonic(), message="", study=None, on_finished=on_finished)
    if not bpy.app.timers.is_registered(_poll):
        bpy.app.timers.register(_poll, first_interval=0.5, persistent=True)


def running() -> bool:
    process = _state["process"]
    return process is not None and process.poll() is None


def _log_lines() -> list:
    try:
        with open(_state["log"], encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return []


def progress() -> tuple:
    """(fraction done, text) of the running study."""
    done, total = 0, 0
    for line in _log_lines():
        m = _PROGRESS.search(line) or _PLANNED.search(line)
        if m is None:
            continue
        if m.re is _PROGRESS:
            done, total = int(m.group(1)), int(m.group(2))
        else:
            total = int(m.group(3))
    seconds = time.monotonic() - _state["started"]
    if not total:
        return 0.0, f"Starting the workers ({seconds:.0f} s)"
    return done / total, f"{done} of {total} variants solved ({seconds:.0f} s)"


def message() -> str:
    """Why the last study did not finish (empty when it did, or none ran)."""
    return _state["message"]


def result():
    """The last finished study (read_study), or None."""
    return _state["study"]


def folder() -> str:
    return _state["folder"]


def wait(timeout: float) -> bool:
    """Block until the study ends (scripts and tests); True when it finished."""
    if not waited(_state["process"], timeout):
        return False
    _finish()
    return _state["study"] is not None


def _finish() -> None:
    process = _state["process"]
    if process is None or process.poll() is None:
        return
    _state["process"] = None
    code = process.returncode
    if code in (0, 1):  # 1: some variants did not converge; their rows say so
        try:
            _state["study"] = read_study(_state["folder"])
        except (OSError, ValueError, KeyError) as exc:
            _state["message"] = f"the study's results could not be read: {exc}"
            return
        on_finished, _state["on_finished"] = _state["on_finished"], None
        if on_finished is not None:
            on_finished()
        return
    lines = [line for line in _log_lines() if line.strip()]
    reason = lines[-1] if lines else f"exit status {code}"
    # ended by a signal (Cancel, or the system): killed outright (negative), or the sweep's own exit
    # for SIGHUP, SIGINT and SIGTERM (128 + the signal), after keeping the rows solved so far
    if code < 0 or code in (128 + 1, 128 + 2, 128 + 15):
        reason = "cancelled"
    _state["message"] = f"the study stopped: {reason}"


def _poll():
    from .overlay import tag_redraw

    tag_redraw()
    if running():
        return 0.5
    _finish()
    return None


def cancel() -> None:
    """Stop a running study (its rows so far stay in its folder: Run resumes it)."""
    stop(_state["process"], grace=10.0)
    _finish()
    if bpy.app.timers.is_registered(_poll):
        bpy.app.timers.unregister(_poll)


def forget() -> None:
    """Drop the shown result (a new study, or the extension is disabled)."""
    _state["study"] = None
    _state["message"] = ""
