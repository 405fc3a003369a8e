# SPDX-License-Identifier: GPL-3.0-or-later
"""The swept envelope of a moving cable: the space it occupies over all the states of a motion (a
case's steps, a bake's frames, a study's variants), as a closed triangle mesh at a stated resolution,
with its volume and the motion's least clearance to the scene (where and when).

The envelope is the union over states of the points within the cable's radius of its centre line
(capsules about its segments), found on a grid of cubic voxels of side ``voxel``: a voxel belongs to
it where its centre does. States further apart than a voxel are joined by states interpolated
between them, so a fast motion leaves no gaps. The surface is the faces between voxels in and out,
each as two triangles wound outward: closed by construction (every edge is met by as many faces
one way round as the other), and its enclosed volume is exactly the voxels' (tested against the
Steiner formula for a cable swept rigidly and turned about its end).
"""

import math
import struct
from dataclasses import dataclass

import numpy as np

from ..errors import CaseError
from ..specs.case import MAX_EXTENT

GRID_SHIFT = np.array([math.sqrt(2.0) - 1.0, math.sqrt(3.0) - 1.0, math.sqrt(5.0) - 2.0])
MAX_VOXELS = 200_000_000  # a grid this large (200 MB of flags) is refused: ask for a coarser voxel


@dataclass
class Envelope:
    vertices: np.ndarray  # (n, 3) m
    triangles: np.ndarray  # (m, 3) vertex indices, wound outward
    volume: float  # m^3, of the voxels inside
    voxel: float  # m, the resolution


def swept_envelope(states, radius: float, voxel: float, motion: bool = True) -> Envelope:
    """The envelope of a cable of ``radius`` whose centre line takes the node arrays ``states`` (each
    (n, 3), m, the same n), at voxels of side ``voxel`` (m). ``motion``: the states follow each other
    in time (joined by interpolated states); False: alternatives (a study's variants), their union."""
    if not (math.isfinite(voxel) and voxel > 0.0):
        raise CaseError(f"voxel must be a positive length (m), got {voxel!r}")
    if voxel > radius:
        raise CaseError(f"voxel {voxel:g} m is coarser than the cable's radius {radius:g} m: give a finer voxel")
    states = [np.asarray(s, dtype=np.float64) for s in states]
    if not states or any(s.ndim != 2 or s.shape != states[0].shape or s.shape[0] < 2 for s in states):
        raise CaseError("an envelope needs one or more states of the same cable (node arrays of one shape)")
    if any(s.shape[1] != 3 or not np.isfinite(s).all() or np.abs(s).max() > MAX_EXTENT for s in states):
        raise CaseError(f"an envelope's states must be (n, 3) arrays of finite coordinates within {MAX_EXTENT:g} m")
    if motion:
        states = _densified(states, voxel)
    points = np.concatenate(states)
    # the grid shifted off the cable's own round numbers by fractions of a voxel that no axis-aligned
    # geometry shares, so that surfaces do not run along rows of voxel centres (a cable on a grid line
    # counted a whole row more or less: +-6 % of a slab 16 voxels thick)
    low = points.min(axis=0) - radius - 2.0 * voxel + GRID_SHIFT * voxel
    cells = np.ceil((points.max(axis=0) + radius + 2.0 * voxel - low) / voxel) + 1.0
    with np.errstate(over="ignore"):  # in floats: a fine voxel over a long motion overflows integers
        count = float(np.prod(cells))
    if not count <= MAX_VOXELS:
        raise CaseError(
            f"voxel {voxel:g} m makes a grid of {count:.3g} cells (at most {MAX_VOXELS:.0e}): give a coarser voxel"
        )
    shape = cells.astype(np.int64)
    inside = np.zeros(shape, dtype=bool)
    for nodes in states:
        for a, b in zip(nodes[:-1], nodes[1:]):
            _mark_capsule(inside, low, voxel, a, b, radius)
    vertices, triangles = _surface(inside, low, voxel)
    return Envelope(vertices, triangles, float(inside.sum()) * voxel**3, voxel)


def _densified(states, voxel) -> list:
    """The states with states interpolated between neighbours whose nodes move more than a voxel."""
    out = [states[0]]
    for before, after in zip(states[:-1], states[1:]):
        move = float(np.linalg.norm(after - before, axis=1).max())
        parts = max(1, int(math.ceil(move / voxel)))
        out += [before + (after - before) * (k / parts) for k in range(1, parts + 1)]
    return out


def _mark_capsule(inside, low, voxel, a, b, radius) -> None:
    """Flag the voxels whose centres lie within ``radius`` of segment ab."""
    lo = np.maximum(np.floor((np.minimum(a, b) - radius - low) / voxel).astype(np.int64), 0)
    hi = np.minimum(np.ceil((np.maximum(a, b) + radius - low) / voxel).astype(np.int64) + 1, inside.shape)
    axes = [low[k] + voxel * np.arange(lo[k], hi[k]) for k in range(3)]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    p = np.stack((x, y, z), axis=-1) - a
    d = b - a
    t = np.clip((p @ d) / max(float(d @ d), 1e-300), 0.0, 1.0)
    near = ((p - t[..., None] * d) ** 2).sum(axis=-1) <= radius * radius
    inside[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]] |= near


# the four corners of the face of a voxel towards +axis (offsets in voxels), anticlockwise seen from outside
_FACE = {
    0: ((1, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0, 1)),
    1: ((0, 1, 0), (0, 1, 1), (1, 1, 1), (1, 1, 0)),
    2: ((0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)),
}


def _surface(inside, low, voxel) -> tuple:
    """The faces between voxels in and out, two triangles each, wound outward; vertices shared."""
    quads = []
    for axis in range(3):
        padded = np.pad(inside, [(1, 1) if k == axis else (0, 0) for k in range(3)])
        here = np.take(padded, range(0, padded.shape[axis] - 1), axis=axis)
        there = np.take(padded, range(1, padded.shape[axis]), axis=axis)
        corners = np.array(_FACE[axis])
        # + side of a voxel inside whose neighbour is out: faces outward along +axis
        cells = np.argwhere(here & ~there)
        cells[:, axis] -= 1
        quads.append(cells[:, None, :] + corners[None])
        # - side: the face of the cell before, towards +axis, wound the other way
        cells = np.argwhere(~here & there)
        cells[:, axis] -= 1
        quads.append((cells[:, None, :] + corners[None])[:, ::-1])
    quads = np.concatenate(quads) if quads else np.zeros((0, 4, 3), dtype=np.int64)
    keys, index = np.unique(quads.reshape(-1, 3), axis=0, return_inverse=True)
    index = index.reshape(-1, 4)
    triangles = np.concatenate([index[:, [0, 1, 2]], index[:, [0, 2, 3]]])
    return low + keys * voxel, triangles


def enclosed_volume(vertices, triangles) -> float:
    """The volume a closed, outward-wound triangle mesh encloses (divergence theorem)."""
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def stl_text(envelope: Envelope, name: str = "envelope") -> bytes:
    """Binary STL (metres)."""
    v, t = envelope.vertices, envelope.triangles
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    n = np.cross(b - a, c - a)
    n /= np.maximum(np.linalg.norm(n, axis=1), 1e-300)[:, None]
    records = np.zeros(len(t), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    records["n"], records["v"] = n, np.stack((a, b, c), axis=1)
    header = f"cable_harness swept envelope {name}, m, voxel {envelope.voxel:g} m".encode()[:80].ljust(80, b" ")
    return header + struct.pack("<I", len(t)) + records.tobytes()


def obj_text(envelope: Envelope, name: str = "envelope") -> str:
    """Wavefront OBJ (metres)."""
    lines = [f"# cable_harness swept envelope, m, voxel {envelope.voxel:g} m", f"o {name}"]
    lines += [f"v {x:.9g} {y:.9g} {z:.9g}" for x, y, z in envelope.vertices]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in envelope.triangles]
    return "\n".join(lines) + "\n"


def motion_envelope(case, cable_id: str, result: dict | None = None, voxel: float | None = None) -> tuple:
    """(Envelope, clearance) of one cable over all the solves of a case (its first, then each step):
    ``clearance`` is None without obstacles, else {"gap" (m, least over the solves), "step", "s" (m, the
    arc length of the nearest segment's middle)}. ``result``: the case's result (None: it is solved)."""
    from .run_case import as_case, iter_steps
    from .sweep import min_clearance

    case = as_case(case)
    spec = next((c for c in case.cables if c.id == cable_id), None)
    if spec is None:
        raise CaseError(f"cable: the case has no cable {cable_id!r} (it has {', '.join(c.id for c in case.cables)})")
    if result is None:
        docs = [step["cables"][cable_id] for step in iter_steps(case)]
    else:
        docs = _result_entries(result, cable_id)
    states = []
    for k, d in enumerate(docs):
        where = f"result: steps[{k}].cables.{cable_id}.nodes"
        try:
            nodes = np.asarray(d.get("nodes"), dtype=np.float64)
        except (TypeError, ValueError):
            raise CaseError(f"{where} must be a list of [x, y, z] numbers") from None
        if nodes.ndim != 2 or nodes.shape != (spec.segments + 1, 3) or not np.isfinite(nodes).all():
            raise CaseError(f"{where} must be the cable's {spec.segments + 1} nodes of 3 finite numbers")
        states.append(nodes)
    radius = 0.5 * spec.diameter
    envelope = swept_envelope(states, radius, voxel if voxel is not None else 0.25 * radius)
    clearance = None
    if case.obstacles:
        gaps = [min_clearance(nodes, radius, case.obstacles) for nodes in states]
        step = int(np.argmin(gaps))
        nodes = states[step]
        per_segment = [min_clearance(nodes[k : k + 2], radius, case.obstacles) for k in range(len(nodes) - 1)]
        k = int(np.argmin(per_segment))
        arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(nodes, axis=0), axis=1))])
        clearance = {"gap": float(gaps[step]), "step": step, "s": float(0.5 * (arc[k] + arc[k + 1]))}
    return envelope, clearance


def _result_entries(result, cable_id) -> list:
    """The cable's entry in every step of a result document; CaseError naming what is missing."""
    steps = result.get("steps") if isinstance(result, dict) else None
    if not isinstance(steps, list) or not steps:
        raise CaseError("result: no steps (is it a result of this case?)")
    out = []
    for k, step in enumerate(steps):
        cables = step.get("cables") if isinstance(step, dict) else None
        entry = cables.get(cable_id) if isinstance(cables, dict) else None
        if not isinstance(entry, dict):
            raise CaseError(f"result: steps[{k}] has no cable {cable_id!r} (is it the result of this case?)")
        out.append(entry)
    return out
