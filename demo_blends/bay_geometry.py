# SPDX-License-Identifier: GPL-3.0-or-later
"""The equipment bay as CAD: named solids in millimetres, written to STEP with OpenCASCADE.

The STEP file stands in for what a harness engineer gets from mechanical design; the demo scene
reads it back through the extension's Import CAD operator. Positions of sockets and brackets are
kept here so that the scene builder places connectors and clips on the same geometry.
"""

from __future__ import annotations

from pathlib import Path

# Socket mouths (mm) and the direction a cable leaves each socket.
DEVICE_A_SOCKETS = {"power": (200.0, 340.0, 110.0), "signal": (200.0, 380.0, 110.0), "sensor": (200.0, 420.0, 110.0)}
DEVICE_B_SOCKETS = {"power": (700.0, 320.0, 90.0), "signal": (700.0, 360.0, 90.0), "sensor": (700.0, 400.0, 90.0)}
SOCKET_A_SIZE = (16.0, 12.0, 15.0)  # width (y), height (z), depth (x)
SOCKET_B_SIZE = (20.0, 14.0, 25.0)
BRACKET_X = (330.0, 520.0)
BRACKET_FACE_Y = 250.0  # the clips sit in front of the upright of each bracket


def _box(x0, y0, z0, x1, y1, z1):
    from OCP.BRepPrimAPI import BRepPrimAPI_MakeBox
    from OCP.gp import gp_Pnt

    return BRepPrimAPI_MakeBox(gp_Pnt(x0, y0, z0), gp_Pnt(x1, y1, z1)).Shape()


def _cut(shape, tool):
    from OCP.BRepAlgoAPI import BRepAlgoAPI_Cut

    return BRepAlgoAPI_Cut(shape, tool).Shape()


def _fuse(a, b):
    from OCP.BRepAlgoAPI import BRepAlgoAPI_Fuse

    return BRepAlgoAPI_Fuse(a, b).Shape()


def _hole_x(x, y, z, radius, length):
    from OCP.BRepPrimAPI import BRepPrimAPI_MakeCylinder
    from OCP.gp import gp_Ax2, gp_Dir, gp_Pnt

    return BRepPrimAPI_MakeCylinder(gp_Ax2(gp_Pnt(x, y, z), gp_Dir(0, 1, 0)), radius, length).Shape()


def _device(x0, y0, x1, y1, height, sockets, size, towards_plus_x):
    body = _box(x0, y0, 0.0, x1, y1, height)
    w, h, depth = size
    for sx, sy, sz in sockets.values():
        x_in = sx - depth if towards_plus_x else sx
        body = _cut(body, _box(x_in, sy - w / 2, sz - h / 2, x_in + depth, sy + w / 2, sz + h / 2))
    return body


def _bracket(x):
    # an L bracket: a base plate screwed to the floor and an upright with a lightening hole
    base = _box(x - 30.0, BRACKET_FACE_Y - 40.0, 0.0, x + 30.0, BRACKET_FACE_Y, 4.0)
    upright = _box(x - 30.0, BRACKET_FACE_Y - 4.0, 0.0, x + 30.0, BRACKET_FACE_Y, 130.0)
    upright = _cut(upright, _hole_x(x, BRACKET_FACE_Y - 5.0, 55.0, 12.0, 6.0))
    return _fuse(base, upright)


def bay_parts() -> dict:
    return {
        "panel_floor": _box(0.0, 0.0, -5.0, 900.0, 500.0, 0.0),
        "panel_back": _box(0.0, 500.0, 0.0, 900.0, 505.0, 400.0),
        "device_a": _device(40.0, 300.0, 200.0, 460.0, 160.0, DEVICE_A_SOCKETS, SOCKET_A_SIZE, True),
        "device_b": _device(700.0, 280.0, 860.0, 440.0, 140.0, DEVICE_B_SOCKETS, SOCKET_B_SIZE, False),
        "bracket_1": _bracket(BRACKET_X[0]),
        "bracket_2": _bracket(BRACKET_X[1]),
        # a cable tray the sensor line comes to rest on, with a lip along its back
        "tray": _fuse(_box(360.0, 385.0, 0.0, 660.0, 455.0, 30.0), _box(360.0, 451.0, 30.0, 660.0, 455.0, 45.0)),
    }


def write_step(path: str | Path) -> Path:
    """Write the bay as a STEP file whose solids carry their names (AP214, millimetres)."""
    from OCP.IFSelect import IFSelect_RetDone
    from OCP.STEPCAFControl import STEPCAFControl_Writer
    from OCP.STEPControl import STEPControl_AsIs
    from OCP.TCollection import TCollection_ExtendedString
    from OCP.TDataStd import TDataStd_Name
    from OCP.TDocStd import TDocStd_Document
    from OCP.XCAFDoc import XCAFDoc_DocumentTool

    document = TDocStd_Document(TCollection_ExtendedString("XmlOcaf"))
    shapes = XCAFDoc_DocumentTool.ShapeTool_s(document.Main())
    for name, shape in bay_parts().items():
        TDataStd_Name.Set_s(shapes.AddShape(shape, False), TCollection_ExtendedString(name))
    writer = STEPCAFControl_Writer()
    writer.SetNameMode(True)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not writer.Transfer(document, STEPControl_AsIs) or writer.Write(str(path)) != IFSelect_RetDone:
        raise RuntimeError(f"could not write {path}")
    return path
