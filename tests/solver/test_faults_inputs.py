# SPDX-License-Identifier: GPL-3.0-or-later
"""Inputs at their bounds (issue 55, items 6 and 7): files that are too large or not files, long
dynamic runs that say how far they are, sweeps whose variants run too long, and the small holes of
the case format (ids with control characters or lone surrogates, keys given twice, a bundle's
derived values, a sweep range wider than a double) -- each a one-line message naming the field."""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.cases import cable, case

from solver_core import CaseError, parse_case
from solver_core.io import cli as cli_module
from solver_core.io.cli import main

ROOT = Path(__file__).resolve().parents[2]
END = {"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}
SMALL = case(cable(segments=6, end=END))


def run_cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def refused(args, *words):
    code, _, err = run_cli(*args)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    for w in words:
        assert w in err, err
    return err


# ---------------------------------------------------------------- item 6: unbounded reads


def test_a_file_above_the_size_cap_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse: no 65 MB written
    refused(["check", str(big)], str(big), "65 MB", "64 MB")


def bounded_cli(*args):
    """The command line in a child process limited in time and memory: a read of /dev/zero or a FIFO
    that never ends fails the test instead of hanging it or filling the machine's memory."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))

    return subprocess.run(
        [sys.executable, "-m", "solver_core", *args],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )


def test_devices_and_fifos_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        done = bounded_cli("check", path)
        assert done.returncode == 2, done.stderr[-300:]
        assert done.stderr.count("\n") == 1 and "not a regular file" in done.stderr and path in done.stderr


def test_a_sweep_naming_a_device_as_its_case_is_refused(tmp_path):
    doc = {"format": "cable-harness-sweep/1", "case": "/dev/zero", "vary": [{"path": "x", "values": [1]}]}
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    done = bounded_cli("sweep", str(tmp_path / "sweep.json"), "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-300:]
    assert "/dev/zero" in done.stderr and "not a regular file" in done.stderr


# ---------------------------------------------------------------- item 6: long runs


def dynamic_case(duration, time_step=1e-4):
    """A small cable whose end rises 1 cm in one step of ``duration`` seconds."""
    return case(
        cable(segments=4, end=END),
        solver={"dynamics": {"time_step": time_step, "damping": 1.0}},
        steps=[{"duration": duration, "cables": {"W1": {"end": {"position": [0.2, 0, 0.01], "tangent": [1, 0, 0]}}}}],
    )


def test_a_long_dynamic_step_reports_progress_on_stderr(tmp_path, monkeypatch):
    # a line every 2 ms: the step's 500 time steps take far longer on any machine (with 0.3 s a fast
    # machine finished the step before the first line)
    monkeypatch.setattr(cli_module, "PROGRESS_INTERVAL", 0.002)
    (tmp_path / "case.json").write_text(json.dumps(dynamic_case(0.05)))
    code, _, err = run_cli("solve", str(tmp_path / "case.json"), "-q")
    assert code == 0, err
    lines = err.splitlines()
    form = re.compile(r"step 0 of 1: solving \(\d+ s so far\)|step 1 of 1: time step \d+ of 500 \(\d+ s so far\)")
    assert all(form.fullmatch(line) for line in lines) and "step 1 of 1: time step" in err, err


def test_a_variant_past_its_time_limit_is_a_timed_out_row_and_the_sweep_goes_on(tmp_path):
    doc = {
        "format": "cable-harness-sweep/1",
        "case": dynamic_case(0.05, time_step=1e-3),
        "vary": [{"path": "steps[0].duration", "values": [0.05, 5.0, 0.1]}],
    }
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "solver_core", "sweep", str(tmp_path / "sweep.json"), "-o", str(tmp_path / "out")]
        + ["--executor", "processes", "--workers", "2", "--no-plots", "--variant-timeout", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    import csv

    with open(tmp_path / "out" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["converged"] for r in rows] == ["true", "false", "true"]
    assert rows[1]["message"].startswith("timed out: still solving after 2 s"), rows[1]["message"]
    assert time.monotonic() - started < 120


# ---------------------------------------------------------------- item 7: small holes


@pytest.mark.parametrize(
    "cable_id, words",
    [("W\ud800", ["cables[0].id", "lone surrogate"]), ("W1\nstep 0 cable X: converged", ["cables[0].id", "control"])],
)
def test_ids_with_lone_surrogates_or_control_characters_are_refused(tmp_path, cable_id, words):
    doc = case(cable(id=cable_id, segments=6, end=END))
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))  # ASCII JSON: the surrogate as the escape \ud800
    refused(["check", str(path)], *words)
    with pytest.raises(CaseError, match=r"cables\[0\]\.id"):
        parse_case(doc)


def test_junction_and_wire_ids_are_checked_alike():
    doc = case(cable(segments=6, end=END), junctions=[{"id": "J\x1b[2K", "position": [0, 0, 0]}])
    with pytest.raises(CaseError, match=r"junctions\[0\]\.id holds a control character"):
        parse_case(doc)


def test_check_accepts_what_solve_accepts_a_dynamic_case_without_steps(tmp_path):
    doc = case(cable(segments=4, end=END), solver={"dynamics": {"time_step": 1e-8}})
    (tmp_path / "case.json").write_text(json.dumps(doc))
    assert run_cli("check", str(tmp_path / "case.json"))[0] == 0
    code, _, err = run_cli("solve", str(tmp_path / "case.json"), "-q")
    assert code == 0, err


def test_duplicate_keys_are_refused_naming_the_key_and_the_place(tmp_path):
    text = json.dumps(SMALL).replace('"E": 126000000.0', '"E": 126000000.0, "E": 1.0')
    assert '"E": 1.0' in text
    (tmp_path / "case.json").write_text(text)
    refused(["check", str(tmp_path / "case.json")], "cables[0].material", "'E'", "twice")


def test_a_bundles_derived_stiffness_out_of_range_is_named_under_the_bundle():
    # each wire's GJ is in range, the twenty's sum is not; the case has no material.GJ to name
    wires = [{"diameter": 0.001, "material": {"EA": 1.0, "EI": 1e-3, "GJ": 1e14, "density": 1e3}, "count": 20}]
    doc = case(cable(segments=4, end=END, bundle={"wires": wires, "wrap": "taped"}))
    for key in ("diameter", "material"):
        del doc["cables"][0][key]
    with pytest.raises(CaseError, match=r"^cables\[0\]\.bundle \(its derived GJ\) = 2e\+15 is out of range"):
        parse_case(doc)


def test_a_uniform_range_wider_than_a_double_is_refused(tmp_path):
    doc = {
        "format": "cable-harness-sweep/1",
        "case": SMALL,
        "samples": 3,
        "vary": [{"path": "cables[0].length", "uniform": [-1.7e308, 1.7e308]}],
    }
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    refused(["sweep", str(tmp_path / "sweep.json"), "-o", str(tmp_path / "out")], "sweep.vary[0].uniform")


def test_a_bundle_diameter_below_its_wires_is_warned(tmp_path):
    wires = [{"diameter": 0.002, "material": {"E": 126e6, "nu": 0.3, "density": 7958.0}, "count": 7}]
    doc = case(cable(segments=4, end=END, diameter=0.003, bundle={"wires": wires, "wrap": "taped"}))
    del doc["cables"][0]["material"]
    parsed = parse_case(doc)
    assert len(parsed.warnings) == 1 and parsed.warnings[0].startswith("cables[0].diameter = 3 mm is less than")
    (tmp_path / "case.json").write_text(json.dumps(doc))
    code, out, _ = run_cli("check", str(tmp_path / "case.json"))
    assert code == 0 and "warning: cables[0].diameter = 3 mm" in out
