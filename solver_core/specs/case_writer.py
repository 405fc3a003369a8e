# SPDX-License-Identifier: GPL-3.0-or-later
"""A case written back as a JSON-ready document, in the format parse_case reads (case.py)."""

from .bundle import bundle_to_dict
from .case import CASE_FORMAT, Case, Frame, step_duration
from .junction_spec import junction_end_to_dict, junction_move_to_dict, junction_to_dict
from .rest_shape import rest_to_dict


def frame_to_dict(frame: Frame) -> dict:
    out = {"position": frame.position.tolist(), "tangent": frame.tangent.tolist()}
    if frame.normal is not None:
        out["normal"] = frame.normal.tolist()
    return out


def _end_to_dict(frame: Frame, mount, connector) -> dict:
    out = frame_to_dict(frame)
    if mount is not None:
        out["mounted_on"] = mount
    if connector is not None:
        out["connector"] = connector
    return out


def case_to_dict(case: Case) -> dict:
    """The case as a JSON-ready document (parse_case(case_to_dict(c)) reproduces c)."""
    cables = []
    for c in case.cables:
        d = {
            "id": c.id,
            "length": c.length,
            **({"diameter": c.diameter} if c.diameter_given else {}),
            **({"material": dict(c.material)} if c.bundle is None or c.material else {}),
            "segments": c.segments,
            "start": junction_end_to_dict(c.start_junction)
            if c.start_junction
            else _end_to_dict(c.start, c.start_mount, c.connectors[0]),
            "end": (
                None
                if c.end is None
                else junction_end_to_dict(c.end_junction)
                if c.end_junction
                else _end_to_dict(c.end, c.end_mount, c.connectors[1])
            ),
            "clips": [
                {
                    "s": k.s,
                    "frame": frame_to_dict(k.frame),
                    "kind": k.kind,
                    "length": k.length,
                    "stiffness": k.stiffness,
                }
                for k in c.clips
            ],
            "loads": [{"s": ld.s, "force": ld.force.tolist(), "moment": ld.moment.tolist()} for ld in c.loads],
        }
        if c.route is not None:
            d["route"] = c.route.tolist()
        if c.rest is not None:
            d["rest"] = rest_to_dict(c.rest)
        if c.bundle is not None:
            d["bundle"] = bundle_to_dict(c.bundle)
        if c.allowed_bend_radius is not None:
            d["allowed_bend_radius"] = c.allowed_bend_radius
        cables.append(d)
    steps = []
    for i, step in enumerate(case.steps):
        sc = {}
        for cid, ch in step.items():
            e = {}
            if ch.start is not None:
                e["start"] = frame_to_dict(ch.start)
            if ch.end is not None:
                e["end"] = frame_to_dict(ch.end)
            if ch.clips:
                e["clips"] = {str(k): {"frame": frame_to_dict(f)} for k, f in ch.clips.items()}
            sc[cid] = e
        entry = {"cables": sc}
        if case.solver.dynamics is not None:
            entry["duration"] = step_duration(case, i)
        moves = case.junction_steps[i] if i < len(case.junction_steps) else {}
        if moves:
            entry["junctions"] = {j: junction_move_to_dict(case.junctions[j], m) for j, m in moves.items()}
        steps.append(entry)
    doc = {
        "format": CASE_FORMAT,
        "gravity": case.gravity.tolist(),
        "cables": cables,
        # (mount zones are worked out from the cables' mounted_on, not written)
        "obstacles": [{k: v for k, v in o.items() if k != "mount_zones"} for o in case.obstacles],
        "contact": dict(case.contact),
        "solver": {
            "model": case.solver.model,
            "tolerance": case.solver.tolerance,
            "max_iterations": case.solver.max_iterations,
            "ultimate_strain": case.solver.ultimate_strain,
            **(
                {"dynamics": {"time_step": case.solver.dynamics.time_step, "damping": case.solver.dynamics.damping}}
                if case.solver.dynamics is not None
                else {}
            ),
        },
        "steps": steps,
    }
    if case.junctions:
        doc["junctions"] = [junction_to_dict(j) for j in case.junctions.values()]
    return doc
