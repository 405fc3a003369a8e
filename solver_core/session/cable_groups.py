# SPDX-License-Identifier: GPL-3.0-or-later
"""The harness's step policy for cables that touch: which are solved together, and how.

Cables that touch (or nearly) are solved as one system (rod_group.py), so that they share their
loads; a cable alone is solved against the others as capsules; a group whose joint solve keeps
failing is solved one by one for a while (block Gauss-Seidel, said as such). ``Harness`` takes these
methods from ``CableGroups``; they use its cables, obstacles and junctions.
"""

import numpy as np

from ..geometry.contact_geometry import nodes_within
from ..junctions.junction_contact import cables_touch
from ..rod.rod_state import initial_state
from ..solve.diagnostics import max_axial_strain
from ..solve.equilibrium import MAX_CONTINUATION_DEPTH, SNAP_THROUGH_ROUNDS, SolveReport, solve_equilibrium
from ..solve.rod_group import GroupBoundary, GroupInteractions, join_models
from .results import contact_documents

# Cables are solved together when they come this close (in reaches, see Interactions.reach, beyond
# their surfaces); groups are formed again after a solve, at most this often per step, when cables
# solved apart have met.
GROUP_MARGIN = 2.0
MAX_REGROUPINGS = 4
# After the n-th joint solve of a group failing in a row, its cables are solved one by one for the next
# min(2^(n-1), this) steps before they are tried together again: a failing joint solve of ten cables
# takes seconds, and Simulate asks for a step on every tick while a connector is dragged.
MAX_JOINT_RETRY_WAIT = 8


class CableGroups:
    """The grouping and joint solves of a ``Harness`` (its base class: every method works on it)."""

    def partners_of_branches(self, candidates) -> list:
        """The cables among ``candidates`` that are not branches of the harness but touch one of its
        branches, or nearly."""
        branches = self.junctions.branches
        others = [cid for cid in candidates if cid not in branches]
        out = []
        for b in branches:
            out += [cid for cid in self.cables_near(b, others) if cid not in out]
        return out

    def _branch_touching_another_cable(self) -> tuple | None:
        """(branch, cable) where a branch of the harness touches a cable that is not one of its branches
        (junction_contact.cables_touch) and their states were not solved together: each then carries
        a contact the other does not, which is no equilibrium."""
        branches = self.junctions.branches
        held = {cid: self.cables[cid].model.held_nodes() for cid in self.cables}
        for b in branches:
            for c in self.cables:
                joint = self.cables[b].solved_with
                if c in branches or c not in self.step_ids or (c in joint and self.joint(b)):
                    continue  # (a cable outside the step is met where it lies, by request)
                if cables_touch(
                    (self.world_nodes(b), self.cable_radius(b), held[b]),
                    (self.world_nodes(c), self.cable_radius(c), held[c]),
                ):
                    return b, c
        return None

    def _solve_cables(self, ids, targets) -> dict:
        if not self.contact_settings.cable_cable:
            return {cid: self.solve_cable(cid, targets[cid]) for cid in ids}
        # Cable-cable and self contact. Cables that touch (or nearly) are solved together as one system
        # (rod_group.py), so that they share their loads; a cable alone is solved against the others as
        # capsules. No cable ever moves without seeing the others: distances do not tell sides apart,
        # so cables let through each other could not be told apart again. Routes must not cross.
        reports = {}
        solved_together = []
        for _round in range(MAX_REGROUPINGS):
            pending = [
                group
                for group in self.touching_groups(ids)
                if not any(set(group) <= set(done) for done in solved_together)
            ]
            if not pending:
                break
            for group in pending:
                for cid, report in self.solve_together(group, targets).items():
                    if cid in reports:  # the whole step's effort
                        earlier = reports[cid]
                        report.iterations += earlier.iterations
                        report.substeps += earlier.substeps
                        report.solve_ms += earlier.solve_ms
                    reports[cid] = report
                solved_together.append(group)
            if len(pending) == 1 and len(pending[0]) == len(ids):
                break  # all of them in one group: none is left to meet after the solve
        else:
            if any(not any(set(g) <= set(done) for done in solved_together) for g in self.touching_groups(ids)):
                warning = (
                    f"cables kept meeting new cables after {MAX_REGROUPINGS} regroupings in one step; "
                    f"contact between the last ones met is approximate (use smaller steps)"
                )
                if warning not in self.warnings:
                    self.warnings.append(warning)
        segments = self._cable_segments()
        for cid, session in self.cables.items():  # the final states, for contact reports and the next step
            session.interactions.obstacles = self.obstacles.with_capsules(*self.capsules_for((cid,), segments))
        return reports

    def touching_groups(self, ids) -> list:
        """The cables among ``ids`` that touch, or nearly, as groups (connected components; lists
        in harness order). Near means within GROUP_MARGIN reaches beyond both surfaces at some node."""
        ids = list(ids)
        where = {cid: self._whereabouts(cid) for cid in ids}
        parent = {cid: cid for cid in ids}

        def root(c):
            while parent[c] != c:
                c = parent[c]
            return c

        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                if root(a) == root(b):
                    continue  # already in one group (ten crossed cables: 9 tests of 45)
                if _near(where[a], where[b]):
                    parent[root(a)] = root(b)
        groups = {}
        for cid in ids:
            groups.setdefault(root(cid), []).append(cid)
        return list(groups.values())

    def cables_near(self, cable_id: str, candidates) -> list:
        """The cables among ``candidates`` that touch ``cable_id`` or nearly (as in touching_groups), and
        those that touch them in turn: what must be solved together with it."""
        where = {cable_id: self._whereabouts(cable_id)}

        def at(cid):
            if cid not in where:
                where[cid] = self._whereabouts(cid)
            return where[cid]

        # grown outward from the cable (a pairwise grouping of every candidate cost 85 % of a step
        # beside 100 unrelated cables)
        rest = [cid for cid in candidates if cid != cable_id]
        out, frontier = [], [cable_id]
        while frontier and rest:
            cid = frontier.pop()
            met = [other for other in rest if _near(at(cid), at(other))]
            rest = [other for other in rest if other not in met]
            out += met
            frontier += met
        return [cid for cid in candidates if cid in out]

    def joint(self, cable_id: str) -> bool:
        """Whether the cable's state is that of a joint solve whose cables all still hold theirs from it
        (a later solve of one of them alone leaves the others' record stale)."""
        mates = self.cables[cable_id].solved_with
        return len(mates) > 1 and all(cid in self.cables and self.cables[cid].solved_with == mates for cid in mates)

    def _whereabouts(self, cable_id: str) -> tuple:
        """(world nodes, contact reach, radius, lower and upper corner of the nodes' box) of a cable."""
        session = self.cables[cable_id]
        points = session.state.positions + session.model.origin
        return points, session.interactions.reach, session.interactions.radius, points.min(axis=0), points.max(axis=0)

    def solve_together(self, ids, targets, strict: bool = False) -> dict:
        """Solve the cables ``ids`` as one system (one cable: on its own) against the others as
        capsules. A step refused for one cable (ultimate length) is refused for all of them.
        ``strict``: a joint solve that fails is a failure of every cable in it (the junctions' trials,
        which try again otherwise), not followed by the one-by-one approximation."""
        capsules = self.capsules_for(ids)
        for cid in ids:
            self.cables[cid].interactions.obstacles = self.obstacles.with_capsules(*capsules)
        if len(ids) == 1:
            return {ids[0]: self.solve_cable(ids[0], targets.get(ids[0]))}
        # Cables not solved yet first find their own equilibrium against the others (the cold
        # continuation of one cable is the robust one). One that finds none still joins the group from
        # its start: against the others frozen as capsules, a cable lying nearly parallel on another
        # can stall where the joint system settles (two cables 0.3 degrees apart: 6,657 iterations
        # alone without an equilibrium, 15 together). One refused (ultimate length) stays out.
        out, failed_alone = self._solve_fresh_alone(ids, targets)
        ids = [cid for cid in ids if cid not in out]
        sessions = [self.cables[cid] for cid in ids]
        if len(ids) < 2:
            return {**out, **{cid: self.cables[cid].last_report for cid in ids}}
        branches = self.junctions.branches if self.junctions is not None else {}
        apart = [k for k, cid in enumerate(ids) if cid in branches]  # they meet at their junctions
        group = join_models([s.model for s in sessions], [s.state for s in sessions], apart)
        obstacles = self.obstacles.with_capsules(*capsules)
        interactions = GroupInteractions(
            group, obstacles, self.contact_settings, members=tuple(s.interactions for s in sessions)
        )
        key = tuple(ids)
        self._hand_on_candidates(key, interactions, capsules)
        target = GroupBoundary(tuple(targets.get(cid) or s.boundary for cid, s in zip(ids, sessions)))
        previous = GroupBoundary(tuple(s.boundary for s in sessions))
        # A group whose joint solve failed last time (its cables were then solved one by one) is tried
        # together once, not along a path split 2^7 times: splitting helps where a step is too large,
        # and from a start that is no joint equilibrium it was not the step that failed. Nor is it
        # given the extra rounds of a slow descent: that try is a hope, and Simulate waits for it (a
        # pile of ten crossed cables descended for ten rounds, 11 s, and still failed).
        failures, wait = (0, 0) if strict else self.failed_groups.get(key, (0, 0))
        if wait > 0:
            self.failed_groups[key] = (failures, wait - 1)
            return {**out, **self._solve_one_by_one(ids, targets, failed_alone)}
        depth, rounds = (0, 0) if failures else (MAX_CONTINUATION_DEPTH, SNAP_THROUGH_ROUNDS)
        report = solve_equilibrium(
            group,
            group.join_states([s.state for s in sessions]),
            target,
            previous,
            self.case.solver.max_iterations,
            interactions,
            max_depth=depth,
            snap_through_rounds=rounds,
        )
        self._keep_candidates(key, interactions, capsules)
        if strict:
            pass
        elif report.converged:
            self.failed_groups.pop(key, None)
        else:
            self.failed_groups[key] = (failures + 1, min(2**failures, MAX_JOINT_RETRY_WAIT))
        states = group.split_state(report.state)
        refusal = self._strain_refusal(ids, sessions, states) if report.converged else None
        verdict = (report.converged and refusal is None, refusal or report.message, refusal is not None)
        if not report.converged and strict:
            message = f"cables {', '.join(map(repr, ids))} found no equilibrium together ({report.message})"
            for cid, s in zip(ids, sessions):
                s.last_report = SolveReport(
                    s.state.copy(), False, report.iterations, report.residual, report.substeps, report.solve_ms, message
                )
                out[cid] = s.last_report
            return out
        if not report.converged:
            return {**out, **self._solve_one_by_one(ids, targets, failed_alone)}
        return self._adopt_joint_solve(ids, sessions, group, interactions, report, states, target, verdict, out)

    def _solve_fresh_alone(self, ids, targets) -> tuple:
        """(refused, failed): the reports of the cables among ``ids`` not solved yet, each solved alone
        against the others first, that were refused (ultimate length) or found no equilibrium."""
        out = {}
        failed_alone = {}
        fresh = {cid for cid in ids if not self.cables[cid].solved}
        for cid in ids:
            if cid in fresh:
                self.cables[cid].interactions.obstacles = self.obstacles.with_capsules(*self.capsules_for((cid,)))
                alone = self.solve_cable(cid, targets.get(cid))
                if alone.refused:
                    out[cid] = alone
                elif not alone.converged:
                    failed_alone[cid] = alone
        return out, failed_alone

    def _strain_refusal(self, ids, sessions, states) -> str | None:
        """The message refusing a joint solve whose states stretch a cable past its ultimate strain, or
        None. Lv 2017, Sec. 2.4, for cables that share their loads: none of them moves."""
        if not self.strain_checked:
            return None
        limit = self.case.solver.ultimate_strain
        strains = [max_axial_strain(s.model, st) for s, st in zip(sessions, states)]
        over = [(cid, strain) for cid, strain in zip(ids, strains) if strain > limit]
        if not over:
            return None
        return (
            "step refused: "
            + ", ".join(f"cable {cid!r} would stretch {strain * 100:.2f} %" for cid, strain in over)
            + f" (ultimate {limit * 100:.2f} %); the last valid state is kept"
        )

    def _adopt_joint_solve(self, ids, sessions, group, interactions, report, states, target, verdict, out) -> dict:
        """Each cable's state and report from a converged joint solve; ``verdict`` (moved, message,
        refused): whether the cables take its states, or keep theirs as refused."""
        moved, message, refused = verdict
        friction = interactions.split_friction()
        joined = group.join_states([s.state if not moved else st for s, st in zip(sessions, states)])
        # the solved state itself when the cables moved (the deepest-penetration check has just
        # evaluated its pairs; joining the split states again may differ in the last bits)
        contacts = contact_documents(interactions.contacts(report.state if moved else joined), group, ids)
        for cid, s in zip(ids, sessions):
            s.group_contacts = contacts[cid]
        push = interactions.contact_gradient_at(report.state) if moved else None
        for k, (cid, s) in enumerate(zip(ids, sessions)):
            if moved:
                s.state, s.boundary, s.solved = states[k], target.parts[k], True
                s.solved_with = tuple(ids)
                start = group.node_start[k]
                s.group_push = push[start : start + s.model.n_nodes].copy()
                s.group_energy = interactions.contact_energy_at(report.state) if k == 0 else 0.0
                s.interactions.friction_state = friction[k]
            own = SolveReport(
                s.state.copy(),
                moved,
                report.iterations,
                report.residual,
                report.substeps,
                report.solve_ms,
                "converged" if moved else message,
            )
            own.refused = refused
            own.stable = report.stable  # the joint system's verified minimum is each cable's
            s.last_report = own
            out[cid] = own
        return out

    def _candidate_context(self, interactions, capsules) -> tuple:
        """What a group's candidate contact pairs depend on besides positions: the static obstacles (the
        object), the arrays of the other cables' capsules, the group's origin and cable radii, and the
        self-contact gap."""
        arrays = tuple(capsules) + (interactions.model.origin.copy(), interactions.node_radius.copy())
        return self.obstacles, interactions.self_gap, arrays

    def _keep_candidates(self, key, interactions, capsules) -> None:
        if interactions.candidates is not None:
            self.group_candidates[key] = (self._candidate_context(interactions, capsules), interactions.candidates)

    def _hand_on_candidates(self, key, interactions, capsules) -> None:
        """A group's interactions are built afresh for every step, but the candidate contact pairs of its
        last joint solve hold for the next one as a single cable's do from call to call (searched within
        twice the reach, with lower bounds of their gaps carried from where they were evaluated;
        equilibrium._minimise): handed on while the group meets the same obstacles and capsules of the
        other cables and keeps its numbering: a fresh search of a pile's pairs costs a tenth of its step."""
        kept = self.group_candidates.get(key)
        if kept is None:
            return
        (obstacles, self_gap, arrays), now = kept[0], self._candidate_context(interactions, capsules)
        if (
            obstacles is now[0]
            and self_gap == now[1]
            and len(arrays) == len(now[2])
            and all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(arrays, now[2]))
        ):
            interactions.adopt_candidates(kept[1])

    def _solve_one_by_one(self, ids, targets, failed_alone=None) -> dict:
        """The fallback where cables could not be solved together: each against the others where they
        are (block Gauss-Seidel, one sweep), said as such: where one presses another that has to give
        way, the shared loads are then approximate. ``failed_alone``: reports of cables that this step
        already failed to solve so, not tried again."""
        out = dict(failed_alone or {})
        for cid in ids:
            if cid in out:
                continue
            self.cables[cid].interactions.obstacles = self.obstacles.with_capsules(*self.capsules_for((cid,)))
            out[cid] = self.solve_cable(cid, targets.get(cid))
        warning = (
            f"cables {', '.join(ids)} could not be solved together; each was solved against the "
            f"others as they lay, so the loads they share are approximate (they are tried together "
            f"again after 1, 2, 4 ... {MAX_JOINT_RETRY_WAIT} steps)"
        )
        if warning not in self.warnings:
            self.warnings.append(warning)
        return out

    def _cable_segments(self) -> dict:
        """Every cable's segments as capsules, world frame: {id: (starts, ends, radii)}."""
        out = {}
        for cid, session in self.cables.items():
            x = session.state.positions + session.model.origin
            out[cid] = (x[:-1], x[1:], np.full(len(x) - 1, 0.5 * session.model.cable.diameter))
        return out

    def _drawn_routes_except(self, cable_id: str):
        """The drawn routes (initial guesses without sag) of the other cables, as capsules."""
        segments = {}
        for cid, session in self.cables.items():
            if cid != cable_id:
                x = initial_state(session.model, session.boundary, sag=0.0).positions + session.model.origin
                segments[cid] = (x[:-1], x[1:], np.full(len(x) - 1, 0.5 * session.model.cable.diameter))
        return self.capsules_for((cable_id,), segments)

    def capsules_for(self, cable_ids, segments: dict | None = None):
        """Segments of the cables not in ``cable_ids`` as capsules, world frame (from ``segments`` of
        _cable_segments when given: the same states' for every cable after a step)."""
        segments = self._cable_segments() if segments is None else segments
        if self.junctions is not None and any(cid in self.junctions.branches for cid in cable_ids):
            # the branches of a harness meet at its junctions: they are not obstacles to each other
            cable_ids = set(cable_ids) | set(self.junctions.branches)
        a, b, radius = [np.zeros((0, 3))], [np.zeros((0, 3))], [np.zeros(0)]
        for cid, (starts, ends, radii) in segments.items():
            if cid not in cable_ids:
                a.append(starts)
                b.append(ends)
                radius.append(radii)
        return np.concatenate(a), np.concatenate(b), np.concatenate(radius)


def _near(a: tuple, b: tuple) -> bool:
    """Whether two cables (Harness._whereabouts) come within GROUP_MARGIN reaches beyond both surfaces."""
    points_a, reach_a, radius_a, low_a, high_a = a
    points_b, reach_b, radius_b, low_b, high_b = b
    near = radius_a + radius_b + GROUP_MARGIN * max(reach_a, reach_b)
    if (low_a > high_b + near).any() or (low_b > high_a + near).any():
        return False
    return bool(nodes_within(points_a, points_b, near))
