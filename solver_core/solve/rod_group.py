# SPDX-License-Identifier: GPL-3.0-or-later
"""Cables that touch each other, solved as one system.

Cables pressed against each other share their loads: the lower of two crossed cables gives way
under the upper one, which sinks with it. Solving them one after the other against frozen copies
of each other (block Gauss-Seidel) cannot get there with a stiff contact penalty: each sweep moves
a cable only by about (cable stiffness / contact stiffness) of the way. So touching cables are
joined into one rod model and minimised together by the same Newton method:

- the cables' nodes, segments and rotations follow each other in one array; between the last node
  of one cable and the first of the next sits a *link*, a segment without stiffness whose rotation
  is fixed (it keeps ``rod_energy``'s one-rotation-per-segment layout) and which meets nothing in
  contact (``node_part`` tells the kernels which cable a node belongs to);
- contact between two cables is the kernels' self-contact with both sides moving: the blocks
  coupling two cables lie outside the band and enter each Newton step as a low-rank update, as
  for one cable touching itself (``low_rank_coupling.self_coupling``).

``RodGroup`` is a ``RodModel`` of the joined arrays plus the maps back to its cables;
``GroupBoundary`` holds one boundary per cable; ``GroupInteractions`` joins the cables'
interactions (contact, friction, sliding and compliant clips).
"""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..contact.interactions import FrictionState, Interactions
from ..contact.pair_search import APART_PARTS
from ..rod.rod_model import RodModel
from ..rod.rod_state import RodState, apply_boundary, interpolate_boundary

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@dataclass(frozen=True)
class GroupBoundary:
    """One boundary per cable of a group, in the group's order."""

    parts: tuple

    def interpolate(self, other: "GroupBoundary", t: float) -> "GroupBoundary":
        return GroupBoundary(tuple(interpolate_boundary(a, b, t) for a, b in zip(self.parts, other.parts)))


@dataclass
class RodGroup(RodModel):
    parts: tuple = ()  # the cables' own models
    node_start: tuple = ()  # per cable: index of its first node in the joined arrays
    rot_map: tuple = ()  # per cable: joined index of each of its rotations
    dof_map: tuple = ()  # per cable: joined index of each of its degrees of freedom
    apart: tuple = ()  # cables that do not meet each other (branches of a harness meet at its junctions)

    def join_states(self, states) -> RodState:
        pos = np.empty((self.n_nodes, 3))
        quat = np.tile(IDENTITY, (self.n_rotations, 1))
        for part, start, rots, state in zip(self.parts, self.node_start, self.rot_map, states):
            pos[start : start + part.n_nodes] = state.positions + (part.origin - self.origin)
            quat[rots] = state.quats
        return RodState(pos, quat)

    def split_state(self, state: RodState) -> list:
        return [
            RodState(
                state.positions[start : start + part.n_nodes] - (part.origin - self.origin), state.quats[rots].copy()
            )
            for part, start, rots in zip(self.parts, self.node_start, self.rot_map)
        ]

    def _write_part(self, state: RodState, index: int, part_state: RodState) -> None:
        part, start = self.parts[index], self.node_start[index]
        state.positions[start : start + part.n_nodes] = part_state.positions + (part.origin - self.origin)
        state.quats[self.rot_map[index]] = part_state.quats

    def apply_boundary(self, state: RodState, boundary: GroupBoundary) -> None:
        for index, (part, part_state) in enumerate(zip(self.parts, self.split_state(state))):
            apply_boundary(part, part_state, boundary.parts[index])
            self._write_part(state, index, part_state)

    def part_number(self, index: int) -> int:
        """The number of cable ``index`` in ``node_part``: from APART_PARTS on for those ``apart``
        (pair_search.find_pairs pairs no two of those)."""
        return APART_PARTS + index if index in self.apart else index

    def node_part(self) -> np.ndarray:
        numbers = [np.full(p.n_nodes, self.part_number(k), dtype=np.int64) for k, p in enumerate(self.parts)]
        return np.concatenate(numbers)


def join_models(parts, states, apart=()) -> RodGroup:
    """The group of ``parts`` (RodModels) in this order; ``states`` give the links' lengths (a link
    has no stiffness, but its length must be nonzero for the strain arithmetic); ``apart``: indices of
    parts that do not meet each other in contact."""
    origin = parts[0].origin
    n_nodes = sum(p.n_nodes for p in parts)
    n_seg_rots = n_nodes - 1  # one rotation per segment, links included
    node_start, rot_map, dof_map = [], [], []
    node_dof = np.empty(n_nodes, dtype=np.int64)
    rest_len, stretch, node_s, node_force, dof_tol, fixed = [], [], [], [], [], []
    joint_a, joint_b, joint_len, bend = [], [], [], []
    bend_rest = []
    frame_rots = n_seg_rots
    dof = 0
    link_rot_dof = []
    for k, (part, state) in enumerate(zip(parts, states)):
        n0 = sum(p.n_nodes for p in parts[:k])
        node_start.append(n0)
        rots = np.empty(part.n_rotations, dtype=np.int64)
        rots[: part.n_segments] = n0 + np.arange(part.n_segments)
        n_frames = part.n_rotations - part.n_segments
        rots[part.n_segments :] = frame_rots + np.arange(n_frames)
        frame_rots += n_frames
        rot_map.append(rots)
        dof_map.append(dof + np.arange(part.n_dof))
        node_dof[n0 : n0 + part.n_nodes] = dof + part.node_dof
        fixed.append(part.fixed)
        dof_tol.append(part.dof_tol)
        dof += part.n_dof
        rest_len.append(part.rest_len)
        stretch.append(part.stretch_stiff)
        node_s.append(part.node_s)
        node_force.append(part.node_force)
        joint_a.append(rots[part.joint_a])
        joint_b.append(rots[part.joint_b])
        joint_len.append(part.joint_len)
        bend.append(part.bend_stiff)
        bend_rest.append(part.bend_rest)
        if k + 1 < len(parts):
            # the link to the next cable: its rotation's dofs follow this cable's, all fixed
            gap = (states[k + 1].positions[0] + parts[k + 1].origin) - (state.positions[-1] + part.origin)
            rest_len.append(np.array([max(float(np.linalg.norm(gap)), 1e-3)]))
            stretch.append(np.zeros((1, 3)))
            link_rot_dof.append(dof)
            fixed.append(np.ones(3, dtype=np.uint8))
            dof_tol.append(np.ones(3))
            dof += 3
    n_rots = frame_rots
    rot_dof = np.empty(n_rots, dtype=np.int64)
    rot_couple = np.zeros((n_rots, 3))
    for k, part in enumerate(parts):
        rot_dof[rot_map[k]] = dof_map[k][part.rot_dof]
        rot_couple[rot_map[k]] = part.rot_couple
        if k + 1 < len(parts):
            rot_dof[node_start[k] + part.n_nodes - 1] = link_rot_dof[k]
    rest = np.concatenate(rest_len)
    # half bandwidth: the parts' own (every segment element (x_i, theta_i, x_i+1) and joint in the band).
    # The links have no element (rod_energy skips them): spanning the first cable's end frame, the link
    # and the next cable's start frame, one would widen the band from 8 to 14.
    bw = max(p.bw for p in parts)
    return RodGroup(
        cable=None,
        origin=origin.copy(),
        node_s=np.concatenate(node_s),
        rest_len=rest,
        stretch_stiff=np.concatenate(stretch),
        joint_a=np.concatenate(joint_a),
        joint_b=np.concatenate(joint_b),
        joint_len=np.concatenate(joint_len),
        bend_stiff=np.concatenate(bend),
        bend_rest=np.concatenate(bend_rest),
        node_dof=node_dof,
        rot_dof=rot_dof,
        n_dof=dof,
        bw=bw,
        fixed=np.concatenate(fixed),
        node_force=np.concatenate(node_force),
        rot_couple=rot_couple,
        dof_tol=np.concatenate(dof_tol),
        force_scale=max(p.force_scale for p in parts),
        start_frame=-1,
        end_frame=-1,
        clip_nodes=(),
        clip_rots=(),
        clip_rot_mask=(),
        parts=tuple(parts),
        node_start=tuple(node_start),
        rot_map=tuple(rot_map),
        dof_map=tuple(dof_map),
        apart=tuple(apart),
    )


@dataclass
class GroupInteractions(Interactions):
    """The interactions of a group's cables, joined. Contact stiffness is the stiffest cable's
    (a pair between two cables is one spring), before any stiffening; obstacles are the static ones
    and the cables outside the group; friction between the group's cables is not modelled (as within
    one cable), friction against obstacles is each node's own."""

    members: tuple = field(default_factory=tuple)

    def __post_init__(self):
        if self.stiffness <= 0.0:
            # Not the members' own, which their solves alone may have stiffened (one cable pressed
            # into frozen neighbours had it raised a hundredfold): a group starts afresh and stiffens
            # itself where its penetration needs it. With the hundredfold springs (1e7 N/m against a
            # force tolerance of micro-newtons) Newton made no progress at all on a pile of ten crossed
            # cables (energy unchanged over 500 iterations, residual 7000 times the tolerance); at
            # the base stiffness it crawled to the equilibrium in about 900.
            self.stiffness = max(m.base_stiffness for m in self.members)
        if self.friction_state is None:
            states = [m.friction_state for m in self.members]
            self.friction_state = FrictionState(
                *(
                    np.concatenate([getattr(s, f) for s in states])
                    for f in ("active", "normal", "force", "anchor", "sliding")
                )
            )

    def split_friction(self) -> list:
        """The joined friction state cut back into the cables'."""
        out = []
        for part, start in zip(self.model.parts, self.model.node_start):
            fs = self.friction_state
            sl = slice(start, start + part.n_nodes)
            out.append(
                FrictionState(
                    fs.active[sl].copy(),
                    fs.normal[sl].copy(),
                    fs.force[sl].copy(),
                    fs.anchor[sl].copy(),
                    fs.sliding[sl].copy(),
                )
            )
        return out

    def stiffen(self, factor: float) -> None:
        super().stiffen(factor)
        for m in self.members:
            m.stiffen(factor)

    @property
    def base_stiffness(self) -> float:
        return max(m.base_stiffness for m in self.members)

    # A group's interactions live for one step, over which its members' geometry is fixed: what is
    # derived from them is computed once (asked for some 200 times per step of ten cables, 1 ms).
    @cached_property
    def radius(self) -> float:
        return min(m.radius for m in self.members)  # the strictest penetration and stick tolerances

    @cached_property
    def node_radius(self) -> np.ndarray:
        return np.concatenate([m.node_radius for m in self.members])

    @cached_property
    def node_part(self) -> np.ndarray:
        return self.model.node_part()

    @cached_property
    def self_gap(self) -> int:
        return max(m.self_gap for m in self.members)

    @cached_property
    def node_lengths(self) -> np.ndarray:
        return np.concatenate([m.node_lengths for m in self.members])

    @cached_property
    def reach(self) -> float:
        return max(m.reach for m in self.members)

    def _mounts(self, boundary: GroupBoundary):
        group = self.model
        out = [[] for _ in range(9)]
        for k, (m, b) in enumerate(zip(self.members, boundary.parts)):
            sl_point, sl_axis, sl_k, cc_node, cc_rot, cc_centre, cc_quat, cc_K, _ = m._mounts(b)
            shift = m.model.origin - group.origin
            for slot, value in enumerate(
                (
                    sl_point + shift,
                    sl_axis,
                    sl_k,
                    cc_node + group.node_start[k],
                    group.rot_map[k][cc_rot],
                    cc_centre + shift,
                    cc_quat,
                    cc_K,
                    np.full(len(sl_point), group.part_number(k), dtype=np.int64),
                )
            ):
                out[slot].append(value)
        return tuple(np.concatenate(v) for v in out)

    def dof_tolerance(self, boundary: GroupBoundary) -> np.ndarray:
        tol = np.ones(self.model.n_dof)
        for m, b, dofs in zip(self.members, boundary.parts, self.model.dof_map):
            tol[dofs] = m.dof_tolerance(b)
        return tol
