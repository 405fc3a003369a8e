# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact with planes, spheres and meshes against independent references: no penetration after any solve."""

import math

import numpy as np
import pytest
from helpers.cases import WIRE, cable, case, first, min_clearance, solve
from helpers.contact_scenes import (
    LINEAR_DENSITY,
    TABLE,
    R,
    no_penetration,
)
from helpers.kernel_inputs import contact_interactions, pair_buffers

from solver_core import Harness, parse_case

# Static friction that holds a cable lying over the top of a sphere there: frictionless, the top is
# unstable (test_stability.py) and the cable slides off to one side.
HELD_ON_TOP = {"friction_static": 0.5, "friction_dynamic": 0.5}


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
    no_penetration(result, doc)


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
    no_penetration(result, doc)


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
        no_penetration(result, doc)


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
    no_penetration(result, doc)


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


def test_a_segment_cutting_a_box_corner_between_two_outside_nodes_is_a_contact():
    # Both nodes lie within a radius of the box but outside it; the segment between them cuts through
    # the box's top edge. The pair must exist and push the segment out (it once went unseen because
    # the piercing point lies on a face, not on the sharp edge).
    from solver_core.contact.contact import TRI_SEG
    from solver_core.contact.contact_energy import contact_energy
    from solver_core.contact.obstacles import ObstacleSet
    from solver_core.contact.pair_search import find_pairs

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
    grad = np.zeros(6)
    pairs = pair_buffers(kind, elem, prim)
    extra = contact_interactions(obstacles, np.full(2, R), np.full(2, 0.01), np.full(1, 0.015), 1e6)
    energy = contact_energy(pos, pairs, extra, np.array([0, 3]), grad, np.zeros((1, 1)), 0, 1)
    assert energy > 0.0 and pairs.gap[kind == TRI_SEG].min() < -0.5 * R
    push = -(grad[0:3] + grad[3:6])  # the net force on the segment points out of the corner (+y, +z)
    assert push[1] > 0.0 and push[2] > 0.0


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
        contact=HELD_ON_TOP,  # without friction the top of the sphere is unstable: the cable slides off
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
    sphere = {"type": "sphere", "center": [0, 0, 0], "radius": 0.06}
    smooth = first(solve(case(spec, obstacles=[sphere], contact=HELD_ON_TOP)))
    assert smooth["converged"] and smooth["stable"]
    mesh = _uv_sphere(0.06, n_lon=24, n_lat=12)
    doc = case(spec, obstacles=[mesh], contact=HELD_ON_TOP)
    faceted = first(solve(doc))
    assert faceted["converged"] and faceted["contacts"]
    # every contact on the faceted sphere lies between its facets' inner distance and its radius
    inner = 0.06 * math.cos(math.pi / 12) * math.cos(math.pi / 24)
    for c in faceted["contacts"]:
        centre_line = np.array(c["point"]) + R * np.array(c["normal"])
        assert inner + 0.99 * R <= np.linalg.norm(centre_line) <= 0.06 + 1.01 * R
    # and the nearly taut drape (0.5 % strain) stays within a few millimetres of the smooth one
    assert np.abs(np.array(faceted["nodes"]) - np.array(smooth["nodes"])).max() < 3e-3
    # Known limit (README): a segment meets the facet edges it could cut by more than 1 % of its
    # radius (contact.FOLD_CUT_TOLERANCE), so it cuts the faceted surface by at most that, plus the
    # penetration tolerance of the contacts themselves (the chord sagitta l^2 / (8 rho) plus the
    # facets' own, about R here, was the bound while only sharp edges met segments)
    assert min_clearance(faceted["nodes"], R, doc["obstacles"]) >= -(0.01 + 0.005) * R


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


@pytest.mark.parametrize("length", np.round(np.arange(0.50, 0.705, 0.01), 2))
def test_cable_paid_out_onto_a_box_slides_off_its_edge_and_its_weight_is_carried(length):
    # Connectors 0.3 m apart above a 0.2 m box, 0.5-0.7 m of cable: the full sag would pass through
    # the box, so the cable starts as deep as it can above it and is paid out; on the way it slides
    # off the box's top edge (a snap-through the continuation has to follow to the end). At every
    # length in 10 mm steps (10 of these 21 converged while segments met only sharp edges whose
    # closest point lay inside them when contact pairs were searched).
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
            length=float(length),
            segments=30,
            start={"position": [0, 0, 0], "tangent": [0, 0, -1]},
            end={"position": [0.3, 0, 0], "tangent": [0, 0, 1]},
        ),
        obstacles=[{"type": "mesh", "vertices": corners.tolist(), "triangles": faces}],
    )
    result = first(solve(doc))
    assert result["converged"], result.get("message")
    assert result["contacts"]
    weight = WIRE["density"] * math.pi * 0.004**2 / 4 * length * 9.81
    vertical = (
        sum(c["force"][2] for c in result["contacts"])
        + result["end_forces"]["start"]["force"][2]
        + result["end_forces"]["end"]["force"][2]
    )
    assert vertical == pytest.approx(weight, rel=1e-6)
    no_penetration(result, doc)


def test_contact_stiffened_on_the_way_to_a_failed_solve_is_put_back(monkeypatch):
    # A clamped cable pressed into a table by a 40 N load sinks deeper than the penetration tolerance
    # at the first stiffness, so contact is stiffened and minimised again. When that second
    # minimisation fails, the solve fails and the stiffer contact (which only makes the next try
    # harder) must not outlive it.
    from solver_core.solve import equilibrium
    from solver_core.solve.newton import MAX_ITERATIONS

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
        out = real(*args)  # (status, iterations, ratio, energy, depth, factor)
        return out if len(calls) == 1 else (MAX_ITERATIONS, *out[1:-1], out[-1][:0])

    monkeypatch.setattr(equilibrium, "_minimise", first_call_only)
    report = h.solve_step()["W1"]
    assert not report.converged and max(calls) > before  # it was stiffened on the way
    assert session.interactions.stiffness == before
    monkeypatch.setattr(equilibrium, "_minimise", real)
    h.unchanged_failure = None  # the solver changed, not the input: forget the failed try
    report = h.solve_step()["W1"]  # the same solve, unhindered: stiffened to meet the tolerance
    assert report.converged and session.interactions.stiffness > before
    no_penetration(h.cable_result("W1"), doc)
