# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python API's step requests (issue 55, item 7): ``Harness.solve_step`` given frames, junction
moves and positions of every shape and value (NaN, infinity, wrong lengths, lists, matrices that are
not rotations) answers with a result or a CaseError naming the argument, never another exception.
A Hypothesis family beside the case-file families of test_cli_hardening.py, on harnesses of a few
segments so that it runs in seconds."""

import re

import numpy as np
import pytest
from helpers.cases import cable, case, rotation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver_core import CableChange, CaseError, Frame, Harness, JunctionMove, parse_case
from solver_core.specs.case import api_frame, parse_frame

END = {"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}
CLIPPED = parse_case(
    case(cable(segments=4, end=END, clips=[{"s": 0.15, "frame": {"position": [0.1, 0, -0.02], "tangent": [1, 0, 0]}}]))
)
BRANCHED = parse_case(
    case(
        cable(id="trunk", length=0.15, segments=4, end={"junction": "J", "outlet": [-1, 0, 0]}),
        cable(
            id="leaf",
            length=0.15,
            segments=4,
            start={"junction": "J", "outlet": [1, 0, 0]},
            end={"position": [0.22, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        ),
        junctions=[{"id": "J", "position": [0.11, 0, 0], "fixed": True}],
    )
)

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-0.3, 0.3),
    st.integers(-(10**30), 10**30),
    st.sampled_from([0.0, 1.0, -1.0, 1e308]),
)
vectors = st.one_of(
    st.lists(numbers, min_size=0, max_size=4),
    st.lists(numbers, min_size=3, max_size=3).map(tuple),
    st.lists(st.floats(-0.3, 0.3), min_size=3, max_size=3).map(np.array),
    st.sampled_from([np.zeros(3), np.array([1.0, 0, 0]), np.array([0, 0, 1.0]), np.ones((3, 1)), np.ones(2)]),
    st.sampled_from([None, "x", {"a": 1}, 3.0, [[1, 0, 0]], [None, 0, 0], ["1", "0", "0"]]),
)
frames = st.one_of(
    st.builds(Frame, vectors, vectors, st.one_of(st.none(), vectors)),
    # near what the cable can take, so that some requests are solved
    st.builds(
        lambda p, t: Frame(np.array(p), np.array(t), None),
        st.lists(st.floats(-0.05, 0.25), min_size=3, max_size=3),
        st.sampled_from([[1.0, 0, 0], [0.0, 0, 1], [1.0, 0, 0.0005]]),
    ),
    st.sampled_from([None, "frame", (0, 0, 0)]),
)
matrices = st.one_of(
    st.sampled_from(
        [
            np.eye(3),
            2 * np.eye(3),
            -np.eye(3),
            np.diag([1.0, 1.0, -1.0]),
            np.full((3, 3), np.nan),
            np.eye(3).tolist(),
            np.eye(2),
            np.zeros((3, 3)),
            "eye",
        ]
    ),
    st.builds(lambda a, ang: rotation(a, ang), st.sampled_from([[0, 0, 1], [1, 1, 0]]), st.floats(-0.3, 0.3)),
    st.lists(st.lists(numbers, min_size=3, max_size=3), min_size=3, max_size=3),
)
clip_keys = st.one_of(st.integers(-1, 2), st.sampled_from(["0", 0.0, True, None]))
changes = st.builds(
    lambda start, end, clips: CableChange(start, end, clips),
    st.one_of(st.none(), frames),
    st.one_of(st.none(), frames),
    st.one_of(st.dictionaries(clip_keys, frames, max_size=2), st.sampled_from([[], None, "0"])),
)
cable_keys = st.sampled_from(["W1", "trunk", "leaf", "nope", 3, None])
requests = st.fixed_dictionaries(
    {},
    optional={
        "changes": st.one_of(st.dictionaries(cable_keys, changes, max_size=2), st.sampled_from([[], "W1", 0])),
        "junction_moves": st.one_of(
            st.dictionaries(
                st.sampled_from(["J", "K", 1]),
                st.one_of(
                    st.builds(JunctionMove, st.one_of(st.none(), vectors), st.one_of(st.none(), matrices)),
                    st.sampled_from([None, {"position": [0, 0, 0]}]),
                ),
                max_size=1,
            ),
            st.sampled_from([[], "J"]),
        ),
        "cable_ids": st.one_of(st.none(), st.lists(cable_keys, max_size=2), st.sampled_from(["W1", 5, [None]])),
        "duration": st.one_of(st.none(), numbers, st.sampled_from(["1", [0.1]])),
    },
)


@pytest.mark.parametrize("which", ["a cable with a clip", "a fixed junction"])
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=requests)
def test_solve_step_answers_a_result_or_a_case_error(which, request):
    harness = Harness.from_case(CLIPPED if which == "a cable with a clip" else BRANCHED)
    with np.errstate(all="ignore"):
        try:
            reports = harness.solve_step(**request)
        except CaseError as exc:
            message = str(exc)
            assert message and "\n" not in message
            return
    assert isinstance(reports, dict)
    for report in reports.values():
        assert np.isfinite(report.state.positions).all()


def test_junction_rotations_that_are_not_rotations_are_refused_by_name():
    for bad, words in (
        (2 * np.eye(3), "not a rotation"),
        (np.diag([1.0, 1.0, -1.0]), "reflection"),
        (np.eye(3)[:2], "3x3"),
        ([[1, 0], [0, 1]], "3x3"),
    ):
        harness = Harness.from_case(BRANCHED)
        with pytest.raises(CaseError, match=rf"junction_moves\.J\.rotation.*{words}"):
            harness.solve_step(junction_moves={"J": JunctionMove(None, bad)})


def test_positions_tangents_and_lists_are_checked_like_the_case_files():
    harness = Harness.from_case(CLIPPED)
    for frame, words in (
        (Frame(np.array([0.2, 0.0]), np.array([1.0, 0, 0])), r"changes\.W1\.end\.position must be a list of 3"),
        (Frame(np.array([0.2, 0, 0]), np.zeros(3)), r"changes\.W1\.end\.tangent is the zero vector"),
        (Frame([0.2, 0, 0], "x"), r"changes\.W1\.end\.tangent must be a list of 3"),
    ):
        with pytest.raises(CaseError, match=words):
            harness.solve_step({"W1": CableChange(end=frame)})
    # lists are frames as well as arrays are
    reports = harness.solve_step({"W1": CableChange(end=Frame([0.2, 0.0, 0.0], [1.0, 0.0, 0.0]))})
    assert reports["W1"].converged


@settings(max_examples=200, deadline=None)
@given(
    position=st.lists(st.floats(-2e6, 2e6), min_size=3, max_size=3),
    tangent=st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3),
    normal=st.one_of(st.none(), st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)),
    normalise=st.booleans(),
)
def test_a_frame_of_arrays_is_taken_as_the_case_files_take_it(position, tangent, normal, normalise):
    # float64 arrays already normalised pass without the element checks (api_frame's quick way): they
    # must come out as the long way makes them, and everything else as before, refused by name or made
    t = np.array(tangent)
    n = None if normal is None else np.array(normal)
    if normalise and np.linalg.norm(t) > 0.1:
        t = t / np.linalg.norm(t)
        if n is not None:
            n = n - (n @ t) * t
            n = n / np.linalg.norm(n) if np.linalg.norm(n) > 0.1 else None
    frame = Frame(np.array(position), t, n)
    fields = {"position": list(position), "tangent": t.tolist()} | ({} if n is None else {"normal": n.tolist()})
    try:
        long_way = parse_frame(fields, "f")
    except CaseError as exc:
        with pytest.raises(CaseError, match=re.escape(str(exc))):
            api_frame(frame, "f")
        return
    taken = api_frame(frame, "f")
    for a, b in ((taken.position, long_way.position), (taken.tangent, long_way.tangent)):
        assert np.abs(a - b).max() <= 1e-12
    assert (taken.normal is None) == (long_way.normal is None)
    if taken.normal is not None:
        assert np.abs(taken.normal - long_way.normal).max() <= 1e-12


def test_a_result_with_arrays_holds_the_same_numbers_as_the_document():
    harness = Harness.from_case(CLIPPED)
    harness.solve_step()
    listed, arrays = harness.cable_result("W1"), harness.cable_result("W1", arrays=True)
    assert listed.keys() == arrays.keys()
    for key in ("nodes", "arc_lengths", "directors", "bend_radius_s", "twist_rates", "tensions"):
        assert isinstance(arrays[key], np.ndarray)
        assert np.array_equal(arrays[key], np.array(listed[key]))
    assert arrays["bend_radii"] == listed["bend_radii"] and arrays["end_forces"] == listed["end_forces"]
