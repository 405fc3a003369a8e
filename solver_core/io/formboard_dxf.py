# SPDX-License-Identifier: GPL-3.0-or-later
"""The formboard (formboard.py) as a DXF drawing in millimetres, written with ezdxf where it is installed.

The same board as the SVG, for CAD programs: runs as LINEs at their solved lengths with true aligned
DIMENSIONs (a CAD program measures them again), connectors, junctions, clip marks, coverings, labels,
the wire table and the title block, each kind on a layer of its own. ezdxf (MIT, a well-kept DXF library)
is optional: without it, ``board_dxf`` says so in one line and the SVG is what a board is written as.
"""

import datetime
import io
import math

import numpy as np

from ..errors import CaseError, check_title
from .formboard import MM, TEXT_MM, Board, BoardRun

LAYERS = {  # name: AutoCAD colour index
    "RUNS": 7,
    "COVERINGS": 2,
    "CLIPS": 5,
    "CONNECTORS": 7,
    "JUNCTIONS": 8,
    "DIMENSIONS": 3,
    "LABELS": 7,
    "TITLE": 7,
}


def dxf_available() -> bool:
    try:
        import ezdxf  # noqa: F401
    except ImportError:
        return False
    return True


def board_dxf(board: Board, title: str, date: str | None = None) -> str:
    """The board as DXF (R2013) text, in mm ($INSUNITS 4), 1:1."""
    try:
        import ezdxf
        from ezdxf import units
    except ImportError:
        raise CaseError(
            "a DXF formboard needs the ezdxf package (pip install ezdxf); write the board as SVG (BOARD.svg)"
        ) from None
    check_title(title)
    date = date or datetime.date.today().isoformat()
    doc = ezdxf.new("R2013", setup=True)
    doc.units = units.MM
    doc.header["$MEASUREMENT"] = 1  # metric
    for name, colour in LAYERS.items():
        doc.layers.add(name, color=colour)
    msp = doc.modelspace()
    for run in board.runs:
        _run(msp, board, run)
    for vid, (kind, label) in board.vertices.items():
        x, y = board.positions[vid] * MM
        if kind == "junction":
            square = [(x - 3, y - 3), (x + 3, y - 3), (x + 3, y + 3), (x - 3, y + 3)]
            msp.add_lwpolyline(square, close=True, dxfattribs={"layer": "JUNCTIONS"})
        else:
            msp.add_circle((x, y), 3.0 if kind == "connector" else 2.0, dxfattribs={"layer": "CONNECTORS"})
        _text(msp, label, (x + 4.5, y + 4.5), "LABELS")
    low = np.min([board.positions[v] for v in board.vertices], axis=0) * MM - 30.0
    rows = _table_rows(board, title, date)
    for k, row in enumerate(rows):
        _text(msp, row, (low[0], low[1] - 1.5 * TEXT_MM * (k + 1)), "TITLE")
    stream = io.StringIO()
    doc.write(stream)
    return stream.getvalue()


def _run(msp, board: Board, run: BoardRun) -> None:
    a = board.positions[run.start] * MM
    b = board.positions[run.end] * MM
    along = (b - a) / max(float(np.linalg.norm(b - a)), 1e-300)
    across = np.array([-along[1], along[0]])
    width = max(run.diameter * MM, 0.5)
    if run.covering is not None:
        band = msp.add_lwpolyline([tuple(a), tuple(b)], dxfattribs={"layer": "COVERINGS"})
        band.dxf.const_width = width + 4.0
    msp.add_line(tuple(a), tuple(b), dxfattribs={"layer": "RUNS", "color": 7 if run.converged else 1})
    if not np.linalg.norm(b - a) > 1e-6:  # a run of less than a nanometre: no dimension to draw
        return
    dimension = msp.add_aligned_dim(
        p1=tuple(a),
        p2=tuple(b),
        distance=-(width / 2 + 8.0),
        dimstyle="EZDXF",
        override={"dimlfac": 1.0, "dimdec": 0, "dimtxt": TEXT_MM, "dimasz": 2.5},  # mm, to the nearest mm
        dxfattribs={"layer": "DIMENSIONS"},
    )
    dimension.render()
    for k, s in enumerate(run.clips):
        p = a + (b - a) * (s / run.rest_length)  # the clip's share of the case's length along the run
        q0, q1 = p - across * (width / 2 + 3), p + across * (width / 2 + 3)
        msp.add_line(tuple(q0), tuple(q1), dxfattribs={"layer": "CLIPS"})
        _text(msp, f"clip {k + 1} ({s * MM:.0f})", tuple(q1 + across), "CLIPS")
    text = run.cable + (f", {run.covering}" if run.covering else "")
    if run.wires:
        text += f"; wires {', '.join(run.wires)}"
    if not run.converged:
        text += " (NOT converged)"
    angle = math.degrees(math.atan2(along[1], along[0]))
    if angle > 90.0 or angle < -90.0:  # text reads left to right
        angle -= math.copysign(180.0, angle)
    _text(msp, text, tuple(0.5 * (a + b) + across * (width / 2 + 2)), "LABELS", angle)


def _text(msp, text: str, at, layer: str, angle: float = 0.0) -> None:
    msp.add_text(text, height=TEXT_MM, rotation=angle, dxfattribs={"layer": layer, "insert": at})


def _table_rows(board: Board, title, date) -> list:
    rows = [f"Formboard: {title}", "Scale 1:1, mm; lengths: the solved centre lines; clips at their arc positions"]
    rows += [
        f"{wid}: {start} to {end} via {' > '.join(cables)}: cut {round(length * MM)} mm"
        for wid, start, end, cables, length in board.wires
    ]
    failed = [r.cable for r in board.runs if not r.converged]
    if failed:
        rows.append(f"NOT converged (lengths of the last good state): {', '.join(failed)}")
    rows.append(f"Drawn {date} by cable_harness")
    return rows
