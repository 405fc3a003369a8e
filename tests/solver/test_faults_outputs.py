# SPDX-License-Identifier: GPL-3.0-or-later
"""Output files when the world misbehaves (issue 55, items 3 and 5): a sweep's folder that fails
midway (full, read-only) ends in exit 2 and one line naming the file, with the rows written before
kept; ``solve -o`` keeps the file's identity: its mode (or the umask's), a symbolic link stays a link
to a file that gets the result, a hard link's other names keep the previous result (documented), a
character device is written to rather than replaced."""

import contextlib
import errno
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cases import cable, case

from solver_core.io import sweep as sweep_module
from solver_core.io.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMALL = case(cable(segments=8, end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}))
LENGTHS = [0.3, 0.29, 0.28, 0.27, 0.26, 0.25]


def run_cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def sweep_file(folder):
    doc = {"format": "cable-harness-sweep/1", "case": SMALL, "vary": [{"path": "cables[0].length", "values": LENGTHS}]}
    (folder / "sweep.json").write_text(json.dumps(doc))
    return str(folder / "sweep.json")


# in this process, one variant after another: what fails is the output, not a worker
IN_PROCESS = ("--executor", "processes", "--workers", "1", "--no-plots")


def test_a_full_disk_midway_through_a_sweep_is_one_line_and_keeps_the_rows(tmp_path, monkeypatch):
    real_open, appends = open, []

    def filling_open(path, mode="r", *args, **kwargs):
        if str(path).endswith("results.csv") and "a" in mode:
            appends.append(path)
            if len(appends) == 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(sweep_module, "open", filling_open, raising=False)
    out = tmp_path / "out"
    code, _, err = run_cli("sweep", sweep_file(tmp_path), "-o", str(out), *IN_PROCESS)
    assert code == 2, err
    assert err.count("\n") == 1 and "results.csv" in err and "No space left on device" in err, err
    lines = (out / "results.csv").read_text().splitlines()
    assert len(lines) == 3 and [line.split(",")[0] for line in lines[1:]] == ["0", "1"]
    monkeypatch.undo()
    code, out_text, err = run_cli("sweep", sweep_file(tmp_path), "-o", str(out), *IN_PROCESS)
    assert code == 0 and "6 variants, 2 already in" in out_text, err


def test_a_read_only_shapes_folder_midway_is_one_line(tmp_path, monkeypatch):
    real_open = open

    def read_only_open(path, mode="r", *args, **kwargs):
        if os.path.basename(str(path)).startswith("1.npz"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(sweep_module, "open", read_only_open, raising=False)
    out = tmp_path / "out"
    code, _, err = run_cli("sweep", sweep_file(tmp_path), "-o", str(out), "--shapes", *IN_PROCESS)
    assert code == 2, err
    assert err.count("\n") == 1 and "1.npz" in err and "Read-only file system" in err, err
    assert sorted(p.name for p in (out / "shapes").iterdir()) == ["0.npz"]  # no temporary left
    assert (out / "results.csv").read_text().count("\n") == 2  # the header and variant 0


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_sweep_into_a_full_tmpfs(tmp_path):
    """The real thing where the test may mount a file system: 48 kB fill up after a few rows and shapes."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("no tmpfs can be mounted here")
    try:
        doc = json.loads(Path(sweep_file(tmp_path)).read_text())
        doc["samples"], doc["vary"] = 400, [{"path": "cables[0].length", "uniform": [0.25, 0.3]}]
        (tmp_path / "sweep.json").write_text(json.dumps(doc))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        done = subprocess.run(
            [sys.executable, "-m", "solver_core", "sweep", str(tmp_path / "sweep.json"), "-o", str(mount / "out")]
            + ["--shapes", *IN_PROCESS],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "No space left on device" in done.stderr, done.stderr
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


# ---------------------------------------------------------------- solve -o keeps the file's identity


@pytest.fixture
def solved(tmp_path):
    path = tmp_path / "case.json"
    path.write_text(json.dumps(SMALL))
    return str(path)


def test_a_new_result_has_the_mode_the_umask_gives(tmp_path, solved):
    old = os.umask(0o022)
    try:
        assert run_cli("solve", solved, "-q", "-o", str(tmp_path / "r.json"))[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o644


def test_an_existing_result_keeps_its_mode(tmp_path, solved):
    result = tmp_path / "r.json"
    result.write_text("old")
    os.chmod(result, 0o640)
    assert run_cli("solve", solved, "-q", "-o", str(result))[0] == 0
    assert stat.S_IMODE(os.stat(result).st_mode) == 0o640
    assert json.loads(result.read_text())["format"] == "cable-harness-result/1"


def test_a_symbolic_link_is_written_through(tmp_path, solved):
    (tmp_path / "results").mkdir()
    target = tmp_path / "results" / "r.json"
    target.write_text("old")
    os.chmod(target, 0o664)
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert run_cli("solve", solved, "-q", "-o", str(link))[0] == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["format"] == "cable-harness-result/1"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o664
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.json", "latest.json", "results"]


def test_a_dangling_symbolic_link_creates_its_target(tmp_path, solved):
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "made.json")
    assert run_cli("solve", solved, "-q", "-o", str(link))[0] == 0
    assert link.is_symlink() and json.loads((tmp_path / "made.json").read_text())["steps"]


def test_a_hard_link_is_replaced_by_name_and_the_other_name_keeps_the_old_result(tmp_path, solved):
    # documented (docs/solver.md): whole-or-nothing needs a rename, which gives the name a new file
    result, other = tmp_path / "r.json", tmp_path / "copy.json"
    result.write_text("old")
    os.link(result, other)
    assert run_cli("solve", solved, "-q", "-o", str(result))[0] == 0
    assert json.loads(result.read_text())["steps"] and other.read_text() == "old"


# Never the machine's own /dev/null or /dev/stdout: a regression (or this test run against a version
# without the fix) would replace them with regular files for every process on the machine.


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_character_device_is_written_to_not_replaced(tmp_path, solved):
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    except OSError:
        pytest.skip("no device node can be made here")
    before = os.stat(null)
    code, _, err = run_cli("solve", solved, "-q", "-o", str(null))
    assert code == 0, err
    after = os.stat(null)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_pipe_named_as_the_output_is_streamed_to(tmp_path, solved):
    # /dev/stdout is a link to /proc/self/fd/1: this link is the same, in the test's own folder
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "solver_core", "solve", solved, "-q", "-o", str(stdout)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "cable-harness-result/1"
    assert stdout.is_symlink()
