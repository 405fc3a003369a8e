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
harness. The fine solve is the answer, with all its checks; the coarse one is only its start, and
where it fails the fine solve starts from the drawn routes as before.
"""

from dataclasses import replace

from .errors import CaseError
from .junctions import JunctionSystem
from .rod_state import prolong_state

COARSE_SEGMENTS = 10  # per cable of the coarse harness
NESTED_MIN_SEGMENTS = 30  # used where some branch has at least this many segments


def applies(harness, targets: dict, moves: dict) -> bool:
    """Whether the step about to be solved is a harness's first, from its case as drawn, on branches
    fine enough for a coarse start to pay (the rod model; no junction moved, no holder changed)."""
    system = harness.junctions
    if system is None or not system.free or moves or harness.case.solver.model != "cosserat":
        return False
    branches = system.branches
    if any(harness.cables[cid].solved or targets.get(cid) is not None for cid in branches):
        return False
    return max(harness.cables[cid].model.n_segments for cid in branches) >= NESTED_MIN_SEGMENTS


def start_from_coarse(harness) -> bool:
    """Solve ``harness`` (a Harness before its first solve) on coarse cables and put its free junctions
    and its branches' starting states where that one balanced; whether it did (else nothing changes)."""
    system = harness.junctions
    try:
        coarse = coarse_copy(harness)
        reports = coarse.solve_step()
    except CaseError:
        return False
    system.coarse_report = coarse.junctions.last
    if not all(report.converged for report in reports.values()):
        return False
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
    return True


def coarse_copy(harness):
    """A new harness of ``harness``'s case with every cable on at most COARSE_SEGMENTS segments, against
    the same obstacles; CaseError where the case cannot be so divided."""
    case = harness.case
    cables = tuple(replace(c, segments=min(c.segments, COARSE_SEGMENTS)) for c in case.cables)
    coarse_case = replace(case, cables=cables)
    coarse = type(harness)(coarse_case, obstacles=harness.obstacles, junctions=JunctionSystem.from_case(coarse_case))
    for cable in cables:
        coarse.add_cable(cable)
    return coarse
