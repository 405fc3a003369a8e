# SPDX-License-Identifier: GPL-3.0-or-later
"""cable_harness solver core: quasi-static cable equilibrium with numpy and numba only.

Never imports bpy or mathutils, and only imports itself relatively, so it runs both as the
top-level package ``solver_core`` (CLI, tests, benchmarks) and as a sub-package of the Blender
extension. The names below are its public API: the Blender layer imports nothing else.
"""

from ._jit import CACHE_DIR
from .contact.clearance import clearance_to_triangles
from .contact.obstacles import ObstacleSet, counted_folds, edge_neighbours, sharp_edges
from .errors import CaseError
from .geometry.mounting import DETECT_RADII, cut_zone, mount_radius, points_into
from .io.calibration import fit_stiffness
from .io.envelope import obj_text, stl_text, swept_envelope
from .io.formboard import board_svg, formboard
from .io.formboard_dxf import board_dxf, dxf_available
from .io.kbl import kbl_text
from .io.kbl_model import kbl_harness
from .io.kbl_read import read_kbl
from .io.run_case import solve_case
from .io.sweep import SWEEP_FORMAT, parse_sweep
from .maths.rotations import frame_from_tangent
from .rod.rod_model import Boundary, RodModel, build_rod_model
from .rod.rod_state import RodState, initial_state, interpolate_boundary
from .session.harness import Harness
from .session.results import RESULT_FORMAT
from .solve.dynamics import kinetic_energy
from .solve.equilibrium import SolveReport, solve_equilibrium
from .specs.bundle import bundle_diameter
from .specs.case import (
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
from .specs.case_writer import case_to_dict
from .specs.junction_spec import JunctionMove
from .specs.material_library import library_text, read_library
from .specs.materials import PRESETS, SectionStiffness, section_stiffness
from .specs.wire_routes import RouteError, WireRoute, trace_wire
from .warmup import compiled_kernel_names, kernel_names, kernels_are_warm, warm_up

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
    "board_dxf",
    "board_svg",
    "dxf_available",
    "build_rod_model",
    "obj_text",
    "stl_text",
    "swept_envelope",
    "bundle_diameter",
    "case_to_dict",
    "clearance_to_triangles",
    "formboard",
    "kbl_harness",
    "kbl_text",
    "read_kbl",
    "fit_stiffness",
    "frame_from_tangent",
    "initial_state",
    "kinetic_energy",
    "interpolate_boundary",
    "compiled_kernel_names",
    "kernel_names",
    "kernels_are_warm",
    "library_text",
    "load_case",
    "parse_case",
    "read_library",
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
