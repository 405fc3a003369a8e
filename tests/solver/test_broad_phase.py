# SPDX-License-Identifier: GPL-3.0-or-later
"""Broad phase (bvh.py, grids): the candidate pairs are exactly those brute force finds."""

import numpy as np
import pytest
from helpers.cases import cable, case, harness
from helpers.contact_scenes import TABLE, R, crossed_pair, no_penetration
from helpers.kernel_inputs import contact_interactions, pair_buffers

from solver_core import CableChange, Frame, Harness, parse_case


def test_other_cables_segments_found_by_the_grid_are_those_brute_force_finds(rng):
    from solver_core.contact.contact import CAP_NODE, CAP_SEG, INTERIOR
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs
    from solver_core.geometry.contact_geometry import closest_point_on_segment, segment_segment

    radius, reach = 0.002, 0.003
    cq, cp = np.empty(3), np.empty(3)
    for _ in range(4):
        pos = np.cumsum(rng.normal(scale=0.005, size=(50, 3)), axis=0)
        others = [
            np.cumsum(rng.normal(scale=0.005, size=(40, 3)), axis=0) + rng.normal(scale=0.01, size=3) for _ in range(4)
        ]
        a = np.concatenate([o[:-1] for o in others])
        b = np.concatenate([o[1:] for o in others])
        cap_r = rng.uniform(0.001, 0.004, size=len(a))
        kind, elem, prim = find_pairs(
            pos,
            np.full(len(pos), radius),
            np.zeros(len(pos), dtype=np.int64),
            reach,
            ObstacleSet().with_capsules(a, b, cap_r).kernel_arrays(),
            0,
        )

        def continues(c):
            return c + 1 < len(a) and (a[c + 1] == b[c]).all()

        brute = set()
        for c in range(len(a)):
            for i in range(len(pos)):
                u = closest_point_on_segment(a[c], b[c], pos[i], cq)
                if not (u >= 1.0 and continues(c)) and np.linalg.norm(pos[i] - cq) < cap_r[c] + radius + reach:
                    brute.add((CAP_NODE, i, c))
            for i in range(len(pos) - 1):
                s_, t_, d = segment_segment(pos[i], pos[i + 1], a[c], b[c], cp, cq)
                if not (t_ >= 1.0 and continues(c)) and d < cap_r[c] + radius + reach and INTERIOR < s_ < 1 - INTERIOR:
                    brute.add((CAP_SEG, i, c))
        found = list(zip(kind.tolist(), elem.tolist(), prim.tolist()))
        assert len(found) == len(set(found)) and set(found) == brute and brute


def test_self_contact_pairs_found_by_the_grid_are_those_brute_force_finds(rng):
    from solver_core.contact.contact import SELF_NODE, SELF_SEG
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs
    from solver_core.geometry.contact_geometry import closest_point_on_segment, segment_segment

    radius, reach, gap = 0.002, 0.003, 3
    cq, cp = np.empty(3), np.empty(3)
    for _ in range(3):
        pos = np.cumsum(rng.normal(scale=0.004, size=(120, 3)), axis=0)  # a random walk that meets itself
        kind, elem, prim = find_pairs(
            pos,
            np.full(len(pos), radius),
            np.zeros(len(pos), dtype=np.int64),
            reach,
            ObstacleSet().kernel_arrays(),
            gap,
        )
        brute = set()
        n_seg = len(pos) - 1
        for i in range(len(pos)):
            for c in range(n_seg):
                if not (c + 1 > i - gap and c < i + gap):
                    closest_point_on_segment(pos[c], pos[c + 1], pos[i], cq)
                    if np.linalg.norm(pos[i] - cq) < 2 * radius + reach:
                        brute.add((SELF_NODE, i, c))
        for i in range(n_seg):
            for c in range(i + gap, n_seg):
                s_, t_, d = segment_segment(pos[i], pos[i + 1], pos[c], pos[c + 1], cp, cq)
                if d < 2 * radius + reach:  # wherever the closest points lie (see find_pairs)
                    brute.add((SELF_SEG, i, c))
        found = list(zip(kind.tolist(), elem.tolist(), prim.tolist()))
        assert len(found) == len(set(found)) and set(found) == brute and brute


def test_obstacles_tree_finds_every_triangle_brute_force_finds(rng):
    from solver_core.geometry.bvh import build_triangle_tree, query_box

    tris = rng.uniform(-1, 1, size=(2000, 1, 3)) + rng.uniform(-0.05, 0.05, size=(2000, 3, 3))
    tree = build_triangle_tree(tris)
    for _ in range(50):
        lo = rng.uniform(-1, 0.8, size=3)
        hi = lo + rng.uniform(0.01, 0.4, size=3)
        out = np.empty(4000, dtype=np.int64)
        n = query_box(
            tree.node_min,
            tree.node_max,
            tree.node_left,
            tree.node_right,
            tree.node_start,
            tree.node_count,
            tree.order,
            lo,
            hi,
            out,
            0,
        )
        brute = np.flatnonzero(((tris.min(axis=1) <= hi) & (tris.max(axis=1) >= lo)).all(axis=1))
        found = set(out[:n].tolist())
        # a broad phase: every overlapping triangle is found (whole leaves of up to 4 may come along)
        assert set(brute.tolist()) <= found and len(found) == n
        assert n <= 4 * max(len(brute), 1) + 64


def test_a_step_from_pairs_handed_on_by_the_last_solve_ends_where_a_fresh_search_does():
    # Between solves a cable keeps its candidate contact pairs and lower bounds of their gaps (a warm
    # step moves it less than the search reach). The handed-on step must reach the equilibrium that a
    # step from a fresh search reaches: a cable lying across a ribbed mesh, its end moved sideways.
    x = np.linspace(-0.1, 0.4, 11)  # the open border far from the cable (no segment pairs depend on the search)
    y = np.linspace(-0.1, 0.1, 5)
    X, Y = np.meshgrid(x, y)
    Z = 0.0002 * np.sin(40.0 * X)  # gentle: a segment over curved facets may cut them by its sagitta
    verts = np.column_stack((X.ravel(), Y.ravel(), Z.ravel()))
    n = len(x)
    i, j = np.meshgrid(np.arange(len(y) - 1), np.arange(n - 1), indexing="ij")
    a = (i * n + j).ravel()
    tris = np.concatenate((np.column_stack((a, a + 1, a + n + 1)), np.column_stack((a, a + n + 1, a + n))))
    mesh = {"type": "mesh", "vertices": verts.tolist(), "triangles": tris.tolist()}
    doc = case(
        cable(
            length=0.31,
            start={"position": [0.0, 0.0, 0.003], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
            end={"position": [0.3, 0.0, 0.003], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        ),
        obstacles=[mesh],
    )
    results = []
    for handed_on in (True, False):
        h = Harness.from_case(parse_case(doc))
        assert h.solve_step()["W1"].converged
        session = h.cables["W1"]
        for _ in range(4):  # small moves: within the search reach of the last search
            if not handed_on:
                session.interactions.keep_candidates(None)
            end = session.boundary.end
            moved = Frame(end.position + [0.0, 0.0005, 0.0], end.tangent, end.normal)
            assert h.solve_step({"W1": CableChange(end=moved)})["W1"].converged
        results.append(h.cable_result("W1"))
    kept, fresh = (np.array(r["nodes"]) for r in results)
    assert np.abs(kept - fresh).max() < 1e-3 * R  # the same equilibrium (within the solver's tolerance)
    assert np.abs(kept[:, 1]).max() > 0.0015  # and the cable did move sideways
    for r in results:
        no_penetration(r, doc)


def test_nodes_within_agrees_with_the_closest_node_distance():
    # touching_groups joins two cables when some node of one lies within reach of some node of the
    # other; reference: the smallest of all node-node distances
    from solver_core.geometry.contact_geometry import nodes_within

    rng = np.random.default_rng(11)
    for _ in range(20):
        a, b = rng.normal(size=(30, 3)), rng.normal(size=(40, 3)) + rng.uniform(0, 4)
        closest = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)).min()
        assert nodes_within(a, b, closest * 1.001) and not nodes_within(a, b, closest * 0.999)


def test_the_contact_report_follows_the_state_and_the_stiffness_it_is_asked_for():
    # A solve's last evaluation of its contact pairs is kept for the report of the same state: it must
    # never answer for another state or stiffness. Reference: the penalty force k l (r - d) of a node
    # lying on the table, pressed a further 10 um.
    from solver_core.contact.contact import PLANE

    h = harness(
        case(
            cable(length=0.3, segments=30, start={"position": [0, 0, R], "tangent": [1, 0, 0], "normal": [0, 0, 1]}),
            obstacles=[TABLE],
        )
    )
    assert h.solve_step()["W1"].converged
    session = h.cables["W1"]
    interactions, state = session.interactions, session.state
    before = {c[1]: c[5][2] for c in interactions.contacts(state) if c[0] == PLANE}
    assert before and interactions.contacts(state)[0][5][2] == before[min(before)]  # asked again: the same
    pressed = state.copy()
    pressed.positions[:, 2] -= 1e-5
    after = {c[1]: c[5][2] for c in interactions.contacts(pressed) if c[0] == PLANE}
    lengths = interactions.node_lengths
    for node, force in before.items():
        assert after[node] - force == pytest.approx(interactions.stiffness * lengths[node] * 1e-5, rel=1e-6)
    doubled = {c[1]: c[5][2] for c in interactions.contacts(pressed, 2.0 * interactions.stiffness) if c[0] == PLANE}
    assert all(doubled[node] == pytest.approx(2.0 * after[node], rel=1e-9) for node in after)


def test_the_contact_report_searches_only_touching_pairs_and_misses_nothing():
    # The report searches pairs that touch; reference: the same penalty evaluated over every pair
    # within ten radii (what a pair carries depends on other pairs, a crossing's on its ends' and a
    # facet's on its node's: those must touch too to count). Two crossed cables pressed together, B
    # across the middle of one of A's segments, over a table that A's middle is pressed onto: plane
    # and segment-capsule pairs.
    from solver_core.contact.contact import CAP_SEG, PLANE
    from solver_core.contact.contact_energy import contact_energy
    from solver_core.contact.pair_search import find_pairs

    doc = crossed_pair(0.2, 2 * R)
    for end in ("start", "end"):  # B crosses A half-way between two of A's nodes
        doc["cables"][1][end]["position"][0] = 0.005
    doc["obstacles"] = [{"type": "plane", "point": [0, 0, -R + 2e-5], "normal": [0, 0, 1]}]
    h = harness(doc)
    assert all(r.converged for r in h.solve_step().values())
    kinds = set()
    for session in h.cables.values():
        it, state = session.interactions, session.state
        reported = {(c[0], c[1], c[7]): c[5] for c in it.contacts(state)}
        obstacles = it._shifted_obstacles()
        kind, elem, prim = find_pairs(state.positions, it.node_radius, it.node_part, 10 * R, obstacles, it.self_gap)
        pairs = pair_buffers(kind, elem, prim)
        extra = contact_interactions(obstacles, it.node_radius, it.node_lengths, session.model.rest_len, it.stiffness)
        contact_energy(state.positions, pairs, extra, session.model.node_dof, np.zeros(1), np.zeros((1, 1)), 0, 0)
        force = pairs.force
        wide = {(int(kind[p]), int(elem[p]), int(prim[p])): force[p] for p in np.flatnonzero((force != 0).any(axis=1))}
        assert len(kind) > 2 * len(wide)  # the wide search did find open pairs
        assert reported.keys() == wide.keys()
        for key, f in wide.items():
            assert reported[key] == pytest.approx(f, rel=1e-12, abs=1e-15)
        kinds |= {key[0] for key in wide}
    assert {PLANE, CAP_SEG} <= kinds
