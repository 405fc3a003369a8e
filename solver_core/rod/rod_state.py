# SPDX-License-Identifier: GPL-3.0-or-later
"""The time-varying part of a rod: node positions and quaternions, and how boundary data enter it.

``initial_state`` makes the first guess (a user route resampled to the cable length, or a
smooth Hermite curve through the connectors and clips whose arc length matches the cable);
``apply_boundary`` writes the held positions and frames; ``carry_boundary_motion`` moves the free
part of a converged state along with moved connectors and clips so that a warm start begins
close to the new equilibrium.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..maths.rotations import (
    frame_from_tangent,
    matrices_to_quats,
    matrix_from_quat,
    matrix_to_quat,
    rotation_between,
    slerp_matrix,
    transported_frames,
)
from ..specs.case import Frame
from .rod_model import FIXED_ALL, Boundary, RodModel
from .sag_kernels import polyline_length, resample_polyline, sagged_span


@dataclass
class RodState:
    positions: np.ndarray  # (n_nodes, 3), relative to model.origin
    quats: np.ndarray  # (n_rotations, 4), (w, x, y, z)

    def copy(self) -> "RodState":
        return RodState(self.positions.copy(), self.quats.copy())

    def is_finite(self) -> bool:
        return bool(np.isfinite(self.positions).all() and np.isfinite(self.quats).all())


# ------------------------------------------------------------------ initial centre line


def _resample_polyline(points: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """Points at ``fractions`` of the polyline's length, linearly between its points."""
    return resample_polyline(
        np.ascontiguousarray(points, dtype=np.float64), np.ascontiguousarray(fractions, dtype=np.float64)
    )


def _route_positions(route: np.ndarray, points) -> np.ndarray:
    """Arc length along the polyline ``route`` of the point nearest to each of ``points``."""
    a, b = route[:-1], route[1:]
    ab = b - a
    seg = np.linalg.norm(ab, axis=1)
    cum = np.concatenate(([0.0], np.cumsum(seg)))
    out = np.empty(len(points))
    for k, p in enumerate(points):
        t = np.clip(np.einsum("ij,ij->i", p - a, ab) / np.maximum(seg**2, 1e-300), 0.0, 1.0)
        d = np.linalg.norm(a + t[:, None] * ab - p, axis=1)
        j = int(np.argmin(d))
        out[k] = cum[j] + t[j] * seg[j]
    return out


def _route_arc_of_nodes(route: np.ndarray, s: np.ndarray, anchors, length: float) -> np.ndarray:
    """Where along ``route`` (arc length) each node of cable arc length ``s`` is laid, span by span:
    the cable between two holders is laid along the part of the route between them. Resampled in
    proportion to the whole length instead, a cable made longer than its route put a clip's nodes
    where the route passes a tenth of a metre from the clip, and the guess started strained by -63 %
    to +207 %. Where the holders do not lie in order along the route, in proportion to the whole
    length."""
    total = float(np.linalg.norm(np.diff(route, axis=0), axis=1).sum())
    proportional = s / length * total
    if len(anchors) < 2 or total <= 0.0:
        return proportional
    at = _route_positions(route, [p for _, p, _ in anchors])
    held = np.array([a for a, _, _ in anchors])
    if np.any(np.diff(at) < 0.0) or np.any(np.diff(held) <= 0.0):
        return proportional
    # arc length along the route for each cable arc length: piecewise linear through the holders
    # (beyond the first or last holder, a free end follows the route at the cable's own pace)
    r = np.interp(s, held, at)
    r = np.where(s > held[-1], at[-1] + (s - held[-1]), r)
    r = np.where(s < held[0], at[0] - (held[0] - s), r)
    return np.clip(r, 0.0, total)


def _route_by_spans(route: np.ndarray, s: np.ndarray, anchors, length: float) -> np.ndarray:
    """Points along ``route`` at the cable's arc lengths ``s`` (_route_arc_of_nodes)."""
    total = float(np.linalg.norm(np.diff(route, axis=0), axis=1).sum())
    if total <= 0.0:
        return _resample_polyline(route, s / length)
    return _resample_polyline(route, _route_arc_of_nodes(route, s, anchors, length) / total)


def _through_route_corners(pts: np.ndarray, route: np.ndarray, r: np.ndarray, held: np.ndarray) -> np.ndarray:
    """The nodes ``pts`` laid along ``route`` (at route arc lengths ``r``), moved so that every segment
    passes through the route's corners that lie between its nodes.

    A segment between nodes on two legs of the route is a chord that cuts the corner: over a box's
    edge or round a sphere drawn one diameter clear, a coarse cable's chord passed a radius and more
    inside the obstacle, and the solver could not tell which side the cable belongs on (a 14-segment
    cable drawn over a 0.7 m box never converged). Both nodes of such a segment move by the offset of
    its farthest corner from the chord (a held node stays, its partner moves the offset divided by
    the corner's place along the chord, at most twice the offset), so that the chord passes through
    that corner, on the side the route was drawn. ``held``: per node, whether it may not move."""
    cum = np.concatenate(([0.0], np.cumsum(np.linalg.norm(np.diff(route, axis=0), axis=1))))
    corners = route[1:-1]
    corner_at = cum[1:-1]
    out = pts.copy()
    for _ in range(3):  # a node moved for one segment moves its neighbours' chords too
        shift = np.zeros_like(out)
        for i in range(len(out) - 1):
            inside = (corner_at > min(r[i], r[i + 1]) + 1e-12) & (corner_at < max(r[i], r[i + 1]) - 1e-12)
            if not inside.any():
                continue
            a, b = out[i], out[i + 1]
            ab = b - a
            ab2 = float(ab @ ab)
            if ab2 <= 0.0:
                continue
            t = np.clip((corners[inside] - a) @ ab / ab2, 0.0, 1.0)
            offsets = corners[inside] - (a + t[:, None] * ab)
            k = int(np.argmax(np.linalg.norm(offsets, axis=1)))
            d, tk = offsets[k], float(t[k])
            if held[i] and held[i + 1]:
                continue
            if held[i]:
                moves = ((i + 1, d / max(tk, 0.5)),)
            elif held[i + 1]:
                moves = ((i, d / max(1.0 - tk, 0.5)),)
            else:
                moves = ((i, d), (i + 1, d))
            for node, move in moves:
                if move @ move > shift[node] @ shift[node]:
                    shift[node] = move
        if not shift.any():
            break
        out += shift
    return out


def _increasing_root(f, lo: float, hi: float, tolerance: float) -> float:
    """The root of an increasing f on [lo, hi] with f(lo) <= 0 <= f(hi), by false position with the
    Illinois modification (superlinear, and never leaves the bracket); ``tolerance`` on the argument."""
    f_lo, f_hi = f(lo), f(hi)
    if f_lo >= 0.0:
        return lo
    if f_hi <= 0.0:
        return hi
    side = 0
    for _ in range(200):
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        if not lo < x < hi:
            x = 0.5 * (lo + hi)
        fx = f(x)
        if fx == 0.0 or hi - lo <= tolerance:
            return x
        if fx < 0.0:
            lo, f_lo = x, fx
            if side == -1:
                f_hi *= 0.5
            side = -1
        else:
            hi, f_hi = x, fx
            if side == 1:
                f_lo *= 0.5
            side = 1
        if hi - lo <= tolerance:
            break
    return 0.5 * (lo + hi)


def _hermite(p0, t0, p1, t1, scale, u):
    u = u[:, None]
    h00 = 2 * u**3 - 3 * u**2 + 1
    h10 = u**3 - 2 * u**2 + u
    h01 = -2 * u**3 + 3 * u**2
    h11 = u**3 - u**2
    return h00 * p0 + h10 * scale * t0 + h01 * p1 + h11 * scale * t1


def _curves_of_length(p0, t0, p1, t1, length, sag_direction, samples=96):
    """A smooth curve from p0 (leaving along t0) to p1 (arriving along t1) with the given arc length,
    as a function of ``sag`` (the part of the missing length the sag makes up).

    A Hermite curve whose tangent scale stays below the chord (beyond it the curve can fold back on
    itself); length it cannot give is added as a sag along ``sag_direction`` (the loads).
    """
    u = np.linspace(0.0, 1.0, samples)

    def arc(scale):
        pts = _hermite(p0, t0, p1, t1, scale, u)
        return pts, float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())

    chord = float(np.linalg.norm(p1 - p0))
    if length <= chord * (1.0 + 1e-9):
        straight = np.array([p0, p1])
        return lambda sag: straight
    pts, longest = arc(chord)
    if longest < length:
        s = np.linspace(0.0, length, samples)
        anchors = [(0.0, p0, None), (length, p1, None)]

        def sagged(sag):
            if sag <= 0.0:
                return pts  # shorter than the cable: paid out by the solver
            out = pts.copy()
            _add_sag(out[1:-1], s[1:-1], anchors, sag_direction, sag)
            return out

        return sagged
    scale = _increasing_root(lambda a: arc(a)[1] - length, 0.0, chord, 1e-14 * chord)
    curve = arc(scale)[0]
    return lambda sag: curve


def _anchors(model: RodModel, boundary: Boundary):
    """(s, position, tangent) where the cable is held, in arc-length order (world coordinates)."""
    cable = model.cable
    out = [(0.0, boundary.start.position, boundary.start.tangent)]
    for clip, frame in sorted(zip(cable.clips, boundary.clips), key=lambda cf: cf[0].s):
        half = clip.length / 2.0
        out.append((clip.s - half, frame.position - half * frame.tangent, frame.tangent))
        if half > 0.0:
            out.append((clip.s + half, frame.position + half * frame.tangent, frame.tangent))
    if boundary.end is not None:
        out.append((cable.length, boundary.end.position, boundary.end.tangent))
    return out


def _sag_direction(model: RodModel) -> np.ndarray:
    load = model.node_force.sum(axis=0)
    norm = np.linalg.norm(load)
    return load / norm if norm > 0.0 else np.array([0.0, 0.0, -1.0])


def _add_sag(pts: np.ndarray, s: np.ndarray, anchors, direction: np.ndarray, fraction: float = 1.0) -> None:
    """Give every span between holders the cable length it must hold, as a sag along ``direction``;
    with ``fraction`` < 1 only that part of the missing length (the rest is paid out by the solver).

    A drawn route is usually shorter than the cable (the slack). Resampled as it is, each span would
    start compressed and buckle to one side or the other by round-off; sagging it along the loads
    instead starts near the hanging shape and takes that choice away.
    """
    for (s0, p0, _), (s1, p1, _) in zip(anchors, anchors[1:]):
        inside = np.flatnonzero((s > s0 + 1e-12) & (s < s1 - 1e-12))
        if len(inside) == 0 or s1 - s0 <= 0.0:
            continue
        poly = np.vstack((p0, pts[inside], p1))
        target = s1 - s0
        current = polyline_length(poly)
        if current >= target * (1.0 - 1e-6):
            continue
        chord = p1 - p0
        chord_len = np.linalg.norm(chord)
        d = direction.copy()
        if chord_len > 0.0:
            d -= chord * (d @ chord) / chord_len**2
        if np.linalg.norm(d) < 1e-6:  # loads along the chord: sag sideways
            d = np.cross(chord if chord_len > 0 else [1.0, 0.0, 0.0], [1.0, 0.0, 0.0])
            if np.linalg.norm(d) < 1e-6:
                d = np.cross(chord, [0.0, 1.0, 0.0])
        d /= np.linalg.norm(d)
        u = np.concatenate(([0.0], (s[inside] - s0) / (s1 - s0), [1.0]))
        bump = np.sin(np.pi * u)[:, None] * d
        wanted = current + min(max(fraction, 0.0), 1.0) * (target - current)
        # the amplitude that gives the span its length, then the nodes evenly by arc length along
        # the sagged span, so that no segment starts strained
        pts[inside] = sagged_span(poly, bump, u[1:-1], wanted, target, 1e-14 * target)


def initial_centerline(
    model: RodModel, boundary: Boundary, sag: float = 1.0, through_corners: bool = False, route=None
):
    """The first centre line: the route (or smooth curves through the holders) given the cable's
    length by sagging along the loads. ``sag`` is the part of the missing length the sag makes up
    (1: all of it, 0: none); the solver pays out the rest (for routes whose full sag would pass
    through an obstacle). ``through_corners``: segments pass through the route's corners rather than
    cut them (_through_route_corners; for a coarse cable whose chords would cut into what the route
    was drawn round). ``route``: the route to follow instead of the cable's own (the cable's route
    lifted off the surfaces it was drawn onto: contact/drawn_routes.py)."""
    return initial_centerlines(model, boundary, through_corners, route)(sag)


def initial_centerlines(model: RodModel, boundary: Boundary, through_corners: bool = False, route=None):
    """initial_centerline as a function of ``sag``, for a search over it (the first guess lowers the
    sag in up to 64 steps): what does not depend on the sag is computed once."""
    cable = model.cable
    s = model.node_s
    if route is None:
        route = cable.route
    anchors = _anchors(model, boundary)
    direction = _sag_direction(model)
    if route is not None:
        route = np.asarray(route, dtype=np.float64)
        laid = _route_by_spans(route, s, anchors, cable.length)
        if through_corners and len(route) > 2:
            held = np.zeros(len(s), dtype=bool)
            for a, _, _ in anchors:
                held |= np.abs(s - a) <= 1e-12 * max(cable.length, 1.0)
            laid = _through_route_corners(laid, route, _route_arc_of_nodes(route, s, anchors, cable.length), held)

        def along_route(sag):
            pts = laid.copy()
            if sag > 0.0:
                _add_sag(pts, s, anchors, direction, sag)
            return pts

        return along_route
    spans = []
    for (s0, p0, t0), (s1, p1, t1) in zip(anchors, anchors[1:]):
        sel = (s >= s0 - 1e-12) & (s <= s1 + 1e-12)
        spans.append((sel, (s[sel] - s0) / max(s1 - s0, 1e-300), _curves_of_length(p0, t0, p1, t1, s1 - s0, direction)))
    s_last, p_last, t_last = anchors[-1]
    tail = s >= s_last - 1e-12  # the last anchor's own node too (a free end's only anchor is its start)

    def through_holders(sag):
        pts = np.empty((model.n_nodes, 3))
        for sel, fractions, curve in spans:
            pts[sel] = _resample_polyline(curve(sag), fractions)
        pts[tail] = _free_tail(model, s[tail] - s_last, p_last, t_last, sag)
        return pts

    return through_holders


def _free_tail(model: RodModel, along: np.ndarray, p0: np.ndarray, t0: np.ndarray, sag: float) -> np.ndarray:
    """A free end's nodes at arc lengths ``along`` from its last holder (p0, t0): straight on where the
    loads bend it little (a tip deflection under them, w L^4 / 8 EI, below its length), else turned
    towards the loads within the length sqrt(EI / (w L)) of the hanging cable's boundary layer at the
    holder and hanging along them beyond, ``sag`` of the whole turn (a heavy cable held at one end and
    started straight fell through 595-1771 Newton iterations to hang, 7-13 from this guess)."""
    length = float(along[-1]) if along.size else 0.0
    load = model.node_force.sum(axis=0)
    w = float(np.linalg.norm(load)) / max(model.cable.length, 1e-300)
    ei = float(model.cable.section.bend_stiffness)
    straight = p0 + along[:, None] * t0
    if sag <= 0.0 or length <= 0.0 or w <= 0.0 or ei <= 0.0 or w * length**3 < 8.0 * ei:
        return straight
    d = load / np.linalg.norm(load)
    normal = d - t0 * (d @ t0)
    if np.linalg.norm(normal) < 1e-9:
        return straight  # already along the loads
    normal /= np.linalg.norm(normal)
    turn = sag * math.acos(max(-1.0, min(1.0, float(d @ t0))))
    scale = math.sqrt(ei / (w * length))
    mid = 0.5 * (along[1:] + along[:-1])
    angle = turn * (1.0 - np.exp(-mid / scale))
    steps = (np.cos(angle)[:, None] * t0 + np.sin(angle)[:, None] * normal) * np.diff(along)[:, None]
    return p0 + np.vstack((np.zeros(3), np.cumsum(steps, axis=0)))


def initial_state(
    model: RodModel, boundary: Boundary, sag: float = 1.0, through_corners: bool = False, route=None
) -> RodState:
    """Centre line guess plus parallel-transported frames, with the boundary applied."""
    x = initial_centerline(model, boundary, sag, through_corners, route) - model.origin
    return framed_state(model, boundary, x)[0]


def framed_state(model: RodModel, boundary: Boundary, x: np.ndarray, twist: float | None = None) -> tuple:
    """(the state of centre line ``x`` (relative to the model's origin) with frames carried along it
    from the start frame and the end's roll about the cable spread evenly, the boundary applied; that
    roll (rad)). ``twist``: the roll to spread, where a model followed it through whole turns (the
    angle measured here is the one within half a turn)."""
    x = np.array(x, dtype=float)
    edges = np.diff(x, axis=0)
    lengths = np.linalg.norm(edges, axis=1)
    ok = lengths > 1e-14
    tangents = edges / np.where(ok, lengths, 1.0)[:, None]
    for i in np.flatnonzero(~ok):  # a zero-length edge goes on as the one before it
        tangents[i] = tangents[i - 1] if i > 0 else boundary.start.tangent
    # Parallel transport of the start frame along the centre line (zero twist), then the roll
    # that a given end normal demands is spread evenly over the length.
    F = frame_from_tangent(boundary.start.tangent, boundary.start.normal)
    frames = np.empty((len(edges), 3, 3))
    transported_frames(F, tangents, frames)
    roll = 0.0
    if boundary.end is not None and boundary.end.normal is not None:
        F_end = rotation_between(tangents[-1], boundary.end.tangent) @ frames[-1]
        d1 = F_end[:, 0]
        n = boundary.end.normal
        roll = np.arctan2(np.dot(np.cross(d1, n), boundary.end.tangent), np.dot(d1, n))
        if twist is not None:
            roll = twist
        mids = 0.5 * (model.node_s[1:] + model.node_s[:-1]) / model.cable.length
        c, s = np.cos(roll * mids), np.sin(roll * mids)
        turn = np.zeros((len(edges), 3, 3))  # each segment turned by roll * f about its own d3
        turn[:, 0, 0], turn[:, 0, 1], turn[:, 1, 0], turn[:, 1, 1], turn[:, 2, 2] = c, -s, s, c, 1.0
        frames = frames @ turn
    quats = np.zeros((model.n_rotations, 4))
    matrices_to_quats(np.ascontiguousarray(frames), quats[: len(edges)])
    quats[model.start_frame] = matrix_to_quat(
        frame_from_tangent(
            boundary.start.tangent, boundary.start.normal if boundary.start.normal is not None else frames[0][:, 0]
        )
    )
    if model.end_frame >= 0:
        quats[model.end_frame] = matrix_to_quat(
            frame_from_tangent(
                boundary.end.tangent, boundary.end.normal if boundary.end.normal is not None else frames[-1][:, 0]
            )
        )
    for ci, rots in enumerate(model.clip_rots):
        for r in rots:
            if r >= model.n_segments:
                near = frames[min(model.clip_nodes[ci][0], model.n_segments - 1)]
                quats[r] = matrix_to_quat(frame_from_tangent(boundary.clips[ci].tangent, near[:, 0]))
    state = RodState(x, quats)
    apply_boundary(model, state, boundary)
    return state, float(roll)


# ------------------------------------------------------------------ boundary data


def _held_frame(current_quat, frame: Frame, mask) -> np.ndarray:
    """Quaternion of a held frame; with the roll free, turn the current frame onto the tangent."""
    if mask == FIXED_ALL and frame.normal is not None:
        return matrix_to_quat(frame_from_tangent(frame.tangent, frame.normal))
    R = matrix_from_quat(current_quat)
    return matrix_to_quat(rotation_between(R[:, 2], frame.tangent) @ R)


def apply_boundary(model: RodModel, state: RodState, boundary: Boundary) -> None:
    """Write the held positions and orientations of connectors and clips into the state."""
    o = model.origin
    cable = model.cable
    state.positions[0] = boundary.start.position - o
    start_mask = FIXED_ALL if cable.start.normal is not None else None
    state.quats[model.start_frame] = _held_frame(state.quats[model.start_frame], boundary.start, start_mask)
    if model.end_frame >= 0:
        state.positions[-1] = boundary.end.position - o
        end_mask = FIXED_ALL if cable.end.normal is not None else None
        state.quats[model.end_frame] = _held_frame(state.quats[model.end_frame], boundary.end, end_mask)
    for clip, frame, nodes, rots, mask in zip(
        cable.clips, boundary.clips, model.clip_nodes, model.clip_rots, model.clip_rot_mask
    ):
        if clip.kind == "sliding" or clip.stiffness is not None:
            continue  # held through energies (mounts.py), not pinned
        for k in nodes:
            state.positions[k] = frame.position + (model.node_s[k] - clip.s) * frame.tangent - o
        for r in rots:
            state.quats[r] = _held_frame(state.quats[r], frame, mask)


def _anchor_nodes(model: RodModel):
    """Node index and the rotation index that carries its frame, for every held node."""
    out = [(0, model.start_frame)]
    for clip, nodes, rots in zip(model.cable.clips, model.clip_nodes, model.clip_rots):
        if clip.kind == "sliding" or clip.stiffness is not None:
            continue
        for k in nodes:
            out.append((k, rots[0]))
    if model.end_frame >= 0:
        out.append((model.n_nodes - 1, model.end_frame))
    return sorted(out)


def carry_boundary_motion(model: RodModel, state: RodState, old: Boundary, new: Boundary) -> None:
    """Move the free nodes with the held ones: translations blended linearly in arc length
    between neighbouring held nodes, and a free end carried rigidly with its last held frame."""
    before = state.copy()
    apply_boundary(model, state, new)
    anchors = _anchor_nodes(model)
    s = model.node_s
    disp = state.positions - before.positions
    for (ka, _), (kb, _) in zip(anchors, anchors[1:]):
        if kb - ka < 2:
            continue
        w = ((s[ka + 1 : kb] - s[ka]) / (s[kb] - s[ka]))[:, None]
        state.positions[ka + 1 : kb] += (1.0 - w) * disp[ka] + w * disp[kb]
    k_last, r_last = anchors[-1]
    if k_last < model.n_nodes - 1:
        R_old = matrix_from_quat(before.quats[r_last])
        R_new = matrix_from_quat(state.quats[r_last])
        turn = R_new @ R_old.T
        pivot_old = before.positions[k_last]
        pivot_new = state.positions[k_last]
        state.positions[k_last + 1 :] = pivot_new + (before.positions[k_last + 1 :] - pivot_old) @ turn.T
        for i in range(k_last, model.n_segments):
            state.quats[i] = matrix_to_quat(turn @ matrix_from_quat(before.quats[i]))


def interpolate_boundary(a: Boundary, b: Boundary, t: float) -> Boundary:
    """A boundary part-way from a to b: positions linear, frames along the rotation geodesic."""

    def frame(fa: Frame, fb: Frame) -> Frame:
        if fa is None:
            return fb
        Ra = frame_from_tangent(fa.tangent, fa.normal)
        Rb = frame_from_tangent(fb.tangent, fb.normal if fb.normal is not None else Ra[:, 0])
        R = slerp_matrix(Ra, Rb, t)
        normal = R[:, 0] if fb.normal is not None else None
        return Frame((1.0 - t) * fa.position + t * fb.position, R[:, 2], normal)

    return Boundary(
        frame(a.start, b.start),
        None if b.end is None else frame(a.end, b.end),
        tuple(frame(fa, fb) for fa, fb in zip(a.clips, b.clips)),
    )


def prolong_state(coarse: RodModel, state: RodState, model: RodModel, boundary: Boundary) -> RodState:
    """A state of ``model`` from one of the same cable on fewer segments (``coarse``): nodes on the
    coarse centre line at their own arc lengths, segment frames blended between the coarse ones at
    their mid-points (normalised linear blend, the nearer sign), the boundary applied. Every new node
    lies on a coarse segment, so the fine centre line keeps the coarse one's clearances."""
    world = state.positions + coarse.origin
    s = model.node_s
    positions = np.column_stack([np.interp(s, coarse.node_s, world[:, k]) for k in range(3)]) - model.origin
    fine = initial_state(model, boundary, sag=1.0)
    fine.positions[:] = positions
    coarse_mid = 0.5 * (coarse.node_s[1:] + coarse.node_s[:-1])
    mid = 0.5 * (s[1:] + s[:-1])
    j = np.clip(np.searchsorted(coarse_mid, mid) - 1, 0, coarse.n_segments - 1)
    k = np.minimum(j + 1, coarse.n_segments - 1)
    span = coarse_mid[k] - coarse_mid[j]
    t = np.where(span > 0.0, np.clip((mid - coarse_mid[j]) / np.where(span > 0.0, span, 1.0), 0.0, 1.0), 0.0)
    qa, qb = state.quats[j], state.quats[k]
    sign = np.where(np.einsum("ij,ij->i", qa, qb) < 0.0, -1.0, 1.0)
    q = (1.0 - t)[:, None] * qa + (t * sign)[:, None] * qb
    fine.quats[: model.n_segments] = q / np.linalg.norm(q, axis=1)[:, None]
    apply_boundary(model, fine, boundary)
    return fine
