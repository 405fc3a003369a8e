# SPDX-License-Identifier: GPL-3.0-or-later
"""Result documents (case format, section Result) built from a harness's arrays, step by step.

A step's document is built with numpy operations over whole cables (no Python work per node), and
``run_case.iter_steps`` yields one step at a time, so a long path is written as it is solved (``cli.py``
streams it as JSON Lines or as one JSON document) instead of being held whole.

No NaN or infinity leaves here: a cable whose state, residual or derived quantities are not finite is
reported as not converged, with a message, and shown on its route (the straight initial guess between
its held frames); the only unbounded values, the bend radii of straight joints, are written as null.
"""

import base64
import json
import math

import numpy as np

from .._jit import njit
from ..contact.contact import NODE_KINDS, SELF_KINDS
from ..errors import CaseError
from ..rod.rod_state import initial_state
from ..solve.diagnostics import elastic_and_load_energy, joint_arc_lengths, reactions
from ..solve.dynamics import kinetic_energy
from ..solve.rod_group import RodGroup
from ..specs.bundle import bundle_report

RESULT_FORMAT = "cable-harness-result/1"
STREAM_FORMAT = "cable-harness-result-stream/1"


def _force_moment(d) -> dict:
    out = {
        "force": np.asarray(d["force"], dtype=np.float64).tolist(),
        "moment": np.asarray(d["moment"], dtype=np.float64).tolist(),
    }
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


@njit
def _shape_kernel(
    positions,
    quats,
    rest_len,
    axial_stiffness,
    joint_a,
    joint_b,
    joint_len,
    directors,
    radii,
    curvatures,
    twist_rates,
    tensions,
):
    """One pass over a cable's state for what its result reports (diagnostics.py computes the same with
    numpy, a dozen calls of fixed cost each): the directors (rows d1, d2, d3 of each segment's rotation,
    rotations.quat_to_matrix), at each joint the bend radius, Voronoi length over the angle between
    the d3 directors (inf where straight), its inverse (0 there) and the twist rate 2 atan2(v_3, w) / l
    of the relative rotation conj(q_a) q_b = (w, v) (Chen 2023, Eq. 9), per segment the axial force
    EA (d3 . e / l0 - 1), the axial part of the stretch-shear strain (PyElastica's sigma_3); returns
    (centre-line length, largest axial strain, largest |twist rate|, the first array of positions,
    directors, tensions, twist rates that holds NaN or infinity: 1-4, or 0 where none does)."""
    n_rot = quats.shape[0]
    d3 = np.empty((n_rot, 3))
    for i in range(n_rot):
        w, x, y, z = quats[i, 0], quats[i, 1], quats[i, 2], quats[i, 3]
        d3[i, 0] = 2.0 * (x * z + w * y)
        d3[i, 1] = 2.0 * (y * z - w * x)
        d3[i, 2] = 1.0 - 2.0 * (x * x + y * y)
        if i < directors.shape[0]:
            directors[i, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
            directors[i, 0, 1] = 2.0 * (x * y + w * z)
            directors[i, 0, 2] = 2.0 * (x * z - w * y)
            directors[i, 1, 0] = 2.0 * (x * y - w * z)
            directors[i, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
            directors[i, 1, 2] = 2.0 * (y * z + w * x)
            directors[i, 2, 0] = d3[i, 0]
            directors[i, 2, 1] = d3[i, 1]
            directors[i, 2, 2] = d3[i, 2]
    max_twist = 0.0
    for j in range(joint_a.shape[0]):
        a, b = joint_a[j], joint_b[j]
        c = d3[a, 0] * d3[b, 0] + d3[a, 1] * d3[b, 1] + d3[a, 2] * d3[b, 2]
        angle = math.acos(min(1.0, max(-1.0, c)))
        if angle > 1e-12:
            radii[j] = joint_len[j] / angle
            curvatures[j] = angle / joint_len[j]
        else:
            radii[j] = np.inf
            curvatures[j] = 0.0
        qa, qb = quats[a], quats[b]
        w = qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2] + qa[3] * qb[3]
        vz = qa[0] * qb[3] - qb[0] * qa[3] - (qa[1] * qb[2] - qa[2] * qb[1])
        if w < 0.0:
            w, vz = -w, -vz
        twist_rates[j] = 2.0 * math.atan2(vz, w) / joint_len[j]
        twist = abs(twist_rates[j])
        if not twist <= max_twist:  # NaN propagates
            max_twist = twist
    length = 0.0
    max_strain = -np.inf
    for i in range(positions.shape[0] - 1):
        dx = positions[i + 1, 0] - positions[i, 0]
        dy = positions[i + 1, 1] - positions[i, 1]
        dz = positions[i + 1, 2] - positions[i, 2]
        seg = math.sqrt(dx * dx + dy * dy + dz * dz)
        length += seg
        strain = seg / rest_len[i] - 1.0
        if not strain <= max_strain:
            max_strain = strain
        axial = (d3[i, 0] * dx + d3[i, 1] * dy + d3[i, 2] * dz) / rest_len[i] - 1.0
        tensions[i] = axial_stiffness[i] * axial
    not_finite = 0
    if not np.isfinite(positions).all():
        not_finite = 1
    elif not np.isfinite(directors).all():
        not_finite = 2
    elif not np.isfinite(tensions).all():
        not_finite = 3
    elif not np.isfinite(twist_rates).all():
        not_finite = 4
    return length, max_strain, max_twist, not_finite


def _quantities(harness, cable_id, session, state) -> dict:
    """Every number of a cable's result, as arrays and floats, from one state."""
    model = session.model
    ends, clips = reactions(model, state)
    push = session.contact_push(state)  # a contact on an end segment pushes its holder too
    for side, node in (("start", 0), ("end", model.n_nodes - 1)):
        if side in ends:
            ends[side]["force"] = ends[side]["force"] + push[node]
    for index, mount in session.interactions.mount_reactions(state, session.boundary).items():
        clips[index] = mount
    contacts = session.group_contacts if state is session.state else None
    if contacts is None:
        friction = session.interactions.friction_forces(state)
        contacts = contact_documents(session.interactions.contacts(state), model, [cable_id], friction)[cable_id]
    n_joints = len(model.joint_a)
    directors = np.empty((model.n_segments, 3, 3))
    radii, curvatures, twist_rates = np.empty(n_joints), np.empty(n_joints), np.empty(n_joints)
    tensions = np.empty(model.n_segments)
    length, max_strain, max_twist, not_finite = _shape_kernel(
        state.positions,
        state.quats,
        model.rest_len,
        np.ascontiguousarray(model.stretch_stiff[:, 2]),
        model.joint_a,
        model.joint_b,
        model.joint_len,
        directors,
        radii,
        curvatures,
        twist_rates,
        tensions,
    )
    return {
        "nodes": state.positions + model.origin,
        "directors": directors,
        "length": length,
        "radii": radii,
        "curvatures": curvatures,
        "twist_rates": twist_rates,
        "tensions": tensions,
        "max_twist_rate": max_twist,
        "max_strain": max_strain,
        "not_finite": _SHAPE_ARRAYS[not_finite],
        "ends": ends,
        "clips": clips,
        "contacts": contacts,
        "energy": elastic_and_load_energy(model, state) - float(np.sum(model.node_force * model.origin)),
    } | _own_readings(session, state)


def _own_readings(session, state) -> dict:
    """What a cable solved by another model than the rod (mass_spring) reports of its springs: its
    holders' forces, tensions and energy, where ``state`` is the one it solved."""
    own = next((r for kept, r in getattr(session, "readings", ()) if kept is state), None)
    if own is None:
        return {}
    ends = {side: own["ends"][side] for side in own["ends"]}
    energy = own["energy"] - float(np.sum(session.model.node_force * session.model.origin))
    out = {"ends": ends, "clips": own["clips"], "tensions": own["tensions"], "energy": energy}
    if "contacts" in own:
        out["contacts"] = own["contacts"]
    return out


_SHAPE_ARRAYS = (None, "nodes", "directors", "tensions", "twist_rates")  # _shape_kernel's codes


def _not_finite(q: dict) -> str | None:
    """The first quantity of ``_quantities`` that holds NaN or infinity (bend radii may be infinite)."""
    if q["not_finite"] is not None:
        return q["not_finite"]
    for key in ("length", "max_twist_rate", "max_strain", "energy"):
        if not math.isfinite(q[key]):
            return key
    if not q["length"] > 0.0:
        return "length"
    if np.isnan(q["radii"]).any():
        return "bend_radii"
    for label, group in (("end_forces", list(q["ends"].values())), ("clip_forces", q["clips"])):
        if group and not np.isfinite([(d["force"], d["moment"]) for d in group]).all():
            return label
    if q["contacts"] and not np.isfinite(_contact_numbers(q["contacts"])).all():
        return "contacts"
    return None


def pack(array: np.ndarray) -> dict:
    """A float array as JSON without a number per element: little-endian float64 bytes in base64
    (read back with ``unpack``); bit-exact, and some 20 times cheaper to write than its numbers."""
    array = np.ascontiguousarray(array, dtype="<f8")
    return {"dtype": "<f8", "shape": list(array.shape), "base64": base64.b64encode(array.data).decode("ascii")}


def unpack(packed: dict) -> np.ndarray:
    """The array of a ``pack`` document."""
    return np.frombuffer(base64.b64decode(packed["base64"]), dtype=packed["dtype"]).reshape(packed["shape"])


def _residual_floor(model) -> float | None:
    """The residual, relative to the force scale, below which round-off in the cable's stiff stretch
    and shear hides the balance, where that is above the tolerance asked for; None where it is not."""
    if getattr(model, "strict_tol", None) is None:
        return None
    return float(model.dof_tol.min() / model.force_scale)


def cable_result(harness, cable_id: str, packed: bool = False, arrays: bool = False) -> dict:
    """The result document of one cable of a harness, from its last good state. ``packed``: the per-node
    arrays as ``pack`` documents, and the bend radii as ``curvatures`` (1/radius, 0 where straight);
    ``arrays``: as float arrays of their own (not for JSON; the bend radii stay a list with nulls)."""
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
        # a failed step that was undone knows no residual (null); a converged one must
        if converged:
            problem = problem or "residual"
        residual = None
    if problem is not None:
        # The solver left no finite state to report: the cable is shown on its route between its frames.
        converged = False
        message = (
            f"the solver produced non-finite values ({problem}); no equilibrium was found, the cable "
            f"is shown on its route between its held frames"
        )
        q = _quantities(harness, cable_id, session, initial_state(model, session.boundary, sag=0.0))
        if _not_finite(q) is not None:
            raise CaseError(f"cable {cable_id!r}: its frames give no finite route (check the case's ranges)")
    radii = q["radii"]
    if packed:
        static = model.derived.get("packed")
        if static is None:  # what depends on the model alone is packed once
            static = model.derived["packed"] = (pack(model.node_s), pack(joint_arc_lengths(model)))
        arrays = {
            "nodes": pack(q["nodes"]),
            "arc_lengths": dict(static[0]),
            "directors": pack(q["directors"]),
            "curvatures": pack(q["curvatures"]),
            "bend_radius_s": dict(static[1]),
            "twist_rates": pack(q["twist_rates"]),
            "tensions": pack(q["tensions"]),
        }
    elif arrays:
        arrays = {
            "nodes": np.array(q["nodes"]),
            "arc_lengths": model.node_s.copy(),
            "directors": np.array(q["directors"]),
            "bend_radii": _nullable(radii),
            "bend_radius_s": joint_arc_lengths(model),
            "twist_rates": np.array(q["twist_rates"]),
            "tensions": np.array(q["tensions"]),
        }
    else:
        # extension of the format: the radius at every joint (null where straight) and its arc length
        arrays = {
            "nodes": q["nodes"].tolist(),
            "arc_lengths": model.node_s.tolist(),
            "directors": q["directors"].tolist(),
            "bend_radii": _nullable(radii),
            "bend_radius_s": joint_arc_lengths(model).tolist(),
            "twist_rates": q["twist_rates"].tolist(),
            "tensions": q["tensions"].tolist(),
        }
    doc = {
        "nodes": arrays.pop("nodes"),
        "arc_lengths": arrays.pop("arc_lengths"),
        "directors": arrays.pop("directors"),
        "length": q["length"],
        "min_bend_radius": float(radii.min()) if radii.size and np.isfinite(radii).any() else None,
        **arrays,
        "max_twist_rate": q["max_twist_rate"],
        "max_strain": q["max_strain"],
        "end_forces": {k: _force_moment(v) for k, v in q["ends"].items()},
        "clip_forces": [_force_moment(c) for c in q["clips"]],
        "contacts": q["contacts"],
        "converged": converged,
        # a verified minimum; None where not assessed (a dead couple is not conservative)
        "stable": (None if report.stable is None else bool(report.stable) and converged) if report else False,
        "iterations": report.iterations if report else 0,
        "residual": residual,
        # where a stiff cable's round-off floor lies above the tolerance (equilibrium._refine_below_floor)
        "residual_floor": _residual_floor(model),
        "energy": q["energy"],
        "solve_ms": report.solve_ms if report else 0.0,
        "substeps": report.substeps if report else 0,
    }
    if harness.case.solver.dynamics is not None:
        # a dynamic case: the state is that at the step's end time, moving (dynamics.py)
        velocities = session.motion.velocity if session.motion is not None else np.zeros_like(state.positions)
        doc["time"] = harness.time
        doc["velocities"] = pack(velocities) if packed else np.array(velocities) if arrays else velocities.tolist()
        doc["kinetic_energy"] = kinetic_energy(session)
    if model.cable.bundle is not None:
        doc["bundle"] = bundle_report(model.cable.bundle, model.cable.diameter, model.cable.section)
    if message is not None:
        doc["message"] = message
    return doc


def step_result(harness, packed: bool = False) -> dict:
    """One entry of a result's ``steps``: every cable's document after the harness's last step."""
    doc = {"cables": {cid: cable_result(harness, cid, packed) for cid in harness.cables}}
    if harness.case.solver.dynamics is not None:
        doc["time"] = harness.time
    if harness.junctions is not None:
        doc["junctions"] = harness.junctions.junction_documents()
    return doc


def dumps(doc) -> str:
    """Compact JSON text; raises ValueError rather than write NaN or Infinity."""
    return json.dumps(doc, separators=(",", ":"), allow_nan=False)


_PACKED_KEYS = {"dtype", "shape", "base64"}


def dumps_stream_step(index: int, step: dict) -> str:
    """A step of a result stream (``{"step": index, **step}``, one line of JSON Lines) as ``dumps``
    writes it, with the base64 text of its packed arrays put in as it is: base64 holds no character
    JSON escapes, and json's scan of every character was a third of the cost of a 100-segment step's
    line (benchmarks/bench_path.py)."""
    if set(step) != {"cables"}:
        return dumps({"step": index, **step})
    cables = []
    for cid, doc in step["cables"].items():
        arrays, rest = [], {}
        for key, value in doc.items():
            if type(value) is dict and value.keys() == _PACKED_KEYS and value["dtype"] == "<f8" and key.isidentifier():
                shape = ",".join(str(int(n)) for n in value["shape"])
                arrays.append(f'"{key}":{{"dtype":"<f8","shape":[{shape}],"base64":"{value["base64"]}"}}')
            else:
                rest[key] = value
        text = dumps(rest)
        cables.append(f"{dumps(cid)}:{{{','.join(arrays)}{',' if arrays and rest else ''}{text[1:]}")
    return f'{{"step":{int(index)},"cables":{{{",".join(cables)}}}}}'


def _friction_shares(contacts, friction):
    """Each contact's share of the friction force of its node(s) (``friction``: per node, (n, 3)): a
    node's friction split between its contacts as its normal force is (Interactions._normal_forces:
    segment contacts by their parameter, contacts of a cable with itself carry none)."""
    normal_sum = np.zeros(friction.shape[0])
    shares = []
    for kind, elem, t, _point, _normal, force, _gap, _prim, _u in contacts:
        mag = float(np.linalg.norm(force))
        own = () if kind in SELF_KINDS else ((elem, 1.0),) if kind in NODE_KINDS else ((elem, 1.0 - t), (elem + 1, t))
        shares.append([(node, w * mag) for node, w in own])
        for node, w in shares[-1]:
            normal_sum[node] += w
    out = []
    for own in shares:
        f = np.zeros(3)
        for node, w in own:
            if normal_sum[node] > 0.0:
                f += (w / normal_sum[node]) * friction[node]
        out.append(f)
    return out


def contact_documents(contacts, model, ids, friction=None) -> dict:
    """Contact documents (case format, section Result) per cable from the interactions' contacts of a
    cable (``model`` a RodModel) or of a group (a RodGroup of the cables ``ids``). A contact between
    two cables of a group, or between two legs of one cable, is listed for both with opposite forces
    and the other's arc length (and cable), so each cable's contact forces sum to what it carries.
    ``friction``: the friction force per node (Interactions.friction_forces), given to the contacts
    at the node as "friction" (a tangential force beside the normal "force")."""
    parts = model.parts if isinstance(model, RodGroup) else (model,)
    starts = model.node_start if isinstance(model, RodGroup) else (0,)
    out = {cid: [] for cid in ids}
    contacts = list(contacts)
    tangential = _friction_shares(contacts, friction) if friction is not None and friction.any() else None

    def locate(node):
        k = int(np.searchsorted(starts, node, side="right")) - 1
        return k, node - starts[k]

    for index, (kind, elem, t, point, normal, force, gap, prim, u) in enumerate(contacts):
        k, e = locate(elem)
        part = parts[k]
        if kind in NODE_KINDS and kind not in SELF_KINDS and part.fixed[part.node_dof[e] : part.node_dof[e] + 3].all():
            # a node a connector or junction holds: its holder takes the push (the holder's reaction
            # is the rod's own, diagnostics.reactions), the rod feels none of it
            continue
        s = part.node_s[e] + (0.0 if kind in NODE_KINDS else t * part.rest_len[e])
        surface = point - 0.5 * part.cable.diameter * normal
        entry = {
            "s": float(s),
            "point": surface.tolist(),
            "normal": normal.tolist(),
            "force": force.tolist(),
            "gap": gap,
        }
        if tangential is not None and kind not in SELF_KINDS:
            entry["friction"] = tangential[index].tolist()
        out[ids[k]].append(entry)
        if kind in SELF_KINDS:
            j, c = locate(prim)
            other_s = float(parts[j].node_s[c] + u * parts[j].rest_len[c])
            entry["other_s"] = other_s
            mirror = {
                "s": other_s,
                "point": surface.tolist(),
                "normal": (-normal).tolist(),
                "force": (-force).tolist(),
                "gap": gap,
                "other_s": float(s),
            }
            if j != k:
                entry["other_cable"], mirror["other_cable"] = ids[j], ids[k]
            out[ids[j]].append(mirror)
    return out
