# SPDX-License-Identifier: GPL-3.0-or-later
"""Wires routed through a harness's junctions (bundle wires with an ``id``, wire_routes.py): the
route and length to cut against a brute-force path search over random trees, refusals by name of
wires that end inside a junction, split, loop or change on the way, and the ids carried into the
result, the CLI's output and back out of case_to_dict."""

import itertools
import json
import random
import subprocess
import sys

import pytest
from helpers.cases import AT_ORIGIN, D, at, branch, case, connector, wire
from hypothesis import given, settings
from hypothesis import strategies as st

from solver_core import CaseError, case_to_dict, parse_case, solve_case
from solver_core.specs.wire_routes import RouteError, trace_wire


def tree(trunk_wires, left_wires, right_wires, leaf_wires=None):
    """A trunk from a connector to J1, a branch to a connector and one on to J2 with a leaf to a
    connector: trunk -> J1 -> {left, mid -> J2 -> leaf}; ``right_wires`` go on ``mid``."""
    cables = [
        branch("trunk", 0.30, AT_ORIGIN, at("J1", [1, 0, 0]), trunk_wires),
        branch("left", 0.21, at("J1", [1, 1, 0]), connector([0.42, 0.12, 0.0], [1, 0, 0]), left_wires),
        branch("mid", 0.17, at("J1", [1, -1, 0]), at("J2", [1, 0, 0]), right_wires),
        branch("leaf", 0.13, at("J2", [1, 0, 0]), connector([0.55, -0.12, 0.0], [1, 0, 0]), leaf_wires or [wire(None)]),
    ]
    return case(
        *cables,
        junctions=[{"id": "J1", "position": [0.3, 0.0, 0.0]}, {"id": "J2", "position": [0.42, -0.12, 0.0]}],
    )


def test_a_wire_through_two_junctions_is_cut_to_the_sum_of_its_branches():
    doc = tree(
        [wire("W1"), wire("W2", count=2), wire(None, count=5)],
        [wire("W2", count=2)],
        [wire("W1")],
        [wire("W1")],
    )
    routes = {r.id: r for r in parse_case(doc).wires}
    assert set(routes) == {"W1", "W2"}  # the wires without an id are not routed
    w1, w2 = routes["W1"], routes["W2"]
    assert w1.cables == ("trunk", "mid", "leaf") and w1.start == ("trunk", "start") and w1.end == ("leaf", "end")
    assert w1.length == pytest.approx(0.30 + 0.17 + 0.13, abs=1e-15)
    assert w2.cables == ("trunk", "left") and w2.end == ("left", "end") and w2.count == 2
    assert w2.length == pytest.approx(0.51, abs=1e-15)


def test_a_route_is_read_from_whichever_end_comes_first_in_the_case():
    """A wire listed on branches given leaf first still runs from its first terminal end, in order."""
    doc = tree([wire("W1")], [wire(None)], [wire("W1")], [wire("W1")])
    doc["cables"] = [doc["cables"][3], doc["cables"][2], doc["cables"][1], doc["cables"][0]]
    (route,) = parse_case(doc).wires
    assert (
        route.start == ("leaf", "end") and route.cables == ("leaf", "mid", "trunk") and route.end == ("trunk", "start")
    )


def test_a_wire_on_one_cable_runs_from_its_start_to_its_end_or_free_end():
    one = case(branch("W", 0.4, AT_ORIGIN, connector([0.3, 0, 0], [1, 0, 0]), [wire("A"), wire("B", count=3)]))
    free = case(branch("W", 0.4, AT_ORIGIN, None, [wire("A")]))
    for doc, end in ((one, ("W", "end")), (free, ("W", "end"))):
        route = parse_case(doc).wires[0]
        assert route.start == ("W", "start") and route.end == end and route.length == 0.4


@pytest.mark.parametrize(
    "edit, message",
    [
        # on the trunk only: it ends inside J1
        (
            lambda d: d["cables"][0]["bundle"]["wires"].append(wire("X")),
            r"cables\[0\]\.bundle\.wires\[1\]\.id: wire 'X' ends inside junction 'J1'",
        ),
        # on trunk, left and mid: it splits at J1
        (
            lambda d: [d["cables"][k]["bundle"]["wires"].append(wire("X")) for k in (0, 1, 2)],
            r"cables\[2\]\.bundle\.wires\[1\]\.id: wire 'X' splits at junction 'J1'",
        ),
        # on left and leaf: they do not meet (left ends in J1, leaf starts in J2)
        (
            lambda d: [d["cables"][k]["bundle"]["wires"].append(wire("X")) for k in (1, 3)],
            r"wire 'X' ends inside junction",
        ),
        # a different diameter on the way
        (
            lambda d: [d["cables"][k]["bundle"]["wires"].append(wire("X", diameter=D * (1 + k))) for k in (0, 1)],
            r"cables\[1\]\.bundle\.wires\[1\]\.diameter: wire 'X' has diameter",
        ),
        (
            lambda d: [d["cables"][k]["bundle"]["wires"].append(wire("X", count=1 + k)) for k in (0, 1)],
            r"cables\[1\]\.bundle\.wires\[1\]\.count",
        ),
        (
            lambda d: d["cables"][0]["bundle"]["wires"].extend([wire("X"), wire("X")]),
            r"wires\[2\]\.id 'X' is given twice",
        ),
        (lambda d: d["cables"][0]["bundle"]["wires"].append(wire("")), r"cables\[0\]\.bundle\.wires\[1\]\.id must be"),
        (lambda d: d["cables"][0]["bundle"]["wires"].append(wire(7)), r"cables\[0\]\.bundle\.wires\[1\]\.id must be"),
        (lambda d: d["cables"][0]["bundle"]["wires"].append(wire("x" * 101)), r"\.id must be a non-empty text"),
    ],
)
def test_wires_that_cannot_be_made_are_refused_by_name(edit, message):
    doc = tree([wire(None)], [wire(None)], [wire(None)])
    edit(doc)
    with pytest.raises(CaseError, match=message):
        parse_case(doc)


def test_a_wire_round_a_loop_of_branches_is_refused():
    """Two branches between the same two junctions carry a wire round and round: no ends."""
    doc = case(
        branch("trunk", 0.3, AT_ORIGIN, at("J1", [1, 0, 0]), [wire(None)]),
        branch("upper", 0.25, at("J1", [1, 1, 0]), at("J2", [1, -1, 0]), [wire("L")]),
        branch("lower", 0.25, at("J1", [1, -1, 0]), at("J2", [1, 1, 0]), [wire("L")]),
        junctions=[{"id": "J1", "position": [0.3, 0, 0]}, {"id": "J2", "position": [0.5, 0, 0]}],
    )
    with pytest.raises(CaseError, match=r"wire 'L' on cables 'upper', 'lower' is not one route .*0 ends"):
        parse_case(doc)


# ---------------------------------------------------------------- against a brute-force path search


def _random_tree(rng: random.Random, junctions: int):
    """Branches of a random tree: junction k > 0 hangs from an earlier one; every junction gets
    terminal branches so that it joins at least 3 ends. (cable id, start junction, end junction)."""
    branches = []
    for k in range(1, junctions):
        branches.append((f"b{k}", f"J{rng.randrange(k)}", f"J{k}"))
    for k in range(junctions):
        for t in range(rng.randint(1, 2) + (k == 0)):
            if rng.random() < 0.5:
                branches.append((f"t{k}.{t}", f"J{k}", None))
            else:
                branches.append((f"t{k}.{t}", None, f"J{k}"))
    rng.shuffle(branches)
    return branches


def _tree_path(branches, a, b):
    """The cables on the way between terminal ends a and b, by depth-first search over junctions
    (the reference: written without trace_wire's degree bookkeeping)."""
    links = {}
    for cid, s, e in branches:
        for j in (s, e):
            if j is not None:
                links.setdefault(j, []).append(cid)
    ends = {cid: (s, e) for cid, s, e in branches}

    def junction_of(cid):
        s, e = ends[cid]
        return s if s is not None else e

    if a == b:
        return {a}
    goal = junction_of(b)
    stack = [(junction_of(a), {a}, None)]
    while stack:
        j, used, came = stack.pop()
        if j == goal:
            return used | {b}
        for cid in links[j]:
            if cid in used or cid == came:
                continue
            s, e = ends[cid]
            if s is not None and e is not None:
                stack.append((e if s == j else s, used | {cid}, cid))
    raise AssertionError("a tree joins every pair of terminals")


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), junctions=st.integers(1, 6))
def test_routes_match_a_brute_force_path_search_on_random_trees(seed, junctions):
    rng = random.Random(seed)
    branches = _random_tree(rng, junctions)
    terminals = [cid for cid, s, e in branches if s is None or e is None]
    paths = {frozenset(_tree_path(branches, a, b)) for a, b in itertools.combinations(terminals, 2)}
    for a, b in itertools.combinations(terminals, 2):  # every true path is traced, end to end
        on = [br for br in branches if br[0] in _tree_path(branches, a, b)]
        order, first, last = trace_wire("W", on)
        assert {c for c, _f in order} == {c for c, _s, _e in on} and len(order) == len(on)
        assert {first[0], last[0]} == {a, b}
        for (c1, f1), (c2, _f2) in zip(order, order[1:]):  # consecutive cables meet at a junction
            s1, e1 = dict((c, (s, e)) for c, s, e in on)[c1]
            meet = e1 if f1 else s1
            assert meet is not None and meet in dict((c, (s, e)) for c, s, e in on)[c2]
    for _ in range(20):  # any other set of branches is refused
        subset = [br for br in branches if rng.random() < 0.5]
        if not subset:
            continue
        if frozenset(c for c, _s, _e in subset) in paths:
            trace_wire("W", subset)
        else:
            with pytest.raises(RouteError):
                trace_wire("W", subset)


# ---------------------------------------------------------------- in results, the CLI and back


def test_routed_wires_are_in_the_result_the_cli_and_the_case_written_back(tmp_path):
    doc = tree([wire("W1"), wire(None, count=4)], [wire(None)], [wire("W1")], [wire("W1")])
    assert case_to_dict(parse_case(doc))["cables"][0]["bundle"]["wires"][0]["id"] == "W1"
    assert parse_case(case_to_dict(parse_case(doc))).wires == parse_case(doc).wires
    result = solve_case(doc)
    (w,) = result["wires"]
    assert w["from"] == {"cable": "trunk", "end": "start"} and w["to"] == {"cable": "leaf", "end": "end"}
    assert w["cables"] == ["trunk", "mid", "leaf"] and w["length"] == pytest.approx(0.60, abs=1e-15)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    for out in ("r.json", "r.jsonl"):
        run = subprocess.run(
            [sys.executable, "-m", "solver_core", "solve", str(path), "-o", str(tmp_path / out)],
            capture_output=True,
            text=True,
        )
        assert run.returncode in (0, 1), run.stderr
        assert (
            "wire W1: 1 x 1.60 mm, trunk (start) to leaf (end), cut 0.6000 m, through trunk > mid > leaf" in run.stdout
        )
        text = (tmp_path / out).read_text()
        head = json.loads(text.splitlines()[0]) if out.endswith("l") else json.loads(text)
        assert head["wires"] == result["wires"]
    assert "wires" not in solve_case(tree([wire(None)], [wire(None)], [wire(None)]))
