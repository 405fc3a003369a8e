# SPDX-License-Identifier: GPL-3.0-or-later
"""STEP files to triangle meshes through OpenCASCADE (the ``OCP`` bindings of cadquery-ocp-novtk).

Kept free of bpy: the operator in operators/cad.py turns the parts into Blender meshes. The CAD kernel is an
optional dependency (~400 MB): without it ``read_step`` raises CadKernelMissing with the command
that installs it, and the rest of the extension works as before.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

INSTALL_HINT = (
    "Import CAD needs the OpenCASCADE kernel for Python: run "
    f'"{sys.executable}" -m pip install cadquery-ocp-novtk '
    "(Blender's own Python; about 400 MB), then restart Blender"
)


class CadKernelMissing(RuntimeError):
    pass


class CadReadError(ValueError):
    pass


@dataclass
class CadPart:
    name: str
    vertices_mm: np.ndarray  # (n, 3) float64, welded
    triangles: np.ndarray  # (m, 3) int32, outward-oriented for closed solids


def kernel_available() -> bool:
    try:
        import OCP.STEPCAFControl  # noqa: F401
    except ImportError:
        return False
    return True


def weld(vertices: np.ndarray, triangles: np.ndarray, tolerance: float):
    """Merge vertices closer than ``tolerance`` (OCCT triangulates each B-rep face on its own, so the
    shared edges of a solid arrive duplicated) and drop triangles that collapse."""
    if len(vertices) == 0:
        return vertices.reshape(0, 3), triangles.reshape(0, 3)
    keys = np.round(vertices / tolerance).astype(np.int64)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    tris = inverse[triangles]
    keep = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])
    return vertices[first], tris[keep].astype(np.int32)


def _triangulate(shape):
    from OCP.BRep import BRep_Tool
    from OCP.TopAbs import TopAbs_FACE, TopAbs_REVERSED
    from OCP.TopExp import TopExp_Explorer
    from OCP.TopLoc import TopLoc_Location
    from OCP.TopoDS import TopoDS

    vertices, triangles, offset = [], [], 0
    explorer = TopExp_Explorer(shape, TopAbs_FACE)
    while explorer.More():
        face = TopoDS.Face(explorer.Current())
        location = TopLoc_Location()
        mesh = BRep_Tool.Triangulation_s(face, location)
        if mesh is not None:
            transform = location.Transformation()
            n = mesh.NbNodes()
            vertices.extend(mesh.Node(i).Transformed(transform).Coord() for i in range(1, n + 1))
            flip = face.Orientation() == TopAbs_REVERSED
            for i in range(1, mesh.NbTriangles() + 1):
                a, b, c = mesh.Triangle(i).Get()
                triangles.append(
                    (a - 1 + offset, c - 1 + offset, b - 1 + offset)
                    if flip
                    else (a - 1 + offset, b - 1 + offset, c - 1 + offset)
                )
            offset += n
        explorer.Next()
    return (np.array(vertices, dtype=np.float64).reshape(-1, 3), np.array(triangles, dtype=np.int64).reshape(-1, 3))


def _label_name(label, fallback: str) -> str:
    from OCP.TDataStd import TDataStd_Name

    attribute = TDataStd_Name()
    if label.FindAttribute(TDataStd_Name.GetID_s(), attribute):
        name = attribute.Get().ToExtString().strip()
        if name:
            return re.sub(r"[\x00-\x1f]", "", name)
    return fallback


def _leaf_shapes(shape_tool, label, name, out):
    """Named leaf shapes of an XCAF label, placed: assemblies are walked through their components."""
    from OCP.TDF import TDF_ChildIterator, TDF_Label

    if shape_tool.IsAssembly_s(label):
        children = TDF_ChildIterator(label, False)
        while children.More():
            component = children.Value()
            referred = TDF_Label()
            own = _label_name(component, "")
            if shape_tool.GetReferredShape_s(component, referred):
                inner = []
                _leaf_shapes(shape_tool, referred, own or _label_name(referred, name), inner)
                location = shape_tool.GetLocation_s(component)
                out.extend((n, s.Moved(location)) for n, s in inner)
            children.Next()
    else:
        out.append((name, shape_tool.GetShape_s(label)))


def read_step(
    path: str, linear_deflection_mm: float = 0.2, angular_deflection: float = 0.35, progress=None
) -> list[CadPart]:
    """The parts of a STEP file as welded triangle meshes in millimetres (OCCT's working unit:
    whatever length unit the file declares is converted on reading)."""
    if linear_deflection_mm <= 0.0 or angular_deflection <= 0.0:
        raise CadReadError("tessellation tolerances must be positive")
    try:
        from OCP.BRepMesh import BRepMesh_IncrementalMesh
        from OCP.IFSelect import IFSelect_RetDone
        from OCP.STEPCAFControl import STEPCAFControl_Reader
        from OCP.TCollection import TCollection_ExtendedString
        from OCP.TDF import TDF_ChildIterator
        from OCP.TDocStd import TDocStd_Document
        from OCP.XCAFDoc import XCAFDoc_DocumentTool
    except ImportError as exc:
        raise CadKernelMissing(INSTALL_HINT) from exc

    reader = STEPCAFControl_Reader()
    reader.SetNameMode(True)
    if reader.ReadFile(str(path)) != IFSelect_RetDone:
        raise CadReadError(f"{path}: not a readable STEP file")
    document = TDocStd_Document(TCollection_ExtendedString("XmlOcaf"))
    if not reader.Transfer(document):
        raise CadReadError(f"{path}: the STEP file has no shapes OCCT can transfer")
    shape_tool = XCAFDoc_DocumentTool.ShapeTool_s(document.Main())
    shapes = []
    free = TDF_ChildIterator(shape_tool.Label(), False)
    index = 0
    while free.More():
        label = free.Value()
        if shape_tool.IsFree_s(label) and shape_tool.IsShape_s(label):
            index += 1
            _leaf_shapes(shape_tool, label, _label_name(label, f"part_{index:03d}"), shapes)
        free.Next()
    parts = []
    for k, (name, shape) in enumerate(shapes):
        BRepMesh_IncrementalMesh(shape, linear_deflection_mm, False, angular_deflection, True)
        vertices, triangles = _triangulate(shape)
        if len(triangles) == 0:
            continue
        vertices, triangles = weld(vertices, triangles, tolerance=1e-3 * linear_deflection_mm)
        parts.append(CadPart(name, vertices, triangles))
        if progress is not None:
            progress(k + 1, len(shapes))
    if not parts:
        raise CadReadError(f"{path}: no solid or surface with faces in the file")
    return parts
