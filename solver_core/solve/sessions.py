# SPDX-License-Identifier: GPL-3.0-or-later
"""What a solve changes in cables' sessions (Harness.cables), kept and put back: a trial undone."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SessionCheckpoint:
    """What solving a cable changes in its session (harness.CableSession), copied: a checkpoint is a
    copy, and restoring it copies again, so one checkpoint can be restored any number of times."""

    state: object  # rod_state.RodState
    boundary: object
    solved: bool
    last_report: object
    friction_state: np.ndarray
    last_step: object  # the secant predictor's memory
    group_contacts: list | None
    contact_stiffness: object  # stiffened by a failed trial (equilibrium.py)
    candidates: object  # the contact candidates of its last search
    solved_with: tuple  # the cables it was solved together with
    obstacles: object  # the obstacles it was solved against
    group_push: np.ndarray | None  # its contact push and energy from a joint solve
    group_energy: float
    motion: object  # velocities and accelerations (dynamics.py), None at rest
    twist: float | None  # the end twist a model followed (kirchhoff_cg)
    refines_coarse: bool  # its first solve refines a coarse start (coarse_harness.py)

    @classmethod
    def of(cls, session) -> "SessionCheckpoint":
        inter = session.interactions
        return cls(
            state=session.state.copy(),
            boundary=session.boundary,
            solved=session.solved,
            last_report=session.last_report,
            friction_state=inter.friction_state.copy(),
            last_step=session.last_step,
            group_contacts=session.group_contacts,
            contact_stiffness=inter.stiffness,
            candidates=inter.candidates,
            solved_with=session.solved_with,
            obstacles=inter.obstacles,
            group_push=session.group_push,
            group_energy=session.group_energy,
            motion=None if session.motion is None else session.motion.copy(),
            twist=session.twist,
            refines_coarse=session.refines_coarse,
        )

    def restore_into(self, session) -> None:
        inter = session.interactions
        session.state, session.boundary = self.state.copy(), self.boundary
        session.solved, session.last_report = self.solved, self.last_report
        inter.friction_state = self.friction_state.copy()
        session.last_step, session.group_contacts = self.last_step, self.group_contacts
        inter.stiffness, inter.obstacles = self.contact_stiffness, self.obstacles
        inter.keep_candidates(self.candidates)
        session.solved_with, session.group_push, session.group_energy = (
            self.solved_with,
            self.group_push,
            self.group_energy,
        )
        session.motion = None if self.motion is None else self.motion.copy()
        session.twist, session.refines_coarse = self.twist, self.refines_coarse


def snapshot_sessions(harness, ids) -> dict:
    """{cable id: SessionCheckpoint} of the cables ``ids``."""
    return {cid: SessionCheckpoint.of(harness.cables[cid]) for cid in ids}


def restore_sessions(harness, saved: dict) -> None:
    """Put the cables of ``snapshot_sessions`` back as they were."""
    for cid, kept in saved.items():
        kept.restore_into(harness.cables[cid])
