# SPDX-License-Identifier: GPL-3.0-or-later
"""Malformed and extreme input: every one refused with a one-line message naming the field (CaseError
from the API, exit 2 from the command line), results written atomically, no NaN or infinity out."""

import contextlib
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.cases import cable, case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver_core import CableChange, CaseError, Frame, Harness, parse_case, solve_case
from solver_core.io.cli import main
from solver_core.session.results import unpack

ROOT = Path(__file__).resolve().parents[2]
FIELD = ("cables", "gravity", "obstacles", "steps", "solver", "contact", "case", "changes", "cable_ids", "junctions")


def base(**cable_overrides):
    """A small valid case with a clip and a step: every family below mutates a copy of it."""
    c = cable(
        segments=6,
        end={"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        clips=[
            {"s": 0.1, "kind": "fixed", "length": 0.01, "frame": {"position": [0.08, 0, 0.01], "tangent": [1, 0, 0]}}
        ],
    )
    c.update(cable_overrides)
    return case(c, steps=[{"cables": {"W1": {"end": {"position": [0.19, 0, 0], "tangent": [1, 0, 0]}}}}])


def run_cli(*args):
    """The command line in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def strict_json(text):
    """Parse JSON that must hold no NaN or Infinity, and check every number in it is finite."""

    def refuse(token):
        raise AssertionError(f"non-finite {token} in the output")

    doc = json.loads(text, parse_constant=refuse)

    def walk(v):
        if isinstance(v, float):
            assert math.isfinite(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc)
    return doc


def mutate(doc, path, value):
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


# ---------------------------------------------------------------- the reported inputs, one by one

REPORTED = [
    ("material preset as a list", ("cables", 0, "material", "preset"), ["pvc_wire"], "cables[0].material.preset"),
    (
        "ragged mesh vertices",
        ("obstacles",),
        [{"type": "mesh", "vertices": [[0, 0, 0], [1, 0]], "triangles": [[0, 1, 1]]}],
        "obstacles[0].vertices",
    ),
    (
        "ragged mesh triangles",
        ("obstacles",),
        [{"type": "mesh", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "triangles": [[0, 1, 2], [0, 1]]}],
        "obstacles[0].triangles",
    ),
    (
        "string in a mesh vertex",
        ("obstacles",),
        [{"type": "mesh", "vertices": [[0, 0, "a"], [1, 0, 0], [0, 1, 0]], "triangles": [[0, 1, 2]]}],
        "obstacles[0].vertices",
    ),
    ("string in a vector", ("cables", 0, "start", "position"), [0, "0", 0], "cables[0].start.position[1]"),
    (
        "step clip without frame",
        ("steps",),
        [{"cables": {"W1": {"clips": {"0": {}}}}}],
        "steps[0].cables.W1.clips.0.frame is missing",
    ),
    (
        "step clip key not an ASCII index",
        ("steps",),
        [{"cables": {"W1": {"clips": {"²": {"frame": {"position": [0.08, 0, 0.01], "tangent": [1, 0, 0]}}}}}}],
        "steps[0].cables.W1.clips.²",
    ),
    ("400-digit length", ("cables", 0, "length"), 10**400, "cables[0].length"),
    ("length 1e308 with a free end", ("cables", 0, "length"), 1e308, "cables[0].length"),
    ("gravity 1e300", ("gravity",), [0, 0, -1e300], "gravity[2]"),
    ("start and end at 1e300", ("cables", 0, "start", "position"), [1e300, 0, 0], "cables[0].start.position[0]"),
    ("huge modulus", ("cables", 0, "material", "E"), 1e308, "cables[0].material.E"),
    ("vanishing diameter", ("cables", 0, "diameter"), 1e-300, "cables[0].diameter"),
    ("iteration count beyond 64 bits", ("solver",), {"max_iterations": 10**30}, "solver.max_iterations"),
    (
        "mesh index beyond 64 bits",
        ("obstacles",),
        [{"type": "mesh", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "triangles": [[0, 1, 10**30]]}],
        "obstacles[0].triangles",
    ),
    ("key with a line break", ("cables", 0, "co\nlour"), 1, "cables[0].'co\\nlour' is not a known key"),
]


@pytest.mark.parametrize("what,path,value,field", REPORTED, ids=[r[0] for r in REPORTED])
def test_reported_inputs_raise_case_error_naming_the_field(what, path, value, field):
    with pytest.raises(CaseError) as err:
        parse_case(mutate(base(), path, value))
    assert field in str(err.value)
    assert "\n" not in str(err.value)


CONTRADICTIONS = [
    (
        "two zero-length clips at one point with different tangents",
        [
            {"s": 0.1, "frame": {"position": [0.1, 0, 0], "tangent": [1, 0, 0]}},
            {"s": 0.1, "frame": {"position": [0.1, 0, 0], "tangent": [0, 1, 0]}},
        ],
        "clips[1] overlaps clips[0]",
    ),
    (
        "a zero-length clip at the end of a clip with another tangent",
        [
            {"s": 0.1, "length": 0.02, "frame": {"position": [0.1, 0, 0], "tangent": [1, 0, 0]}},
            {"s": 0.11, "frame": {"position": [0.11, 0, 0], "tangent": [0, 1, 0]}},
        ],
        "with different tangents",
    ),
    (
        "overlapping sliding clips",
        [
            {"s": 0.1, "kind": "sliding", "length": 0.02, "frame": {"position": [0.1, 0, 0], "tangent": [1, 0, 0]}},
            {"s": 0.105, "kind": "sliding", "length": 0.02, "frame": {"position": [0.105, 0, 0], "tangent": [1, 0, 0]}},
        ],
        "clips[1] overlaps clips[0]",
    ),
]


@pytest.mark.parametrize("what,clips,message", CONTRADICTIONS, ids=[c[0] for c in CONTRADICTIONS])
def test_contradictions_are_refused(what, clips, message):
    with pytest.raises(CaseError, match=r"cables\[0\]") as err:
        parse_case(case(cable(clips=clips)))
    assert message in str(err.value)


def test_clips_that_only_touch_with_one_tangent_are_accepted():
    clips = [
        {"s": 0.1, "length": 0.02, "frame": {"position": [0.1, 0, 0], "tangent": [1, 0, 0]}},
        {"s": 0.11, "frame": {"position": [0.11, 0, 0], "tangent": [1, 0, 0]}},
    ]
    assert len(parse_case(case(cable(clips=clips))).cables[0].clips) == 2


def test_numpy_scalars_are_numbers():
    doc = base(length=np.float32(0.3), diameter=np.float64(0.004), segments=np.int64(6))
    doc["cables"][0]["material"]["E"] = np.float32(126e6)
    doc["gravity"] = [np.float32(0.0), np.int32(0), np.float64(-9.81)]
    c = parse_case(doc).cables[0]
    assert c.length == pytest.approx(0.3) and c.segments == 6 and type(c.segments) is int
    assert json.dumps(solve_case(doc)["format"])  # the case's numbers went in as plain floats


def test_the_api_raises_case_error_for_every_family():
    with pytest.raises(CaseError, match="cables\\[0\\].material.preset"):
        solve_case(mutate(base(), ("cables", 0, "material", "preset"), ["pvc_wire"]))
    with pytest.raises(CaseError, match="case must be a Case or a case document"):
        solve_case("case.json")
    with pytest.raises(CaseError, match="case must be an object"):
        parse_case([1, 2])


def test_harness_refuses_unknown_cables_in_a_step():
    h = Harness.from_case(parse_case(base()))
    frame = Frame(np.zeros(3), np.array([1.0, 0, 0]))
    with pytest.raises(CaseError, match="changes.W9: there is no cable with id 'W9'"):
        h.solve_step({"W9": CableChange(start=frame)})
    with pytest.raises(CaseError, match="cable_ids: there is no cable with id 'W9'"):
        h.solve_step(None, cable_ids=["W9"])
    with pytest.raises(CaseError, match="changes.W1.clips.3"):
        h.solve_step({"W1": CableChange(clips={3: frame})})
    with pytest.raises(CaseError, match="changes.W1 must be a CableChange"):
        h.solve_step({"W1": {"start": frame}})


def test_a_cable_rebuilt_with_another_clip_count_takes_steps_for_its_new_clips():
    doc = base()
    h = Harness.from_case(parse_case(doc))
    assert len(h.case.cables[0].clips) == 1
    second = {"s": 0.2, "frame": {"position": [0.15, 0.0, -0.02], "tangent": [1, 0, 0], "normal": [0, 0, 1]}}
    doc["cables"][0]["clips"].append(second)
    h.add_cable(parse_case(doc).cables[0])  # as Blender does when a clip is added to the cable's list
    assert len(h.case.cables) == 1 and len(h.case.cables[0].clips) == 2
    moved = Frame(np.array([0.15, 0.01, -0.02]), np.array([1.0, 0, 0]), np.array([0, 0, 1.0]))
    report = h.solve_step({"W1": CableChange(clips={1: moved})})["W1"]
    assert report.converged, report.message
    with pytest.raises(CaseError, match="changes.W1.clips.2"):
        h.solve_step({"W1": CableChange(clips={2: moved})})


def test_harness_says_when_a_step_puts_holders_out_of_reach():
    h = Harness.from_case(parse_case(base()))
    far = Frame(np.array([0.5, 0.0, 0.0]), np.array([1.0, 0, 0]))
    with pytest.raises(CaseError, match="step: start and end of cable 'W1' are 0.5 m apart but the cable is only 0.3"):
        h.check_reach("W1", CableChange(end=far))
    clip_far = Frame(np.array([0.08, 0.2, 0.0]), np.array([1.0, 0, 0]))
    with pytest.raises(CaseError, match="start and clips\\[0\\] of cable .W1. are 0.2136 m apart but only 0.095 m"):
        h.check_reach("W1", CableChange(clips={0: clip_far}))
    h.check_reach("W1", CableChange(end=Frame(np.array([0.25, 0.0, 0.0]), np.array([1.0, 0, 0]))))
    with pytest.raises(CaseError, match="changes.W9"):
        h.check_reach("W9", CableChange(end=far))


# ---------------------------------------------------------------- files and the output


def test_file_level_problems(tmp_path):
    cases = {
        "nonutf8.json": b'{"format": "\xff"}',
        "nested.json": b"[" * 200000,
        "empty.json": b"",
        "digits.json": b'{"format": 1' + b"0" * 5000 + b"}",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        code, _, err = run_cli("solve", str(tmp_path / name))
        assert code == 2 and err.count("\n") == 1 and name in err, (name, err)


def test_output_problems_are_found_before_solving(tmp_path, monkeypatch):
    case_file = tmp_path / "case.json"
    case_file.write_text(json.dumps(base()))
    import solver_core.io.cli as cli

    def never(*a, **k):
        raise AssertionError("solved before the output was checked")

    monkeypatch.setattr(cli, "solve_to", never)
    for target, message in (
        (tmp_path / "missing" / "r.json", "does not exist"),
        (tmp_path, "is a folder"),
        (Path("/proc/r.json"), "cannot write in /proc"),
    ):
        code, _, err = run_cli("solve", str(case_file), "-o", str(target))
        assert code == 2 and message in err and err.startswith("error: -o "), err


def test_a_failed_write_leaves_the_previous_result(tmp_path, monkeypatch):
    case_file = tmp_path / "case.json"
    case_file.write_text(json.dumps(base()))
    out = tmp_path / "r.json"
    out.write_text("previous")
    import solver_core.io.run_case as run_case

    real, calls = run_case.step_result, []

    def fail_on_second(harness, packed=False):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(harness, packed)

    monkeypatch.setattr(run_case, "step_result", fail_on_second)
    code, _, err = run_cli("solve", str(case_file), "-o", str(out), "-q")
    assert code == 3 and "internal error" in err and err.count("\n") == 1
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.json", "r.json"]  # no temporary file left


def test_streamed_json_lines_match_the_document(tmp_path):
    case_file = tmp_path / "case.json"
    case_file.write_text(json.dumps(base()))
    assert run_cli("solve", str(case_file), "-o", str(tmp_path / "r.json"), "-q")[0] == 0
    assert run_cli("solve", str(case_file), "-o", str(tmp_path / "r.jsonl"), "-q")[0] == 0
    doc = strict_json((tmp_path / "r.json").read_text())
    lines = [strict_json(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "format": "cable-harness-result-stream/1",
        "result_format": "cable-harness-result/1",
        "cables": ["W1"],
        "steps": 2,
    }
    assert [line["step"] for line in lines[1:-1]] == [0, 1]
    assert lines[-1] == {"end": True, "converged": True, "warnings": []}
    for line, step in zip(lines[1:-1], doc["steps"]):
        streamed, full = line["cables"]["W1"], step["cables"]["W1"]
        for key in ("nodes", "arc_lengths", "directors", "bend_radius_s", "twist_rates", "tensions"):
            assert np.array_equal(unpack(streamed.pop(key)), np.array(full.pop(key)))  # bit for bit
        radii = np.array([np.inf if r is None else r for r in full.pop("bend_radii")])
        curvature = unpack(streamed.pop("curvatures"))
        assert np.allclose(curvature[radii < np.inf] * radii[radii < np.inf], 1.0, rtol=1e-14, atol=0)
        assert np.all(curvature[radii == np.inf] == 0.0)
        streamed.pop("solve_ms"), full.pop("solve_ms")  # the same solves, bar their clock
        assert streamed == full


# (ids with control characters, a newline among them, are refused: test_faults_inputs.py)
@pytest.mark.parametrize("cable_id", ["W1", 'quote " back \\ slash', "ünïcode ✓", "zero\u200bwidth 😀"])
def test_a_stream_line_is_the_step_document(cable_id):
    # results.dumps_stream_step puts the packed arrays' base64 in as it is and the rest through json
    from solver_core.session.results import dumps, dumps_stream_step, step_result

    doc = base(id=cable_id)
    doc["steps"][0]["cables"] = {cable_id: doc["steps"][0]["cables"]["W1"]}
    doc["obstacles"] = [{"type": "plane", "point": [0, 0, -0.004], "normal": [0, 0, 1]}]  # contacts
    h = Harness.from_case(parse_case(doc))
    for index, changes in enumerate([None, *parse_case(doc).steps]):
        h.solve_step(changes)
        step = step_result(h, packed=True)
        line = dumps_stream_step(index, step)
        assert "\n" not in line
        assert strict_json(line) == json.loads(dumps({"step": index, **step}))
    not_packed = step_result(h, packed=False)  # no packed arrays: the whole document through json
    assert json.loads(dumps_stream_step(7, not_packed)) == json.loads(dumps({"step": 7, **not_packed}))


def test_result_quantities_match_the_diagnostics():
    # results.py computes in one kernel what diagnostics.py computes with numpy
    from solver_core.session.harness import max_axial_strain
    from solver_core.solve.diagnostics import bend_radii, directors, twist_rates
    from solver_core.solve.equilibrium import centre_line_length

    h = Harness.from_case(parse_case(base()))
    h.solve_step()
    session = h.cables["W1"]
    doc = h.cable_result("W1")
    model, state = session.model, session.state
    assert np.allclose(doc["directors"], directors(state, model), rtol=0, atol=1e-15)
    reference = bend_radii(model, state)
    got = np.array([np.inf if r is None else r for r in doc["bend_radii"]])
    assert np.array_equal(np.isinf(got), np.isinf(reference))
    assert np.allclose(got[np.isfinite(got)], reference[np.isfinite(reference)], rtol=1e-12, atol=0)
    assert doc["max_twist_rate"] == pytest.approx(np.abs(twist_rates(model, state)).max(), rel=1e-12, abs=1e-12)
    assert np.allclose(doc["twist_rates"], twist_rates(model, state), rtol=1e-12, atol=1e-12)
    assert doc["length"] == pytest.approx(centre_line_length(state), rel=1e-14)
    assert doc["max_strain"] == pytest.approx(max_axial_strain(model, state), rel=1e-9, abs=1e-15)


def test_non_finite_state_is_a_failure_with_a_message():
    h = Harness.from_case(parse_case(base()))
    h.solve_step()
    session = h.cables["W1"]
    session.state.positions[3] = np.nan
    doc = h.cable_result("W1")
    assert doc["converged"] is False and "non-finite values (state)" in doc["message"]
    strict_json(json.dumps(doc))
    assert np.allclose(doc["nodes"][0], [0, 0, 0]) and np.allclose(doc["nodes"][-1], [0.2, 0, 0])


# ---------------------------------------------------------------- property-based: the fuzz families


def json_values():
    leaves = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(10**400), max_value=10**400)
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text(max_size=8)
    )
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=8,
    )


extreme_numbers = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0, -0.0, 1e-320, 1e-300, 1e300, 1e308, -1e308, 10**400, 2**63, -(2**63)])
    | st.floats(min_value=-1e7, max_value=1e7)
)

PATHS = [
    ("cables", 0, "length"),
    ("cables", 0, "diameter"),
    ("cables", 0, "segments"),
    ("cables", 0, "id"),
    ("cables", 0, "material"),
    ("cables", 0, "material", "E"),
    ("cables", 0, "material", "nu"),
    ("cables", 0, "material", "preset"),
    ("cables", 0, "material", "density"),
    ("cables", 0, "start"),
    ("cables", 0, "start", "position"),
    ("cables", 0, "start", "tangent"),
    ("cables", 0, "end"),
    ("cables", 0, "clips"),
    ("cables", 0, "clips", 0, "s"),
    ("cables", 0, "clips", 0, "kind"),
    ("cables", 0, "clips", 0, "length"),
    ("cables", 0, "clips", 0, "frame"),
    ("cables", 0, "loads"),
    ("cables", 0, "route"),
    ("gravity",),
    ("obstacles",),
    ("contact",),
    ("solver",),
    ("steps",),
    ("steps", 0, "cables"),
    ("steps", 0, "cables", "W1"),
    ("steps", 0, "cables", "W1", "clips"),
    ("format",),
    ("cables",),
]
NUMBER_PATHS = [
    ("cables", 0, "length"),
    ("cables", 0, "diameter"),
    ("cables", 0, "material", "E"),
    ("cables", 0, "material", "density"),
    ("cables", 0, "clips", 0, "s"),
    ("cables", 0, "clips", 0, "length"),
    ("gravity", 2),
    ("cables", 0, "start", "position", 0),
    ("cables", 0, "end", "position", 0),
    ("cables", 0, "clips", 0, "frame", "position", 2),
    ("solver", "tolerance"),
    ("solver", "max_iterations"),
]


@st.composite
def malformed_documents(draw):
    doc = base()
    doc["solver"] = {"max_iterations": 30}
    family = draw(
        st.sampled_from(["any value", "extreme number", "contradiction", "mesh", "rest shape", "bundle", "junction"])
    )
    if family == "any value":
        mutate(doc, draw(st.sampled_from(PATHS)), draw(json_values()))
    elif family == "extreme number":
        for _ in range(draw(st.integers(1, 3))):
            mutate(doc, draw(st.sampled_from(NUMBER_PATHS)), draw(extreme_numbers))
    elif family == "contradiction":
        s = draw(st.floats(0.02, 0.28))
        tangents = st.sampled_from([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.6, 0.8, 0]])
        kinds = st.sampled_from(["fixed", "rotating", "sliding"])
        lengths = st.sampled_from([0.0, 0.005, 0.02])
        doc["cables"][0]["clips"] = [
            {
                "s": s + draw(st.sampled_from([0.0, 0.001, 0.01])) * k,
                "kind": draw(kinds),
                "length": draw(lengths),
                "frame": {"position": [s, 0, 0], "tangent": draw(tangents)},
            }
            for k in range(2)
        ]
    elif family == "rest shape":
        doc["cables"][0]["rest"] = draw(
            json_values()
            | st.fixed_dictionaries(
                {"curvature": st.lists(extreme_numbers, min_size=1, max_size=3), "twist": extreme_numbers}
            )
            | st.fixed_dictionaries(
                {"route": st.lists(st.lists(extreme_numbers, min_size=2, max_size=4), min_size=0, max_size=5)}
            )
        )
    elif family == "bundle":
        wire = st.fixed_dictionaries(
            {"diameter": extreme_numbers | json_values(), "count": st.integers(-2, 3) | json_values()},
            optional={"material": st.just({"preset": "pvc_wire"}) | json_values()},
        )
        cable_doc = doc["cables"][0]
        cable_doc["bundle"] = draw(
            json_values()
            | st.fixed_dictionaries(
                {"wires": st.lists(wire, max_size=3) | json_values()},
                optional={
                    "wrap": st.sampled_from(["loose", "taped", "tied"]) | json_values(),
                    "sheath": extreme_numbers,
                },
            )
        )
        for key in ("diameter", "material"):
            if draw(st.booleans()):
                cable_doc.pop(key)
    elif family == "junction":
        # the cable's end at a junction, with a second cable from it; any part of either malformed
        junction = st.fixed_dictionaries(
            {"id": st.sampled_from(["J", "K", ""]) | json_values(), "position": st.just([0.2, 0, 0]) | json_values()},
            optional={"fixed": st.booleans() | json_values(), "mass": extreme_numbers | json_values()},
        )
        doc["junctions"] = draw(st.lists(junction, max_size=3) | json_values())
        end = st.fixed_dictionaries(
            {"junction": st.sampled_from(["J", "K"]) | json_values()},
            optional={
                "outlet": st.sampled_from([[1, 0, 0], [0, 0, 0], [2, 0, 0]]) | json_values(),
                "normal": st.just([0, 0, 1]) | json_values(),
            },
        )
        doc["cables"][0]["end"] = draw(end)
        doc["cables"].append(
            cable(id="W2", segments=6, start=draw(end), end={"position": [0.3, 0, 0], "tangent": [1, 0, 0]})
        )
        if draw(st.booleans()):
            doc["steps"] = [{"cables": {}, "junctions": draw(json_values())}]
    else:
        vertices = draw(st.lists(st.lists(extreme_numbers, min_size=2, max_size=4), min_size=0, max_size=4))
        triangles = draw(st.lists(st.lists(st.integers(-2, 2**64), min_size=2, max_size=4), max_size=3))
        doc["obstacles"] = [{"type": "mesh", "vertices": vertices, "triangles": triangles}]
    return doc


FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@FUZZ
@given(doc=malformed_documents())
def test_api_raises_only_case_error(doc):
    try:
        parse_case(doc)
    except CaseError as exc:
        message = str(exc)
        assert "\n" not in message and any(f in message for f in FIELD), message


@FUZZ
@given(doc=malformed_documents())
def test_cli_exits_0_1_or_2_with_finite_output(doc, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    case_file, out = folder / "case.json", folder / "r.json"
    case_file.write_text(json.dumps(doc, allow_nan=True))
    code, _, err = run_cli("solve", str(case_file), "-o", str(out), "-q")
    assert code in (0, 1, 2), err
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert any(f in err for f in FIELD + ("case.json",)), err
        assert not out.exists()
    else:
        result = strict_json(out.read_text())
        cables = [c for step in result["steps"] for c in step["cables"].values()]
        assert all(c["converged"] for c in cables) is (code == 0)
        for c in cables:
            assert ("message" in c) is (not c["converged"])


@settings(max_examples=60, deadline=None, database=None)
@given(data=st.binary(max_size=64) | st.sampled_from([b"[" * 5000, b'{"a":' * 3000, b"\xc3\x28", b"NaN"]))
def test_cli_on_arbitrary_bytes(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("bytes") / "case.json"
    path.write_bytes(data)
    code, _, err = run_cli("check", str(path))
    assert code == 2 and err.count("\n") == 1 and ("case.json" in err or any(f in err for f in FIELD)), err


def test_exit_codes_from_a_separate_process(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"format": "\xff"}')
    run = subprocess.run(
        [sys.executable, "-m", "solver_core", "solve", str(bad)], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr and run.stderr.count("\n") == 1
    good = tmp_path / "good.json"
    good.write_text(json.dumps(mutate(base(), ("cables", 0, "material", "E"), np.float32(2e8).item())))
    run = subprocess.run(
        [sys.executable, "-m", "solver_core", "solve", str(good), "-o", str(tmp_path / "r.jsonl"), "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert run.returncode == 0, run.stderr
