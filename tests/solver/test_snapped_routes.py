# SPDX-License-Identifier: GPL-3.0-or-later
"""Routes snapped onto a part, as users draw them: the cable starts clear of the part on the side drawn.

A user snaps a route's points onto a part's faces; the cable's centre line belongs one radius out. The
route is lifted off the surfaces it was drawn onto (solver_core/contact/drawn_routes.py), not off ones
it was drawn through. Clearances are measured independently of the solver's contact code
(helpers.cases.min_clearance: exact distances of straight segments to every primitive)."""

import copy
from dataclasses import replace

import numpy as np
import pytest
from helpers.cases import min_clearance
from helpers.drapes import KINDS, SIDES, drape_case, far_side
from helpers.obstacles import box, cylinder, plate

from solver_core import Harness, parse_case
from solver_core.contact.drawn_routes import CLEARANCE, densified, lifted_route
from solver_core.contact.obstacles import obstacles_from_case

R = 0.003  # the cable's radius


def _obstacles(*docs):
    return obstacles_from_case(parse_case(_case(docs, [[-0.3, 0.0, 0.0], [0.3, 0.0, 0.0]])).obstacles)


def _case(obstacles, route, length=None):
    route = np.asarray(route, float)
    legs = np.linalg.norm(np.diff(route, axis=0), axis=1)
    t0, t1 = route[1] - route[0], route[-1] - route[-2]
    cable = {
        "id": "W",
        "length": float(length or 1.1 * legs.sum()),
        "diameter": 2 * R,
        "segments": 30,
        "material": {"E": 126e6, "nu": 0.3, "density": 7958.0},
        "start": {"position": route[0].tolist(), "tangent": (t0 / np.linalg.norm(t0)).tolist()},
        "end": {"position": route[-1].tolist(), "tangent": (t1 / np.linalg.norm(t1)).tolist()},
        "route": route.tolist(),
    }
    return {"format": "cable-harness-case/1", "cables": [cable], "obstacles": list(obstacles)}


SNAPPED = 1e-4  # a snapped point's distance from the face (exactly on it, a mesh's side is unknown)


def _over_the_top(half, top, reach=0.2, drop=0.05):
    """A route over the top face of a part, ``top`` high: its corners above the top's edges."""
    return [[-reach, 0.0, top - drop], [-half, 0.0, top], [half, 0.0, top], [reach, 0.0, top - drop]]


def test_densified_keeps_the_points_and_spaces_the_rest():
    route = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.25, 0.0]])
    points = densified(route, 0.1)
    assert len(points) == 1 + 10 + 3
    for p in route:
        assert np.min(np.linalg.norm(points - p, axis=1)) == 0.0
    assert np.linalg.norm(np.diff(points, axis=0), axis=1).max() <= 0.1 + 1e-15


@pytest.mark.parametrize("part", ["box", "plate"])
def test_a_route_snapped_onto_a_top_face_is_lifted_one_radius_clear(part):
    half, top = 0.05, 0.02 if part == "box" else 0.0
    doc = box((-half, -0.05, -0.02), (half, 0.05, top)) if part == "box" else plate(-half, half, 0.05)
    route = np.array(_over_the_top(half, top + SNAPPED))
    assert min_clearance(route, R, [doc]) < -0.9 * R  # the cable would start in it by its radius
    lifted = lifted_route(route, R, _obstacles(doc), [route[0], route[-1]])
    assert lifted is not None
    clearance = min_clearance(lifted, R, [doc])
    assert 0.5 * CLEARANCE * R - 1e-12 <= clearance <= CLEARANCE * R + 1e-12
    # along the top the lift is straight up, one radius: the route keeps its place and side
    above = lifted[np.abs(lifted[:, 0]) < half - 2 * R]
    np.testing.assert_allclose(above[:, 2], top + R * (1.0 + CLEARANCE), rtol=0, atol=1e-3 * R)
    np.testing.assert_allclose(above[:, 1], 0.0, atol=1e-12)
    np.testing.assert_array_equal(lifted[[0, -1]], route[[0, -1]])  # the connectors stay


@pytest.mark.parametrize("wound", ["outwards", "inwards"])
def test_a_route_exactly_on_a_closed_part_s_faces_is_lifted_to_its_outside(wound):
    """Face snapping puts a point exactly on the face: on a closed mesh its outside is known (the
    sign of its volume orients its faces, however they are wound), so the route is lifted there."""
    half, top = 0.05, 0.02
    doc = box((-half, -0.05, -0.02), (half, 0.05, top))
    if wound == "inwards":
        doc["triangles"] = [t[::-1] for t in doc["triangles"]]
    route = np.array(_over_the_top(half, top))  # its corners on the top's edges, its middle on the top
    lifted = lifted_route(route, R, _obstacles(doc), [route[0], route[-1]])
    assert lifted is not None
    assert min_clearance(lifted, R, [doc]) >= 0.5 * CLEARANCE * R - 1e-12
    above = lifted[np.abs(lifted[:, 0]) < half - 2 * R]
    np.testing.assert_allclose(above[:, 2], top + R * (1.0 + CLEARANCE), rtol=0, atol=1e-3 * R)


def test_a_route_snapped_onto_the_facets_of_a_closed_cylinder_is_lifted_over_its_edges():
    """Points snapped onto the facets of a tessellated cylinder: the route's chord between two facets
    cuts under the edge between them (inside the part), which is not a route drawn through."""
    radius, facets = 0.05, 16
    doc = cylinder(0.0, 0.0, radius, 0.1, facets=facets)
    apothem = radius * np.cos(np.pi / facets)
    snapped = []
    for a in np.linspace(0.15 * np.pi, 0.85 * np.pi, 9):  # onto the facet the ray at angle a meets
        k = np.floor(a / (2 * np.pi / facets))
        mid = (k + 0.5) * 2 * np.pi / facets
        snapped.append([apothem / np.cos(a - mid) * np.cos(a), 0.0, apothem / np.cos(a - mid) * np.sin(a)])
    route = np.array([[-0.2, 0.0, 0.0], *snapped[::-1], [0.2, 0.0, 0.0]])
    assert min_clearance(route, 0.0, [doc]) == 0.0  # on or in the part
    lifted = lifted_route(route, R, _obstacles(doc), [route[0], route[-1]])
    assert lifted is not None
    assert min_clearance(lifted, R, [doc]) >= 0.5 * CLEARANCE * R - 1e-12
    assert np.all(lifted[1:-1][np.abs(lifted[1:-1, 0]) < 0.5 * radius][:, 2] > 0.0)  # over it


def test_a_route_snapped_onto_a_sphere_is_lifted_radially():
    radius = 0.05
    sphere = {"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": radius}
    angles = np.linspace(0.2 * np.pi, 0.8 * np.pi, 7)
    arc = [[radius * np.cos(a), 0.0, radius * np.sin(a)] for a in angles[::-1]]
    route = np.array([[-0.2, 0.0, 0.0], *arc, [0.2, 0.0, 0.0]])
    lifted = lifted_route(route, R, _obstacles(sphere), [route[0], route[-1]])
    assert lifted is not None
    assert 0.5 * CLEARANCE * R - 1e-12 <= min_clearance(lifted, R, [sphere]) <= CLEARANCE * R + 1e-12
    # the route's own points on the sphere moved out along the radius, not round it (a point moves
    # with its neighbour along their chord's normal: a tenth of the cable's radius sideways at most)
    for p in arc:
        nearest = lifted[np.argmin(np.linalg.norm(lifted - np.array(p), axis=1))]
        sideways = np.linalg.norm(np.cross(nearest, np.array(p) / radius))
        assert sideways < 0.1 * R


def test_a_route_drawn_clear_or_drawn_through_is_not_lifted():
    half = 0.05
    doc = plate(-half, half, 0.05)
    clear = np.array(_over_the_top(half, 2.0 * R))
    assert lifted_route(clear, R, _obstacles(doc), [clear[0], clear[-1]]) is None
    # from above the plate to below it: which side was meant cannot be told
    through = np.array([[-0.2, 0.0, 0.05], [0.0, 0.0, 0.0], [0.2, 0.0, -0.05]])
    assert lifted_route(through, R, _obstacles(doc), [through[0], through[-1]]) is None
    # exactly on a mesh's face: a zero-thickness plate has two sides, and the face does not say which
    on_face = np.array(_over_the_top(half, 0.0))
    assert lifted_route(on_face, R, _obstacles(doc), [on_face[0], on_face[-1]]) is None
    # through a sphere's middle (its points on the sphere are lifted: test above)
    sphere = {"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": 0.05}
    chord = np.array([[-0.2, 0.0, 0.0], [0.2, 0.0, 0.01]])
    assert lifted_route(chord, R, _obstacles(sphere), [chord[0], chord[-1]]) is None


def test_points_near_a_holder_on_the_surface_follow_it():
    half = 0.05
    doc = plate(-half, half, 0.05)
    route = np.array(_over_the_top(half, SNAPPED))
    clip = np.array([0.0, 0.0, SNAPPED])  # a clip mounted on the plate's top, mid-way
    full = R * (1.0 + CLEARANCE)  # the lift of a point on the top far from the clip
    points = densified(route, 0.5 * R)
    for held, mounted in (([route[0], route[-1], clip], True), ([route[0], route[-1], clip + [0, 0, 3 * R]], False)):
        lifted = lifted_route(route, R, _obstacles(doc), held)
        top = np.abs(points[:, 0]) < half - 2 * R
        np.testing.assert_allclose(lifted[top, :2], points[top, :2], atol=1e-12)  # straight up
        lift = lifted[:, 2] - points[:, 2]
        distance = np.linalg.norm(points - clip, axis=1)
        far = top & (distance >= 2.0 * R)
        np.testing.assert_allclose(lift[far], full - SNAPPED, rtol=0, atol=1e-3 * R)
        near = distance <= 0.5 * R
        if mounted:  # the clip holds the cable on the plate: its neighbours follow it
            assert np.all(lift[near] <= 0.25 * full + 1e-12)
        else:  # a holder clear of the surface holds nothing down
            np.testing.assert_allclose(lift[near], full - SNAPPED, rtol=0, atol=1e-3 * R)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("side", SIDES)
def test_a_cable_on_a_snapped_route_starts_as_clear_as_one_drawn_clear(kind, side):
    """Each drape drawn onto its obstacle (0.1 mm from the surface: the cable's centre line inside it
    by most of its radius) starts on the side drawn, as clear of it as the same cable whose route was
    drawn one diameter clear, and is not warned of as drawn through unless that one is. (A cable of
    fewer segments can cut a corner of either: 8 segments round the end of a 0.5 m cylinder cut it
    when laid along the lifted route and not along the one drawn clear.)"""
    rng = np.random.default_rng(100 + 10 * KINDS.index(kind) + SIDES.index(side))
    for _ in range(3):
        segments = int(rng.integers(16, 60))
        starts = {}
        for clear in (1e-4, None):
            twin = copy.deepcopy(rng)  # the same drape, drawn snapped and drawn clear
            drawn = drape_case(twin, kind=kind, side=side, segments=segments, clear=clear)
            doc = drawn["case"]
            obstacle = doc["obstacles"][0]
            radius = 0.5 * doc["cables"][0]["diameter"]
            h = Harness.from_case(parse_case(doc))
            start = h.cables["W"].state.positions + h.cables["W"].model.origin
            starts[clear] = (min_clearance(start, radius, [obstacle]), any("passes through" in w for w in h.warnings))
            assert not far_side(start, obstacle, side)
        route = np.array(drape_case(copy.deepcopy(rng), kind, side, segments, clear=1e-4)["case"]["cables"][0]["route"])
        assert min_clearance(route, radius, [obstacle]) < -0.5 * radius
        rng = twin
        (snapped, warned), (clear, warned_clear) = starts[1e-4], starts[None]
        assert snapped >= min(clear, 0.0) - 0.02 * radius
        assert warned <= warned_clear


def test_snapped_over_a_plate_converges_on_the_side_drawn():
    """A 77-segment cable snapped over a 47 mm plate with 4 % slack never converged (5,650 iterations,
    residual 32 N) from the route as drawn; drawn one diameter clear it converged in 6."""
    rng = np.random.default_rng(11)
    for _ in range(45):
        drawn = drape_case(rng, clear=1e-4)
    assert (drawn["kind"], drawn["side"], drawn["segments"]) == ("plate", "over", 77)
    h = Harness.from_case(parse_case(drawn["case"]))
    report = h.solve_step()["W"]
    assert report.converged and report.stable
    nodes = np.array(h.cable_result("W")["nodes"])
    obstacle = drawn["case"]["obstacles"][0]
    radius = 0.5 * drawn["case"]["cables"][0]["diameter"]
    assert min_clearance(nodes, radius, [obstacle]) > -0.01 * radius
    assert not far_side(nodes, obstacle, "over")


def test_a_solved_shape_given_back_as_the_route_is_not_lifted():
    """Blender re-solves a cable from its last result (its nodes as the route): a cable resting on a
    part touches it within the penetration tolerance and must start where it rests, not a radius up."""
    floor = {"type": "plane", "point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = _case([floor], [[-0.15, 0.0, 0.05], [0.15, 0.0, 0.05]], length=0.5)
    h = Harness.from_case(parse_case(doc))
    assert h.solve_step()["W"].converged
    nodes = np.array(h.cable_result("W")["nodes"])
    assert min_clearance(nodes, R, doc["obstacles"]) < 0.0  # it rests on the floor
    again = copy.deepcopy(doc)
    again["cables"][0]["route"] = nodes.tolist()
    h2 = Harness.from_case(parse_case(again))
    start = h2.cables["W"].state.positions + h2.cables["W"].model.origin
    # (laid along the route by arc length: micrometres from the nodes; a lift would be a radius)
    np.testing.assert_allclose(start, nodes, rtol=0, atol=0.01 * R)


def test_a_first_solve_that_fails_from_a_route_drawn_through_says_why():
    """From above a plate to below it, straight through: the route is not lifted (no side to lift it
    to), the solve cannot mend it, and its failure names the route as the reason, not only the trust
    region or the iteration limit."""
    route = [[-0.2, 0.0, 0.05], [0.2, 0.0, -0.05]]
    doc = _case([plate(-0.05, 0.05, 0.05)], route, length=0.5)
    h = Harness.from_case(parse_case(doc))
    assert any("passes through an obstacle" in w for w in h.warnings)
    report = h.solve_step()["W"]
    assert not report.converged and not report.refused
    assert report.message.endswith("; its route passes through an obstacle: draw it around")


def test_a_route_drawn_anew_clear_loses_its_old_warning_and_message():
    """Blender rebuilds a cable whose route was redrawn: the old route's warning must not stay, nor
    end a later failure's message with a reason that no longer holds."""
    through = _case([plate(-0.05, 0.05, 0.05)], [[-0.2, 0.0, 0.05], [0.2, 0.0, -0.05]], length=0.5)
    h = Harness.from_case(parse_case(through))
    assert any("passes through" in w for w in h.warnings)
    clear = _case([plate(-0.05, 0.05, 0.05)], _over_the_top(0.05, 2 * R), length=0.5)
    h.add_cable(parse_case(clear).cables[0])
    assert not any("passes through" in w for w in h.warnings)
    report = h.solve_step()["W"]
    assert "passes through" not in report.message


def test_a_renamed_cable_drawn_anew_clear_loses_its_old_warning():
    """A cable renamed in Blender (its object renamed) and then redrawn: the warning of the route it
    had must name it by its new name and go when it is redrawn."""
    through = _case([plate(-0.05, 0.05, 0.05)], [[-0.2, 0.0, 0.05], [0.2, 0.0, -0.05]], length=0.5)
    h = Harness.from_case(parse_case(through))
    h.rename_cable("W", "V")
    assert any("'V'" in w and "passes through" in w for w in h.warnings)
    assert not any("'W'" in w for w in h.warnings)
    clear = parse_case(_case([plate(-0.05, 0.05, 0.05)], _over_the_top(0.05, 2 * R), length=0.5)).cables[0]
    h.add_cable(replace(clear, id="V"))
    assert not any("passes through" in w for w in h.warnings)
