# SPDX-License-Identifier: GPL-3.0-or-later
"""Branches of a harness solved with the other cables that touch them (their partners), as one system.

The junctions' Newton method (junctions.py) re-solves the branches for each trial of the junctions'
frames. A cable that is not a branch but touches one, or nearly, is solved together with it
(Harness.solve_together: one banded system, their contact in its energy), so both carry their
contact and neither passes through the other; so are the other branches that cable touches, and so
on (a cable across the three legs of a Y next to its junction: one system of four). The condensed
stiffness the junctions see then includes the partners' compliance (by differences:
end_stiffness.exact_for does not hold there).

Branches are not obstacles to each other (they meet at their junctions): within a group they are
numbered apart (rod_group.RodGroup.apart), and the obstacles a group shares leave out all branches,
so a partner does not see the branches outside its group: one that may have reached such a branch
on its way (_swept_near_branch) is solved again from where it was, with that branch in its group.
"""

import numpy as np

from ..geometry.contact_geometry import nodes_within
from ..solve.sessions import restore_sessions, snapshot_sessions


def other_cables(harness, branches) -> list:
    """The cables that may become partners: with cable-cable contact, all that are not branches."""
    if not harness.contact_settings.cable_cable:
        return []
    return [cid for cid in harness.cables if cid not in branches]


def partners_of(harness, cable_id: str, others) -> list:
    """The cables among ``others`` to be solved together with branch ``cable_id``."""
    return harness.cables_near(cable_id, others) if others else []


def any_partner(harness, branches, others) -> bool:
    """Whether any of ``others`` touches a branch, or nearly: the harness is then not the branches
    alone (no exact condensation, no whole-harness prediction)."""
    return bool(others) and any(partners_of(harness, b, others) for b in branches)


def group_of(harness, cable_id: str, branches, others) -> tuple:
    """(branches, partners) to be solved together with branch ``cable_id``: its partners, the branches
    they touch, their partners in turn, and so on; ``[cable_id], []`` when nothing touches it."""
    members, partners, frontier = [cable_id], [], [cable_id]
    while frontier:
        b = frontier.pop()
        for p in partners_of(harness, b, [o for o in others if o not in partners]):
            partners.append(p)
            for other in branches:
                if other not in members and partners_of(harness, other, [p]):
                    members.append(other)
                    frontier.append(other)
    return members, partners


def solve_group(
    harness, members, partners, boundary_of, partner_targets: dict, branches, guesses=None, stable=frozenset()
) -> tuple:
    """Solve branches ``members`` (held at ``boundary_of(cable id)``) together with their ``partners``
    (held at ``partner_targets``: cable id -> Boundary, or None where held now); a branch alone sees
    every other cable as it lies, and starts from its state in ``guesses`` (cable id -> RodState) if
    there is one; ``stable``: the branches whose state is shown a strict minimum were it balanced
    (solve_equilibrium's ``stable_start``). (converged, message, refused for stretch)."""
    boundaries = {b: boundary_of(b) for b in members}
    if not partners:
        cable_id = members[0]
        if harness.contact_settings.cable_cable:  # partners of other branches may have moved since
            session = harness.cables[cable_id]
            capsules = harness.capsules_for((cable_id,))
            seen = session.interactions.obstacles
            seen = (seen.capsule_a, seen.capsule_b, seen.capsule_radius)
            if not all(np.array_equal(x, y) for x, y in zip(capsules, seen)):
                session.interactions.obstacles = harness.obstacles.with_capsules(*capsules)
        guess = (guesses or {}).get(cable_id)
        report = harness.solve_cable(cable_id, boundaries[cable_id], guess, stable_start=cable_id in stable)
        message = "" if report.converged else f"cable {cable_id!r}: {report.message}"
        return report.converged, message, bool(report.refused)
    members = list(members)
    kept = snapshot_sessions(harness, [*branches, *partners])
    before = {p: harness.world_nodes(p) for p in partners}
    while True:
        ids = [*members, *partners]
        targets = {**boundaries, **{p: partner_targets.get(p) for p in partners}}
        reports = harness.solve_together(ids, targets, strict=True)
        failed = [cid for cid in ids if not reports[cid].converged]
        if failed:
            report = reports[failed[0]]
            return False, f"cable {failed[0]!r}: {report.message}", bool(report.refused)
        outside = [b for b in branches if b not in members]
        near = [_swept_near_branch(harness, p, before[p], outside) for p in partners]
        near = [b for b in near if b is not None]
        if not near:
            return True, "", False
        # a partner may have reached a branch it did not see: solved again from the start with it
        restore_sessions(harness, kept)
        members.append(near[0])
        boundaries[near[0]] = boundary_of(near[0])


def _swept_near_branch(harness, cable_id: str, before: np.ndarray, outside) -> str | None:
    """A branch among ``outside`` that cable ``cable_id`` may have reached on its way from ``before``
    to where it lies: closer to its nodes before or after than the largest move of a node plus both
    radii and a segment of each (node-to-node distances overstate a segment's by at most half of
    each's)."""
    after = harness.world_nodes(cable_id)
    moved = float(np.sqrt(((after - before) ** 2).sum(axis=1)).max())
    radius = harness.cable_radius(cable_id)
    own_segment = float(harness.cables[cable_id].model.rest_len.max())
    for b in outside:
        reach = moved + radius + harness.cable_radius(b) + own_segment + float(harness.cables[b].model.rest_len.max())
        nodes = harness.world_nodes(b)
        if nodes_within(before, nodes, reach) or nodes_within(after, nodes, reach):
            return b
    return None
