# SPDX-License-Identifier: GPL-3.0-or-later
"""The independent check that a moving centre line passes through an obstacle (helpers/swept.py),
against motions whose answer is known by construction, and the drawn routes it is used on
(helpers/drapes.py): tight, clear of their obstacle, with the slack asked for."""

import numpy as np
import pytest
from helpers.drapes import KINDS, SIDES, drape_case
from helpers.obstacles import box, plate
from helpers.swept import passes_through

from solver_core import parse_case

# off every edge and diagonal of the plates below (a generic position, as a solve's iterates are)
LINE = np.array([[-0.1, 0.0123, 0.0], [0.0071, 0.0123, 0.0], [0.1, 0.0123, 0.0]])


def test_a_segment_moved_down_through_a_plate_passes_it_and_one_moved_along_it_does_not():
    sheet = plate(-0.05, 0.05, 0.05)
    above, below = LINE + [0, 0, 0.01], LINE + [0, 0, -0.0137]
    assert passes_through(above, below, sheet, core=0.0)
    assert not passes_through(above, above + [0.5, 0, 0], sheet, core=0.0)
    assert not passes_through(above, above + [0, 0, 0.01], sheet, core=0.0)
    # beside the plate (beyond its edge in y) the same drop is free
    assert not passes_through(above + [0, 0.2, 0], below + [0, 0.2, 0], sheet, core=0.0)


def test_a_segment_swept_over_a_plate_edge_between_its_nodes_is_seen():
    # the nodes stay off the plate; the segment between them sweeps through its edge
    sheet = plate(-0.01, 0.013, 0.5)
    before = np.array([[-0.05, 0.0123, 0.01], [0.05, 0.0123, 0.01]])
    after = np.array([[-0.05, 0.0123, -0.0137], [0.05, 0.0123, -0.0137]])
    assert passes_through(before, after, sheet, core=0.0)


def test_a_segment_swung_through_a_sphere_with_its_nodes_outside_is_seen():
    ball = {"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": 0.05}
    before = np.array([[-0.2, 0.0, 0.08], [0.2, 0.0, 0.08]])
    after = np.array([[-0.2, 0.0, -0.08], [0.2, 0.0, -0.08]])
    assert passes_through(before, after, ball, core=0.001)
    # round it (in y, beyond its radius) is not through
    assert not passes_through(before + [0, 0.06, 0], after + [0, 0.06, 0], ball, core=0.001)
    # nearer than the radius but within the allowed core depth
    assert not passes_through(before, before - [0, 0, 0.0305], ball, core=0.001)


def test_a_segment_starting_inside_a_box_may_leave_it():
    solid = box((-0.05, -0.05, -0.05), (0.05, 0.05, 0.05))
    crossing = np.array([[-0.1, 0.0123, 0.0071], [0.1, 0.0123, 0.0071]])  # through both side walls at the start
    assert not passes_through(crossing, crossing + [0, 0, 0.2], solid, core=0.0)
    outside = crossing + [0, 0, 0.1]
    assert passes_through(outside, crossing, solid, core=0.0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("side", SIDES)
def test_drawn_routes_are_clear_of_their_obstacle_and_carry_the_slack(kind, side):
    rng = np.random.default_rng(10 * KINDS.index(kind) + SIDES.index(side))
    for _ in range(5):
        drawn = drape_case(rng, kind=kind, side=side)
        case = parse_case(drawn["case"])  # a valid case
        cable = drawn["case"]["cables"][0]
        route = np.array(cable["route"])
        length = np.linalg.norm(np.diff(route, axis=0), axis=1).sum()
        assert cable["length"] == pytest.approx(length * (1.0 + drawn["slack"]))
        assert case.cables[0].segments == drawn["segments"]
        # the connectors sit at the route's two ends, their outlets along its first and last legs
        for held, at, leg in (
            (cable["start"], route[0], route[1] - route[0]),
            (cable["end"], route[-1], route[-1] - route[-2]),
        ):
            np.testing.assert_allclose(held["position"], at)
            np.testing.assert_allclose(held["tangent"], leg / np.linalg.norm(leg))
        obstacle = drawn["case"]["obstacles"][0]
        # within the obstacle's outline the route keeps to the side drawn (an arc round a sphere once
        # went the long way, under it, from a connector below the sphere's centre)
        if obstacle["type"] == "sphere":
            half = obstacle["radius"]
        else:
            half = np.abs(np.asarray(obstacle["vertices"], float)[:, 0]).max()
        within = route[np.abs(route[:, 0]) < 0.99 * half]
        coordinate = {"over": within[:, 2], "under": -within[:, 2], "round": within[:, 1]}[side]
        assert (coordinate > 0.0).all()
        # the route, as a still state, is not through its obstacle, and does not end inside it
        dense = np.concatenate([np.linspace(a, b, 20, endpoint=False) for a, b in zip(route[:-1], route[1:])])
        assert not passes_through(dense, dense + [0.0, 0.0, 1e-9], obstacle, core=0.0)
        if obstacle["type"] == "sphere":
            gap = np.linalg.norm(dense - obstacle["center"], axis=1).min() - obstacle["radius"]
            assert gap > 0.5 * cable["diameter"]
