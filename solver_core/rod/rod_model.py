# SPDX-License-Identifier: GPL-3.0-or-later
"""From a cable spec to the static arrays of a discrete rod (the "model").

Layout (staggered grid, Roller et al. Sec. 2): nodes 0..N hold positions, segments 0..N-1 hold
orientations (rotations 0..N-1), and extra "frame" rotations sit at clamped ends and at point
clips (rotations N, N+1, ...), like the boundary quaternions of that paper. Degrees of freedom
are ordered along the cable (start frame, x_0, theta_0, x_1, theta_1, ..., x_N, end frame) so the
Hessian is banded with a half bandwidth of 8 (11 with a point clip, whose frame lies inside a segment's
span).

Clips with a length hold a whole stretch of cable: nodes are placed at both ends of the clip and
the segments between are clamped to the clip frame (Lv 2017, Eqs. 16-17 hold a segment, not a
point). Clips of length 0 hold one node and a frame rotation there.

Positions are stored relative to ``origin`` (the start connector at build time) so that round-off
does not depend on where the harness sits in a CAD assembly.
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import CaseError
from ..kernel_arrays import RodArrays
from ..specs.case import CableSpec, Frame
from ..specs.rest_shape import joint_rest_rotations

FIXED_ALL = (True, True, True)
FIXED_TANGENT = (True, True, False)  # body-frame rotations about d1, d2 held; roll about d3 free


@dataclass(frozen=True)
class Boundary:
    """Where the cable is held: the end frames and the clip frames (in clip order)."""

    start: Frame
    end: Frame | None
    clips: tuple

    @staticmethod
    def of(cable: CableSpec) -> "Boundary":
        return Boundary(cable.start, cable.end, tuple(c.frame for c in cable.clips))


@dataclass
class RodModel:
    cable: CableSpec
    origin: np.ndarray
    node_s: np.ndarray
    rest_len: np.ndarray
    stretch_stiff: np.ndarray
    joint_a: np.ndarray
    joint_b: np.ndarray
    joint_len: np.ndarray
    bend_stiff: np.ndarray
    bend_rest: np.ndarray  # per joint: vec of the unstressed relative rotation (rest_shape.py)
    node_dof: np.ndarray
    rot_dof: np.ndarray
    n_dof: int
    bw: int
    fixed: np.ndarray
    node_force: np.ndarray
    rot_couple: np.ndarray
    dof_tol: np.ndarray  # per dof, the residual tolerance: tolerance x scale, or the round-off floor above it
    force_scale: float
    start_frame: int  # rotation index of the start frame
    end_frame: int  # rotation index of the end frame, -1 for a free end
    clip_nodes: tuple  # per clip: node indices it holds
    clip_rots: tuple  # per clip: rotation indices it holds
    clip_rot_mask: tuple  # per clip: which body-frame rotation components are held
    # per dof, the tolerance without the round-off floor (equilibrium._refine_below_floor); None: as dof_tol
    strict_tol: np.ndarray | None = None
    # what is derived from the model alone and kept so a step need not again (results.py: packed arc
    # lengths; dynamics.py: the free nodes and their rotations)
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_nodes(self) -> int:
        return self.node_s.shape[0]

    @property
    def n_segments(self) -> int:
        return self.rest_len.shape[0]

    def held_nodes(self) -> np.ndarray:
        """Per node, whether a connector, clip or junction holds its position (all three dofs fixed)."""
        return self.fixed[self.node_dof[:, None] + np.arange(3)].all(axis=1)

    @property
    def n_rotations(self) -> int:
        return self.rot_dof.shape[0]

    def arrays(self, rest_len: np.ndarray | None = None) -> RodArrays:
        """The arrays the energy kernels read (rod_energy.py), with ``rest_len`` in place of the
        model's where given (equilibrium's continuation in rest length). The model's own are kept in
        ``derived``: its arrays change in place, never for others."""
        if rest_len is None or rest_len is self.rest_len:
            kept = self.derived.get("arrays")
            if kept is None:
                kept = self.derived["arrays"] = self._arrays(self.rest_len)
            return kept
        return self._arrays(rest_len)

    def _arrays(self, rest_len: np.ndarray) -> RodArrays:
        return RodArrays(
            self.node_dof,
            self.rot_dof,
            self.fixed,
            int(self.bw),
            rest_len,
            self.stretch_stiff,
            self.joint_a,
            self.joint_b,
            self.joint_len,
            self.bend_stiff,
            self.bend_rest,
            self.node_force,
            self.rot_couple,
        )


def _holds_roll(clip) -> bool:
    """Whether a compliant clip resists rolling about its axis (rotational stiffness about z)."""
    return clip.kind == "fixed" and clip_stiffness_matrix(clip)[5, 5] > 0.0


def clip_stiffness_matrix(clip) -> np.ndarray:
    """6x6 stiffness of a compliant clip in its frame (translation x, y, z, rotation x, y, z).

    A rotating clip does not resist roll: its rotation-about-axis row and column are zero.
    """
    st = clip.stiffness
    if "matrix" in st:
        K = np.array(st["matrix"], dtype=np.float64)
    else:
        K = np.diag([st["translational"]] * 3 + [st["rotational"]] * 3).astype(np.float64)
    if clip.kind == "rotating":
        K[5, :] = 0.0
        K[:, 5] = 0.0
    return K


def node_arclengths(cable: CableSpec) -> np.ndarray:
    """Arc lengths of the nodes: breakpoints at the clip ends, segments shared out by length."""
    L, N = cable.length, cable.segments
    breaks = {0.0, L}
    for clip in cable.clips:
        if clip.kind == "sliding":
            continue  # the cable slides through it: no node belongs to it
        if clip.length > 0.0 and clip.stiffness is None:
            breaks.update((clip.s - clip.length / 2.0, clip.s + clip.length / 2.0))
        else:
            breaks.add(clip.s)
    b = np.array(sorted(breaks))
    spans = np.diff(b)
    if len(spans) > N:
        raise CaseError(f"cable {cable.id!r}: segments = {N} is too few for its clips; it needs at least {len(spans)}")
    counts = np.maximum(1, np.round(N * spans / L).astype(int))
    while counts.sum() > N:
        k = np.argmin(np.where(counts > 1, spans / counts, np.inf))
        counts[k] -= 1
    while counts.sum() < N:
        counts[np.argmax(spans / counts)] += 1
    pieces = [np.linspace(b[i], b[i + 1], counts[i] + 1)[:-1] for i in range(len(spans))]
    return np.concatenate(pieces + [np.array([L])])


def build_rod_model(cable: CableSpec, gravity, tolerance: float) -> RodModel:
    sec = cable.section
    node_s = node_arclengths(cable)
    n_nodes = node_s.shape[0]
    n_segs = n_nodes - 1
    rest_len = np.diff(node_s)
    node_index = {round(s / cable.length, 12): i for i, s in enumerate(node_s)}

    def node_at(s):
        return node_index[round(s / cable.length, 12)]

    # frame rotations: start, end, point clips -> index and the node they sit at
    frames_at_node = {}
    n_rots = n_segs
    start_frame = n_rots
    frames_at_node.setdefault(0, []).append(start_frame)
    n_rots += 1
    end_frame = -1
    if cable.end is not None:
        end_frame = n_rots
        frames_at_node.setdefault(n_nodes - 1, []).append(end_frame)
        n_rots += 1
    clip_nodes, clip_rots, clip_masks = [], [], []
    for clip in cable.clips:
        mask = FIXED_ALL if clip.kind == "fixed" else FIXED_TANGENT
        if clip.kind == "sliding":
            # held by the sliding-clip energy (mounts.py), nothing pinned
            clip_nodes.append(())
            clip_rots.append(())
            clip_masks.append((False, False, False))
            continue
        if clip.stiffness is not None:
            # compliant: a node and a frame at the clip centre, free, tied to the clip by springs
            k = node_at(clip.s)
            clip_nodes.append((k,))
            clip_rots.append((n_rots,))
            frames_at_node.setdefault(k, []).append(n_rots)
            n_rots += 1
            clip_masks.append((False, False, False))
            continue
        if clip.length > 0.0:
            a, b = node_at(clip.s - clip.length / 2.0), node_at(clip.s + clip.length / 2.0)
            clip_nodes.append(tuple(range(a, b + 1)))
            clip_rots.append(tuple(range(a, b)))
        else:
            k = node_at(clip.s)
            clip_nodes.append((k,))
            clip_rots.append((n_rots,))
            frames_at_node.setdefault(k, []).append(n_rots)
            n_rots += 1
        clip_masks.append(mask)

    # dof numbering along the cable
    node_dof = np.empty(n_nodes, dtype=np.int64)
    rot_dof = np.empty(n_rots, dtype=np.int64)
    d = 0
    for k in range(n_nodes):
        # A frame's rotation couples to the rotations on both sides of its node: after the node, or
        # at the first node before it, where no segment lies on the other side. Between the node and
        # its segment's rotation the first segment would span 12 dofs, not 9, and the whole band
        # would be 11 wide instead of 8 (its factorisation costs bw^2).
        if k == 0:
            for r in frames_at_node.get(k, ()):
                rot_dof[r] = d
                d += 3
        node_dof[k] = d
        d += 3
        for r in frames_at_node.get(k, ()) if k > 0 else ():
            rot_dof[r] = d
            d += 3
        if k < n_segs:
            rot_dof[k] = d
            d += 3
    n_dof = d

    # bend/twist joints (Voronoi lengths; half lengths next to a frame rotation)
    ja, jb, jl = [], [], []
    for k in range(n_nodes):
        left = k - 1 if k > 0 else None
        right = k if k < n_segs else None
        frames = frames_at_node.get(k, [])
        if frames:
            f = frames[0]
            if left is not None:
                ja.append(left), jb.append(f), jl.append(rest_len[left] / 2.0)
            if right is not None:
                ja.append(f), jb.append(right), jl.append(rest_len[right] / 2.0)
        elif left is not None and right is not None:
            ja.append(left), jb.append(right), jl.append((rest_len[left] + rest_len[right]) / 2.0)
    joint_a = np.array(ja, dtype=np.int64)
    joint_b = np.array(jb, dtype=np.int64)
    joint_len = np.array(jl)
    bw = 0
    for a, b in zip(ja, jb):
        bw = max(bw, abs(rot_dof[a] - rot_dof[b]) + 2)
    for i in range(n_segs):
        lo = min(node_dof[i], rot_dof[i])
        hi = max(node_dof[i + 1], rot_dof[i]) + 2
        bw = max(bw, hi - lo)

    stretch_stiff = np.tile([sec.shear_stiffness, sec.shear_stiffness, sec.stretch_stiffness], (n_segs, 1))
    bend_stiff = np.tile([sec.bend_stiffness, sec.bend_stiffness, sec.twist_stiffness], (len(ja), 1))
    bend_rest = joint_rest_rotations(
        cable.rest, joint_a, joint_b, joint_len, node_s, cable.length, cable.start, frames_at_node, n_rots
    )

    # fixed degrees of freedom
    fixed = np.zeros(n_dof, dtype=np.uint8)

    def fix_node(k):
        fixed[node_dof[k] : node_dof[k] + 3] = 1

    def fix_rot(r, mask):
        for c in range(3):
            if mask[c]:
                fixed[rot_dof[r] + c] = 1

    fix_node(0)
    fix_rot(start_frame, FIXED_ALL if cable.start.normal is not None else FIXED_TANGENT)
    if cable.end is not None:
        fix_node(n_nodes - 1)
        fix_rot(end_frame, FIXED_ALL if cable.end.normal is not None else FIXED_TANGENT)
    for clip, nodes, rots, mask in zip(cable.clips, clip_nodes, clip_rots, clip_masks):
        if clip.stiffness is not None or clip.kind == "sliding":
            continue
        for k in nodes:
            fix_node(k)
        for r in rots:
            fix_rot(r, mask)
    roll_held = (
        cable.start.normal is not None
        or (cable.end is not None and cable.end.normal is not None)
        or any(c.kind == "fixed" and c.stiffness is None for c in cable.clips)
        or any(c.stiffness is not None and _holds_roll(c) for c in cable.clips)
    )
    if not roll_held:
        # Nothing sets the roll of the material frame: with a round section it is a gauge
        # freedom (no energy changes), so pin it at the start to keep the Hessian regular.
        fixed[rot_dof[start_frame] + 2] = 1

    # dead loads: lumped gravity and point forces on nodes, couples on segments
    g = np.asarray(gravity, dtype=np.float64)
    node_mass = np.zeros(n_nodes)
    node_mass[:-1] += 0.5 * sec.linear_density * rest_len
    node_mass[1:] += 0.5 * sec.linear_density * rest_len
    node_force = node_mass[:, None] * g[None, :]
    rot_couple = np.zeros((n_rots, 3))
    load_total = 0.0
    for load in cable.loads:
        j = int(np.clip(np.searchsorted(node_s, load.s, side="right") - 1, 0, n_segs - 1))
        t = (load.s - node_s[j]) / rest_len[j]
        node_force[j] += (1.0 - t) * load.force
        node_force[j + 1] += t * load.force
        rot_couple[j] += load.moment
        load_total += np.linalg.norm(load.force) + np.linalg.norm(load.moment) / cable.length

    # Convergence scales: forces relative to the largest of weight, applied loads and the
    # bending force scale EI/L^2; a round-off floor from the stiff stretch terms.
    force_scale = max(
        sec.linear_density * cable.length * np.linalg.norm(g), load_total, sec.bend_stiffness / cable.length**2
    )
    eps = np.finfo(float).eps
    stiff = max(sec.stretch_stiffness, sec.shear_stiffness)
    force_floor = 64.0 * eps * stiff * cable.length / rest_len.min()
    moment_floor = 64.0 * eps * (stiff * cable.length + sec.bend_stiffness / rest_len.min())
    strict_tol = np.empty(n_dof)
    for k in range(n_nodes):
        strict_tol[node_dof[k] : node_dof[k] + 3] = tolerance * force_scale
    for r in range(n_rots):
        strict_tol[rot_dof[r] : rot_dof[r] + 3] = tolerance * force_scale * cable.length
    floor = np.empty(n_dof)
    floor[node_dof[:, None] + np.arange(3)] = force_floor
    floor[rot_dof[:, None] + np.arange(3)] = moment_floor
    dof_tol = np.maximum(strict_tol, floor)

    return RodModel(
        cable,
        cable.start.position.copy(),
        node_s,
        rest_len,
        stretch_stiff,
        joint_a,
        joint_b,
        joint_len,
        bend_stiff,
        bend_rest,
        node_dof,
        rot_dof,
        n_dof,
        int(bw),
        fixed,
        node_force,
        rot_couple,
        dof_tol,
        float(force_scale),
        start_frame,
        end_frame,
        tuple(clip_nodes),
        tuple(clip_rots),
        tuple(clip_masks),
        strict_tol=strict_tol if np.any(dof_tol > strict_tol) else None,
    )
