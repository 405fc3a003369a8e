# SPDX-License-Identifier: GPL-3.0-or-later
"""cable_harness solver core: quasi-static cable equilibrium with numpy and numba only.

Never imports bpy or mathutils, and only imports itself relatively, so it runs both as the
top-level package ``solver_core`` (CLI, tests, benchmarks) and as a sub-package of the Blender
extension. The names below are its public API: the Blender layer imports nothing else.
"""

from ._jit import CACHE_DIR
from .bundle import bundle_diameter
from .case import (
    CableChange,
    CableSpec,
    Case,
    Clip,
    Dynamics,
    Frame,
    Load,
    SolverSettings,
    load_case,
    parse_case,
    parse_frame,
)
from .case_writer import case_to_dict
from .clearance import clearance_to_triangles
from .dynamics import kinetic_energy
from .equilibrium import SolveReport, solve_equilibrium
from .errors import CaseError
from .harness import Harness
from .junction_spec import JunctionMove
from .materials import PRESETS, SectionStiffness, section_stiffness
from .mounting import DETECT_RADII, cut_zone, mount_radius, points_into
from .obstacles import ObstacleSet, counted_folds, edge_neighbours, sharp_edges
from .results import RESULT_FORMAT
from .rod_model import Boundary, RodModel, build_rod_model
from .rod_state import RodState, initial_state, interpolate_boundary
from .rotations import frame_from_tangent
from .run_case import solve_case
from .sweep import SWEEP_FORMAT, parse_sweep
from .warmup import compiled_kernel_names, kernel_names, kernels_are_warm, warm_up
from .wire_routes import RouteError, WireRoute, trace_wire

__all__ = [
    "Boundary",
    "CACHE_DIR",
    "CableChange",
    "CableSpec",
    "Case",
    "CaseError",
    "DETECT_RADII",
    "Clip",
    "Dynamics",
    "Frame",
    "Harness",
    "JunctionMove",
    "Load",
    "ObstacleSet",
    "PRESETS",
    "RESULT_FORMAT",
    "RodModel",
    "RodState",
    "RouteError",
    "SectionStiffness",
    "SolveReport",
    "SolverSettings",
    "SWEEP_FORMAT",
    "WireRoute",
    "build_rod_model",
    "bundle_diameter",
    "case_to_dict",
    "clearance_to_triangles",
    "frame_from_tangent",
    "initial_state",
    "kinetic_energy",
    "interpolate_boundary",
    "compiled_kernel_names",
    "kernel_names",
    "kernels_are_warm",
    "load_case",
    "parse_case",
    "parse_frame",
    "parse_sweep",
    "section_stiffness",
    "sharp_edges",
    "edge_neighbours",
    "counted_folds",
    "cut_zone",
    "mount_radius",
    "points_into",
    "solve_case",
    "solve_equilibrium",
    "trace_wire",
    "warm_up",
]
