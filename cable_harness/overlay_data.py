# SPDX-License-Identifier: GPL-3.0-or-later
"""What the viewport overlay draws for a solved cable, as plain arrays (no bpy, no gpu).

Colours: each point of the centre line by how much of the allowed bend it uses, allowed radius over
actual radius (0 straight, 1 at the limit, red beyond); without an allowed radius, by curvature
relative to the cable's own tightest bend. Arrows: the force the cable exerts on each connector and
clip, scaled to a length per newton. A cable whose solve failed is drawn red, without arrows, with a
dashed line from where it is held to where its connector is.
"""

import numpy as np

# colour stops of the bend ramp: (utilisation, RGBA)
RAMP = (
    (0.0, (0.20, 0.55, 1.00, 1.0)),
    (0.5, (0.25, 0.85, 0.35, 1.0)),
    (0.8, (1.00, 0.85, 0.10, 1.0)),
    (1.0, (1.00, 0.15, 0.10, 1.0)),
)
FAILED = (1.0, 0.1, 0.1, 1.0)
ARROW = (1.0, 0.55, 0.0, 1.0)
CONTACT = (0.9, 0.2, 0.9, 1.0)


def joint_curvature(bend_radii) -> np.ndarray:
    """1 / radius at each joint from a result's ``bend_radii`` (null where straight: 0)."""
    radii = np.array([np.inf if r is None else r for r in bend_radii], dtype=np.float64)
    curvature = np.zeros_like(radii)
    bent = np.isfinite(radii) & (radii > 0.0)
    curvature[bent] = 1.0 / radii[bent]
    return curvature


def bend_utilisation(bend_radii, joint_s, point_s, allowed: float) -> np.ndarray:
    """allowed / radius at each point (0 where straight), from the radii at the joints (at arc
    positions ``joint_s``) to the points (at ``point_s``) by linear interpolation; without an allowed
    radius (0), curvature over the cable's largest, so that its tightest bend reads 1."""
    point_s = np.asarray(point_s, dtype=np.float64)
    curvature = joint_curvature(bend_radii)
    if curvature.size == 0:
        return np.zeros(len(point_s))
    if allowed > 0.0:
        joint = allowed * curvature
    else:
        top = curvature.max(initial=0.0)
        joint = curvature / top if top > 0.0 else curvature
    order = np.argsort(joint_s, kind="stable")
    return np.interp(point_s, np.asarray(joint_s, dtype=np.float64)[order], joint[order])


def point_physics(result: dict, utilisation: np.ndarray) -> dict:
    """Per node of a solved cable (a result document entry, SI): ``curvature`` (1/m) and
    ``twist_rate`` (rad/m) interpolated from the joints, ``tension`` (N) averaged from the segments on
    either side, and ``utilisation``, the overlay's bend utilisation per node (float32, for mesh
    attributes)."""
    arc = np.asarray(result["arc_lengths"], dtype=np.float64)
    joint_s = np.asarray(result["bend_radius_s"], dtype=np.float64)
    order = np.argsort(joint_s, kind="stable")
    curvature = joint_curvature(result["bend_radii"])
    twist = np.asarray(result["twist_rates"], dtype=np.float64)
    segment = np.asarray(result["tensions"], dtype=np.float64)
    tension = np.empty(len(arc))
    tension[0], tension[-1] = segment[0], segment[-1]
    tension[1:-1] = 0.5 * (segment[:-1] + segment[1:])
    values = {
        "curvature": np.interp(arc, joint_s[order], curvature[order]) if len(order) else np.zeros(len(arc)),
        "tension": tension,
        "twist_rate": np.interp(arc, joint_s[order], twist[order]) if len(order) else np.zeros(len(arc)),
        "bend_utilisation": np.asarray(utilisation),
    }
    return {name: v.astype(np.float32) for name, v in values.items()}


def ramp_colours(values: np.ndarray) -> np.ndarray:
    """(n, 4) RGBA along RAMP, clamped to its ends."""
    stops = np.array([s for s, _ in RAMP])
    colours = np.array([c for _, c in RAMP])
    v = np.clip(np.asarray(values, dtype=np.float64), stops[0], stops[-1])
    return np.column_stack([np.interp(v, stops, colours[:, k]) for k in range(4)])


def force_arrows(positions, forces, units_per_newton: float) -> np.ndarray:
    """(2k, 3) line segment ends: from each holder position along its force, scaled."""
    positions = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    forces = np.asarray(forces, dtype=np.float64).reshape(-1, 3)
    ends = positions + units_per_newton * forces
    return np.stack([positions, ends], axis=1).reshape(-1, 3)


def dashes(a, b, dash: float) -> np.ndarray:
    """(2k, 3) segment ends of a dashed line from a to b (dashes and gaps ``dash`` long)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    length = float(np.linalg.norm(b - a))
    if length <= 0.0 or dash <= 0.0:
        return np.zeros((0, 3))
    starts = np.arange(0.0, length, 2.0 * dash)
    stops = np.minimum(starts + dash, length)
    direction = (b - a) / length
    return np.stack([a + starts[:, None] * direction, a + stops[:, None] * direction], axis=1).reshape(-1, 3)


def cable_overlay(result: dict, scale: float, allowed_m: float, force_scale_m_per_n: float, clip_s_m=()) -> dict:
    """The overlay of one solved cable (a result document entry, SI) in Blender units: ``clip_s_m``
    the arc positions of its clips (m), where their arrows start."""
    nodes_m = np.asarray(result["nodes"], dtype=np.float64)
    arc = np.asarray(result["arc_lengths"], dtype=np.float64)
    utilisation = bend_utilisation(result["bend_radii"], result["bend_radius_s"], arc, allowed_m)
    ends = result["end_forces"]
    positions = [nodes_m[0]] + ([nodes_m[-1]] if "end" in ends else [])
    forces = [ends["start"]["force"]] + ([ends["end"]["force"]] if "end" in ends else [])
    for s, clip in zip(clip_s_m, result.get("clip_forces", [])):
        positions.append([np.interp(s, arc, nodes_m[:, k]) for k in range(3)])
        forces.append(clip["force"])
    contacts = np.array([c["point"] for c in result.get("contacts", [])], dtype=np.float64).reshape(-1, 3)
    return {
        "points": nodes_m / scale,
        "colours": ramp_colours(utilisation),
        "utilisation": utilisation,
        "arrows": force_arrows(np.asarray(positions) / scale, forces, force_scale_m_per_n / scale),
        "contacts": contacts / scale,
        "gap": np.zeros((0, 3)),
        "failed": False,
    }


def mark_failed(overlay: dict, targets, dash: float) -> dict:
    """The overlay of a cable whose solve failed: drawn red, and dashed from each end it holds to
    where that end's connector is now (``targets``: [(held point, connector point)], Blender units).
    No force arrows: the forces of a state that is no equilibrium are no load on its holders."""
    overlay = dict(overlay)
    overlay["colours"] = np.tile(FAILED, (len(overlay["points"]), 1))
    overlay["arrows"] = np.zeros((0, 3))
    gaps = [dashes(a, b, dash) for a, b in targets if np.linalg.norm(np.subtract(b, a)) > dash]
    overlay["gap"] = np.concatenate(gaps) if gaps else np.zeros((0, 3))
    overlay["failed"] = True
    return overlay
