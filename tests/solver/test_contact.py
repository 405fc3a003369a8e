# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact, friction and mounts against independent references; no penetration after any solve."""

import math

import numpy as np
import pytest
from helpers.cases import WIRE, cable, case, first, harness, min_clearance, solve
from helpers.matrices import dense_from_band

from solver_core import CableChange, Frame, Harness, parse_case

R = 0.002  # cable radius of the test cables (4 mm)
LINEAR_DENSITY = 7958.0 * math.pi * 0.004**2 / 4  # the helpers' cable (Lv 2017: 30 g over 300 mm)
TABLE = {"type": "plane", "point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}


def _no_penetration(result, doc, cable_id="W1", others=()):
    nodes = result["steps"][-1]["cables"][cable_id]["nodes"] if "steps" in result else result["nodes"]
    clearance = min_clearance(nodes, R, doc.get("obstacles", ()), others)
    assert clearance >= -0.01 * R, f"penetration {-clearance:.3g} m"


def test_heavy_cable_on_a_table_lifted_at_one_end_leaves_it_at_the_analytic_length():
    # A heavy beam lifted by h with a horizontal clamp leaves a rigid table at a = (72 EI h / q)^(1/4)
    # (small deflection: w = 0, w' = 0, w'' = 0 at touch-down; w = h, w' = 0 at the clamp).
    E, d, h = 126e6, 0.004, 0.02
    EI = E * math.pi * d**4 / 64
    q = LINEAR_DENSITY * 9.81
    a = (72 * EI * h / q) ** 0.25
    doc = case(
        cable(length=0.8, segments=320, start={"position": [0, 0, R + h], "tangent": [1, 0, 0], "normal": [0, 0, 1]}),
        obstacles=[TABLE],
    )
    result = first(solve(doc))
    assert result["converged"]
    lift_off = min(c["s"] for c in result["contacts"])
    assert abs(lift_off - a) <= 0.02 * a
    # contact forces push up only, and with the clamp they carry the weight
    assert all(c["force"][2] > 0 and abs(c["force"][0]) < 1e-9 for c in result["contacts"])
    total = sum(c["force"][2] for c in result["contacts"]) + result["end_forces"]["start"]["force"][2]
    assert total == pytest.approx(q * 0.8, rel=1e-6)
    _no_penetration(result, doc)


def test_contact_complementarity():
    # Jin 2016, Eqs. 9-12: at every contact the force is compressive and the gap closed; wherever a
    # gap is open there is no force. Checked node by node along a cable lifted off a table.
    doc = case(
        cable(
            length=0.5, segments=100, start={"position": [0, 0, R + 0.015], "tangent": [1, 0, 0], "normal": [0, 0, 1]}
        ),
        obstacles=[TABLE],
    )
    result = first(solve(doc))
    nodes = np.array(result["nodes"])
    s = np.array(result["arc_lengths"])
    touching = {round(c["s"], 9) for c in result["contacts"]}
    for si, x in zip(s, nodes):
        gap = x[2] - R
        if round(si, 9) in touching:
            assert gap <= 0.0 and gap >= -0.005 * R
        else:
            assert gap > -1e-12
    for c in result["contacts"]:
        assert np.dot(c["force"], c["normal"]) > 0.0  # pushes away from the table
        assert c["gap"] <= 0.0


def test_cable_draped_over_a_sphere_is_symmetric_and_its_weight_is_carried():
    doc = case(
        cable(
            length=0.3,
            segments=60,
            material={"E": 20e6, "nu": 0.4, "density": 1500},
            start={"position": [-0.12, 0, -0.02], "tangent": [0, 0, 1]},
            end={"position": [0.12, 0, -0.02], "tangent": [0, 0, -1]},
            route=[[-0.12, 0, -0.02], [-0.1, 0, 0.09], [0.1, 0, 0.09], [0.12, 0, -0.02]],
        ),
        obstacles=[{"type": "sphere", "center": [0, 0, 0], "radius": 0.06}],
    )
    result = first(solve(doc))
    assert result["converged"] and result["contacts"]
    nodes = np.array(result["nodes"])
    assert np.abs(nodes[::-1] * [-1, 1, 1] - nodes).max() < 1e-9  # mirror symmetric
    weight = 1500 * math.pi * 0.004**2 / 4 * 0.3 * 9.81
    vertical = (
        sum(c["force"][2] for c in result["contacts"])
        + result["end_forces"]["start"]["force"][2]
        + result["end_forces"]["end"]["force"][2]
    )
    assert vertical == pytest.approx(weight, rel=1e-6)
    for c in result["contacts"]:  # contact forces point away from the sphere's centre
        radial = np.array(c["point"]) / np.linalg.norm(c["point"])
        assert np.dot(c["force"], radial) > 0.999 * np.linalg.norm(c["force"])
    _no_penetration(result, doc)


def test_cable_held_against_a_plane_from_either_side():
    # floor below and ceiling above: the unilateral constraint acts on the side its normal points to
    for plane, load in (
        ({"type": "plane", "point": [0, 0, -0.01], "normal": [0, 0, 1]}, -2.0),
        ({"type": "plane", "point": [0, 0, 0.01], "normal": [0, 0, -1]}, 2.0),
    ):
        doc = case(cable(length=0.3, segments=60, loads=[{"s": 0.3, "force": [0, 0, load]}]), obstacles=[plane])
        result = first(solve(doc))
        assert result["converged"] and result["contacts"]
        tip_z = result["nodes"][-1][2]
        assert abs(tip_z - np.sign(load) * (0.01 - R)) < 0.01 * R
        _no_penetration(result, doc)


def test_cable_cannot_slip_through_a_thin_plate_between_nodes():
    # a 0.5 mm plate under a cable whose segments are 10 times longer than the plate is thick
    plate = {
        "type": "mesh",
        "vertices": [
            [0.05, -0.1, -0.01],
            [0.25, -0.1, -0.01],
            [0.25, 0.1, -0.01],
            [0.05, 0.1, -0.01],
            [0.05, -0.1, -0.0105],
            [0.25, -0.1, -0.0105],
            [0.25, 0.1, -0.0105],
            [0.05, 0.1, -0.0105],
        ],
        "triangles": [
            [0, 1, 2],
            [0, 2, 3],
            [4, 6, 5],
            [4, 7, 6],
            [0, 4, 5],
            [0, 5, 1],
            [1, 5, 6],
            [1, 6, 2],
            [2, 6, 7],
            [2, 7, 3],
            [3, 7, 4],
            [3, 4, 0],
        ],
    }
    doc = case(cable(length=0.3, segments=12, loads=[{"s": 0.3, "force": [0, 0, -3.0]}]), obstacles=[plate])
    result = first(solve(doc))
    assert result["converged"] and result["contacts"]
    nodes = np.array(result["nodes"])
    inside = (nodes[:, 0] > 0.05) & (nodes[:, 0] < 0.25)
    assert (nodes[inside, 2] > -0.01).all()  # still on top of the plate
    _no_penetration(result, doc)


def test_mesh_edges_and_vertices_do_not_multiply_contact_forces():
    # the same table as a plane and as a triangulated mesh: the cable rests the same way
    verts = [[x, y, 0.0] for y in np.linspace(-0.2, 0.2, 5) for x in np.linspace(-0.1, 0.9, 11)]
    tris = []
    for j in range(4):
        for i in range(10):
            a = j * 11 + i
            tris += [[a, a + 1, a + 12], [a, a + 12, a + 11]]
    start = {"position": [0, 0, R + 0.02], "tangent": [1, 0, 0], "normal": [0, 0, 1]}
    on_plane = first(solve(case(cable(length=0.8, segments=160, start=start), obstacles=[TABLE])))
    mesh = {"type": "mesh", "vertices": verts, "triangles": tris}
    on_mesh = first(solve(case(cable(length=0.8, segments=160, start=start), obstacles=[mesh])))
    assert np.abs(np.array(on_mesh["nodes"]) - np.array(on_plane["nodes"])).max() < 0.01 * R
    assert sum(c["force"][2] for c in on_mesh["contacts"]) == pytest.approx(
        sum(c["force"][2] for c in on_plane["contacts"]), rel=1e-3
    )


def test_two_crossed_cables_pressed_together_touch_without_penetrating():
    # two taut cables crossing 5 mm apart, the upper one pressed down at its middle (no gravity)
    a = cable(
        id="A",
        length=0.3,
        segments=60,
        start={"position": [-0.15, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        end={"position": [0.15, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
    )
    b = cable(
        id="B",
        length=0.3,
        segments=60,
        loads=[{"s": 0.15, "force": [0, 0, -3.0]}],
        start={"position": [0.0025, -0.15, 0.005], "tangent": [0, 1, 0], "normal": [0, 0, 1]},
        end={"position": [0.0025, 0.15, 0.005], "tangent": [0, 1, 0], "normal": [0, 0, 1]},
    )
    # taut cables pressed this hard stretch 0.7 %, beyond the default ultimate strain
    stretchy = {"ultimate_strain": 0.02}
    apart = solve(case(a, b, gravity=[0, 0, 0], solver=stretchy))["steps"][0]["cables"]
    assert apart["B"]["nodes"][30][2] < -R  # without contact B would be pushed right through A
    result = solve(case(a, b, gravity=[0, 0, 0], contact={"cable_cable": True}, solver=stretchy))["steps"][0]["cables"]
    assert result["A"]["converged"] and result["B"]["converged"]
    clearance = min_clearance(result["B"]["nodes"], R, others=[(result["A"]["nodes"], R)])
    assert -0.01 * R <= clearance < 0.01 * R  # touching
    fa = sum(np.array(c["force"]) for c in result["A"]["contacts"])
    fb = sum(np.array(c["force"]) for c in result["B"]["contacts"])
    assert np.allclose(fa, -fb, atol=1e-3 * np.linalg.norm(fa))
    assert fa[2] < 0 < fb[2]  # B presses A down, A holds B up
    # B's contact force and its connectors' reactions carry the load
    b_ends = sum(np.array(result["B"]["end_forces"][k]["force"]) for k in ("start", "end"))
    assert np.allclose(fb + b_ends, [0, 0, 3.0], atol=1e-5)


def test_other_cables_segments_found_by_the_grid_are_those_brute_force_finds(rng):
    from solver_core.contact import CAP_NODE, CAP_SEG, INTERIOR, ObstacleSet, find_pairs
    from solver_core.contact_geometry import closest_point_on_segment, segment_segment

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
    from solver_core.contact import SELF_NODE, SELF_SEG, ObstacleSet, find_pairs
    from solver_core.contact_geometry import closest_point_on_segment, segment_segment

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


def test_contact_energy_is_continuous_as_a_crossing_slides_past_a_node():
    # A straight cable pressed 0.5 mm into a crossing capsule, slid along its own axis over two
    # segments: the crossing passes from a segment's interior over a node into the next segment. The
    # depth never changes, so neither may the penalty energy k l d^2 / 2: no jump where the node pair
    # takes over from the segment pair, and no dip that would pull crossings to particular spots.
    from solver_core.contact import ObstacleSet, contact_energy, find_pairs

    radius, seg = 0.002, 0.01
    base = np.column_stack((np.arange(-5, 6) * seg, np.zeros(11), np.zeros(11)))
    obstacles = ObstacleSet().with_capsules([[0.0, -0.05, 0.0035]], [[0.0, 0.05, 0.0035]], [0.002]).kernel_arrays()
    n = len(base)
    node_len = np.full(n, seg)
    energies = []
    for shift in np.linspace(0.0, 2 * seg, 801):
        pos = base + [shift, 0.0, 0.0]
        kind, elem, prim = find_pairs(pos, np.full(n, radius), np.zeros(n, dtype=np.int64), 0.005, obstacles, 0)
        m = len(kind)
        energies.append(
            contact_energy(
                pos,
                kind,
                elem,
                prim,
                obstacles,
                np.full(n, radius),
                1e6,
                node_len,
                np.full(n - 1, seg),
                np.arange(n) * 3,
                np.zeros(1),
                np.zeros((1, 1)),
                0,
                0,
                np.empty(m),
                np.empty(m),
                np.empty((m, 3)),
                np.empty((m, 3)),
                np.empty(m),
                np.empty((m, 3)),
            )
        )
    assert np.allclose(energies, 0.5 * 1e6 * seg * 0.0005**2, rtol=1e-9)


def test_a_segment_cutting_a_box_corner_between_two_outside_nodes_is_a_contact():
    # Both nodes lie within a radius of the box but outside it; the segment between them cuts through
    # the box's top edge. The pair must exist and push the segment out (it once went unseen because
    # the piercing point lies on a face, not on the sharp edge).
    from solver_core.contact import TRI_SEG, ObstacleSet, contact_energy, find_pairs

    corners = np.array([[x, y, z] for x in (0.05, 0.25) for y in (-0.1, 0.1) for z in (-0.3, -0.1)])
    faces = np.array(
        [
            [0, 1, 3],
            [0, 3, 2],
            [4, 6, 7],
            [4, 7, 5],
            [0, 4, 5],
            [0, 5, 1],
            [2, 3, 7],
            [2, 7, 6],
            [0, 2, 6],
            [0, 6, 4],
            [1, 5, 7],
            [1, 7, 3],
        ]
    )
    obstacles = ObstacleSet(triangles=corners[faces], triangle_owner=np.zeros(12, dtype=np.int64)).kernel_arrays()
    pos = np.array([[0.1, 0.091, -0.098], [0.1, 0.102, -0.108]])
    kind, elem, prim = find_pairs(pos, np.full(2, R), np.zeros(2, dtype=np.int64), 0.002, obstacles, 0)
    assert TRI_SEG in kind.tolist()
    m = len(kind)
    grad = np.zeros(6)
    gap, force = np.empty(m), np.empty((m, 3))
    energy = contact_energy(
        pos,
        kind,
        elem,
        prim,
        obstacles,
        np.full(2, R),
        1e6,
        np.full(2, 0.01),
        np.full(1, 0.015),
        np.array([0, 3]),
        grad,
        np.zeros((1, 1)),
        0,
        1,
        gap,
        np.empty(m),
        np.empty((m, 3)),
        np.empty((m, 3)),
        np.empty(m),
        force,
    )
    assert energy > 0.0 and gap[kind == TRI_SEG].min() < -0.5 * R
    push = -(grad[0:3] + grad[3:6])  # the net force on the segment points out of the corner (+y, +z)
    assert push[1] > 0.0 and push[2] > 0.0


def test_initial_guesses_do_not_pass_through_cables_placed_before():
    # B's route crosses 10 mm above a taut A; its full sag would take it through A to the other side,
    # where distances alone could never bring it back. With cable-cable contact its guess stays above.
    a = cable(
        id="A",
        length=0.3,
        segments=30,
        start={"position": [-0.15, 0, 0], "tangent": [1, 0, 0]},
        end={"position": [0.15, 0, 0], "tangent": [1, 0, 0]},
    )
    b = cable(
        id="B",
        length=0.4,
        segments=40,
        start={"position": [0.0, -0.15, 0.01], "tangent": [0, 1, 0]},
        end={"position": [0.0, 0.15, 0.01], "tangent": [0, 1, 0]},
    )
    for contact, above in (({}, False), ({"cable_cable": True}, True)):
        harness = Harness.from_case(parse_case(case(a, b, contact=contact)))
        nodes = harness.cables["B"].state.positions + harness.cables["B"].model.origin
        middle = nodes[np.abs(nodes[:, 1]).argmin()]
        assert (middle[2] > 2 * R) == above
        if above:
            assert (
                min_clearance(
                    nodes, R, others=[(harness.cables["A"].state.positions + harness.cables["A"].model.origin, R)]
                )
                >= 0.0
            )
    result = solve(case(a, b, contact={"cable_cable": True}))["steps"][0]["cables"]
    assert result["A"]["converged"] and result["B"]["converged"]
    assert np.array(result["B"]["nodes"])[20, 2] > np.array(result["A"]["nodes"])[15, 2]  # B rests on A
    # a route drawn right through the other cable is reported as such
    through = cable(
        id="B",
        length=0.4,
        segments=40,
        start={"position": [0.0, -0.15, 0.0], "tangent": [0, 1, 0]},
        end={"position": [0.0, 0.15, 0.0], "tangent": [0, 1, 0]},
    )
    warnings = Harness.from_case(parse_case(case(a, through, contact={"cable_cable": True}))).warnings
    assert any("'B'" in w and "another cable" in w for w in warnings)


class TestFriction:
    """A cable lying across an incline, clamped at one end: it holds while tan(theta) < mu_s, and once it
    slips it sags in the incline's plane as a cantilever under w (sin(theta) - mu_d cos(theta))."""

    E = 2e9
    L = 0.3

    def _solve(self, theta_deg, mu_s, mu_d):
        th = math.radians(theta_deg)
        n = np.array([0, -math.sin(th), math.cos(th)])
        doc = case(
            cable(
                length=self.L,
                segments=60,
                material={"E": self.E, "nu": 0.3, "density": 1500},
                start={"position": (R * n).tolist(), "tangent": [1, 0, 0], "normal": n.tolist()},
            ),
            obstacles=[{"type": "plane", "point": [0, 0, 0], "normal": n.tolist()}],
            contact={"friction_static": mu_s, "friction_dynamic": mu_d},
        )
        result = first(solve(doc))
        assert result["converged"]
        _no_penetration(result, doc)
        downslope = np.array([0, -math.cos(th), -math.sin(th)])
        return float(np.array(result["nodes"][-1]) @ downslope), th

    def _cantilever(self, th, mu_d):
        w = 1500 * math.pi * 0.004**2 / 4 * 9.81
        EI = self.E * math.pi * 0.004**4 / 64
        return w * (math.sin(th) - mu_d * math.cos(th)) * self.L**4 / (8 * EI)

    def test_holds_below_the_static_limit(self):
        for theta, mu_s in ((10, 0.3), (20, 0.5)):
            deflection, th = self._solve(theta, mu_s, 0.2)
            assert deflection < 0.05 * self._cantilever(th, 0.0)  # only the stick compliance

    def test_slips_above_the_static_limit_against_dynamic_friction(self):
        for theta in (20, 30):
            deflection, th = self._solve(theta, 0.3, 0.2)
            assert deflection == pytest.approx(self._cantilever(th, 0.2), rel=0.01)

    def test_frictionless_slides_freely(self):
        deflection, th = self._solve(10, 0.0, 0.0)
        assert deflection == pytest.approx(self._cantilever(th, 0.0), rel=0.01)

    def test_friction_makes_the_result_depend_on_the_path(self):
        # The start connector of a cable lying on a table is moved sideways and back. Frictionless,
        # the cable just follows and ends where it began; with friction the far part holds on while
        # the near part bends, and the way back leaves it bent: the result depends on the path.
        def round_trip(mu):
            doc = case(
                cable(
                    length=0.3, segments=60, start={"position": [0, 0, R], "tangent": [1, 0, 0], "normal": [0, 0, 1]}
                ),
                obstacles=[TABLE],
                contact={"friction_static": mu, "friction_dynamic": mu},
            )
            moves = [[0, 0.01, R], [0, 0.02, R], [0, 0.01, R], [0, 0.0, R]]
            doc["steps"] = [
                {"cables": {"W1": {"start": {"position": p, "tangent": [1, 0, 0], "normal": [0, 0, 1]}}}} for p in moves
            ]
            steps = solve(doc)["steps"]
            assert all(s["cables"]["W1"]["converged"] for s in steps)
            return np.array(steps[0]["cables"]["W1"]["nodes"]), np.array(steps[-1]["cables"]["W1"]["nodes"])

        before, after = round_trip(0.0)
        assert np.abs(after - before).max() < 1e-6
        before, after = round_trip(0.5)
        assert np.abs(after - before).max() > 1e-3


class TestMounts:
    FRAME = {"position": [0.2, 0, -0.01], "tangent": [1, 0, 0], "normal": [0, 0, 1]}

    def test_sliding_clip_takes_no_force_along_its_axis(self):
        # Gravity is vertical and the clip axis horizontal: if the clip took no axial force, nothing
        # else but the start connector could, so its axial reaction (from its own pinned dofs) is zero.
        doc = case(
            cable(length=0.4, segments=80, clips=[{"s": 0.21, "kind": "sliding", "length": 0.01, "frame": self.FRAME}])
        )
        result = first(solve(doc))
        assert result["converged"]
        clip = np.array(result["clip_forces"][0]["force"])
        assert np.linalg.norm(clip) > 0.1
        assert abs(result["end_forces"]["start"]["force"][0]) < 1e-6 * np.linalg.norm(clip)
        fixed = first(
            solve(
                case(
                    cable(
                        length=0.4,
                        segments=80,
                        clips=[{"s": 0.21, "kind": "fixed", "length": 0.01, "frame": self.FRAME}],
                    )
                )
            )
        )
        assert abs(fixed["end_forces"]["start"]["force"][0]) > 0.1  # a fixed clip does hold axially
        # the cable passes through the clip on its axis
        nodes = np.array(result["nodes"])
        near = np.abs(nodes[:, 0] - 0.2) < 0.003
        assert np.abs(nodes[near, 2] + 0.01).max() < 1e-4

    def test_sliding_clip_lets_the_cable_be_pulled_through(self):
        # moving the start connector back pulls the cable through the sliding clip: the free part
        # beyond the clip gets shorter by as much; a fixed clip would not let it through
        doc = case(
            cable(length=0.4, segments=80, clips=[{"s": 0.21, "kind": "sliding", "length": 0.01, "frame": self.FRAME}])
        )
        doc["steps"] = [
            {"cables": {"W1": {"start": {"position": [-0.02 * k, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}}}}
            for k in range(1, 4)
        ]
        steps = solve(doc)["steps"]
        tips = [np.array(s["cables"]["W1"]["nodes"][-1]) for s in steps]
        assert all(s["cables"]["W1"]["converged"] for s in steps)
        assert tips[-1][0] < tips[0][0] - 0.03

    def test_stiff_compliant_clip_gives_the_rigid_result_and_a_soft_one_yields_by_force_over_stiffness(self):
        rigid = first(
            solve(
                case(
                    cable(
                        length=0.4,
                        segments=80,
                        clips=[{"s": 0.21, "kind": "fixed", "length": 0.0, "frame": self.FRAME}],
                    )
                )
            )
        )
        weight = np.array([0, 0, -9.81 * LINEAR_DENSITY * 0.4])
        for k, close in ((1e9, True), (1e3, False)):
            clip = {
                "s": 0.21,
                "kind": "fixed",
                "length": 0.0,
                "frame": self.FRAME,
                "stiffness": {"translational": k, "rotational": k / 100},
            }
            result = first(solve(case(cable(length=0.4, segments=80, clips=[clip]))))
            assert result["converged"]
            diff = np.abs(np.array(result["nodes"]) - np.array(rigid["nodes"])).max()
            assert (diff < 1e-6) if close else (diff > 1e-4)
            # the clip's force from global balance (weight and the start connector's pinned reaction) ...
            clip_force = -(np.array(result["end_forces"]["start"]["force"]) + weight)
            deflection = np.array(result["clip_forces"][0]["deflection"]["translation"])
            # ... equals stiffness times deflection, opposite to it (linear spring)
            assert np.allclose(clip_force, -k * deflection, rtol=1e-4, atol=1e-9)

    def test_matrix_stiffness_in_the_clip_frame(self):
        # a clip soft only along its own y axis (world y here) yields only sideways under a sideways pull
        K = np.diag([1e9, 2e3, 1e9, 1e6, 1e6, 1e6]).tolist()
        clip = {
            "s": 0.2,
            "kind": "fixed",
            "length": 0.0,
            "stiffness": {"matrix": K},
            "frame": {"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        }
        result = first(
            solve(
                case(
                    cable(length=0.3, segments=60, clips=[clip], loads=[{"s": 0.3, "force": [0, 1.0, 0]}]),
                    gravity=[0, 0, 0],
                )
            )
        )
        d = np.array(result["clip_forces"][0]["deflection"]["translation"])
        assert abs(d[1]) > 1e-4 and abs(d[0]) < 1e-8 and abs(d[2]) < 1e-8


def test_ultimate_length_refuses_a_step_and_keeps_the_last_valid_state():
    doc = case(
        cable(
            length=0.3,
            segments=60,
            material={"E": 20e6, "nu": 0.4, "density": 1500},
            start={"position": [-0.12, 0, -0.02], "tangent": [0, 0, 1]},
            end={"position": [0.12, 0, -0.02], "tangent": [0, 0, -1]},
            route=[[-0.12, 0, -0.02], [-0.1, 0, 0.09], [0.1, 0, 0.09], [0.12, 0, -0.02]],
        ),
        obstacles=[{"type": "sphere", "center": [0, 0, 0], "radius": 0.06}],
        solver={"ultimate_strain": 0.01},
    )
    doc["steps"] = [
        {"cables": {"W1": {"end": {"position": [0.12 + 0.01 * k, 0, -0.02], "tangent": [0, 0, -1]}}}} for k in (1, 3)
    ]
    steps = [s["cables"]["W1"] for s in solve(doc)["steps"]]
    assert steps[0]["converged"] and steps[0]["max_strain"] < 0.01
    refused = steps[-1]
    assert not refused["converged"] and "step refused" in refused["message"] and "ultimate 1.00 %" in refused["message"]
    assert refused["nodes"] == steps[-2]["nodes"] or not steps[-2]["converged"]
    assert refused["max_strain"] < 0.01


def _self_clearance(nodes, skip=4):
    """Smallest surface gap between segments of one cable at least ``skip`` segments apart (sampled)."""
    x = np.asarray(nodes, float)
    u = np.linspace(0.0, 1.0, 9)[:, None]
    best = np.inf
    for i in range(len(x) - 1):
        a = x[i] + u * (x[i + 1] - x[i])
        for j in range(i + skip, len(x) - 1):
            b = x[j] + u * (x[j + 1] - x[j])
            best = min(best, float(np.linalg.norm(a[:, None] - b[None], axis=2).min()))
    return best - 2 * R


def test_a_cable_looped_over_itself_rests_on_its_own_lower_leg():
    # An alpha loop on a table: the route runs out along x, turns and comes back over its own first
    # leg 12 mm up. Under gravity the upper leg sinks onto the lower one. Without cable-cable contact
    # it sinks through it; with it (self-contact) the legs touch, nothing penetrates, the two legs
    # take equal and opposite forces and the table and connectors carry exactly the weight.
    route = [
        [-0.15, 0, R],
        [0.05, 0, R],
        [0.1, 0.05, R],
        [0.05, 0.1, R],
        [0.0, 0.05, 6 * R],
        [0.0, 0.0, 6 * R],
        [0.0, -0.05, 6 * R],
        [0.0, -0.15, R],
    ]
    length = 1.02 * float(np.linalg.norm(np.diff(np.array(route), axis=0), axis=1).sum())
    looped = cable(
        length=round(length, 4),
        segments=80,
        start={"position": route[0], "tangent": [1, 0, 0]},
        end={"position": route[-1], "tangent": [0, -1, 0]},
        route=route,
    )
    through = first(solve(case(looped, obstacles=[TABLE])))
    assert through["converged"] and _self_clearance(through["nodes"]) < -R
    doc = case(looped, obstacles=[TABLE], contact={"cable_cable": True})
    result = first(solve(doc))
    assert result["converged"], result.get("message")
    assert -0.01 * 2 * R <= _self_clearance(result["nodes"]) < 0.01 * 2 * R  # touching
    _no_penetration(result, doc)
    own = [c for c in result["contacts"] if "other_s" in c]
    assert own and all(c["force"][2] != 0.0 for c in own)
    lower = [c for c in own if c["s"] < c["other_s"]]
    assert lower and all(c["force"][2] < 0.0 for c in lower)  # the upper leg presses the lower one down
    assert np.allclose(sum(np.array(c["force"]) for c in own), 0.0, atol=1e-12)
    weight = WIRE["density"] * math.pi * 0.004**2 / 4 * looped["length"] * 9.81
    vertical = (
        sum(c["force"][2] for c in result["contacts"])
        + result["end_forces"]["start"]["force"][2]
        + result["end_forces"]["end"]["force"][2]
    )
    assert vertical == pytest.approx(weight, rel=1e-6)


def _crossed_pair(load, b_height):
    """Two equal cables clamped straight at both ends, A along x, B along y crossing above its middle
    (centre lines ``b_height`` apart), B pushed down at its middle with ``load`` newtons; no gravity."""
    a = cable(
        id="A",
        length=0.3,
        segments=30,
        start={"position": [-0.15, 0, 0], "tangent": [1, 0, 0]},
        end={"position": [0.15, 0, 0], "tangent": [1, 0, 0]},
    )
    b = cable(
        id="B",
        length=0.3,
        segments=30,
        loads=[{"s": 0.15, "force": [0, 0, -load]}],
        start={"position": [0.0, -0.15, b_height], "tangent": [0, 1, 0]},
        end={"position": [0.0, 0.15, b_height], "tangent": [0, 1, 0]},
    )
    return case(a, b, gravity=[0, 0, 0], contact={"cable_cable": True})


def _contact_force(cable_result):
    return np.sum([c["force"] for c in cable_result["contacts"]], axis=0)


@pytest.mark.parametrize("load", [0.002, 0.2])
def test_two_crossed_cables_pressed_together_share_the_load(load):
    # B rests on A (touching) and is pushed down at the crossing. Equal cables deflect equally under
    # equal forces and stay in touch, so the contact carries exactly half the load, whatever the
    # nonlinearity (at 0.2 N the clamped ends stretch the cables: the sag is half the linear one).
    # At the small load A sags as a clamped-clamped beam under a central force, F L^3 / (192 EI).
    # (Solved one after the other against each other's frozen copies, A hardly moved and the
    # contact carried nearly all of the load.)
    doc = _crossed_pair(load, 2 * R)
    result = solve(doc)["steps"][0]["cables"]
    a, b = result["A"], result["B"]
    assert a["converged"] and b["converged"]
    assert _contact_force(a) == pytest.approx([0, 0, -load / 2], rel=1e-3, abs=1e-6 * load)
    assert _contact_force(b) == pytest.approx([0, 0, load / 2], rel=1e-3, abs=1e-6 * load)
    assert all(c.get("other_cable") in ("A", "B") for c in a["contacts"] + b["contacts"])
    sag_a, sag_b = -a["nodes"][15][2], 2 * R - b["nodes"][15][2]
    assert sag_a > 0.0 and sag_b == pytest.approx(sag_a, rel=0.01)
    others = [(b["nodes"], R)]
    assert min_clearance(a["nodes"], R, (), others) >= -0.01 * R
    if load < 0.01:
        EI = WIRE["E"] * math.pi * (2 * R) ** 4 / 64
        assert sag_a == pytest.approx((load / 2) * 0.3**3 / (192 * EI), rel=0.03)


def test_cables_that_meet_during_a_step_are_solved_together():
    # B starts well clear above A and is lowered onto it in one step: solved apart first, they meet,
    # and must then be solved together (the contact again carries half the load, nothing penetrates).
    doc = _crossed_pair(0.05, 0.03)
    lowered = {
        "B": {
            "start": {"position": [0.0, -0.15, 2 * R], "tangent": [0, 1, 0]},
            "end": {"position": [0.0, 0.15, 2 * R], "tangent": [0, 1, 0]},
        }
    }
    doc["steps"] = [{"cables": lowered}]
    steps = solve(doc)["steps"]
    assert not steps[0]["cables"]["A"]["contacts"]
    a, b = steps[1]["cables"]["A"], steps[1]["cables"]["B"]
    assert a["converged"] and b["converged"]
    assert _contact_force(a)[2] == pytest.approx(-0.025, rel=1e-3)
    assert min_clearance(a["nodes"], R, (), [(b["nodes"], R)]) >= -0.01 * R


def test_cables_that_cannot_be_solved_together_are_solved_one_by_one_and_say_so(monkeypatch):
    # Should the joint solve of touching cables fail, each cable is still brought to an equilibrium
    # against the others as they lie (nothing penetrates), and the result says that the loads they
    # share are approximate. A joint solve that keeps failing is tried again after 1, 2, 4 ... steps
    # (each failure of ten cables costs seconds of a frozen Blender while a connector is dragged).
    import solver_core.harness as harness_module
    from solver_core.equilibrium import MAX_CONTINUATION_DEPTH, SNAP_THROUGH_ROUNDS, SolveReport
    from solver_core.rod_group import RodGroup

    solve_equilibrium = harness_module.solve_equilibrium
    depths = []
    solves = []

    def failing_for_groups(model, state, *args, **kwargs):
        solves.append(1)
        if isinstance(model, RodGroup):
            depths.append((len(solves), kwargs["max_depth"], kwargs["snap_through_rounds"]))
            return SolveReport(state.copy(), False, 1, 1.0, 1, 0.0, "no equilibrium found (made to fail)")
        return solve_equilibrium(model, state, *args, **kwargs)

    monkeypatch.setattr(harness_module, "solve_equilibrium", failing_for_groups)
    doc = _crossed_pair(0.05, 2 * R)
    doc["steps"] = [
        {"cables": {"B": {"start": {"position": [0, -0.15 + 0.001 * k, 2 * R], "tangent": [0, 1, 0]}}}}
        for k in range(1, 7)
    ]
    steps_at = []

    def solve_step(self, *args, **kwargs):
        steps_at.append(len(solves))
        return real_solve_step(self, *args, **kwargs)

    real_solve_step = harness_module.Harness.solve_step
    monkeypatch.setattr(harness_module.Harness, "solve_step", solve_step)
    result = solve(doc)
    for step in result["steps"]:
        a, b = step["cables"]["A"], step["cables"]["B"]
        assert a["converged"] and b["converged"]
        assert min_clearance(a["nodes"], R, (), [(b["nodes"], R)]) >= -0.01 * R
    assert any("could not be solved together" in w and "approximate" in w for w in result["warnings"])
    # tried together at the start, then in steps 2, 5 (waits of 1 and 2 steps), once rather than along
    # a split path or for extra rounds of a slow descent
    step_of = [sum(1 for s in steps_at if s < at) - 1 for at, _, _ in depths]
    assert step_of == [0, 2, 5] and [d for _, d, _ in depths] == [MAX_CONTINUATION_DEPTH, 0, 0]
    assert [r for _, _, r in depths] == [SNAP_THROUGH_ROUNDS, 0, 0]


def test_a_group_starts_from_the_unstiffened_contact_stiffness():
    # A cable solved alone against frozen neighbours may have had its contact stiffened (a hundredfold
    # was seen); the group it then joins starts from the base stiffness, the cables' modulus per unit
    # length (Young's modulus of the material), and stiffens itself only where its own penetration
    # needs it. (Inherited hundredfold springs left Newton without progress on a pile of ten cables.)
    from solver_core.rod_group import GroupInteractions, join_models

    harness = Harness.from_case(parse_case(_crossed_pair(0.002, 2 * R)))
    a, b = harness.cables["A"], harness.cables["B"]
    a.interactions.stiffen(100.0)
    group = join_models([a.model, b.model], [a.state, b.state])
    joined = GroupInteractions(
        group, harness.obstacles, harness.contact_settings, members=(a.interactions, b.interactions)
    )
    assert joined.stiffness == pytest.approx(WIRE["E"], rel=1e-12)
    assert a.interactions.stiffness == pytest.approx(100.0 * WIRE["E"], rel=1e-12)  # its own is its own


def test_a_step_refused_for_one_cable_of_a_touching_group_is_refused_for_all():
    # A and B share their loads: pressing B's ends down onto A stretches A (by 0.028 %, beyond the
    # 0.02 % allowed here), so the step is refused for both, neither moves, and both say that A
    # would stretch, although only B was moved.
    doc = _crossed_pair(0.05, 2 * R)
    doc["solver"] = {"ultimate_strain": 2e-4}
    doc["steps"] = [
        {
            "cables": {
                "B": {
                    "start": {"position": [0, -0.15, 0], "tangent": [0, 1, 0]},
                    "end": {"position": [0, 0.15, 0], "tangent": [0, 1, 0]},
                }
            }
        }
    ]
    before, after = (s["cables"] for s in solve(doc)["steps"])
    assert before["A"]["converged"] and before["B"]["converged"] and before["A"]["max_strain"] < 2e-4
    for cid in "AB":
        assert not after[cid]["converged"] and "step refused" in after[cid]["message"]
        assert "cable 'A' would stretch" in after[cid]["message"]
        assert after[cid]["nodes"] == before[cid]["nodes"]


def test_a_refused_step_stays_refused_while_other_cables_are_solved():
    # With cable-cable contact the cables of a step are solved in groups, and groups again when they
    # meet; a cable whose own step was refused must not be "re-solved" in a later round against its
    # old connectors and reported converged (the move it was asked for would silently be dropped).
    material = {"E": 20e6, "nu": 0.4, "density": 1500}
    a, b = (
        cable(
            id=name,
            length=0.3,
            segments=30,
            material=material,
            start={"position": [-0.12, y, 0], "tangent": [1, 0, 0]},
            end={"position": [0.12, y, 0], "tangent": [1, 0, 0]},
        )
        for name, y in (("A", 0.0), ("B", 0.2))
    )
    doc = case(a, b, contact={"cable_cable": True}, solver={"ultimate_strain": 1e-4})
    # pulled nearly straight under its own weight: the tension strains A beyond 0.01 %
    doc["steps"] = [
        {
            "cables": {
                "A": {"end": {"position": [0.179, 0, 0], "tangent": [1, 0, 0]}},
                "B": {"end": {"position": [0.12, 0.2, 0.01], "tangent": [1, 0, 0]}},
            }
        }
    ]
    steps = solve(doc)["steps"]
    moved = steps[-1]["cables"]
    assert moved["B"]["converged"]
    assert not moved["A"]["converged"] and "step refused" in moved["A"]["message"]
    assert moved["A"]["nodes"][-1] == pytest.approx(steps[0]["cables"]["A"]["nodes"][-1])


def test_obstacles_tree_finds_every_triangle_brute_force_finds(rng):
    from solver_core.bvh import build_triangle_tree, query_box

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


def test_closest_points_against_brute_force(rng):
    from solver_core.contact_geometry import segment_segment, segment_triangle

    cp, cq = np.empty(3), np.empty(3)
    u = np.linspace(0, 1, 201)
    for _ in range(30):
        p0, p1, a, b, c, q0, q1 = rng.normal(size=(7, 3))
        _t, d = segment_triangle(p0, p1, np.array([[a, b, c]]), 0, cp, cq)
        seg = p0 + u[:, None] * (p1 - p0)
        w = rng.dirichlet([1, 1, 1], size=20000)
        tri = w @ np.array([a, b, c])
        brute = np.linalg.norm(seg[::4, None, :] - tri[None, :, :], axis=2).min()
        assert d <= brute + 1e-12 and d >= brute - 0.05 * max(brute, 0.1)
        _s, _t, d = segment_segment(p0, p1, q0, q1, cp, cq)
        other = q0 + u[:, None] * (q1 - q0)
        brute = np.linalg.norm(seg[:, None, :] - other[None, :, :], axis=2).min()
        assert brute - 1e-2 <= d <= brute + 1e-12


def _uv_sphere(radius, n_lon=48, n_lat=24):
    """A closed UV sphere with vertices on the sphere (facets inside it by at most the sagitta)."""
    verts = [[0.0, 0.0, radius], [0.0, 0.0, -radius]]
    for i in range(1, n_lat):
        th = math.pi * i / n_lat
        for j in range(n_lon):
            ph = 2 * math.pi * j / n_lon
            verts.append(
                [radius * math.sin(th) * math.cos(ph), radius * math.sin(th) * math.sin(ph), radius * math.cos(th)]
            )

    def ring(i, j):
        return 2 + (i - 1) * n_lon + j % n_lon

    tris = [[0, ring(1, j), ring(1, j + 1)] for j in range(n_lon)]
    for i in range(1, n_lat - 1):
        for j in range(n_lon):
            tris += [[ring(i, j), ring(i + 1, j), ring(i + 1, j + 1)], [ring(i, j), ring(i + 1, j + 1), ring(i, j + 1)]]
    tris += [[1, ring(n_lat - 1, j + 1), ring(n_lat - 1, j)] for j in range(n_lon)]
    return {"type": "mesh", "vertices": verts, "triangles": tris}


def test_cable_draped_over_a_tessellated_sphere_matches_the_smooth_sphere():
    # resting contact on a curved faceted surface converges and touches the facets where it should
    spec = cable(
        length=0.3,
        segments=60,
        material={"E": 20e6, "nu": 0.4, "density": 1500},
        start={"position": [-0.12, 0, -0.02], "tangent": [0, 0, 1]},
        end={"position": [0.12, 0, -0.02], "tangent": [0, 0, -1]},
        route=[[-0.12, 0, -0.02], [-0.1, 0, 0.09], [0.1, 0, 0.09], [0.12, 0, -0.02]],
    )
    smooth = first(solve(case(spec, obstacles=[{"type": "sphere", "center": [0, 0, 0], "radius": 0.06}])))
    mesh = _uv_sphere(0.06, n_lon=24, n_lat=12)
    doc = case(spec, obstacles=[mesh])
    faceted = first(solve(doc))
    assert faceted["converged"] and faceted["contacts"]
    # every contact on the faceted sphere lies between its facets' inner distance and its radius
    inner = 0.06 * math.cos(math.pi / 12) * math.cos(math.pi / 24)
    for c in faceted["contacts"]:
        centre_line = np.array(c["point"]) + R * np.array(c["normal"])
        assert inner + 0.99 * R <= np.linalg.norm(centre_line) <= 0.06 + 1.01 * R
    # and the nearly taut drape (0.5 % strain) stays within a few millimetres of the smooth one
    assert np.abs(np.array(faceted["nodes"]) - np.array(smooth["nodes"])).max() < 3e-3
    # Known limit (README): over gentle facet edges contact is held at the nodes, so a
    # straight segment may cut the curved surface by up to its chord sagitta l^2 / (8 rho) plus the
    # facets' own sagitta; beyond that bound nothing penetrates.
    seg, rho = 0.3 / 60, 0.06 + R
    bound = seg**2 / (8 * rho) + 0.06 * (1 - math.cos(math.pi / 12)) + 0.01 * R
    assert min_clearance(faceted["nodes"], R, doc["obstacles"]) >= -bound


def test_sharp_edges_are_bends_and_open_borders_of_the_whole_mesh():
    from solver_core.contact import ObstacleSet, sharp_edges

    # a 4 x 4 grid (i, j = 0..4) folded up by 90 degrees along i = 2
    def vertex(i, j):
        return [min(i, 2), j, max(i - 2, 0)]

    quads = [(i, j) for j in range(4) for i in range(4)]
    tris = []
    for i, j in quads:
        tris += [[(i, j), (i + 1, j), (i + 1, j + 1)], [(i, j), (i + 1, j + 1), (i, j + 1)]]
    triangles = np.array([[vertex(*v) for v in t] for t in tris], float)
    flags = sharp_edges(triangles)

    def expected_sharp(t):
        edges = [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])]
        on_border = [(p[0] == q[0] in (0, 4)) or (p[1] == q[1] in (0, 4)) for p, q in edges]
        on_fold = [p[0] == q[0] == 2 for p, q in edges]
        return any(b or f for b, f in zip(on_border, on_fold))

    assert [bool(f) for f in flags] == [expected_sharp(t) for t in tris]
    # a part of the mesh keeps the whole mesh's flags: its own border is no edge of the surface
    part = np.arange(8, 16)
    kept = ObstacleSet().with_triangles(triangles[part], 0, flags[part])
    kept.kernel_arrays()
    assert np.array_equal(kept.triangle_sharp, flags[part])
    assert (sharp_edges(triangles[part]) != 0).sum() > (flags[part] != 0).sum()


def test_clearance_is_the_exact_surface_gap_to_the_nearest_triangle():
    from solver_core import clearance_to_triangles as clearance

    # a cable along x at height h over a triangle lying in z = 0: gap h - r wherever it is over the
    # triangle; the nearest point is found along the segment, not only at nodes
    r, h = 0.002, 0.01
    tri = np.array([[[0.3, -0.5, 0.0], [0.7, -0.5, 0.0], [0.5, 0.5, 0.0]]])
    line = np.column_stack([np.linspace(0.0, 1.0, 5), np.zeros(5), np.full(5, h)])
    gap, where = clearance(line, r, tri)
    assert gap == pytest.approx(h - r, abs=1e-12)
    assert 1.2 <= where <= 2.8  # on a segment that passes over the triangle
    # a triangle only under the middle of a segment (between nodes 1 and 2) still counts
    small = np.array([[[0.36, -0.01, 0.0], [0.39, -0.01, 0.0], [0.375, 0.01, 0.0]]])
    gap, where = clearance(line, r, small)
    assert gap == pytest.approx(h - r, abs=1e-12) and 1.0 < where < 2.0
    # off to the side: distance to the nearest edge (Pythagoras)
    side = tri + np.array([0.0, 0.5 + 0.03, 0.0])  # the apex edge y >= 0.03 ... nearest vertex/edge
    gap, _ = clearance(line, r, side)
    brute = min(
        np.linalg.norm(np.array([x, 0, h]) - p)
        for x in np.linspace(0, 1, 20001)
        for p in [side[0, 0] + u * (side[0, 1] - side[0, 0]) for u in np.linspace(0, 1, 201)]
    )
    assert gap == pytest.approx(brute - r, abs=1e-5)
    # a cable passing through the triangle has a negative gap
    through = np.array([[0.5, 0.0, -0.1], [0.5, 0.0, 0.1]])
    assert clearance(through, r, tri)[0] == pytest.approx(-r)
    assert clearance(line, r, np.zeros((0, 3, 3))) == (float("inf"), -1.0)
    with pytest.raises(ValueError, match="positions"):
        clearance(np.zeros((1, 3)), r, tri)


def test_a_route_through_a_closed_box_is_seen_even_when_no_node_is_near_a_face():
    # Long segments: the nodes sit deep inside the box or far outside, only the segments cross its
    # faces. Unsigned distances cannot mend such a start, so the harness must notice and say so.
    from solver_core import Harness, parse_case

    corners = np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.3, -0.1)])
    faces = [
        [0, 1, 3],
        [0, 3, 2],
        [4, 6, 7],
        [4, 7, 5],
        [0, 4, 5],
        [0, 5, 1],
        [2, 3, 7],
        [2, 7, 6],
        [0, 2, 6],
        [0, 6, 4],
        [1, 5, 7],
        [1, 7, 3],
    ]
    route = [[-0.4, 0.0, -0.2], [0.0, 0.0, -0.2], [0.4, 0.0, -0.2]]
    doc = case(
        cable(
            length=0.8,
            segments=4,
            start={"position": [-0.4, 0.0, -0.2], "tangent": [1, 0, 0]},
            end={"position": [0.4, 0.0, -0.2], "tangent": [1, 0, 0]},
            route=route,
        ),
        obstacles=[{"type": "mesh", "vertices": corners.tolist(), "triangles": faces}],
        gravity=[0, 0, 0],
    )
    harness = Harness.from_case(parse_case(doc))
    assert any("passes through an obstacle" in w for w in harness.warnings)
    # the same route beside the box is fine
    beside = [[x, 0.3, z] for x, _, z in route]
    doc["cables"][0].update(
        route=beside,
        start={"position": beside[0], "tangent": [1, 0, 0]},
        end={"position": beside[-1], "tangent": [1, 0, 0]},
    )
    assert not Harness.from_case(parse_case(doc)).warnings


def test_cable_paid_out_onto_a_box_slides_off_its_edge_and_its_weight_is_carried():
    # Connectors 0.3 m apart above a 0.2 m box, 0.6 m of cable: the full sag would pass through the
    # box, so the cable starts as deep as it can above it and is paid out; on the way it slides off
    # the box's top edge (a snap-through the continuation has to follow to the end).
    corners = np.array([[x, y, z] for x in (0.05, 0.25) for y in (-0.1, 0.1) for z in (-0.3, -0.1)])
    faces = [
        [0, 1, 3],
        [0, 3, 2],
        [4, 6, 7],
        [4, 7, 5],
        [0, 4, 5],
        [0, 5, 1],
        [2, 3, 7],
        [2, 7, 6],
        [0, 2, 6],
        [0, 6, 4],
        [1, 5, 7],
        [1, 7, 3],
    ]
    doc = case(
        cable(
            length=0.6,
            segments=30,
            start={"position": [0, 0, 0], "tangent": [0, 0, -1]},
            end={"position": [0.3, 0, 0], "tangent": [0, 0, 1]},
        ),
        obstacles=[{"type": "mesh", "vertices": corners.tolist(), "triangles": faces}],
    )
    result = first(solve(doc))
    assert result["converged"], result.get("message")
    assert result["contacts"]
    weight = WIRE["density"] * math.pi * 0.004**2 / 4 * 0.6 * 9.81
    vertical = (
        sum(c["force"][2] for c in result["contacts"])
        + result["end_forces"]["start"]["force"][2]
        + result["end_forces"]["end"]["force"][2]
    )
    assert vertical == pytest.approx(weight, rel=1e-6)
    _no_penetration(result, doc)


def test_contact_stiffened_on_the_way_to_a_failed_solve_is_put_back(monkeypatch):
    # A clamped cable pressed into a table by a 40 N load sinks deeper than the penetration tolerance
    # at the first stiffness, so contact is stiffened and minimised again. When that second
    # minimisation fails, the solve fails and the stiffer contact (which only makes the next try
    # harder) must not outlive it.
    from solver_core import equilibrium
    from solver_core.newton import MAX_ITERATIONS

    doc = case(
        cable(
            start={"position": [0, 0, R], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
            end={"position": [0.3, 0, R], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
            loads=[{"s": 0.15, "force": [0, 0, -40.0]}],
        ),
        obstacles=[TABLE],
    )
    h = Harness.from_case(parse_case(doc))
    session = h.cables["W1"]
    before = session.interactions.stiffness
    real = equilibrium._minimise
    calls = []

    def first_call_only(*args):
        calls.append(args[5][1][1])  # the contact stiffness this minimisation ran with
        status, iterations, ratio, energy, depth = real(*args)
        return (
            (status, iterations, ratio, energy, depth)
            if len(calls) == 1
            else (MAX_ITERATIONS, iterations, ratio, energy, depth)
        )

    monkeypatch.setattr(equilibrium, "_minimise", first_call_only)
    report = h.solve_step()["W1"]
    assert not report.converged and max(calls) > before  # it was stiffened on the way
    assert session.interactions.stiffness == before
    monkeypatch.setattr(equilibrium, "_minimise", real)
    h.unchanged_failure = None  # the solver changed, not the input: forget the failed try
    report = h.solve_step()["W1"]  # the same solve, unhindered: stiffened to meet the tolerance
    assert report.converged and session.interactions.stiffness > before
    _no_penetration(h.cable_result("W1"), doc)


@pytest.mark.parametrize("kind_name, allowed", [("CAP_NODE", 0.5), ("CAP_SEG", 0.1), ("SELF_SEG", 0.1)])
def test_a_step_is_cut_where_it_would_carry_a_segment_across_another_cable(kind_name, allowed):
    # A step moving a free segment 0.8 radii straight at something it does not touch yet (gap
    # 0.01 radii): a node may go half a radius in before the step is cut, a segment crossing another
    # cable's segment between nodes only a tenth (Newton could not lift it out again).
    from solver_core import contact

    kind = np.array([getattr(contact, kind_name)])
    move, gap = 0.8 * R, 0.01 * R
    delta = np.array([0.0, 0.0, -move, 0.0, 0.0, -move, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    node_dof = np.array([0, 3, 6, 9])  # the other side (self pairs: nodes 2 and 3) stays put
    fraction = contact.approach_fraction(
        delta,
        node_dof,
        kind,
        np.array([0]),
        np.array([2]),
        np.array([gap]),
        np.array([0.5]),
        np.array([0.5]),
        np.array([[0.0, 0.0, 1.0]]),
        np.full(4, R),
        10 * R,
        np.empty(1),
    )
    assert fraction == pytest.approx(allowed * R / move, rel=1e-12)


def _crumpled_mesh_crossing_cable_and_loop(rng):
    """Candidate contact pairs of every kind: a loop of cable (out along x, round, and back across its
    own first leg 1.8 radii up) over a crumpled mesh, with another cable's segment across it.
    Returns (obstacle arrays, positions, radii, reach, self gap, kind, elem, prim)."""
    from solver_core.contact import ObstacleSet, find_pairs

    n_grid = 15
    x, y = np.meshgrid(np.linspace(-0.05, 0.15, n_grid), np.linspace(-0.1, 0.1, n_grid))
    z = rng.uniform(-0.6, 0.6, x.shape) * R
    verts = np.column_stack((x.ravel(), y.ravel(), z.ravel()))
    i = np.arange(n_grid - 1)
    a = (i[:, None] * n_grid + i[None, :]).ravel()
    tris = np.concatenate(
        (np.column_stack((a, a + 1, a + n_grid + 1)), np.column_stack((a, a + n_grid + 1, a + n_grid)))
    )
    obstacles = (
        ObstacleSet(triangles=verts[tris], triangle_owner=np.zeros(len(tris), dtype=np.int64))
        .with_capsules([[0.1, -0.1, 0.6 * R]], [[0.1, 0.1, 0.6 * R]], [R])
        .kernel_arrays()
    )
    s = np.linspace(0.0, 1.0, 61)
    pos = np.column_stack(
        (0.12 * s - 0.04 * np.sin(2 * np.pi * s), 0.04 * np.sin(2 * np.pi * s), 0.9 * R + 1.8 * R * s)
    )
    radius, part = np.full(len(pos), R), np.zeros(len(pos), dtype=np.int64)
    seg = float(np.linalg.norm(np.diff(pos, axis=0), axis=1).max())
    reach, self_gap = max(R, 0.5 * seg), 4
    kind, elem, prim = find_pairs(pos, radius, part, 2 * reach, obstacles, self_gap)
    return obstacles, pos, radius, reach, self_gap, kind, elem, prim


def test_a_cable_pressed_from_below_and_crossed_from_above_carries_both_contacts_in_full():
    # A segment pair (a crossing between nodes) carries only the depth beyond the ends of its two
    # segments against each other. Here the middle cable M rests with its node on cable B below
    # (depth d1) and is crossed between its nodes by cable T above (depth d2 > d1): two different
    # contacts, so the energy is k l (d1^2 + d2^2) / 2, plus what the two segment pairs of M against
    # B keep beyond their one touching end, whose depth d1 enters as the power mean of four ends,
    # d1 4^(-1/p): k l d1^2 (1 - 4^(-2/p)) / 2 each. (The node's deepest pair against anything was
    # subtracted before: the crossing above carried k l (d2^2 - d1^2) / 2, a pile's contacts cancelled.)
    from solver_core.contact import END_POWER, ObstacleSet, contact_energy, find_pairs

    s, d1, d2, k = 0.01, 0.02 * R, 0.05 * R, 1.26e8
    ys = np.array([-1.5, -0.5, 0.5, 1.5]) * s
    middle = [[-s, 0, 0], [0, 0, 0], [s, 0, 0]]
    top = [[0.5 * s, y, 2 * R - d2] for y in ys]  # along y over the middle of M's second segment
    bottom = [[0.0, y, -(2 * R - d1)] for y in ys]  # along y under M's middle node
    pos = np.array(middle + top + bottom, dtype=float)
    part = np.repeat([0, 1, 2], [3, 4, 4])
    n = len(pos)
    obstacles = ObstacleSet().kernel_arrays()
    kind, elem, prim = find_pairs(pos, np.full(n, R), part, 2 * R, obstacles, 2)
    m = len(kind)
    grad = np.zeros(3 * n)
    pair = np.zeros(m), np.zeros(m), np.zeros((m, 3)), np.zeros((m, 3)), np.zeros(m), np.zeros((m, 3))
    energy = contact_energy(
        pos,
        kind,
        elem,
        prim,
        obstacles,
        np.full(n, R),
        k,
        np.full(n, s),
        np.full(n - 1, s),
        np.arange(n) * 3,
        grad,
        np.zeros((1, 1)),
        0,
        1,
        *pair,
    )
    at_node = 2 * d1**2 * (1 - 4 ** (-2 / END_POWER))
    assert energy == pytest.approx(0.5 * k * s * (d1**2 + d2**2 + at_node), rel=1e-9)
    # only forces between the cables: they sum to zero
    assert np.allclose(grad.reshape(n, 3).sum(axis=0), 0.0, atol=1e-12 * np.abs(grad).max())


def test_crossing_cables_contact_gradient_matches_finite_differences():
    # Two cables pressed together at shallow to steep random angles, the crossing anywhere near a
    # node: the segment pairs then carry their depth beyond the power mean of their four ends, whose
    # gradient spreads over the ends by their weights. Central differences of the energy are the
    # reference for every coordinate.
    from solver_core.contact import SELF_SEG, ObstacleSet, contact_energy, find_pairs

    rng = np.random.default_rng(3)
    s, k, seg_pairs = 0.01, 1.26e8, 0
    obstacles = ObstacleSet().kernel_arrays()
    ts = np.array([-1.5, -0.5, 0.5, 1.5]) * s
    for _ in range(20):
        angle, offset = rng.uniform(0.05, 1.5), rng.uniform(-0.5, 0.5) * s
        along = np.array([np.cos(angle), np.sin(angle), 0.0])
        a = np.column_stack((ts, np.zeros(4), np.zeros(4)))
        b = [offset, 0.0, 2 * R - rng.uniform(1e-6, 5e-5)] + ts[:, None] * along
        pos = np.vstack((a, b)) + rng.normal(scale=1e-5, size=(8, 3))
        kind, elem, prim = find_pairs(pos, np.full(8, R), np.repeat([0, 1], 4), 2 * R, obstacles, 2)
        m = len(kind)
        seg_pairs += int((kind == SELF_SEG).sum())

        def energy(x, grad, mode):
            return contact_energy(
                x,
                kind,
                elem,
                prim,
                obstacles,
                np.full(8, R),
                k,
                np.full(8, s),
                np.full(7, s),
                np.arange(8) * 3,
                grad,
                np.zeros((1, 1)),
                0,
                mode,
                np.zeros(m),
                np.zeros(m),
                np.zeros((m, 3)),
                np.zeros((m, 3)),
                np.zeros(m),
                np.zeros((m, 3)),
            )

        grad = np.zeros(24)
        energy(pos, grad, 1)
        h = 1e-9
        for i in range(24):
            e = np.zeros(24)
            e[i] = h
            fd = energy(pos + e.reshape(8, 3), np.zeros(24), 0) - energy(pos - e.reshape(8, 3), np.zeros(24), 0)
            assert fd / (2 * h) == pytest.approx(grad[i], abs=1e-7 * np.abs(grad).max())
    assert seg_pairs > 20


def _dense_newton_matrix(band, bw, Ut, k_c, k_s):
    """The Newton matrix as the solver uses it, dense: the lower band mirrored, plus the low-rank
    couplings k (a b^T + b a^T) of row pairs and the whole terms k v v^T after them."""
    H = dense_from_band(band, bw)
    for j in range(len(k_c)):
        H += k_c[j] * (np.outer(Ut[2 * j], Ut[2 * j + 1]) + np.outer(Ut[2 * j + 1], Ut[2 * j]))
    for q in range(len(k_s)):
        H += k_s[q] * np.outer(Ut[2 * len(k_c) + q], Ut[2 * len(k_c) + q])
    return H


def test_the_newton_matrix_counts_a_crossing_at_a_node_once():
    # Cable B crosses cable A just beside a node of A, pressed into it. The node pair carries the
    # contact, and each of A's two segment pairs there only the little its crossing reaches beyond
    # the power mean of its ends: k/2 (D_s^2 - M^2). The Newton matrix (band of mode 2 plus the
    # low-rank coupling of the two cables) must give the energy's second derivative along moves
    # that press the cables together (B lowered; A's node lifted), where the distances' own
    # curvature is negligible: the reference is central differences of the energy. Counting the
    # segment pairs' k grad(D_s) grad(D_s)^T alone made it 2.6-2.7 times too stiff there.
    from solver_core.contact import SELF_NODE, SELF_SEG, ObstacleSet, contact_energy_of, find_pairs
    from solver_core.newton import _self_coupling

    s, k = 0.01, 1.26e8
    obstacles = ObstacleSet().kernel_arrays()
    ts = np.array([-1.5, -0.5, 0.5, 1.5]) * s
    angle, x0, depth = 1.2, 0.55 * s, 3e-5
    along = np.array([np.cos(angle), np.sin(angle), 0.0])
    a = np.column_stack((ts, np.zeros(4), np.zeros(4)))
    b = np.array([x0, 0.0, 2 * R - depth]) + ts[:, None] * along
    pos = np.vstack((a, b))
    n, bw = 8, 23  # a full band: every block of the 24 x 24 matrix in one place
    radii, node_len, seg_len, node_dof = np.full(n, R), np.full(n, s), np.full(n - 1, s), np.arange(n) * 3
    kind, elem, prim = find_pairs(pos, radii, np.repeat([0, 1], 4), 2 * R, obstacles, 2)
    m = len(kind)
    pair_arrays = (np.zeros(m), np.zeros(m), np.zeros((m, 3)), np.zeros((m, 3)), np.zeros(m), np.zeros((m, 3)))

    def energy(x):
        return contact_energy_of(
            np.arange(m),
            x,
            kind,
            elem,
            prim,
            obstacles,
            radii,
            k,
            node_len,
            seg_len,
            node_dof,
            np.zeros(3 * n),
            np.zeros((1, 1)),
            0,
            0,
            *pair_arrays,
            np.empty((0, 12)),
        )

    def newton_matrix(end_grad):
        band = np.zeros((3 * n, bw + 1))
        contact_energy_of(
            np.arange(m),
            pos,
            kind,
            elem,
            prim,
            obstacles,
            radii,
            k,
            node_len,
            seg_len,
            node_dof,
            np.zeros(3 * n),
            band,
            bw,
            2,
            *pair_arrays,
            end_grad,
        )
        Ut, k_c, k_s, _spans, _store = _self_coupling(
            kind,
            elem,
            prim,
            pair_arrays[1],
            pair_arrays[4],
            pair_arrays[2],
            pair_arrays[5],
            end_grad,
            node_dof,
            np.zeros(3 * n, dtype=np.bool_),
            k,
            node_len,
            seg_len,
            pos,
            pair_arrays[0],
            True,
            np.zeros((0, 3 * n)),
            np.zeros((0, 4), dtype=np.int64),
        )
        return _dense_newton_matrix(band, bw, Ut, k_c, k_s)

    H = newton_matrix(np.zeros((m, 12)))
    gap, force = pair_arrays[0], pair_arrays[5]
    acting_segment_pairs = (kind == SELF_SEG) & (np.abs(force).sum(axis=1) > 0.0)
    assert ((kind == SELF_NODE) & (gap < 0.0)).sum() == 1 and acting_segment_pairs.sum() == 2
    lower_b, lift_node = np.zeros((n, 3)), np.zeros((n, 3))
    lower_b[4:, 2] = -1.0
    lift_node[2, 2] = 1.0
    h = 2e-7
    # lifting the node tilts A's segments under the crossing: the segment distance's own curvature
    # (segment_pair_curvature) is then ~0.1 % of the matrix, the power mean's (left out) far less
    for v, tolerance in ((lower_b, 1e-5), (lift_node, 1e-4)):
        fd = (energy(pos + h * v) - 2 * energy(pos) + energy(pos - h * v)) / h**2
        assert v.ravel() @ H @ v.ravel() == pytest.approx(fd, rel=tolerance)


def test_a_step_closing_open_pairs_stops_at_the_minimum_of_model_plus_their_penalty():
    # plunge_step_length minimises, along a Newton step, the quadratic model -G a + C a^2 / 2 plus the
    # penalty k/2 (a s_p - g_p)_+^2 of each open node-facet pair or cable-cable node or segment pair the
    # step closes (s_p: its approach over the whole step; k per node length, per segment length for a
    # segment pair). Reference: the same function minimised numerically by
    # scipy; touching pairs, pairs not evaluated at the current state and other kinds of pair must
    # not count, and a step that closes no open facet pair is left whole.
    from scipy.optimize import minimize_scalar

    from solver_core.contact import PLANE, SELF_NODE, SELF_SEG, TRI_NODE, TRI_SEG, plunge_step_length

    rng = np.random.default_rng(5)
    stiffness, seg = 1.26e8, 0.005
    closes = 0
    for trial in range(20):
        m = 30
        kind = rng.choice([TRI_NODE, TRI_NODE, TRI_NODE, TRI_SEG, PLANE, SELF_NODE, SELF_SEG], m)
        elem = rng.integers(0, 10, m)
        node_len = rng.uniform(0.5, 1.0, 10) * seg
        seg_len = rng.uniform(0.8, 1.2, 10) * seg
        gap = rng.uniform(-0.2, 1.0, m) * 1e-5
        fresh = rng.random(m) < 0.9
        approach = rng.uniform(-1.0, 1.0, m) * 4e-5
        scale = 1.0 if trial % 2 else 0.6  # the step was cut by the filter to this much of its length
        slope, curvature = rng.uniform(0.2, 2.0) * 1e-4, rng.uniform(0.1, 2.0) * 1e-4
        counts = ((kind == TRI_NODE) | (kind == SELF_NODE) | (kind == SELF_SEG)) & fresh & (gap > 0.0)
        k = stiffness * np.where(kind == SELF_SEG, seg_len[elem], node_len[elem])

        def phi(a):
            closing = np.maximum(0.0, a * scale * approach - gap)[counts]
            return -slope * a + 0.5 * curvature * a * a + 0.5 * (k[counts] * closing**2).sum()

        alpha, penalty = plunge_step_length(
            approach, scale, kind, elem, gap, fresh, stiffness, node_len, seg_len, slope, curvature
        )
        if not np.any((scale * approach > gap)[counts]):
            assert (alpha, penalty) == (1.0, 0.0)
            continue
        closes += 1
        best = minimize_scalar(phi, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-13})
        assert alpha == pytest.approx(best.x, rel=1e-6, abs=1e-9)
        closing = np.maximum(0.0, alpha * scale * approach - gap)[counts]
        assert penalty == pytest.approx(0.5 * (k[counts] * closing**2).sum(), rel=1e-9, abs=1e-30)
    assert closes >= 10
    # nothing closed: the whole step
    assert plunge_step_length(
        np.zeros(3),
        1.0,
        np.full(3, TRI_NODE),
        np.zeros(3, dtype=np.int64),
        np.ones(3),
        np.ones(3, dtype=np.bool_),
        stiffness,
        np.full(1, seg),
        np.full(1, seg),
        1e-4,
        1e-4,
    ) == (1.0, 0.0)


def test_gap_bounds_carried_along_steps_stay_below_the_true_gaps_and_leave_out_only_open_pairs():
    # Between evaluations the minimiser keeps, per pair, a lower bound of its gap: the last evaluated
    # gap less the moves of the pair's nodes since (both sides' for a cable's own segments), and
    # evaluates only the pairs whose bound is not positive. Over a chain of random steps of every node,
    # against a crumpled mesh, a crossing cable and a loop onto itself, the bounds must never exceed
    # the true gaps, and the pairs kept must give the energy and gradient of all candidate pairs.
    from solver_core.contact import (
        contact_energy,
        contact_energy_of,
        lower_gaps,
        pair_gaps,
        pair_moves,
        pair_nodes,
        pairs_that_may_touch,
    )

    rng = np.random.default_rng(7)
    obstacles, pos, radius, reach, self_gap, kind, elem, prim = _crumpled_mesh_crossing_cable_and_loop(rng)
    n, m, k = len(pos), len(kind), 1e8
    seg = float(np.linalg.norm(np.diff(pos, axis=0), axis=1).max())

    def arrays():
        return np.empty(m), np.empty(m), np.empty((m, 3)), np.empty((m, 3)), np.zeros(m)

    bound = arrays()
    pair_gaps(np.arange(m), pos, kind, elem, prim, obstacles, radius, *bound)
    node_len, seg_len, node_dof = np.full(n, seg), np.full(n - 1, seg), np.arange(n) * 3
    kept, touching = [], 0
    for _ in range(12):
        step = rng.normal(size=(n, 3))
        step *= rng.uniform(0.0, 0.1 * R, (n, 1)) / np.linalg.norm(step, axis=1, keepdims=True)
        pos = pos + step
        moves = np.empty(m)
        pair_moves(pair_nodes(kind, elem, prim), np.linalg.norm(step, axis=1), moves)
        lower_gaps(moves, bound[0], np.zeros(m, dtype=np.bool_))
        true = arrays()
        pair_gaps(np.arange(m), pos, kind, elem, prim, obstacles, radius, *true)
        assert np.all(bound[0] <= true[0] + 1e-15)
        live = pairs_that_may_touch(bound[0])
        grad_all, grad_live = np.zeros(3 * n), np.zeros(3 * n)
        energy_all = contact_energy(
            pos,
            kind,
            elem,
            prim,
            obstacles,
            radius,
            k,
            node_len,
            seg_len,
            node_dof,
            grad_all,
            np.zeros((1, 1)),
            0,
            1,
            *arrays(),
            np.zeros((m, 3)),
        )
        energy_live = contact_energy_of(
            live,
            pos,
            kind,
            elem,
            prim,
            obstacles,
            radius,
            k,
            node_len,
            seg_len,
            node_dof,
            grad_live,
            np.zeros((1, 1)),
            0,
            1,
            *bound,
            np.zeros((m, 3)),
            np.empty((0, 12)),
        )
        assert energy_live == pytest.approx(energy_all, rel=1e-12) and np.allclose(grad_live, grad_all, rtol=1e-12)
        kept.append(len(live))
        touching += int((true[0] < 0.0).sum())
    assert touching > 0 and min(kept) < m  # some pairs touch, and some are left out


def test_the_step_filter_is_the_documented_rule_over_every_pair():
    # approach_fraction passes over pairs whose gap is at least twice the largest node move of the
    # step (they cannot be approached beyond their gap). The fraction must still be the rule written
    # out over every pair and node: min(1, reach / |step of a node|, allowed / approach of a pair),
    # with allowed = max(gap, half a radius; a tenth for segments crossing cables), but no nearer the
    # surface than MIN_SEPARATION radii, and the approach
    # the step of the pair's contact point (both sides' for a cable's own segments) against its normal.
    from solver_core.contact import (
        CAP_NODE,
        CAP_SEG,
        MIN_SEPARATION,
        PLANE,
        SELF_NODE,
        SELF_SEG,
        TRI_NODE,
        approach_fraction,
        pair_gaps,
    )

    rng = np.random.default_rng(11)
    obstacles, pos, radius, reach, _self_gap, kind, elem, prim = _crumpled_mesh_crossing_cable_and_loop(rng)
    n, m = len(pos), len(kind)
    gap, t, normal, _point, u = np.empty(m), np.empty(m), np.empty((m, 3)), np.empty((m, 3)), np.zeros(m)
    pair_gaps(np.arange(m), pos, kind, elem, prim, obstacles, radius, gap, t, normal, _point, u)
    node_dof = np.arange(n) * 3
    node_kind = np.isin(kind, [PLANE, TRI_NODE, CAP_NODE, SELF_NODE])
    cut_by_pairs = 0
    for size in (1e-3 * R, 1e-2 * R, 0.1 * R, 0.5 * R, 2.0 * R, 20.0 * R):
        for trial in range(6):
            step = rng.normal(size=(n, 3))
            if trial % 2:
                # every node the whole size, mostly down (at the mesh, and the upper leg at the lower
                # one): pairs whose gaps are a good part of the step decide the fraction
                step = 0.1 * step / np.linalg.norm(step, axis=1, keepdims=True) - [0.0, 0.0, 1.0]
                step *= size / np.linalg.norm(step, axis=1, keepdims=True)
            else:
                step *= rng.uniform(0.0, size, (n, 1)) / np.linalg.norm(step, axis=1, keepdims=True)
            expected = min(1.0, float(np.min(reach / np.maximum(np.linalg.norm(step, axis=1), 1e-300))))
            by_pairs = 1.0
            approaches = np.empty(m)
            for p in range(m):
                i = elem[p]
                w = 0.0 if node_kind[p] else t[p]
                approach = -((1.0 - w) * step[i] + w * step[min(i + 1, n - 1)]) @ normal[p]
                if kind[p] in (SELF_NODE, SELF_SEG):
                    approach += ((1.0 - u[p]) * step[prim[p]] + u[p] * step[prim[p] + 1]) @ normal[p]
                approaches[p] = approach
                slack = 0.1 if kind[p] in (CAP_SEG, SELF_SEG) else 0.5
                # never nearer a surface than MIN_SEPARATION radii
                allowed = max(0.0, min(max(gap[p], slack * R), gap[p] + (1.0 - MIN_SEPARATION) * R))
                if approach > allowed:
                    by_pairs = min(by_pairs, allowed / approach)
            cut_by_pairs += by_pairs < expected
            expected = min(expected, by_pairs)
            approach = np.empty(m)
            fraction = approach_fraction(
                step.ravel(), node_dof, kind, elem, prim, gap, t, u, normal, radius, reach, approach
            )
            assert fraction == pytest.approx(expected, rel=1e-12, abs=1e-300)
            # the approaches handed on: each pair's own, or 0 where it cannot reach its gap
            assert np.all((np.abs(approach - approaches) <= 1e-12 * R) | ((approach == 0.0) & (approaches <= gap)))
    assert cut_by_pairs > 0  # the pairs, not only the reach, decided some of the steps


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
        _no_penetration(r, doc)


def _segment_distance(x):
    from solver_core.contact_geometry import segment_segment

    return segment_segment(x[0:3], x[3:6], x[6:9], x[9:12], np.empty(3), np.empty(3))


@pytest.mark.parametrize("t0, u0", [(0.4, 0.6), (0.15, 0.8), (0.5, 1.03), (-0.03, 0.5)])
def test_the_curvature_of_a_segment_distance_matches_second_differences(t0, u0):
    # E = k/2 (r - d)^2 of two crossing segments (d: their centre lines' distance): its Hessian is
    # k grad(d) grad(d)^T plus segment_pair_curvature's terms. Reference: central differences of
    # the energy, closest points inside both segments or held at an end of one (parameters 1.03 and
    # -0.03 put the crossing just beyond an end).
    from solver_core.contact import segment_pair_curvature

    rng = np.random.default_rng(3)
    k, r, s = 1e6, 2 * R, 0.005
    angle = 0.7
    a = np.array([[0.0, 0.0, 0.0], [s, 0.0, 0.0]])
    along = np.array([math.cos(angle), math.sin(angle), 0.0])
    crossing = np.array([t0 * s, 0.0, r - 5e-5])
    b = np.array([crossing - u0 * s * along, crossing + (1 - u0) * s * along])
    x = np.concatenate((a.ravel(), b.ravel())) + rng.normal(0.0, 2e-6, 12)

    def energy(y):
        depth = r - _segment_distance(y)[2]
        return 0.5 * k * depth * depth if depth > 0 else 0.0

    t, u, d = _segment_distance(x)
    assert d < r
    vecs, coefs = np.zeros((4, 12)), np.zeros(4)
    m = segment_pair_curvature(x.reshape(4, 3), 0, 2, t, u, k * (r - d), vecs, coefs)
    assert m == (4 if 0 < t0 < 1 and 0 < u0 < 1 else 3)
    w = (1 - t) * x[0:3] + t * x[3:6] - (1 - u) * x[6:9] - u * x[9:12]
    grad_d = np.concatenate(((1 - t) * w, t * w, -(1 - u) * w, -u * w)) / d
    H = k * np.outer(grad_d, grad_d) + sum(coefs[j] * np.outer(vecs[j], vecs[j]) for j in range(m))
    h = 1e-7
    fd = np.zeros((12, 12))
    for i in range(12):
        for j in range(12):
            ei, ej = np.eye(12)[i] * h, np.eye(12)[j] * h
            fd[i, j] = (energy(x + ei + ej) - energy(x + ei - ej) - energy(x - ei + ej) + energy(x - ei - ej)) / (
                4 * h * h
            )
    curvature = fd - k * np.outer(grad_d, grad_d)
    assert np.abs(curvature).max() > 1e-4 * k  # what is tested is there
    assert np.abs(H - fd).max() < 2e-3 * np.abs(curvature).max()


def test_the_newton_matrix_follows_a_pressed_crossing_as_the_cables_slide():
    # Cable B crosses cable A between nodes, pressed into it; the crossing's segment pair alone acts.
    # Sliding B along A or along itself, or turning it about a node, leaves the crossing as
    # deep as it was but moves where it lies on both segments, and so how its load is shared by
    # their nodes: the band plus low-rank matrix times such a move must be the change of the contact
    # forces (central differences of the gradient), as for pressing the cables together. With
    # k n n^T alone it was zero along the slides.
    from solver_core.contact import SELF_SEG, ObstacleSet, contact_energy_of, find_pairs
    from solver_core.newton import _self_coupling

    s, k = 0.01, 1.26e8
    obstacles = ObstacleSet().kernel_arrays()
    ts = np.array([-1.5, -0.5, 0.5, 1.5]) * s
    angle, depth = 0.6, 3e-5
    along = np.array([np.cos(angle), np.sin(angle), 0.0])
    a = np.column_stack((ts, np.zeros(4), np.zeros(4)))
    b = np.array([0.3 * s, 0.0, 2 * R - depth]) + (ts[:, None] + 0.2 * s) * along
    pos = np.vstack((a, b))
    n, bw = 8, 23
    radii, node_len, seg_len, node_dof = np.full(n, R), np.full(n, s), np.full(n - 1, s), np.arange(n) * 3
    kind, elem, prim = find_pairs(pos, radii, np.repeat([0, 1], 4), 2 * R, obstacles, 2)
    m = len(kind)
    pair_arrays = (np.zeros(m), np.zeros(m), np.zeros((m, 3)), np.zeros((m, 3)), np.zeros(m), np.zeros((m, 3)))

    def gradient(x):
        g = np.zeros(3 * n)
        contact_energy_of(
            np.arange(m),
            x,
            kind,
            elem,
            prim,
            obstacles,
            radii,
            k,
            node_len,
            seg_len,
            node_dof,
            g,
            np.zeros((1, 1)),
            0,
            1,
            *pair_arrays,
            np.empty((0, 12)),
        )
        return g

    band, end_grad = np.zeros((3 * n, bw + 1)), np.zeros((m, 12))
    contact_energy_of(
        np.arange(m),
        pos,
        kind,
        elem,
        prim,
        obstacles,
        radii,
        k,
        node_len,
        seg_len,
        node_dof,
        np.zeros(3 * n),
        band,
        bw,
        2,
        *pair_arrays,
        end_grad,
    )

    def coupling(exact, store, last_spans):
        return _self_coupling(
            kind,
            elem,
            prim,
            pair_arrays[1],
            pair_arrays[4],
            pair_arrays[2],
            pair_arrays[5],
            end_grad,
            node_dof,
            np.zeros(3 * n, dtype=np.bool_),
            k,
            node_len,
            seg_len,
            pos,
            pair_arrays[0],
            exact,
            store,
            last_spans,
        )

    Ut, k_c, k_s, spans, store = coupling(True, np.zeros((0, 3 * n)), np.zeros((0, 4), dtype=np.int64))
    for row, (lo, hi, lo2, hi2) in zip(Ut, spans):  # the Woodbury products look only there
        outside = np.ones(3 * n, dtype=bool)
        outside[lo:hi] = outside[lo2:hi2] = False
        assert not row[outside].any()
    # U^T lives in a store kept from call to call: a call with fewer rows (Gauss-Newton, no curvature)
    # leaves nothing of the last call's behind, and builds what a call with a new store builds
    gauss_newton = coupling(False, np.zeros((0, 3 * n)), np.zeros((0, 4), dtype=np.int64))
    again = coupling(False, store.copy(), spans)
    assert len(again[0]) == len(gauss_newton[0]) < len(Ut)
    assert np.array_equal(again[0], gauss_newton[0]) and not again[4][len(again[0]) :].any()
    assert len(k_c) == 1 and len(k_s) == 4  # the pair's coupling, and its curvature as whole terms
    H = _dense_newton_matrix(band, bw, Ut, k_c, k_s)
    acting = np.abs(pair_arrays[5]).sum(axis=1) > 0.0
    assert acting.sum() == 1 and kind[acting][0] == SELF_SEG
    slide_along_a, slide_along_b, turn_b, press = (np.zeros((n, 3)) for _ in range(4))
    slide_along_a[4:, 0] = 1.0
    slide_along_b[4:] = along
    pivot = b[1]  # a turn about the crossing itself would move nothing
    turn_b[4:, :2] = np.column_stack((-(b[:, 1] - pivot[1]), b[:, 0] - pivot[0])) / s
    press[4:, 2] = -1.0
    h = 2e-7
    for v in (slide_along_a, slide_along_b, turn_b, press):
        fd = (gradient(pos + h * v) - gradient(pos - h * v)) / (2 * h)
        assert np.linalg.norm(fd) > 1e-3 * k * depth  # the forces do move
        assert np.linalg.norm(H @ v.ravel() - fd) < 2e-3 * np.linalg.norm(fd)


def test_nodes_within_agrees_with_the_closest_node_distance():
    # touching_groups joins two cables when some node of one lies within reach of some node of the
    # other; reference: the smallest of all node-node distances
    from solver_core.contact_geometry import nodes_within

    rng = np.random.default_rng(11)
    for _ in range(20):
        a, b = rng.normal(size=(30, 3)), rng.normal(size=(40, 3)) + rng.uniform(0, 4)
        closest = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)).min()
        assert nodes_within(a, b, closest * 1.001) and not nodes_within(a, b, closest * 0.999)


def test_the_contact_report_follows_the_state_and_the_stiffness_it_is_asked_for():
    # A solve's last evaluation of its contact pairs is kept for the report of the same state: it must
    # never answer for another state or stiffness. Reference: the penalty force k l (r - d) of a node
    # lying on the table, pressed a further 10 um.
    from solver_core.contact import PLANE

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
    from solver_core.contact import CAP_SEG, PLANE, contact_energy, find_pairs

    doc = _crossed_pair(0.2, 2 * R)
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
        n = len(kind)
        gap, t, u = np.empty(n), np.empty(n), np.empty(n)
        normal, point, force = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
        contact_energy(
            state.positions,
            kind,
            elem,
            prim,
            obstacles,
            it.node_radius,
            it.stiffness,
            it.node_lengths,
            session.model.rest_len,
            session.model.node_dof,
            np.zeros(1),
            np.zeros((1, 1)),
            0,
            0,
            gap,
            t,
            normal,
            point,
            u,
            force,
        )
        wide = {(int(kind[p]), int(elem[p]), int(prim[p])): force[p] for p in np.flatnonzero((force != 0).any(axis=1))}
        assert len(kind) > 2 * len(wide)  # the wide search did find open pairs
        assert reported.keys() == wide.keys()
        for key, f in wide.items():
            assert reported[key] == pytest.approx(f, rel=1e-12, abs=1e-15)
        kinds |= {key[0] for key in wide}
    assert {PLANE, CAP_SEG} <= kinds


def _fan(n_cables, segments):
    """The contact benchmark's pile, smaller: cables 10 degrees apart crossing over a floor, each
    routed higher than the last, sagging onto the floor and onto each other."""
    cables = []
    for k in range(n_cables):
        angle = math.radians(-45 + 10 * k)
        d = np.array([math.cos(angle), math.sin(angle), 0.0])
        start = -0.25 * d + np.array([0, 0, 0.004 * k + 0.002])
        cables.append(
            cable(
                id=f"C{k}",
                length=0.52,
                segments=segments,
                start={"position": start.tolist(), "tangent": d.tolist(), "normal": [0, 0, 1]},
                end={"position": (start + 0.5 * d).tolist(), "tangent": d.tolist(), "normal": [0, 0, 1]},
                route=[start.tolist(), (start + 0.25 * d + [0, 0, 0.003 * k]).tolist(), (start + 0.5 * d).tolist()],
            )
        )
    return case(
        *cables,
        contact={"cable_cable": True},
        obstacles=[{"type": "plane", "point": [0, 0, -0.05], "normal": [0, 0, 1]}],
    )


def test_no_newton_step_of_a_pile_of_cables_raises_its_energy(monkeypatch):
    # A Levenberg-Marquardt step is taken when it lowers the energy as the model predicts, or when the
    # predicted change is within rounding noise (a pure refinement). Cables pressed together add
    # low-rank terms of either sign to the Newton matrix, which can then be indefinite along a step
    # whose band part is positive definite: such a step was taken as a refinement although the model
    # itself predicted a rise. Reference: the energy, which no accepted step may raise beyond rounding.
    # The solver is run one Newton iteration per call, each preceded by a call that only evaluates the
    # energy at the start (both search their contact pairs afresh at the same positions, so they
    # measure the same energy).
    import solver_core.equilibrium as equilibrium

    real = equilibrium.minimise_rod_energy
    steps, rises = [], []

    def one_iteration_at_a_time(pos, quat, *args):
        args = list(args)
        max_iterations = args[14]
        if max_iterations == 0:
            return real(pos, quat, *args)
        none = np.zeros(0, dtype=np.int64)
        total = 0
        while True:
            args[16:22] = [np.full_like(pos, np.inf), none, none, none, np.zeros(0), np.zeros((0, 3))]
            args[14] = 0
            before = real(pos, quat, *args)[3]
            args[14] = 1
            out = real(pos, quat, *args)
            status, iterations, after = out[0], out[1], out[3]
            if iterations:
                steps.append(before - after)
                if after > before + 1e-11 * abs(before):
                    rises.append((before, after))
            total += iterations
            if status != 1 or total >= max_iterations:  # 1: the iteration limit
                return (status, total, *out[2:])

    monkeypatch.setattr(equilibrium, "minimise_rod_energy", one_iteration_at_a_time)
    h = harness(_fan(6, 60))  # before the fix: 146 of 766 steps raised the energy (none with 4 cables)
    h.solve_step()
    assert len(steps) > 100 and max(steps) > 0.0
    assert not rises, rises[:3]


def test_a_group_hands_its_contact_pairs_on_to_its_next_step_and_its_report_as_after_a_fresh_search(monkeypatch):
    # Cables solved together get new interactions every step; the candidate contact pairs of their last
    # joint solve are handed on to the next (a fresh search of ten crossed cables cost 3.5 ms a step),
    # and the contact report takes the touching pairs from the candidates of the solve that ended
    # there. Reference: the same steps with every joint solve and every report searching afresh, which
    # must give the same shapes and contacts. Whether a solve was handed pairs is seen in where it was
    # told they were searched (inf: nowhere, search now).
    import solver_core.equilibrium as equilibrium
    from solver_core.interactions import Interactions

    real = equilibrium.minimise_rod_energy
    handed = []

    def recording(pos, quat, *args):
        handed.append(bool(np.isfinite(args[16]).all()))
        return real(pos, quat, *args)

    def run(h, fresh):
        assert all(r.converged for r in h.solve_step().values())
        out = []
        for k in range(1, 4):
            if fresh:
                h.group_candidates.clear()
            end = h.cables["C0"].boundary.end
            moved = Frame(end.position + np.array([0.0, 0.0, 0.001 * (-1) ** k]), end.tangent, end.normal)
            handed.clear()
            assert all(r.converged for r in h.solve_step({"C0": CableChange(end=moved)}).values())
            assert len(h.touching_groups(list(h.cables))) == 1  # solved together
            assert handed[0] == (not fresh)
            out.append({cid: h.cable_result(cid) for cid in h.cables})
        return out

    monkeypatch.setattr(equilibrium, "minimise_rod_energy", recording)
    kept = run(harness(_fan(3, 40)), fresh=False)
    monkeypatch.setattr(Interactions, "_touching_candidates", lambda self, state, obstacles: None)
    fresh = run(harness(_fan(3, 40)), fresh=True)
    for a_step, b_step in zip(kept, fresh):
        for cid, a in a_step.items():
            b = b_step[cid]
            assert np.allclose(a["nodes"], b["nodes"], rtol=0.0, atol=1e-7)
            assert len(a["contacts"]) == len(b["contacts"]) > 0
            order = [sorted(r["contacts"], key=lambda c: (c["s"], c.get("other_s", -1.0))) for r in (a, b)]
            for ca, cb in zip(*order):
                assert ca.get("other_cable") == cb.get("other_cable")
                assert ca["s"] == pytest.approx(cb["s"], abs=1e-6)
                assert np.allclose(ca["force"], cb["force"], rtol=1e-3, atol=1e-6)
