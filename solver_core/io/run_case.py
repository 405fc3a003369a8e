# SPDX-License-Identifier: GPL-3.0-or-later
"""A whole case solved step by step into result documents (solve_case, the CLI and sweeps)."""

from ..errors import CaseError
from ..session.harness import Harness
from ..session.results import RESULT_FORMAT, step_result
from ..specs.case import Case, parse_case, step_duration
from ..specs.wire_routes import wires_document


def as_case(case) -> Case:
    """A Case from a Case or a case document (a dict, as decoded from JSON)."""
    if isinstance(case, Case):
        return case
    if isinstance(case, dict):
        return parse_case(case)
    raise CaseError(f"case must be a Case or a case document (a JSON object), got {type(case).__name__}")


def iter_steps(case, harness=None, packed: bool = False):
    """Solve a case's initial frames, then each step in order, yielding each step's document as it is
    solved (``packed``: see cable_result). The harness (made from the case unless given) holds the
    warnings afterwards."""
    case = as_case(case)
    harness = Harness.from_case(case) if harness is None else harness
    moves = ({},) + tuple(case.junction_steps) + ({},) * (len(case.steps) - len(case.junction_steps))
    timed = case.solver.dynamics is not None
    durations = (None,) + tuple(step_duration(case, i) if timed else None for i in range(len(case.steps)))
    for changes, junction_moves, duration in zip((None,) + tuple(case.steps), moves, durations):
        harness.solve_step(changes, junction_moves=junction_moves, duration=duration)
        yield step_result(harness, packed)


def solve_case(case) -> dict:
    """Solve a case (a Case or a case document) into one result document."""
    case = as_case(case)
    harness = Harness.from_case(case)
    doc = {"format": RESULT_FORMAT}
    if case.wires:
        doc["wires"] = wires_document(case.wires)
    doc["steps"] = list(iter_steps(case, harness))
    if harness.warnings:
        doc["warnings"] = list(harness.warnings)
    return doc
