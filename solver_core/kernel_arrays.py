# SPDX-License-Identifier: GPL-3.0-or-later
"""The arrays the compiled kernels take, as named tuples: a rod's model (RodArrays, built by
rod_model.RodModel.arrays), the obstacles (ObstacleArrays, built by obstacles.ObstacleSet), the contact
settings (ContactParameters), everything besides the rod in a cable's energy (InteractionArrays, built
by interactions.Interactions and rod_group), a Newton solve's candidate contact pairs with their
per-pair buffers (PairBuffers), the pairs one solve hands the next (CandidatePairs), what a solve
returns (NewtonResult), compliant clips (CompliantClips), the low-rank terms beside a banded Newton
matrix (LowRankCoupling) and a static condensation's layout and factors (CondensedFactors).

numba's on-disk cache names a named tuple's class by its module when it stores a kernel's signature.
The solver is imported as ``solver_core`` on the command line and as ``bl_ext.<repository>.cable_harness.
solver_core`` inside Blender, and a process may hold both (the Blender tests compare the two); a
signature stored by one must be readable by the other. So the classes belong to one module of a fixed
name, SHARED_MODULE, registered by whichever copy is imported first and reused by the other. The name
carries a digest of the classes' fields: a copy of another version in the same process (an extension
updated without restarting Blender) registers its own module rather than finding classes of other
fields under the same names.
"""

import hashlib
import sys
import types
from typing import NamedTuple

import numpy as np


class RodArrays(NamedTuple):
    """A rod's degrees of freedom, rest shape, stiffness and loads, as the energy kernels read them
    (rod_energy.py; the fields of rod_model.RodModel of the same names)."""

    node_dof: np.ndarray  # (nodes,) int64: the first of each node's three position dofs
    rot_dof: np.ndarray  # (segments,) int64: the first of each segment frame's three rotation dofs
    fixed: np.ndarray  # (dofs,) bool: held by a connector, clip or junction
    bw: int  # half bandwidth of the Hessian in this numbering
    rest_len: np.ndarray  # (segments,) [m]
    stretch_stiff: np.ndarray  # (segments, 3) GA, GA, EA [N]
    joint_a: np.ndarray  # (joints,) int64: the segments each joint bends between
    joint_b: np.ndarray
    joint_len: np.ndarray  # (joints,) [m]
    bend_stiff: np.ndarray  # (joints, 3) EI, EI, GJ [N m^2]
    bend_rest: np.ndarray  # (joints, 3) the unstressed relative rotation
    node_force: np.ndarray  # (nodes, 3) weight and loads [N]
    rot_couple: np.ndarray  # (segments, 3) dead couples, world frame [N m]


class PairBuffers(NamedTuple):
    """A Newton solve's candidate contact pairs (pair_search.find_pairs) and, per pair, what its
    iterations keep: the gap (or a lower bound of it, step_limits.lower_gaps), the closest points'
    parameters t (on the cable) and u (on the other side), normal and point, force, whether the gap
    was evaluated at the current positions (fresh), how far a step moves it (moves), how far a step
    carries it towards its primitive (approach), and the gradient of a crossing's ends (end_grad)."""

    kind: np.ndarray  # (pairs,) int64: pair_geometry's PLANE, TRI_NODE, ... SELF_SEG
    elem: np.ndarray  # (pairs,) int64: the cable's node or segment
    prim: np.ndarray  # (pairs,) int64: the primitive (or the cable's other segment)
    nodes: np.ndarray  # (pairs, 4) int64: the nodes each gap depends on (pair_geometry.pair_nodes)
    gap: np.ndarray  # (pairs,) [m]
    t: np.ndarray
    normal: np.ndarray  # (pairs, 3)
    point: np.ndarray  # (pairs, 3)
    u: np.ndarray
    force: np.ndarray  # (pairs, 3)
    fresh: np.ndarray  # (pairs,) bool
    moves: np.ndarray
    approach: np.ndarray
    end_grad: np.ndarray  # (pairs, 12)


class CandidatePairs(NamedTuple):
    """Candidate contact pairs handed from one Newton solve to the next against the same obstacles:
    where they were searched (inf: nowhere, search at once), the pairs, and lower bounds of their
    gaps (gap_from, empty: none) at the positions ``gaps_at``."""

    searched_at: np.ndarray  # (nodes, 3)
    kind: np.ndarray  # (pairs,) int64
    elem: np.ndarray
    prim: np.ndarray
    gap_from: np.ndarray  # (pairs,) or (0,)
    gaps_at: np.ndarray  # (nodes, 3) or (0, 3)


class NewtonResult(NamedTuple):
    """What newton.minimise_rod_energy returns: how it ended (newton.CONVERGED ...), after how many
    iterations, the residual over its tolerance, the energy at the last iterate, the deepest
    penetration of a candidate pair, the candidate pairs for the next solve, and the band Cholesky
    factor of the free block of H + shift D its stability test formed at the final state (fixed rows
    the identity; stability.factor_shifted), or an empty one where none was formed alone (not
    converged, not tested, or coupled beside the band by self-contact)."""

    status: int
    iterations: int
    ratio: float
    energy: float
    depth: float
    pairs: CandidatePairs
    factor: np.ndarray


class ObstacleArrays(NamedTuple):
    """World coordinates (or relative to a cable's origin, interactions._shifted_obstacles), metres."""

    plane_point: np.ndarray  # (planes, 3)
    plane_normal: np.ndarray  # (planes, 3), unit
    sphere_centre: np.ndarray  # (spheres, 3)
    sphere_radius: np.ndarray  # (spheres,)
    triangles: np.ndarray  # (triangles, 3, 3)
    triangle_owner: np.ndarray  # (triangles,) index of the obstacle a triangle belongs to
    tree_min: np.ndarray  # the triangle tree (bvh.py): node boxes, children, leaf ranges, order
    tree_max: np.ndarray
    tree_left: np.ndarray
    tree_right: np.ndarray
    tree_start: np.ndarray
    tree_count: np.ndarray
    tree_order: np.ndarray
    capsule_a: np.ndarray  # (capsules, 3) other cables' segments, from a to b
    capsule_b: np.ndarray
    capsule_radius: np.ndarray
    triangle_sharp: np.ndarray  # (triangles,) bit k: edge k (ab, bc, ca) is sharp or open
    triangle_fold: np.ndarray  # (triangles, 3) tan(fold / 2) per counted edge (obstacles.edge_folds)


class ContactParameters(NamedTuple):
    radius: float  # the cable's radius [m]
    stiffness: float  # contact stiffness per unit cable length [N/m^2]
    reach: float  # how far from a primitive candidate pairs are searched [m]
    self_gap: int  # nodes along the cable within which it does not meet itself
    stick_width: float  # friction's Huber width [m]
    uses_contact: bool


class InteractionArrays(NamedTuple):
    obstacles: ObstacleArrays
    contact: ContactParameters
    node_len: np.ndarray  # (nodes,) length of cable each node stands for [m]
    seg_len: np.ndarray  # (segments,) rest lengths [m]
    fr_active: np.ndarray  # friction (contact_energy.friction_energy): per node, lagged
    fr_normal: np.ndarray
    fr_force: np.ndarray
    fr_anchor: np.ndarray
    fr_mu: np.ndarray
    sl_point: np.ndarray  # sliding clips: two end planes each (mounts.sliding_energy)
    sl_axis: np.ndarray
    sl_stiff: np.ndarray
    cc_node: np.ndarray  # compliant clips (mounts.compliant_energy)
    cc_rot: np.ndarray
    cc_centre: np.ndarray
    cc_quat: np.ndarray
    cc_K: np.ndarray
    sl_part: np.ndarray  # the cable (of a group) each sliding clip plane holds
    node_radius: np.ndarray  # (nodes,) [m]
    node_part: np.ndarray  # (nodes,) the cable of a group each node belongs to


class CompliantClips(NamedTuple):
    """Compliant clips (mounts.compliant_energy; InteractionArrays' cc_ fields): per clip the node and
    the frame's rotation it holds, the clip frame (centre, orientation) and its stiffness in that frame."""

    node: np.ndarray  # (clips,) int64
    rot: np.ndarray  # (clips,) int64
    centre: np.ndarray  # (clips, 3) relative to the model origin [m]
    quat: np.ndarray  # (clips, 4) the clip frame, a unit quaternion
    K: np.ndarray  # (clips, 6, 6) translation x, y, z, then rotation x, y, z, in the clip frame


class LowRankCoupling(NamedTuple):
    """The low-rank terms of a Newton matrix H = B + U C U^T beside its band B (banded.low_rank_factor;
    low_rank_coupling.self_coupling builds them), with the buffers of the capacitance matrix's LU."""

    Ut: np.ndarray  # (rows, dofs) U^T: pairs of rows coupled by k_c first, then rows of whole terms
    k_c: np.ndarray  # (pairs,) C = k_c [[0, 1], [1, 0]] per pair of rows
    k_s: np.ndarray  # (rows after the pairs,) C = k_s per row of a whole term k v v^T
    S: np.ndarray  # (rows, rows) the capacitance matrix's LU (written)
    piv: np.ndarray  # (rows,) int64: its pivots (written)
    spans: np.ndarray  # (rows, 4) int64: each row's nonzero columns, in up to two pieces


class CondensedFactors(NamedTuple):
    """A static condensation onto held dofs (end_stiffness.condense), in the order it condenses in: the
    layout, and the factors it writes."""

    fixed: np.ndarray  # (dofs,) bool
    held: np.ndarray  # (6 per end,) int64
    reverse: bool  # the dofs in reversed order (end_stiffness.Condensation)
    S: np.ndarray  # (held, held) H_hh - H_hf H_ff^-1 H_fh
    factor: np.ndarray  # (dofs, bw + 1) L, the Cholesky factor of the free block H_ff
    Y: np.ndarray  # (dofs, held) L^-1 H_fh
    first: np.ndarray  # (held,) int64: the row before which each column of Y vanishes


_CLASSES = (
    RodArrays,
    PairBuffers,
    CandidatePairs,
    NewtonResult,
    ObstacleArrays,
    ContactParameters,
    InteractionArrays,
    CompliantClips,
    LowRankCoupling,
    CondensedFactors,
)
_LAYOUT = ";".join(f"{c.__name__}:{','.join(c._fields)}" for c in _CLASSES)
SHARED_MODULE = "cable_harness_kernel_arrays_" + hashlib.sha256(_LAYOUT.encode()).hexdigest()[:12]

_shared = sys.modules.get(SHARED_MODULE)
if _shared is None:
    _shared = types.ModuleType(SHARED_MODULE, __doc__)
    for _cls in _CLASSES:
        _cls.__module__ = SHARED_MODULE
        setattr(_shared, _cls.__name__, _cls)
    sys.modules[SHARED_MODULE] = _shared
RodArrays = _shared.RodArrays
PairBuffers = _shared.PairBuffers
CandidatePairs = _shared.CandidatePairs
NewtonResult = _shared.NewtonResult
ObstacleArrays = _shared.ObstacleArrays
ContactParameters = _shared.ContactParameters
InteractionArrays = _shared.InteractionArrays
CompliantClips = _shared.CompliantClips
LowRankCoupling = _shared.LowRankCoupling
CondensedFactors = _shared.CondensedFactors
