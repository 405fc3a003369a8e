# SPDX-License-Identifier: GPL-3.0-or-later
"""Nested iteration for a branched harness's first solve: the junctions and branches found on coarse
branches first.

From the drawn routes the junctions' Newton method (junctions.py) walks a long way: some 40
iterations, each re-solving every branch, most of them spent while slack branches snap through and
the junctions sink along a curved valley. Those iterations cost the same per branch solve whatever
the resolution. So the same harness with every cable on COARSE_SEGMENTS segments is solved first;
its junction frames, and its branches' shapes carried onto the fine segments (rod_state.prolong_state,
whose nodes lie on the coarse centre lines and so keep their clearances), start the fine solve, which
then only refines them (a few junction iterations). This is Harness._solve_from_coarse for a whole
harness. The fine solve is the answer, with all its checks; the coarse one is only its start. Where
the coarse harness does not balance the fine one starts from the drawn routes as before, and where
the fine solve fails from the coarse start the harness goes back to its drawn routes and solves from
there (Harness.solve_boundaries), so that a failure keeps the case's state.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from ..errors import CaseError
from ..rod.rod_state import prolong_state
from ..solve.equilibrium import same_hold
from ..specs.rest_shape import MAX_REST_TURN
from .junctions import JunctionReport, JunctionSystem

COARSE_SEGMENTS = 10  # per cable of the coarse harness (more where a rest shape needs them)
NESTED_MIN_SEGMENTS = 30  # used where some branch has at least this many segments
# holders and fixed junctions handed over within this (m, or unit vectors and rotation matrices) of
# where the case has them count as where it has them
AS_DRAWN = 1e-9


@dataclass
class CoarseStart:
    """What a coarse start did: the coarse harness's junction report, and (where it balanced and the
    fine harness was put where it did) the harness's checkpoint from before, to go back to the drawn
    routes should the fine solve fail from there."""

    report: JunctionReport | None
    kept: object = None  # harness.HarnessCheckpoint


def applies(harness, targets: dict, moves: dict) -> bool:
    """Whether the step about to be solved is the harness's first, from its case as drawn (nothing
    solved yet; every holder and fixed junction where the case has it: the Blender layer hands every
    one over on every tick), on branches fine enough for a coarse start to pay: the rod model, no
    friction (its equilibrium depends on the way there)."""
    system = harness.junctions
    if system is None or not system.free or harness.case.solver.model != "cosserat":
        return False
    if harness.contact_settings.friction or any(session.solved for session in harness.cables.values()):
        return False
    for cid, target in targets.items():
        if target is not None and not same_hold(target, harness.cables[cid].boundary, AS_DRAWN):
            return False
    for jid, move in moves.items():
        k = system.index(jid)
        if (move.position is not None and not _near(move.position, system.frames.position[k])) or (
            move.rotation is not None and not _near(move.rotation, system.frames.rotation[k])
        ):
            return False
    return max(harness.cables[cid].model.n_segments for cid in system.branches) >= NESTED_MIN_SEGMENTS


def _near(a, b) -> bool:
    """Equal but for round-off (a scene's frame read back: R R^T is the identity to 1e-16)."""
    return bool(np.allclose(a, b, rtol=0.0, atol=AS_DRAWN))


def start_from_coarse(harness) -> CoarseStart:
    """Solve ``harness`` (before its first solve) on coarse cables and put its free junctions and its
    branches' starting states where that one balanced; nothing changes where it did not (or where
    the case cannot be so divided: no report then)."""
    system = harness.junctions
    try:
        coarse = coarse_copy(harness)
    except CaseError:
        return CoarseStart(None)
    reports = coarse.solve_step()
    if not all(reports[cid].converged for cid in system.branches):
        return CoarseStart(coarse.junctions.last)
    kept = harness.checkpoint(system.branches)
    frames = system.frames.copy()
    for k in system.free:
        frames.position[k] = coarse.junctions.frames.position[k]
        frames.rotation[k] = coarse.junctions.frames.rotation[k]
    system.frames = frames
    for cid in system.branches:
        session, rough = harness.cables[cid], coarse.cables[cid]
        boundary = system.branch_boundary(cid, session.boundary, frames)
        session.state = prolong_state(rough.model, rough.state, session.model, boundary)
        session.refines_coarse = True
    return CoarseStart(coarse.junctions.last, kept)


def coarse_segments(cable) -> int:
    """COARSE_SEGMENTS, or as many as the cable's constant rest curvature needs (MAX_REST_TURN a
    segment), at most its own."""
    needed = COARSE_SEGMENTS
    rest = cable.rest
    if rest is not None and rest.route is None:
        rate = math.hypot(rest.curvature[0], rest.curvature[1], rest.twist)
        needed = max(needed, math.ceil(rate * cable.length / MAX_REST_TURN))
    return min(cable.segments, needed)


def coarse_copy(harness):
    """A new harness of ``harness``'s case with its cables on coarse_segments, against the same
    obstacles; CaseError where the case cannot be so divided (clips too close for so few segments)."""
    case = harness.case
    cables = tuple(replace(c, segments=coarse_segments(c)) for c in case.cables)
    coarse_case = replace(case, cables=cables)
    coarse = type(harness)(coarse_case, obstacles=harness.obstacles, junctions=JunctionSystem.from_case(coarse_case))
    for cable in cables:
        coarse.add_cable(cable)
    return coarse
