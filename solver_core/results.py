# SPDX-License-Identifier: GPL-3.0-or-later
"""Result documents (case format, section Result) built from a harness's arrays, step by step.

A step's document is built with numpy operations over whole cables (no Python work per node), and
``iter_steps`` yields one step at a time, so a long path is written as it is solved (``cli.py`` streams
it as JSON Lines or as one JSON document) instead of being held whole.

No NaN or infinity leaves here: a cable whose state, residual or derived quantities are not finite is
reported as not converged, with a message, and shown on its route (the straight initial guess between
its held frames); the only unbounded values, the bend radii of straight joints, are written as null.
"""

import json
import math

import numpy as np

from .case import Case, parse_case
from .diagnostics import bend_radii, directors, elastic_and_load_energy, joint_arc_lengths, reactions, twist_rates
from .equilibrium import centre_line_length
from .errors import CaseError
from .harness import RESULT_FORMAT, Harness, _contact_documents, max_axial_strain
from .rod_state import initial_state

STREAM_FORMAT = "cable-harness-result-stream/1"


def _force_moment(d) -> dict:
    out = {"force": np.asarray(d["force"], dtype=np.float64).tolist(),
           "moment": np.asarray(d["moment"], dtype=np.float64).tolist()}
    if "deflection" in d:
        out["deflection"] = d["deflection"]
    return out


def _nullable(values: np.ndarray) -> list:
    """A float array as a list with null where it is not finite (C loops only)."""
    finite = np.isfinite(values)
    if finite.all():
        return values.tolist()
    out = values.astype(object)
    out[~finite] = None
    return out.tolist()


def _contact_numbers(contacts) -> np.ndarray:
    numbers = []
    for c in contacts:
        numbers.extend(c["point"])
        numbers.extend(c["normal"])
        numbers.extend(c["force"])
        numbers.append(c["gap"])
    return np.asarray(numbers, dtype=np.float64)


def _quantities(harness, cable_id, session, state) -> dict:
    """Every number of a cable's result, as arrays and floats, from one state."""
    model = session.model
    ends, clips = reactions(model, state)
    for index, mount in session.interactions.mount_reactions(state, session.boundary).items():
        clips[index] = mount
    contacts = session.group_contacts if state is session.state else None
    if contacts is None:
        contacts = _contact_documents(session.interactions.contacts(state), model, [cable_id])[cable_id]
    radii = bend_radii(model, state)
    twist = twist_rates(model, state)
    return {
        "nodes": state.positions + model.origin,
        "directors": directors(state, model),
        "length": centre_line_length(state),
        "radii": radii,
        "max_twist_rate": float(np.abs(twist).max()) if twist.size else 0.0,
        "max_strain": max_axial_strain(model, state),
        "ends": ends,
        "clips": clips,
        "contacts": contacts,
        "energy": elastic_and_load_energy(model, state) - float(np.sum(model.node_force * model.origin)),
    }


def _not_finite(q: dict) -> str | None:
    """The first quantity of ``_quantities`` that holds NaN or infinity (bend radii may be infinite)."""
    for key in ("nodes", "directors"):
        if not np.isfinite(q[key]).all():
            return key
    for key in ("length", "max_twist_rate", "max_strain", "energy"):
        if not math.isfinite(q[key]):
            return key
    if not q["length"] > 0.0:
        return "length"
    if np.isnan(q["radii"]).any():
        return "bend_radii"
    for label, group in (("end_forces", list(q["ends"].values())), ("clip_forces", q["clips"])):
        for d in group:
            if not (np.isfinite(d["force"]).all() and np.isfinite(d["moment"]).all()):
                return label
    if q["contacts"] and not np.isfinite(_contact_numbers(q["contacts"])).all():
        return "contacts"
    return None


def cable_result(harness, cable_id: str) -> dict:
    """The result document of one cable of a harness, from its last good state."""
    session = harness.cables[cable_id]
    model, state, report = session.model, session.state, session.last_report
    converged = bool(report.converged) if report is not None else False
    residual = float(report.residual) if report is not None else None
    message = report.message if report is not None and not report.converged else None
    problem = None
    if not (np.isfinite(state.positions).all() and np.isfinite(state.quats).all()):
        problem = "state"
    q = None if problem else _quantities(harness, cable_id, session, state)
    if q is not None:
        problem = _not_finite(q)
    if residual is not None and not math.isfinite(residual):
        problem = problem or "residual"
        residual = None
    if problem is not None:
        # The solver left no finite state to report: the cable is shown on its route between its frames.
        converged = False
        message = (f"the solver produced non-finite values ({problem}); no equilibrium was found, the cable "
                   f"is shown on its route between its held frames")
        q = _quantities(harness, cable_id, session, initial_state(model, session.boundary, sag=0.0))
        if _not_finite(q) is not None:
            raise CaseError(f"cable {cable_id!r}: its frames give no finite route (check the case's ranges)")
    radii = q["radii"]
    doc = {
        "nodes": q["nodes"].tolist(),
        "arc_lengths": model.node_s.tolist(),
        "directors": q["directors"].tolist(),
        "length": q["length"],
        "min_bend_radius": float(radii.min()) if radii.size and np.isfinite(radii).any() else None,
        # extension of the format: the radius at every joint (null where straight) and its arc length
        "bend_radii": _nullable(radii),
        "bend_radius_s": joint_arc_lengths(model).tolist(),
        "max_twist_rate": q["max_twist_rate"],
        "max_strain": q["max_strain"],
        "end_forces": {k: _force_moment(v) for k, v in q["ends"].items()},
        "clip_forces": [_force_moment(c) for c in q["clips"]],
        "contacts": q["contacts"],
        "converged": converged,
        "iterations": report.iterations if report else 0,
        "residual": residual,
        "energy": q["energy"],
        "solve_ms": report.solve_ms if report else 0.0,
        "substeps": report.substeps if report else 0,
    }
    if message is not None:
        doc["message"] = message
    return doc


def step_result(harness) -> dict:
    """One entry of a result's ``steps``: every cable's document after the harness's last step."""
    return {"cables": {cid: cable_result(harness, cid) for cid in harness.cables}}


def as_case(case) -> Case:
    """A Case from a Case or a case document (a dict, as decoded from JSON)."""
    if isinstance(case, Case):
        return case
    if isinstance(case, dict):
        return parse_case(case)
    raise CaseError(f"case must be a Case or a case document (a JSON object), got {type(case).__name__}")


def iter_steps(case, harness=None):
    """Solve a case's initial frames, then each step in order, yielding each step's document as it is
    solved. The harness (made from the case unless given) holds the warnings afterwards."""
    case = as_case(case)
    harness = Harness.from_case(case) if harness is None else harness
    for changes in (None,) + tuple(case.steps):
        harness.solve_step(changes)
        yield step_result(harness)


def solve_case(case) -> dict:
    """Solve a case (a Case or a case document) into one result document."""
    case = as_case(case)
    harness = Harness.from_case(case)
    doc = {"format": RESULT_FORMAT, "steps": list(iter_steps(case, harness))}
    if harness.warnings:
        doc["warnings"] = list(harness.warnings)
    return doc


def dumps(doc) -> str:
    """Compact JSON text; raises ValueError rather than write NaN or Infinity."""
    return json.dumps(doc, separators=(",", ":"), allow_nan=False)
