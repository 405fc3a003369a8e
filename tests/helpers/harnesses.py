# SPDX-License-Identifier: GPL-3.0-or-later
"""Branched harnesses for the junction tests: branches, junction ends and connectors, and the total
force and moment on a harness from its result alone (connectors, every node's weight, every contact,
the junctions' weight and their own contacts), and the heavy V harness of the junction contact tests."""

import numpy as np

from helpers.cases import cable, case

G = 9.81
STIFF = {"E": 2e9, "nu": 0.35, "density": 1400.0}  # a PVC-sheathed bundle's order of stiffness
AT_ORIGIN = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}


def branch(cid, length, start, end, segments=20, diameter=0.004, material=None):
    return cable(
        id=cid, length=length, start=start, end=end, segments=segments, diameter=diameter, material=material or STIFF
    )


def at(jid, outlet):
    return {"junction": jid, "outlet": list(np.asarray(outlet, float) / np.linalg.norm(outlet))}


def connector(position, tangent, normal=None):
    frame = {"position": list(position), "tangent": list(np.asarray(tangent, float) / np.linalg.norm(tangent))}
    if normal is not None:
        frame["normal"] = list(normal)
    return frame


def node_masses(doc, diameter=0.004, density=STIFF["density"]):
    """Lumped mass of every node from the result's rest arc lengths (half of each segment's)."""
    mu = density * np.pi * diameter**2 / 4.0
    s = np.asarray(doc["arc_lengths"])
    m = np.zeros(len(s))
    m[:-1] += 0.5 * mu * np.diff(s)
    m[1:] += 0.5 * mu * np.diff(s)
    return m


def balance(result, junction_masses, diameters=None):
    """Total force and moment (about the origin) on the harness from its connectors, its weight and the
    junctions' weight: zero at an equilibrium. From the result alone, independent of the solver's balance."""
    gravity = np.array([0.0, 0.0, -G])
    force, moment = np.zeros(3), np.zeros(3)
    for cid, c in result["cables"].items():
        nodes = np.asarray(c["nodes"])
        w = node_masses(c, (diameters or {}).get(cid, 0.004))[:, None] * gravity
        force += w.sum(axis=0)
        moment += np.cross(nodes, w).sum(axis=0)
        for contact in c["contacts"]:
            force += contact["force"]
            moment += np.cross(contact["point"], contact["force"])
        for side, fm in c["end_forces"].items():
            f, m = np.asarray(fm["force"]), np.asarray(fm["moment"])
            point = nodes[0] if side == "start" else nodes[-1]
            force += f
            moment += np.cross(point, f) + m
    # the ends held by junctions are internal: what the junction gives one branch the others give back
    for jid, j in result["junctions"].items():
        p = np.asarray(j["position"])
        for b in j["branches"]:
            force += b["force"]
            moment += np.cross(p, b["force"]) + np.asarray(b["moment"])
        force += junction_masses.get(jid, 0.0) * gravity
        moment += np.cross(p, junction_masses.get(jid, 0.0) * gravity)
        for contact in j["contacts"]:  # obstacles pushing on the junction itself
            force += contact["force"]
            moment += np.cross(contact["point"], contact["force"])
    return force, moment


def force_scale(result, weight):
    """What a balance is judged against: the harness's weight or the largest force a holder carries,
    whichever is larger (the branches resolve forces to a fraction of what they carry, and a stiff
    contact's round-off floor to a fraction of its stiffness: Interactions.dof_tolerance)."""
    carried = max(np.abs(fm["force"]).max() for c in result["cables"].values() for fm in c["end_forces"].values())
    return max(weight, float(carried))


V_RADIUS = 0.004  # the junction's: its widest branch's, the trunk's
V_MASS = 0.05  # kg: sags the junction about 40 mm with nothing below it


def v_on(obstacles, mass=V_MASS, tilt=0.4):
    """A Y harness whose junction is the bottom of a V: a thick trunk (8 mm) comes down into it and
    two 4 mm branches leave it upwards at +-40 degrees; heavy, the junction sags about 90 mm with
    nothing below it, and a floor above that meets the junction's own sleeve (its radius the trunk's)
    before any branch."""
    a = np.radians(40.0)
    out1, out2 = [np.cos(a), np.sin(a), tilt], [np.cos(a), -np.sin(a), tilt]
    end1 = [0.25 + 0.25 * np.cos(a), 0.25 * np.sin(a), 0.0]
    end2 = [end1[0], -end1[1], 0.0]
    return case(
        branch("trunk", 0.27, AT_ORIGIN, at("J", [1, 0, -tilt]), diameter=2 * V_RADIUS),
        branch("left", 0.27, at("J", out1), connector(end1, [np.cos(a), np.sin(a), 0])),
        branch("right", 0.27, at("J", out2), connector(end2, [np.cos(a), -np.sin(a), 0])),
        junctions=[{"id": "J", "position": [0.25, 0.0, 0.0], "mass": mass}],
        obstacles=obstacles,
    )


def v_weight(result):
    """The harness's weight from the result alone: every node's lumped mass (8 mm trunk, 4 mm branches)."""
    total = V_MASS * G
    for cid, c in result["cables"].items():
        total += node_masses(c, diameter=2 * V_RADIUS if cid == "trunk" else 0.004).sum() * G
    return total


def asymmetric_harness(segments=20):
    """A trunk to a free junction carrying two branches of different length at different angles, one
    rising, under gravity: no symmetry for the condensed stiffness to hide an error in."""
    return case(
        branch("trunk", 0.27, AT_ORIGIN, at("J", [1, 0, 0]), segments),
        branch("left", 0.22, at("J", [1, 1, 0.3]), connector([0.38, 0.14, 0.05], [1, 1, 0]), segments),
        branch("right", 0.3, at("J", [1, -0.6, 0]), connector([0.5, -0.12, 0.0], [1, -0.5, 0]), segments, 0.006),
        junctions=[{"id": "J", "position": [0.25, 0.0, 0.0], "mass": 0.02}],
    )
