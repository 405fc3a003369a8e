# SPDX-License-Identifier: GPL-3.0-or-later
"""A harness in a session: every cable's model and state, solved step after step.

This is the object both the CLI and the Blender layer drive: build it from a case, call
``solve_step`` with changed frames (or none), read ``cable_result`` documents back.
"""

from dataclasses import dataclass, field

import numpy as np

from .case import Case, CableChange, CableSpec
from .diagnostics import bend_radii, directors, elastic_and_load_energy, reactions, twist_rates
from .equilibrium import SolveReport, centre_line_length, solve_equilibrium
from .errors import CaseError
from .rod_model import Boundary, RodModel, build_rod_model
from .rod_state import RodState, initial_state

RESULT_FORMAT = "cable-harness-result/1"


@dataclass
class CableSession:
    model: RodModel
    boundary: Boundary
    state: RodState  # last good (converged) state, or the initial guess before the first solve
    solved: bool = False
    last_report: SolveReport | None = None


@dataclass
class Harness:
    case: Case
    cables: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    @classmethod
    def from_case(cls, case: Case) -> "Harness":
        if case.obstacles:
            raise CaseError("obstacles: contact with obstacles is not supported by this solver version yet; "
                            "remove them or use a version with contact")
        harness = cls(case)
        if case.contact.get("cable_cable") and len(case.cables) > 1:
            harness.warnings.append("contact.cable_cable is not supported yet: cables are solved independently")
        for cable in case.cables:
            harness.add_cable(cable)
        return harness

    def add_cable(self, cable: CableSpec) -> None:
        for clip_index, clip in enumerate(cable.clips):
            if clip.kind == "sliding":
                raise CaseError(f"cable {cable.id!r} clips[{clip_index}].kind 'sliding' is not supported yet")
            if clip.stiffness is not None:
                raise CaseError(f"cable {cable.id!r} clips[{clip_index}].stiffness: compliant clips are not "
                                f"supported yet")
        model = build_rod_model(cable, self.case.gravity, self.case.solver.tolerance)
        boundary = Boundary.of(cable)
        self.cables[cable.id] = CableSession(model, boundary, initial_state(model, boundary))

    def changed_boundary(self, cable_id: str, change: CableChange) -> Boundary:
        b = self.cables[cable_id].boundary
        clips = list(b.clips)
        for k, frame in change.clips.items():
            clips[k] = frame
        return Boundary(change.start or b.start, change.end or b.end, tuple(clips))

    def solve_cable(self, cable_id: str, boundary: Boundary | None = None) -> SolveReport:
        session = self.cables[cable_id]
        target = session.boundary if boundary is None else boundary
        previous = session.boundary if session.solved else None
        report = solve_equilibrium(session.model, session.state, target, previous,
                                   self.case.solver.max_iterations)
        session.last_report = report
        if report.converged:
            session.state = report.state
            session.boundary = target
            session.solved = True
        return report

    def solve_step(self, changes: dict | None = None) -> dict:
        """Solve every cable (with the frames in ``changes`` moved); returns {id: SolveReport}."""
        changes = changes or {}
        reports = {}
        for cable_id in self.cables:
            change = changes.get(cable_id)
            boundary = self.changed_boundary(cable_id, change) if change is not None else None
            reports[cable_id] = self.solve_cable(cable_id, boundary)
        return reports

    def cable_result(self, cable_id: str) -> dict:
        """The result document of one cable (case format, section Result)."""
        session = self.cables[cable_id]
        model, state, report = session.model, session.state, session.last_report
        ends, clips = reactions(model, state)
        radii = bend_radii(model, state)
        twist = twist_rates(model, state)

        def fm(d):
            return {"force": d["force"].tolist(), "moment": d["moment"].tolist()}

        doc = {
            "nodes": (state.positions + model.origin).tolist(),
            "arc_lengths": model.node_s.tolist(),
            "directors": directors(state, model).tolist(),
            "length": centre_line_length(state),
            "min_bend_radius": float(radii.min()) if radii.size else float("inf"),
            "max_twist_rate": float(np.abs(twist).max()) if twist.size else 0.0,
            "end_forces": {k: fm(v) for k, v in ends.items()},
            "clip_forces": [fm(c) for c in clips],
            "contacts": [],
            "converged": bool(report.converged) if report else False,
            "iterations": report.iterations if report else 0,
            "residual": report.residual if report else float("nan"),
            "energy": elastic_and_load_energy(model, state) - float(np.sum(model.node_force * model.origin)),
            "solve_ms": report.solve_ms if report else 0.0,
            "substeps": report.substeps if report else 0,
        }
        if report is not None and not report.converged:
            doc["message"] = report.message
        return doc


def solve_case(case: Case) -> dict:
    """Solve a case (its initial frames, then each step in order) into a result document."""
    harness = Harness.from_case(case)
    steps_out = []
    for changes in (None,) + tuple(case.steps):
        harness.solve_step(changes)
        steps_out.append({"cables": {cid: harness.cable_result(cid) for cid in harness.cables}})
    doc = {"format": RESULT_FORMAT, "steps": steps_out}
    if harness.warnings:
        doc["warnings"] = list(harness.warnings)
    return doc
