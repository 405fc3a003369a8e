# SPDX-License-Identifier: GPL-3.0-or-later
"""The arrays the compiled kernels take, as named tuples: the obstacles (ObstacleArrays, built by
obstacles.ObstacleSet), the contact settings (ContactParameters) and everything besides the rod in a
cable's energy (InteractionArrays, built by interactions.Interactions and rod_group).

numba's on-disk cache names a named tuple's class by its module when it stores a kernel's signature.
The solver is imported as ``solver_core`` on the command line and as ``bl_ext.<repository>.cable_harness.
solver_core`` inside Blender, and a process may hold both (the Blender tests compare the two); a
signature stored by one must be readable by the other. So the classes belong to one module of a fixed
name, SHARED_MODULE, registered by whichever copy is imported first and reused by the other.
"""

import sys
import types
from typing import NamedTuple

import numpy as np

SHARED_MODULE = "cable_harness_kernel_arrays"


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


_shared = sys.modules.get(SHARED_MODULE)
if _shared is None:
    _shared = types.ModuleType(SHARED_MODULE, __doc__)
    for _cls in (ObstacleArrays, ContactParameters, InteractionArrays):
        _cls.__module__ = SHARED_MODULE
        setattr(_shared, _cls.__name__, _cls)
    sys.modules[SHARED_MODULE] = _shared
ObstacleArrays = _shared.ObstacleArrays
ContactParameters = _shared.ContactParameters
InteractionArrays = _shared.InteractionArrays
