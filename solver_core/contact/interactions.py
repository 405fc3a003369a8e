# SPDX-License-Identifier: GPL-3.0-or-later
"""Everything besides the rod itself that enters a cable's energy: contact, friction, mounts.

``Interactions`` gathers, for one cable and one boundary, the arrays the compiled minimiser takes
(``kernel_arrays``) and keeps the friction state and candidate pairs between solves; it reads
contact, friction and clip results back through ``contact_read_outs.ContactReadOuts`` and checks
depths and crossings through ``penetration_checks.PenetrationChecks``, its bases. ``FrictionState``
is the path memory of Coulomb friction: where each node stuck, whether it slides, the normal force.
"""

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..kernel_arrays import ContactParameters, InteractionArrays, ObstacleArrays
from ..maths.rotations import frame_from_tangent, matrix_to_quat
from ..rod.rod_model import Boundary, RodModel, clip_stiffness_matrix
from ..rod.rod_state import RodState
from .contact import NODE_KINDS
from .contact_energy import contact_energy
from .contact_read_outs import ContactReadOuts, evaluated_pairs
from .obstacles import ObstacleSet
from .pair_search import find_pairs
from .penetration_checks import PenetrationChecks

SLIDING_STIFFNESS_FACTOR = 100.0  # sliding-clip penalty relative to the contact stiffness


class PairCandidates(NamedTuple):
    """Candidate contact pairs of a Newton solve (newton.minimise_rod_energy), kept for the next one
    against the same obstacles: where they were searched, the pairs (kind, element, primitive), and
    lower bounds of their gaps at the positions ``gaps_at`` (the solve's final ones)."""

    obstacles: tuple  # the kernels' obstacle arrays they were searched in (compared by identity)
    searched_at: np.ndarray
    kind: np.ndarray
    elem: np.ndarray
    prim: np.ndarray
    gap_from: np.ndarray
    gaps_at: np.ndarray


@dataclass
class FrictionState:
    """Per node: in contact, contact normal, normal force, anchor (where it stuck), sliding flag."""

    active: np.ndarray
    normal: np.ndarray
    force: np.ndarray
    anchor: np.ndarray
    sliding: np.ndarray

    @staticmethod
    def empty(n_nodes: int) -> "FrictionState":
        return FrictionState(
            np.zeros(n_nodes, dtype=np.uint8),
            np.zeros((n_nodes, 3)),
            np.zeros(n_nodes),
            np.zeros((n_nodes, 3)),
            np.zeros(n_nodes, dtype=bool),
        )

    def copy(self) -> "FrictionState":
        return FrictionState(
            self.active.copy(), self.normal.copy(), self.force.copy(), self.anchor.copy(), self.sliding.copy()
        )


@dataclass
class ContactSettings:
    friction_static: float = 0.0
    friction_dynamic: float = 0.0
    cable_cable: bool = False

    @property
    def friction(self) -> bool:
        return self.friction_static > 0.0 or self.friction_dynamic > 0.0


class InertiaSprings(NamedTuple):
    """The inertia of a time step as springs from nodes to points (dynamics.py), entered as translational
    compliant clips (mounts.compliant_energy): node, rotation numbered next to it, centre (relative to
    the model origin), 6x6 stiffness with only its translational block set."""

    node: np.ndarray
    rot: np.ndarray
    centre: np.ndarray
    K: np.ndarray


def _same_key(a: tuple, b: tuple) -> bool:
    """Whether two keys of Interactions.kernel_arrays are the same: obstacle arrays and model by
    identity, settings and stiffness by value."""
    return a[0] is b[0] and a[1] is b[1] and a[2] == b[2] and a[3] == b[3]


# the mounts of a cable without sliding or compliant clips (nothing is written into empty arrays)
_NO_MOUNTS = (
    np.zeros((0, 3)),
    np.zeros((0, 3)),
    np.zeros(0),
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros((0, 3)),
    np.zeros((0, 4)),
    np.zeros((0, 6, 6)),
    np.zeros(0, dtype=np.int64),
)
# nor friction
_NO_FRICTION = (np.zeros(0, dtype=np.uint8), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), np.zeros(0))


@dataclass
class Interactions(ContactReadOuts, PenetrationChecks):
    model: RodModel
    obstacles: ObstacleSet
    settings: ContactSettings = field(default_factory=ContactSettings)
    stiffness: float = 0.0  # contact stiffness per unit cable length [N/m^2]
    friction_state: FrictionState | None = None
    inertia: InertiaSprings | None = None  # a time step's inertia (dynamics.py); None when quasi-static

    def __post_init__(self):
        if self.stiffness <= 0.0:
            self.stiffness = self.base_stiffness
        if self.friction_state is None:
            self.friction_state = FrictionState.empty(self.model.n_nodes)

    @property
    def base_stiffness(self) -> float:
        """The contact stiffness before any stiffening: a line contact over the segment, stiffness
        ~ E l, the cable's own modulus."""
        area = np.pi * self.model.cable.diameter**2 / 4.0
        return self.model.cable.section.stretch_stiffness / area

    @property
    def radius(self) -> float:
        return 0.5 * self.model.cable.diameter

    def stiffen(self, factor: float) -> None:
        self.stiffness *= factor

    @property
    def node_radius(self) -> np.ndarray:
        return np.full(self.model.n_nodes, self.radius)

    @property
    def node_part(self) -> np.ndarray:
        """The cable of each node (all 0 here; a group of cables numbers them, rod_group.py)."""
        return np.zeros(self.model.n_nodes, dtype=np.int64)

    @property
    def uses_contact(self) -> bool:
        return not self.obstacles.empty or self.settings.cable_cable

    # Self-contact (a cable against its own segments, both legs moving): the blocks coupling the two
    # legs lie outside the band and enter each Newton step as a low-rank (Woodbury) update.
    SELF_CONTACT = True

    @property
    def self_gap(self) -> int:
        """Segments this close along the cable never meet (neighbours bend, they do not collide);
        0 turns self-contact off. A loop needs about pi * diameter of cable to close on itself."""
        if not (self.settings.cable_cable and self.SELF_CONTACT):
            return 0
        return max(3, int(np.ceil(np.pi * self.model.cable.diameter / float(self.model.rest_len.min()))) + 1)

    @property
    def node_lengths(self) -> np.ndarray:
        r = self.model.rest_len
        out = np.zeros(self.model.n_nodes)
        out[:-1] += 0.5 * r
        out[1:] += 0.5 * r
        return out

    @property
    def reach(self) -> float:
        """How far one Newton step may carry a node; candidate pairs are searched twice as far."""
        return max(self.radius, 0.5 * float(self.model.rest_len.max()))

    @property
    def stick_width(self) -> float:
        return 0.01 * self.radius

    # -------------------------------------------------------------- to the kernels

    def _has_mounts(self) -> bool:
        return any(c.kind == "sliding" or c.stiffness is not None for c in self.model.cable.clips)

    def _mounts(self, boundary: Boundary):
        """The clips' arrays (kernel_arrays.InteractionArrays), with a time step's inertia springs after
        the compliant clips (mount_reactions reads the clips' entries by their order)."""
        own = self._clip_mounts(boundary)
        springs = self.inertia
        if springs is None:
            return own
        sl_point, sl_axis, sl_k, cc_node, cc_rot, cc_centre, cc_quat, cc_K, sl_part = own
        unit = np.zeros((springs.node.shape[0], 4))
        unit[:, 0] = 1.0
        return (
            sl_point,
            sl_axis,
            sl_k,
            np.concatenate([cc_node, springs.node]),
            np.concatenate([cc_rot, springs.rot]),
            np.concatenate([cc_centre, springs.centre]),
            np.concatenate([cc_quat, unit]),
            np.concatenate([cc_K, springs.K]),
            sl_part,
        )

    def _clip_mounts(self, boundary: Boundary):
        if not self._has_mounts():
            return _NO_MOUNTS
        model = self.model
        o = model.origin
        sl_point, sl_axis = [], []
        cc_node, cc_rot, cc_centre, cc_quat, cc_K = [], [], [], [], []
        for index, (clip, frame) in enumerate(zip(model.cable.clips, boundary.clips)):
            if clip.kind == "sliding":
                half = max(0.5 * clip.length, 0.5 * float(model.rest_len.min()))
                for sign in (-1.0, 1.0):
                    sl_point.append(frame.position - o + sign * half * frame.tangent)
                    sl_axis.append(frame.tangent)
            elif clip.stiffness is not None:
                cc_node.append(model.clip_nodes[index][0])
                cc_rot.append(model.clip_rots[index][0])
                cc_centre.append(frame.position - o)
                cc_quat.append(matrix_to_quat(frame_from_tangent(frame.tangent, frame.normal)))
                cc_K.append(clip_stiffness_matrix(clip))
        k_slide = SLIDING_STIFFNESS_FACTOR * self.stiffness * float(model.rest_len.mean())
        points = np.array(sl_point, dtype=np.float64).reshape(-1, 3)
        return (
            points,
            np.array(sl_axis, dtype=np.float64).reshape(-1, 3),
            np.full(len(sl_point), k_slide),
            np.array(cc_node, dtype=np.int64),
            np.array(cc_rot, dtype=np.int64),
            np.array(cc_centre, dtype=np.float64).reshape(-1, 3),
            np.array(cc_quat, dtype=np.float64).reshape(-1, 4),
            np.array(cc_K, dtype=np.float64).reshape(-1, 6, 6),
            np.zeros(len(sl_point), dtype=np.int64),
        )

    def kernel_arrays(self, boundary: Boundary) -> InteractionArrays:
        model = self.model
        obstacles = self._shifted_obstacles()
        # Without clips held by energies, inertia springs or friction in play, the arrays depend on the
        # obstacles, the model, the settings and the stiffness alone: kept for the next solve (a
        # junction's trial solves every branch afresh; building them took a tenth of a 10-segment
        # branch's solve)
        key = (obstacles, model, self.settings, self.stiffness) if self._plain() else None
        kept = self.__dict__.get("_kept_arrays")
        if key is not None and kept is not None and _same_key(kept[0], key):
            return kept[1]
        arrays = self._build_kernel_arrays(boundary, obstacles)
        if key is not None:
            self.__dict__["_kept_arrays"] = (key, arrays)
        return arrays

    def _plain(self) -> bool:
        if type(self) is not Interactions or self.inertia is not None or self._has_mounts():
            return False
        return not (self.settings.friction and self.friction_state.active.any())

    def _build_kernel_arrays(self, boundary: Boundary, obstacles) -> InteractionArrays:
        model = self.model
        fs = self.friction_state
        use_friction = self.settings.friction and fs.active.any()
        mu = np.where(fs.sliding, self.settings.friction_dynamic, self.settings.friction_static)
        friction = (fs.active, fs.normal, fs.force, fs.anchor - model.origin, mu) if use_friction else _NO_FRICTION
        return self._arrays(obstacles, self.stiffness, friction, self._mounts(boundary))

    def contact_arrays(self, stiffness: float | None = None) -> InteractionArrays:
        """The kernel arrays of contact alone, without friction or mounts (all contact_energy reads), at the
        contact stiffness ``stiffness`` (default: this one's). Kept for the next call as kernel_arrays keeps
        its own: building them took a quarter of a contact report's evaluation."""
        stiffness = stiffness or self.stiffness
        obstacles = self._shifted_obstacles()
        key = (obstacles, self.model, self.settings, stiffness)
        kept = self.__dict__.get("_kept_contact_arrays")
        if kept is not None and _same_key(kept[0], key):
            return kept[1]
        arrays = self._arrays(obstacles, stiffness, _NO_FRICTION, _NO_MOUNTS)
        self.__dict__["_kept_contact_arrays"] = (key, arrays)
        return arrays

    def _arrays(self, obstacles, stiffness: float, friction: tuple, mounts: tuple) -> InteractionArrays:
        contact = ContactParameters(
            float(self.radius),
            float(stiffness),
            float(self.reach),
            int(self.self_gap),
            float(self.stick_width),
            bool(self.uses_contact),
        )
        return InteractionArrays(
            obstacles,
            contact,
            np.asarray(self.node_lengths, dtype=np.float64),
            self.model.rest_len.copy(),
            *friction,
            *mounts,
            self.node_radius,
            self.node_part,
        )

    def obstacle_arrays(self) -> ObstacleArrays:
        """The obstacles relative to the model origin, as the rod's positions are."""
        return self._shifted_obstacles()

    def _shifted_obstacles(self) -> ObstacleArrays:
        """Obstacle arrays relative to the model origin, as the rod's positions are (kept while the
        obstacle set is the same object: shifting a big mesh per call cost more than a solve step)."""
        cached = self.__dict__.get("_shifted")
        if cached is not None and cached[0] is self.obstacles and np.array_equal(cached[1], self.model.origin):
            return cached[2]
        arrays = self.obstacles.kernel_arrays()
        o = self.model.origin
        shifted = arrays._replace(
            plane_point=arrays.plane_point - o,
            sphere_centre=arrays.sphere_centre - o,
            triangles=arrays.triangles - o,
            tree_min=arrays.tree_min - o,
            tree_max=arrays.tree_max - o,
            capsule_a=arrays.capsule_a - o,
            capsule_b=arrays.capsule_b - o,
        )
        self.__dict__["_shifted"] = (self.obstacles, o.copy(), shifted)
        return shifted

    def dof_tolerance(self, boundary: Boundary) -> np.ndarray:
        """The model's residual tolerances, raised to the round-off floor of the interactions' own
        stiffnesses: a spring of stiffness k cannot resolve forces below ~ eps k L."""
        model = self.model
        eps = np.finfo(float).eps
        k_force, k_moment = 0.0, 0.0
        if self.uses_contact:
            k_force = self.stiffness * float(self.node_lengths.max())
        mounts = self._mounts(boundary)
        if len(mounts[2]):
            k_force = max(k_force, float(mounts[2].max()))
        if len(mounts[7]):
            K = mounts[7]
            k_force = max(k_force, float(np.abs(K[:, :3, :3]).max()))
            k_moment = float(np.abs(K[:, 3:, 3:]).max())
        tol = model.dof_tol.copy()
        if k_force == 0.0 and k_moment == 0.0:
            return tol
        length = model.cable.length
        force_floor = 64.0 * eps * k_force * length
        moment_floor = 64.0 * eps * (k_force * length * length + k_moment)
        forces = model.node_dof[:, None] + np.arange(3)
        tol[forces] = np.maximum(tol[forces], force_floor)
        moments = model.rot_dof[:, None] + np.arange(3)
        tol[moments] = np.maximum(tol[moments], moment_floor)
        return tol

    # -------------------------------------------------------------- back from the kernels

    def _evaluate_pairs(self, state: RodState, stiffness: float | None = None):
        """Every touching pair at ``state``: kind, element, primitive, gap, t, normal, point, u, force.

        The last evaluation is kept: a solve checks the deepest penetration of its final state and the
        contact report then asks for the same state's pairs. Only touching pairs are searched: every
        caller wants depths or forces, and what a pair carries depends on touching pairs alone (a
        segment pair's ends, a facet pair's node), so a wider search would change nothing but its time."""
        stiffness = stiffness or self.stiffness
        kept = self.__dict__.get("_evaluated")
        if (
            kept is not None
            and kept[0] is self.obstacles
            and kept[1] == stiffness
            and np.array_equal(kept[2], state.positions)
        ):
            return kept[3]
        obstacles = self._shifted_obstacles()
        candidates = self._touching_candidates(state, obstacles)
        if candidates is None:
            candidates = find_pairs(state.positions, self.node_radius, self.node_part, 0.0, obstacles, self.self_gap)
        kind, elem, prim = candidates
        n = len(kind)
        gap, t, normal, point = np.empty(n), np.empty(n), np.empty((n, 3)), np.empty((n, 3))
        force = np.empty((n, 3))
        u = np.empty(n)
        energy = contact_energy(
            state.positions,
            evaluated_pairs(kind, elem, prim, gap, t, normal, point, u, force),
            self.contact_arrays(stiffness),
            self.model.node_dof,
            np.zeros(1),
            np.zeros((1, 1)),
            0,
            0,
        )
        evaluated = kind, elem, prim, gap, t, normal, point, u, force
        self.__dict__["_evaluated"] = (self.obstacles, stiffness, state.positions.copy(), evaluated, float(energy))
        return evaluated

    def _touching_candidates(self, state: RodState, obstacles: tuple):
        """The pairs that may touch at ``state`` from the candidates of the solve that ended there (those
        whose gap's lower bound is not positive), when those hold every pair within reach of it (see
        pairs_depend_on_search); else None. Pairs of one element stay together, in the search's order.
        It saves a search per report."""
        kept = self.candidates
        if (
            kept is None
            or kept.obstacles is not obstacles
            or not np.array_equal(kept.gaps_at, state.positions)
            or kept.gap_from.shape != kept.kind.shape  # no gap bounds (a solve refined below the floor)
            or self.pairs_depend_on_search(state, 0.0)
        ):
            return None
        may_touch = kept.gap_from <= 0.0
        return kept.kind[may_touch], kept.elem[may_touch], kept.prim[may_touch]

    @property
    def candidates(self) -> PairCandidates | None:
        """The candidate contact pairs of the last solve (equilibrium._minimise), if any."""
        return self.__dict__.get("_candidates")

    def keep_candidates(self, candidates: PairCandidates | None) -> None:
        self.__dict__["_candidates"] = candidates

    def adopt_candidates(self, candidates: PairCandidates) -> None:
        """Candidates found by other interactions against the same obstacles (a group's last step),
        taken as this one's own."""
        self.keep_candidates(candidates._replace(obstacles=self._shifted_obstacles()))

    # -------------------------------------------------------------- friction path memory

    def place_anchors(self, state: RodState) -> None:
        """Nodes touching an obstacle in a placed (initial) state stick where they were placed."""
        if not (self.settings.friction and self.uses_contact):
            return
        fs = self.friction_state
        model = self.model
        obstacles = self._shifted_obstacles()
        kind, elem, prim = find_pairs(
            state.positions, self.node_radius, self.node_part, 0.02 * self.radius, obstacles, self.self_gap
        )
        for k, e in zip(kind, elem):
            for node in (e,) if k in NODE_KINDS else (e, e + 1):
                if not fs.active[node]:
                    fs.active[node] = 1
                    fs.anchor[node] = state.positions[node] + model.origin
                    fs.sliding[node] = False
                    fs.force[node] = 0.0

    def needs_normal_forces(self) -> bool:
        fs = self.friction_state
        return bool(self.settings.friction and (fs.active.astype(bool) & (fs.force <= 0.0)).any())

    def set_normal_forces(self, state: RodState) -> None:
        """Normal forces of anchored nodes from a (frictionless) state, without moving anchors."""
        fs = self.friction_state
        n_force, n_vec = self._normal_forces(state)
        for i in np.flatnonzero(fs.active):
            if n_force[i] > 0.0:
                fs.force[i] = n_force[i]
                fs.normal[i] = n_vec[i] / np.linalg.norm(n_vec[i])

    def update_friction(self, state: RodState, settle: bool) -> float:
        """Normal forces and normals from the current contacts; sliding flags from the stick width.

        A node slides once its tangential offset from its anchor reaches the stick width, i.e. once
        the friction force it needs exceeds the static limit (the force is capped at mu N there).
        With ``settle`` (after a step converged) anchors of sliding nodes follow them, so the next
        step starts from the dynamic force. Returns the largest relative change of normal forces and
        slip states, for the fixed point between normal and friction forces.
        """
        fs = self.friction_state
        model = self.model
        n_force, n_vec = self._normal_forces(state)
        x = state.positions + model.origin
        change = 0.0
        scale = max(float(n_force.max()), 1e-300)
        for i in range(model.n_nodes):
            if n_force[i] <= 0.0:
                fs.active[i] = 0
                fs.sliding[i] = False
                fs.force[i] = 0.0
                continue
            if not fs.active[i]:
                fs.anchor[i] = x[i]  # a new contact sticks where it touched
                fs.sliding[i] = False
            change = max(change, abs(n_force[i] - fs.force[i]) / scale)
            fs.active[i] = 1
            fs.force[i] = n_force[i]
            fs.normal[i] = n_vec[i] / np.linalg.norm(n_vec[i])
            u = x[i] - fs.anchor[i]
            u -= fs.normal[i] * (u @ fs.normal[i])
            mag = float(np.linalg.norm(u))
            was_sliding = fs.sliding[i]
            fs.sliding[i] = mag >= self.stick_width * (1.0 - 1e-6)
            if fs.sliding[i] != was_sliding:
                change = max(change, 1.0)
            if settle and fs.sliding[i]:
                fs.anchor[i] = x[i] - self.stick_width * u / mag
        return change
