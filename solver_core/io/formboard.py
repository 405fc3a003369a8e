# SPDX-License-Identifier: GPL-3.0-or-later
"""The formboard of a solved harness: its tree laid flat at the solved lengths, as a 1:1 SVG drawing.

A harness is built on a board at full scale: its runs (the case's cables; with junctions, the trunk
and branches between them) straight at the length of their solved centre lines, connectors and
junctions at their ends, clips as fixings at their arc positions, bundle coverings along the runs
they cover, every run dimensioned to the nearest millimetre, the routed wires with their cut
lengths in a table, and a title block. ``formboard`` builds the board from a case (solving it) or
from a case and its result; ``board_svg`` draws it (formboard_layout.py places it).
"""

import datetime
import html
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import CaseError, check_title
from ..specs.case import MAX_EXTENT
from .formboard_layout import Run, lay_out, runs_cross
from .run_case import as_case, iter_steps

MM = 1000.0  # board units per metre
TEXT_MM = 4.0  # text height on the board
MARGIN_MM = 30.0


@dataclass
class BoardRun:
    cable: str
    start: str  # vertex ids (formboard_layout)
    end: str
    length: float  # m, the solved centre line
    rest_length: float  # m, the case's length (arc positions are given in it)
    diameter: float  # m
    clips: list  # arc positions s (m, the case's) of its clips
    covering: str | None  # the bundle's wrap where it covers the run ("taped", "sleeved", "conduit")
    wires: list  # ids of the routed wires that run on it
    converged: bool


@dataclass
class Board:
    vertices: dict  # id (a tuple) -> (kind: "connector" | "junction" | "free end", label)
    runs: list  # BoardRun
    wires: list  # (id, from label, to label, cable ids, cut length m)
    positions: dict = field(default_factory=dict)  # vertex id -> (x, y), m, on the board

    def drawn_length(self, run: BoardRun) -> float:
        return float(np.linalg.norm(self.positions[run.end] - self.positions[run.start]))

    def crossings(self) -> list:
        return runs_cross(self.positions, [Run(r.cable, r.start, r.end, r.length) for r in self.runs])


def cable_end_vertex(cable, side: str) -> tuple:
    """(vertex id, kind, label) of a cable end: its junction, or the connector (or free end) there, by
    the connector's name where the case gives one."""
    held = cable.start_junction if side == "start" else cable.end_junction
    if held is not None:  # ids are tuples: no cable's or junction's name can make one of another kind
        return ("junction", held.junction), "junction", held.junction
    if side == "end" and cable.end is None:
        return ("end", cable.id, side), "free end", f"{cable.id} (free end)"
    named = cable.connectors[0 if side == "start" else 1]
    return ("end", cable.id, side), "connector", named or f"{cable.id} {side}"


def formboard(case, result: dict | None = None, step: int = 0) -> Board:
    """The board of ``case`` (a Case or case document) at solve ``step`` (0: the case as routed; k: after
    its k-th step) of ``result`` (a result document; None: the case is solved up to that step)."""
    case = as_case(case)
    solved = solved_step(case, result, step)
    vertices, runs = {}, []
    for cable in case.cables:
        doc = solved.get(cable.id)
        if doc is None:
            raise CaseError(f"result: step {step} has no cable {cable.id!r}")
        ends = []
        for side in ("start", "end"):
            vid, kind, label = cable_end_vertex(cable, side)
            vertices[vid] = (kind, label)
            ends.append(vid)
        bundle = cable.bundle
        runs.append(
            BoardRun(
                cable.id,
                ends[0],
                ends[1],
                float(doc["length"]),
                cable.length,
                cable.diameter,
                [clip.s for clip in cable.clips],
                None if bundle is None or bundle.wrap == "loose" else bundle.wrap,
                [w.id for w in case.wires if cable.id in w.cables],
                bool(doc["converged"]),
            )
        )
    wires = []
    lengths = {r.cable: r.length for r in runs}
    for w in case.wires:
        ends = [vertices[cable_end_vertex(case_cable(case, cid), side)[0]][1] for cid, side in (w.start, w.end)]
        wires.append((w.id, ends[0], ends[1], list(w.cables), sum(lengths[c] for c in w.cables)))
    board = Board(vertices, runs, wires)
    spacing = 0.1 + 0.2 * max((r.length for r in runs), default=0.0)
    try:
        board.positions = lay_out(list(vertices), [Run(r.cable, r.start, r.end, r.length) for r in runs], spacing)
    except ValueError:
        raise CaseError("formboard: the cables form a loop through their junctions; a board lays out trees") from None
    return board


def case_cable(case, cable_id: str):
    return next(c for c in case.cables if c.id == cable_id)


def solved_step(case, result, step: int) -> dict:
    """{cable id: result entry} of solve ``step``."""
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= len(case.steps):
        raise CaseError(f"step must be an integer from 0 to {len(case.steps)} (the case's steps), got {step!r}")
    if result is None:
        for k, doc in enumerate(iter_steps(case)):
            if k == step:
                return doc["cables"]
    steps = result.get("steps") if isinstance(result, dict) else None
    entry = steps[step] if isinstance(steps, list) and step < len(steps) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("cables"), dict):
        raise CaseError(f"result: no steps[{step}].cables (is it the result of this case?)")
    for cid, doc in entry["cables"].items():
        where = f"result: steps[{step}].cables.{cid}"
        if not isinstance(doc, dict):
            raise CaseError(f"{where} must be a cable's result (an object)")
        length = doc.get("length")
        if isinstance(length, bool) or not isinstance(length, (int, float)) or not 1e-9 <= length <= MAX_EXTENT:
            raise CaseError(f"{where}.length must be a positive length in m (1e-9 to {MAX_EXTENT:g}), got {length!r}")
        if not isinstance(doc.get("converged"), bool):
            raise CaseError(f"{where}.converged must be true or false")
    return entry["cables"]


# ---------------------------------------------------------------- drawing


def board_svg(board: Board, title: str, date: str | None = None) -> str:
    """The board as an SVG document in millimetres (1:1 when printed at its size)."""
    check_title(title)
    date = date or datetime.date.today().isoformat()
    points = np.array([board.positions[v] for v in board.vertices]) * MM * np.array([1.0, -1.0])
    low = points.min(axis=0) - MARGIN_MM
    high = points.max(axis=0) + MARGIN_MM
    parts = []
    for run in board.runs:
        parts += _run_svg(board, run)
    for vid, (kind, label) in board.vertices.items():
        x, y = board.positions[vid] * MM * np.array([1.0, -1.0])
        if kind == "junction":
            shape = f'<rect class="junction" x="{x - 3:.3f}" y="{y - 3:.3f}" width="6" height="6"/>'
        elif kind == "connector":
            shape = f'<circle class="connector" cx="{x:.3f}" cy="{y:.3f}" r="3"/>'
        else:
            shape = f'<circle class="free-end" cx="{x:.3f}" cy="{y:.3f}" r="2"/>'
        parts.append(shape)
        parts.append(_text(x + 4.5, y - 4.5, label, "label"))
    table, table_height = _wire_table(board, low[0], high[1] + 2 * TEXT_MM)
    block, block_height = _title_block(board, title, date, low[0], high[1] + 3 * TEXT_MM + table_height)
    width = high[0] - low[0]
    height = high[1] - low[1] + 4 * TEXT_MM + table_height + block_height
    style = (
        ".run{stroke:#222;stroke-linecap:round}.covering{stroke:#d9a400;stroke-opacity:0.45}"
        ".failed{stroke:#c00}.clip{stroke:#06c;stroke-width:0.8}.junction{fill:#444}"
        ".connector{fill:#fff;stroke:#222;stroke-width:0.8}.free-end{fill:none;stroke:#222;stroke-width:0.5}"
        f"text{{font-family:sans-serif;font-size:{TEXT_MM}px;fill:#111}}.dimension{{fill:#333}}"
        ".frame{fill:none;stroke:#222;stroke-width:0.5}"
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.3f}mm" height="{height:.3f}mm" '
        f'viewBox="{low[0]:.3f} {low[1]:.3f} {width:.3f} {height:.3f}">\n'
        f"<title>{html.escape(title)}</title>\n<style>{style}</style>\n"
        + "\n".join(parts + table + block)
        + "\n</svg>\n"
    )


def _text(x, y, text, cls, angle=0.0) -> str:
    turn = f' transform="rotate({angle:.3f} {x:.3f} {y:.3f})"' if angle else ""
    return f'<text class="{cls}" x="{x:.3f}" y="{y:.3f}"{turn}>{html.escape(text)}</text>'


def _run_svg(board: Board, run: BoardRun) -> list:
    a = board.positions[run.start] * MM * np.array([1.0, -1.0])
    b = board.positions[run.end] * MM * np.array([1.0, -1.0])
    along = (b - a) / max(float(np.linalg.norm(b - a)), 1e-300)
    across = np.array([-along[1], along[0]])
    width = max(run.diameter * MM, 0.5)
    out = []
    if run.covering is not None:
        out.append(
            f'<line class="covering" x1="{a[0]:.3f}" y1="{a[1]:.3f}" x2="{b[0]:.3f}" y2="{b[1]:.3f}" '
            f'stroke-width="{width + 4:.3f}"><title>{html.escape(run.covering)}</title></line>'
        )
    cls = "run" if run.converged else "run failed"
    out.append(
        f'<line class="{cls}" data-cable="{html.escape(run.cable)}" data-length-mm="{run.length * MM:.6f}" '
        f'x1="{a[0]:.6f}" y1="{a[1]:.6f}" x2="{b[0]:.6f}" y2="{b[1]:.6f}" stroke-width="{width:.3f}"/>'
    )
    for k, s in enumerate(run.clips):
        # a clip at arc length s of the case's cable sits at the same share of the solved run
        p = a + (b - a) * (s / run.rest_length)
        q0, q1 = p - across * (width / 2 + 3), p + across * (width / 2 + 3)
        out.append(f'<line class="clip" x1="{q0[0]:.3f}" y1="{q0[1]:.3f}" x2="{q1[0]:.3f}" y2="{q1[1]:.3f}"/>')
        out.append(_text(q1[0] + 1, q1[1], f"clip {k + 1} ({s * MM:.0f})", "clip-label"))
    angle = math.degrees(math.atan2(along[1], along[0]))
    if angle > 90.0 or angle < -90.0:  # text reads left to right
        angle -= math.copysign(180.0, angle)
    middle = 0.5 * (a + b) - across * (width / 2 + 2)
    text = f"{run.cable}: {round(run.length * MM)} mm"
    if run.covering is not None:
        text += f", {run.covering}"
    if run.wires:
        text += f"; wires {', '.join(run.wires)}"
    if not run.converged:
        text += " (NOT converged)"
    out.append(_text(middle[0], middle[1], text, "dimension", angle))
    return out


def _wire_table(board: Board, x, y) -> tuple:
    if not board.wires:
        return [], 0.0
    rows = ["Wires (cut length = the runs' solved lengths)"]
    for wid, start, end, cables, length in board.wires:
        rows.append(f"{wid}: {start} to {end} via {' > '.join(cables)}: cut {round(length * MM)} mm")
    line = 1.5 * TEXT_MM
    return [_text(x, y + line * (k + 1), row, "wire") for k, row in enumerate(rows)], line * (len(rows) + 1)


def _title_block(board: Board, title, date, x, y) -> tuple:
    total = sum(r.length for r in board.runs)
    junctions = sum(1 for kind, _ in board.vertices.values() if kind == "junction")
    failed = [r.cable for r in board.runs if not r.converged]
    rows = [
        f"Formboard: {title}",
        f"{len(board.runs)} runs, {junctions} junctions, {total * MM:.0f} mm of run in all; scale 1:1, mm",
        "Lengths: the solved centre lines, to the nearest mm; clips at their arc positions (mm from the run's start)",
        f"Drawn {date} by cable_harness",
    ]
    if failed:
        rows.append(f"NOT converged (lengths of the last good state): {', '.join(failed)}")
    line = 1.5 * TEXT_MM
    height = line * (len(rows) + 1)
    width = 160.0
    out = [f'<rect class="frame" x="{x:.3f}" y="{y:.3f}" width="{width:.3f}" height="{height:.3f}"/>']
    out += [_text(x + 2, y + line * (k + 1), row, "title") for k, row in enumerate(rows)]
    return out, height + line
