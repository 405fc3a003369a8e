# SPDX-License-Identifier: GPL-3.0-or-later
"""What a solve changes in cables' sessions (Harness.cables), kept and put back: a trial undone."""


def snapshot_sessions(harness, ids) -> dict:
    """What solving the cables ``ids`` changes in their sessions: state, hold, reports, friction,
    predictor memory, group contacts, contact stiffness, contact candidates, the cables it was solved
    with, the obstacles it was solved against, its contact push and energy from a joint solve and its
    motion (dynamics.py), the twist a model followed (kirchhoff_cg) and whether its first solve
    refines a coarse start (coarse_harness.py)."""
    out = {}
    for cid in ids:
        s = harness.cables[cid]
        out[cid] = (
            s.state.copy(),
            s.boundary,
            s.solved,
            s.last_report,
            s.interactions.friction_state.copy(),
            s.last_step,
            s.group_contacts,
            s.interactions.stiffness,  # stiffened by a failed trial (equilibrium.py)
            s.interactions.candidates,
            s.solved_with,
            s.interactions.obstacles,
            s.group_push,
            s.group_energy,
            None if s.motion is None else s.motion.copy(),
            s.twist,
            s.refines_coarse,
        )
    return out


def restore_sessions(harness, saved: dict) -> None:
    """Put the cables of ``snapshot_sessions`` back as they were."""
    for cid, kept in saved.items():
        state, boundary, solved, report, friction, last_step, contacts, stiffness, pairs, joint, obstacles = kept[:11]
        s = harness.cables[cid]
        s.solved_with, s.interactions.obstacles, (s.group_push, s.group_energy) = joint, obstacles, kept[11:13]
        s.motion = None if kept[13] is None else kept[13].copy()
        s.twist, s.refines_coarse = kept[14], kept[15]
        s.state, s.boundary, s.solved, s.last_report = state.copy(), boundary, solved, report
        s.interactions.friction_state = friction.copy()
        s.last_step, s.group_contacts = last_step, contacts
        s.interactions.stiffness = stiffness
        s.interactions.keep_candidates(pairs)
