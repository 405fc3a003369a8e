# SPDX-License-Identifier: GPL-3.0-or-later
"""A junction's own contact with obstacles (junction_contact.py): its nearest points and path crossings
against brute force, and a heavy junction coming to rest on a floor and on a thin plate, in balance
with what the obstacles push back with (from the result alone), never through them."""

import numpy as np
import pytest
from helpers.cases import case, min_clearance, solve
from helpers.harnesses import (
    AT_ORIGIN,
    V_MASS,
    V_RADIUS,
    G,
    at,
    balance,
    branch,
    connector,
    force_scale,
    node_masses,
    v_on,
    v_weight,
)

from solver_core.contact.contact import PENETRATION_TOLERANCE
from solver_core.junctions.junction_contact import closest_points_on_triangles, segment_crosses_triangles


def test_nearest_points_on_triangles_match_dense_sampling():
    rng = np.random.default_rng(7)
    tris = rng.normal(size=(40, 3, 3))
    u, v = np.meshgrid(np.linspace(0, 1, 301), np.linspace(0, 1, 301))
    keep = u + v <= 1.0
    u, v = u[keep], v[keep]
    for p in rng.normal(scale=2.0, size=(25, 3)):
        nearest = closest_points_on_triangles(p, tris)
        for t, q in zip(tris, nearest):
            samples = t[0] + u[:, None] * (t[1] - t[0]) + v[:, None] * (t[2] - t[0])
            sampled = np.linalg.norm(samples - p, axis=1).min()
            exact = np.linalg.norm(q - p)
            # q lies on the triangle and is no farther than any sample (the grid is 1/300 of an edge)
            assert exact <= sampled + 1e-12
            assert sampled - exact <= 0.02 * np.linalg.norm(t[1] - t[0]) + 0.02 * np.linalg.norm(t[2] - t[0])
            w = np.linalg.lstsq(np.column_stack([t[1] - t[0], t[2] - t[0]]), q - t[0], rcond=None)[0]
            assert w.min() >= -1e-9 and w.sum() <= 1.0 + 1e-9


def test_path_crossings_match_a_sign_change_inside_the_triangle():
    rng = np.random.default_rng(11)
    for _ in range(400):
        tri = rng.normal(size=(1, 3, 3))
        p0, p1 = rng.normal(size=3), rng.normal(size=3)
        a, b, c = tri[0]
        n = np.cross(b - a, c - a)
        s0, s1 = (p0 - a) @ n, (p1 - a) @ n
        expected = False
        if s0 * s1 < 0.0:  # where the path meets the plane: inside the triangle (barycentric)?
            x = p0 + s0 / (s0 - s1) * (p1 - p0)
            w = np.linalg.lstsq(np.column_stack([b - a, c - a]), x - a, rcond=None)[0]
            margin = min(w.min(), 1.0 - w.sum())
            if abs(margin) < 1e-9:
                continue  # on an edge: either answer is right
            expected = margin > 0.0
        assert segment_crosses_triangles(p0, p1, tri) == expected


def test_a_heavy_junction_rests_on_a_floor_in_balance_with_it():
    free = solve(v_on([]))["steps"][0]
    assert free["junctions"]["J"]["converged"] and free["junctions"]["J"]["position"][2] < -0.08
    floor = {"type": "plane", "point": [0, 0, -0.03], "normal": [0, 0, 1]}
    r = solve(v_on([floor]))["steps"][0]
    j = r["junctions"]["J"]
    assert j["converged"] and all(c["converged"] and c["stable"] for c in r["cables"].values())
    assert j["contacts"], "the junction itself rests on the floor"
    gap = j["position"][2] - (-0.03) - V_RADIUS
    assert -PENETRATION_TOLERANCE * V_RADIUS <= gap <= 1e-9
    # the whole harness in balance with connectors, weights and every contact force, the junction's too
    force, moment = balance(r, {"J": V_MASS}, {"trunk": 2 * V_RADIUS})
    assert np.abs(force).max() < 1e-6 * force_scale(r, v_weight(r))
    assert np.abs(moment).max() < 1e-6 * force_scale(r, v_weight(r)) * 0.5
    # a frictionless floor pushes straight up only
    push = np.sum([c["force"] for c in j["contacts"]], axis=0)
    assert push[2] > 0.0 and np.allclose(push[:2], 0.0, atol=1e-12)


def _v_spread(obstacle, mass, tilt, spread_deg, length):
    """A heavy V as in bench_junction_contact: a thick trunk comes down into the junction, two branches
    leave it upwards ``spread_deg`` either side."""
    a = np.radians(spread_deg)
    end1 = [0.25 + 0.25 * np.cos(a), 0.25 * np.sin(a), 0.0]
    end2 = [end1[0], -end1[1], 0.0]
    return case(
        branch("trunk", length, AT_ORIGIN, at("J", [1, 0, -tilt]), diameter=2 * V_RADIUS),
        branch("left", length, at("J", [np.cos(a), np.sin(a), tilt]), connector(end1, [np.cos(a), np.sin(a), 0])),
        branch("right", length, at("J", [np.cos(a), -np.sin(a), tilt]), connector(end2, [np.cos(a), -np.sin(a), 0])),
        junctions=[{"id": "J", "position": [0.25, 0.0, 0.0], "mass": mass}],
        obstacles=[obstacle],
    )


@pytest.mark.parametrize(
    "centre, radius, mass, tilt, spread, length",
    [  # bench_junction_contact's harnesses 6, 7, 9 and 23 (seed 1), rounded
        ([0.24040, 0.00680, -0.05844], 0.03372, 0.001233, 0.423, 43.0, 0.2578),
        ([0.26148, -0.00617, -0.05225], 0.03733, 0.01485, 0.409, 57.7, 0.2617),
        ([0.26220, 0.00927, -0.08374], 0.03557, 0.03056, 0.576, 61.8, 0.2677),
        ([0.24570, -0.00536, -0.03717], 0.01751, 0.00839, 0.236, 62.3, 0.2606),
    ],
)
def test_a_junction_coming_down_onto_a_sphere_balances_on_or_beside_it(centre, radius, mass, tilt, spread, length):
    """A junction whose branches touch the sphere right next to it: their contact comes on within the
    junctions' finite-difference steps, and a step straddling it measured a stiffness thousands of
    times too stiff (the junction crept for hundreds of Newton iterations); it comes to rest, resting
    on the sphere or rolled off it, in balance from the result alone, never inside it."""
    sphere = {"type": "sphere", "center": centre, "radius": radius}
    r = solve(_v_spread(sphere, mass, tilt, spread, length))["steps"][0]
    j = r["junctions"]["J"]
    assert np.linalg.norm(np.asarray(j["position"]) - centre) >= radius + (1.0 - PENETRATION_TOLERANCE) * V_RADIUS
    assert j["converged"] and all(c["converged"] and c["stable"] for c in r["cables"].values())
    assert j["contacts"] or any(c["contacts"] for c in r["cables"].values()), "the sphere holds it up"
    for cid, c in r["cables"].items():
        own = V_RADIUS if cid == "trunk" else 0.002
        assert min_clearance(c["nodes"], own, [sphere]) >= -PENETRATION_TOLERANCE * own
    weight = mass * G + sum(
        node_masses(c, 2 * V_RADIUS if cid == "trunk" else 0.004).sum() * G for cid, c in r["cables"].items()
    )
    force, moment = balance(r, {"J": mass}, {"trunk": 2 * V_RADIUS})
    assert np.abs(force).max() < 1e-6 * force_scale(r, weight)
    assert np.abs(moment).max() < 1e-6 * force_scale(r, weight) * 0.5


@pytest.mark.parametrize("height", [-0.03, -0.006])
def test_a_heavy_junction_does_not_drop_through_a_thin_plate(height):
    """A plate of two triangles, no thickness, under the junction: a junction step (up to a tenth of a
    branch, 27 mm) could jump it; the junction comes to rest on it (26 mm below), or, close below
    (2 mm), its branches, blocked on the way down, hold it just clear; in balance either way."""
    plate = {
        "type": "mesh",
        "vertices": [[0.15, -0.1, height], [0.35, -0.1, height], [0.35, 0.1, height], [0.15, 0.1, height]],
        "triangles": [[0, 1, 2], [0, 2, 3]],
    }
    r = solve(v_on([plate]))["steps"][0]
    j = r["junctions"]["J"]
    assert j["position"][2] > height  # never below the plate, converged or not
    assert j["converged"] and all(c["converged"] and c["stable"] for c in r["cables"].values())
    assert j["position"][2] - height - V_RADIUS >= -PENETRATION_TOLERANCE * V_RADIUS
    if height == -0.03:  # far below its drawn place: it comes down onto the plate
        assert j["contacts"]
    assert all(c["force"][2] > 0.0 for c in j["contacts"])
    force, _moment = balance(r, {"J": V_MASS}, {"trunk": 2 * V_RADIUS})
    assert np.abs(force).max() < 1e-6 * force_scale(r, v_weight(r))


@pytest.mark.parametrize("drop, converges", [(0.03, True), (0.05, True), (0.08, True), (0.1, False)])
def test_a_step_that_drags_the_harness_down_never_takes_the_junction_through_the_plate(drop, converges):
    """Every connector lowered in one step, the junction resting on a thin plate 20 mm below: by 30 mm
    the harness settles again with the junction above the plate; by 50 mm the trunk, drawn taut over
    the plate's edge, lifts the junction (with the junction where it was, the trunk would stretch
    1.3 %: the ultimate strain is judged at the balance, not on the way); by 80 mm all three branches
    are drawn over the plate's edges, the junction held up between them (0.06 % strain); by 100 mm
    the balanced harness would stretch 1 %: the step is refused, and the junction is left where it
    was, on the plate, not pulled through it."""
    height = -0.02
    plate = {
        "type": "mesh",
        "vertices": [[0.15, -0.1, height], [0.35, -0.1, height], [0.35, 0.1, height], [0.15, 0.1, height]],
        "triangles": [[0, 1, 2], [0, 2, 3]],
    }
    doc = v_on([plate], mass=0.005)
    moves = {}
    for c in doc["cables"]:
        side = "start" if "position" in c["start"] else "end"
        frame = dict(c[side])
        frame["position"] = [frame["position"][0], frame["position"][1], frame["position"][2] - drop]
        moves[c["id"]] = {side: frame}
    doc["steps"] = [{"cables": moves}]
    first, step = solve(doc)["steps"]
    before = first["junctions"]["J"]
    assert before["converged"] and before["contacts"]
    assert before["position"][2] - height - V_RADIUS >= -PENETRATION_TOLERANCE * V_RADIUS
    j = step["junctions"]["J"]
    assert j["converged"] == converges and all(c["converged"] == converges for c in step["cables"].values())
    assert j["position"][2] - height - V_RADIUS >= -PENETRATION_TOLERANCE * V_RADIUS
    if not converges:
        assert "stretch" in step["cables"]["trunk"]["message"]
        assert j["position"] == before["position"]
    for cid, c in step["cables"].items():  # no branch through the plate either, converged or not
        radius = V_RADIUS if cid == "trunk" else 0.002
        assert min_clearance(c["nodes"], radius, [plate]) >= -PENETRATION_TOLERANCE * radius
        assert c["max_strain"] <= 0.005 or not converges


def test_the_junction_contact_force_and_hessian_are_the_energys_derivatives():
    """Against central differences of the penalty energy (and of its force for the Hessian, exact on a
    plane, the Gauss-Newton part elsewhere: the curvature of the distance is left out, as for cables)."""
    from solver_core.contact.obstacles import obstacles_from_case
    from solver_core.junctions.junction_contact import JunctionContact

    tris = [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.1, 0.0]]
    cases = [
        ({"type": "plane", "point": [0, 0, 0], "normal": _unit([0.2, -0.1, 1.0])}, [0.01, 0.02, 0.003], True),
        ({"type": "sphere", "center": [0, 0, -0.05], "radius": 0.05}, [0.002, -0.001, 0.002], False),
        ({"type": "mesh", "vertices": tris, "triangles": [[0, 1, 2]]}, [0.02, 0.03, 0.0025], False),  # the face
        ({"type": "mesh", "vertices": tris, "triangles": [[0, 1, 2]]}, [-0.002, 0.03, 0.002], False),  # an edge
    ]
    h = 1e-7
    for obstacle, p, exact_hessian in cases:
        obstacles = obstacles_from_case([obstacle])
        ball = JunctionContact(V_RADIUS, 1e5, 1e-6)
        p = np.asarray(p)
        assert ball.touching(obstacles, p), obstacle
        grad = np.array(
            [(ball.energy(obstacles, p + h * e) - ball.energy(obstacles, p - h * e)) / (2 * h) for e in np.eye(3)]
        )
        np.testing.assert_allclose(ball.force(obstacles, p), -grad, rtol=1e-5, atol=1e-9)
        stiffness = np.array(
            [(ball.force(obstacles, p - h * e) - ball.force(obstacles, p + h * e)) / (2 * h) for e in np.eye(3)]
        ).T
        H = ball.hessian(obstacles, p)
        n = ball.touching(obstacles, p)[0][1]
        if exact_hessian:
            np.testing.assert_allclose(H, stiffness, rtol=1e-5, atol=1e-6)
        else:  # along the normal it is exact; the rest is the distance's curvature
            assert n @ H @ n == pytest.approx(n @ stiffness @ n, rel=1e-5)


def _unit(v):
    v = np.asarray(v, dtype=float)
    return (v / np.linalg.norm(v)).tolist()


def test_a_ball_over_a_shared_edge_or_corner_touches_the_mesh_once():
    """Two triangles of a flat plate share the diagonal, six a fan's centre: a ball resting right over
    them is pushed as by a plane, once, not once per triangle."""
    from solver_core.contact.obstacles import obstacles_from_case
    from solver_core.junctions.junction_contact import JunctionContact

    square = [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.1, 0.1, 0.0], [0.0, 0.1, 0.0]]
    fan = [[0.0, 0.0, 0.0]] + [[0.05 * np.cos(a), 0.05 * np.sin(a), 0.0] for a in np.radians(range(0, 360, 60))]
    meshes = [
        ({"type": "mesh", "vertices": square, "triangles": [[0, 1, 2], [0, 2, 3]]}, [0.05, 0.05, 0.003]),
        ({"type": "mesh", "vertices": fan, "triangles": [[0, k, k % 6 + 1] for k in range(1, 7)]}, [0, 0, 0.003]),
    ]
    plane = obstacles_from_case([{"type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1]}])
    for mesh, p in meshes:
        ball = JunctionContact(V_RADIUS, 1e5, 1e-6)
        obstacles = obstacles_from_case([mesh])
        assert len(ball.touching(obstacles, np.asarray(p))) == 1
        np.testing.assert_allclose(ball.force(obstacles, np.asarray(p)), ball.force(plane, np.asarray(p)), rtol=1e-12)


def test_many_segments_against_one_triangle_agree_with_one_segment_against_many():
    from solver_core.junctions.junction_contact import segments_cross_triangle

    rng = np.random.default_rng(13)
    for _ in range(200):
        tri = rng.normal(size=(3, 3))
        starts, ends = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
        each = [segment_crosses_triangles(a, b, tri[None]) for a, b in zip(starts, ends)]
        assert segments_cross_triangle(starts, ends, tri) == any(each)
        for i in range(6):
            assert segments_cross_triangle(starts[i : i + 1], ends[i : i + 1], tri) == each[i]


def test_segment_distances_match_dense_sampling():
    from solver_core.junctions.junction_contact import segment_distances

    rng = np.random.default_rng(5)
    u = np.linspace(0.0, 1.0, 401)
    for trial in range(120):
        p0, p1 = rng.normal(size=3), rng.normal(size=3)
        if trial % 7 == 0:
            p1 = p0.copy()  # a junction that does not move
        a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
        b[0] = a[0]  # a segment that is a point
        b[1] = a[1] + 3.0 * (p1 - p0)  # parallel to the path
        exact = segment_distances(p0, p1, a, b)
        path = p0 + u[:, None] * (p1 - p0)
        for i in range(4):
            other = a[i] + u[:, None] * (b[i] - a[i])
            sampled = np.sqrt(((path[:, None, :] - other[None, :, :]) ** 2).sum(axis=-1)).min()
            # no farther than any pair of samples, and the samples come within their spacing of it
            assert exact[i] <= sampled + 1e-12
            assert sampled - exact[i] <= (np.linalg.norm(p1 - p0) + np.linalg.norm(b[i] - a[i])) / 400


def test_cables_touch_where_their_centre_lines_come_within_their_radii_away_from_holders():
    from solver_core.junctions.junction_contact import cables_touch

    rng = np.random.default_rng(17)
    u = np.linspace(0.0, 1.0, 401)[:, None]

    def free_samples(x, held):
        """Dense samples of the parts that carry contact: half a segment next to a held node."""
        parts = []
        for i in range(len(x) - 1):
            if held[i] and held[i + 1]:
                continue
            lo = 0.5 if held[i] else 0.0
            hi = 0.5 if held[i + 1] else 1.0
            parts.append(x[i] + (lo + u * (hi - lo)) * (x[i + 1] - x[i]))
        return np.concatenate(parts) if parts else np.zeros((0, 3))

    for _ in range(80):
        a = np.cumsum(rng.normal(scale=0.05, size=(6, 3)), axis=0)
        b = np.cumsum(rng.normal(scale=0.05, size=(5, 3)), axis=0) + rng.normal(scale=0.05, size=3)
        held_a, held_b = rng.random(6) < 0.3, rng.random(5) < 0.3
        sa, sb = free_samples(a, held_a), free_samples(b, held_b)
        sampled = np.linalg.norm(sa[:, None] - sb[None], axis=-1).min(initial=np.inf)
        spacing = (
            max(np.linalg.norm(np.diff(a, axis=0), axis=1).max(), np.linalg.norm(np.diff(b, axis=0), axis=1).max())
            / 400
        )
        for reach in rng.uniform(0.0, 0.06, size=4):
            if abs(sampled - reach) <= 2.0 * spacing:
                continue  # too near the threshold for the samples to tell
            assert cables_touch((a, 0.4 * reach, held_a), (b, 0.6 * reach, held_b)) == (sampled < reach)


def test_a_junction_path_into_another_cable_is_seen():
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.junctions.junction_contact import JunctionContact

    bar = ObstacleSet().with_capsules(np.array([[0.0, -0.2, 0.0]]), np.array([[0.0, 0.2, 0.0]]), np.array([0.002]))
    enters = JunctionContact.enters_cable
    down = np.array([0.0, 0.0, 0.01]), np.array([0.0, 0.0, -0.01])
    assert enters(bar, *down)  # straight through its centre line
    assert enters(bar, np.array([0.0, 0.0, 0.01]), np.array([0.0, 0.0, 0.0015]))  # into its core
    assert not enters(bar, np.array([0.0, 0.0, 0.01]), np.array([0.0, 0.0, 0.0025]))  # onto it
    assert not enters(bar, np.array([0.01, 0.0, 0.01]), np.array([0.01, 0.0, -0.01]))  # beside it
    assert not enters(bar, np.array([0.0, 0.3, 0.01]), np.array([0.0, 0.3, -0.01]))  # past its end
    assert not enters(ObstacleSet(), *down)
