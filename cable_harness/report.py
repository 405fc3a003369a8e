# SPDX-License-Identifier: GPL-3.0-or-later
"""Harness report from a bake log: per cable length, bend radius against the allowed radius,
clearance to the scene, and peak forces at every connector and clip over the motion; and the bill of
materials of the wires (each wire from its connector to its connector, cut to the cable's length).

Pure Python (no bpy): the bake writes the log (one record per cable per frame, SI units), this
module summarises it and writes report.json, report.csv and the plots. Everything it writes is in SI
units (metres, newtons) whatever the scene's unit, and says so: report.json's "units", report.csv's
unit column, the plots' axes and the summary text.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from ..solver_core import RouteError, trace_wire

LOG_FORMAT = "cable-harness-bake-log/1"
# the measurements of the last bake (read by Export Report), a text saved with the .blend
BAKE_LOG_TEXT = "cable_harness_bake_log.json"
REPORT_FORMAT = "cable-harness-report/1"
PLOT_LENGTH_LABEL = "m"  # the plots' lengths are in SI, as the files' values


def _finite(x):
    return x is not None and math.isfinite(x)


def cable_summary(name: str, info: dict, records: list[dict], envelope: dict | None = None) -> dict:
    """Summary of one cable over the baked frames (records in frame order).

    Only frames whose solve converged count: a frame that did not is no result (the cable was not
    keyed there), so it takes no part in the worst values and peaks and is listed on its own."""
    if not records:
        raise ValueError(f"bake log: cable {name!r} has no frames")
    failed = [r["frame"] for r in records if not r.get("converged", True)]
    records = [r for r in records if r.get("converged", True)]
    bend = [
        (r["min_bend_radius"], r["frame"], r.get("min_bend_radius_s"))
        for r in records
        if _finite(r.get("min_bend_radius"))
    ]
    gap = [(r["clearance"], r["frame"], r.get("clearance_s")) for r in records if _finite(r.get("clearance"))]
    allowed = info.get("allowed_bend_radius") or 0.0
    worst_bend = min(bend) if bend else (None, None, None)
    worst_gap = min(gap) if gap else (None, None, None)
    holders = []
    for holder in info["holders"]:
        series = [(r["forces"].get(holder["key"]), r["frame"]) for r in records]
        series = [(f, frame) for f, frame in series if _finite(f)]
        if not series:
            continue
        peak, frame = max(series, key=lambda pair: pair[0])  # ties: the first frame it happens
        holders.append(
            {
                "holder": holder["key"],
                "object": holder["object"],
                "kind": holder["kind"],
                "peak_force": peak,
                "frame": frame,
            }
        )
    last = records[-1] if records else {}
    return {
        "cable": name,
        "rest_length": info["rest_length"],
        "length": last.get("length"),
        "diameter": info["diameter"],
        "material": info.get("material"),
        "min_bend_radius": worst_bend[0],
        "min_bend_radius_frame": worst_bend[1],
        "min_bend_radius_s": worst_bend[2],
        "allowed_bend_radius": allowed or None,
        "bend_radius_ok": None if not allowed or worst_bend[0] is None else bool(worst_bend[0] >= allowed),
        "min_clearance": worst_gap[0],
        "min_clearance_frame": worst_gap[1],
        "min_clearance_s": worst_gap[2],
        "clearance_search": info.get("clearance_search"),
        "peak_forces": holders,
        "frames": len(records) + len(failed),
        "frames_not_converged": failed,
        # the space the cable swept over the motion (Swept Envelope), m^3 at a voxel of m; None: not built
        "swept_volume": (envelope or {}).get("volume"),
        "swept_voxel": (envelope or {}).get("voxel"),
    }


def bill_of_materials(log: dict) -> list[dict]:
    """One row per kind of wire (a plain cable is one wire): its id, how many, diameter and material,
    the connectors it runs between, and the length to cut. A wire with an id is routed through the
    harness's junctions (solver_core.trace_wire over the branches listing that id): it runs from
    connector to connector, cut to the sum of its branches' rest (formboard) lengths, and ``cable``
    names its branches in order. Other wires are rows of their cable, cut to its rest length; cables
    logged without wires (older logs) count as one wire."""
    rows, routed = [], {}
    for name in sorted(log["cables"]):
        info = log["cables"][name]
        wires = info.get("wires") or [{"diameter": info["diameter"], "material": info.get("material"), "count": 1}]
        for k, wire in enumerate(wires):
            if wire.get("id"):
                routed.setdefault(wire["id"], []).append((name, wire))
                continue
            rows.append(
                {
                    "wire": name if len(wires) == 1 and wire["count"] == 1 else f"{name}.{k + 1}",
                    "cable": name,
                    "count": wire["count"],
                    "diameter": wire["diameter"],
                    "material": wire.get("material"),
                    "from": info.get("from", ""),
                    "to": info.get("to", ""),
                    "length": info["rest_length"],
                    "total_length": wire["count"] * info["rest_length"],
                }
            )
    for wire_id, places in routed.items():
        rows.append(_routed_row(log, wire_id, places))
    return rows


def _routed_row(log: dict, wire_id: str, places: list) -> dict:
    """The bill's row of a wire with an id, through the junctions of its branches; a wire that is not
    one route (only an inconsistent log: the solver refuses such a case) keeps its branches' names
    and says why in ``problem``, with no length."""
    cables = log["cables"]
    wire = places[0][1]
    branches = [(name, cables[name].get("from_junction"), cables[name].get("to_junction")) for name, _w in places]
    row = {"wire": wire_id, "count": wire["count"], "diameter": wire["diameter"], "material": wire.get("material")}
    try:
        order, first, last = trace_wire(wire_id, branches)
    except RouteError as exc:
        names = [name for name, _w in places]
        return {
            **row,
            "cable": " > ".join(names),
            "from": "",
            "to": "",
            "length": None,
            "total_length": 0.0,
            "problem": str(exc),
        }
    length = sum(cables[name]["rest_length"] for name, _f in order)

    def holder(end):
        name, side = end
        return cables[name].get("from" if side == "start" else "to", "")

    return {
        **row,
        "cable": " > ".join(name for name, _f in order),
        "from": holder(first),
        "to": holder(last),
        "length": length,
        "total_length": wire["count"] * length,
    }


def junction_summary(name: str, records: list[dict]) -> dict:
    """One junction over the baked frames: where it ended, how far it travelled, the largest pull of
    any branch (converged frames only, as for cables)."""
    solved = [r for r in records if r.get("converged")]
    failed = [r["frame"] for r in records if not r.get("converged")]
    out = {"junction": name, "fixed": bool(records and records[0].get("fixed")), "frames_not_converged": failed}
    if not solved:
        return {
            **out,
            "position": None,
            "travel": None,
            "peak_pull": None,
            "peak_pull_branch": None,
            "peak_pull_frame": None,
            "peak_push": None,
            "peak_push_frame": None,
        }
    positions = [r["position"] for r in solved]
    travel = max(sum((a - b) ** 2 for a, b in zip(p, positions[0])) ** 0.5 for p in positions)
    peak = max(
        ((f, branch, r["frame"]) for r in solved for branch, f in r["pulls"].items()), default=(None, None, None)
    )
    push = max(((r.get("push", 0.0), r["frame"]) for r in solved), default=(0.0, None))
    return {
        **out,
        "position": positions[-1],
        "travel": travel,
        "peak_pull": peak[0],
        "peak_pull_branch": peak[1],
        "peak_pull_frame": peak[2],
        "peak_push": push[0],  # by obstacles on the junction itself (older logs: 0)
        "peak_push_frame": push[1] if push[0] > 0.0 else None,
    }


def harness_report(log: dict) -> dict:
    if log.get("format") != LOG_FORMAT:
        raise ValueError(f"not a bake log (format {log.get('format')!r}, expected {LOG_FORMAT!r})")
    envelopes = log.get("envelopes", {})
    cables = [
        cable_summary(name, log["cables"][name], log["frames"][name], envelopes.get(name))
        for name in sorted(log["cables"])
    ]
    return {
        "format": REPORT_FORMAT,
        "scene": log.get("scene"),
        "frames": log.get("frame_range"),
        "units": {"length": "m", "force": "N"},
        "cables": cables,
        "junctions": [junction_summary(name, records) for name, records in sorted(log.get("junctions", {}).items())],
        "bill_of_materials": bill_of_materials(log),
    }


def write_json(report: dict, path: Path) -> Path:
    path.write_text(json.dumps(report, indent=1, allow_nan=False, default=str))
    return path


CSV_FIELDS = ("cable", "quantity", "where", "value", "unit", "frame", "s", "limit", "ok")


def csv_rows(report: dict):
    for c in report["cables"]:
        name = c["cable"]
        yield {"cable": name, "quantity": "rest length", "value": c["rest_length"], "unit": "m"}
        yield {"cable": name, "quantity": "centre-line length (last frame)", "value": c["length"], "unit": "m"}
        yield {
            "cable": name,
            "quantity": "min bend radius",
            "value": c["min_bend_radius"],
            "unit": "m",
            "frame": c["min_bend_radius_frame"],
            "s": c["min_bend_radius_s"],
            "limit": c["allowed_bend_radius"],
            "ok": c["bend_radius_ok"],
        }
        yield {
            "cable": name,
            "quantity": "min clearance",
            "value": c["min_clearance"],
            "unit": "m",
            "frame": c["min_clearance_frame"],
            "s": c["min_clearance_s"],
            "limit": 0.0,
            "ok": None if c["min_clearance"] is None else c["min_clearance"] >= 0.0,
        }
        if c.get("swept_volume") is not None:
            yield {
                "cable": name,
                "quantity": "swept envelope volume",
                "where": f"voxel {c['swept_voxel']:.3g} m",
                "value": c["swept_volume"],
                "unit": "m^3",
            }
        for h in c["peak_forces"]:
            yield {
                "cable": name,
                "quantity": f"peak force ({h['kind']})",
                "where": h["object"],
                "value": h["peak_force"],
                "unit": "N",
                "frame": h["frame"],
            }
        if c["frames_not_converged"]:
            yield _not_converged_row(name, "frames not converged (not keyed, not in the values above)", c)


def _not_converged_row(name: str, quantity: str, summary: dict) -> dict:
    """The CSV row flagging the frames a cable or junction did not converge at."""
    frames = summary["frames_not_converged"]
    return {
        "cable": name,
        "quantity": quantity,
        "where": " ".join(str(f) for f in frames),
        "value": len(frames),
        "unit": "frames",
        "ok": False,
    }


def junction_rows(report: dict):
    """Each junction's place and its branches' largest pull as rows of the report's CSV (the junction's
    name in the cable column)."""
    for j in report.get("junctions", ()):
        name = f"junction {j['junction']}"
        if j["position"] is not None:
            yield {
                "cable": name,
                "quantity": "position x y z (last frame)",
                "where": " ".join(f"{v:.6g}" for v in j["position"]),
                "unit": "m",
            }
            yield {"cable": name, "quantity": "travel", "value": j["travel"], "unit": "m"}
            yield {
                "cable": name,
                "quantity": "peak branch pull",
                "where": j["peak_pull_branch"],
                "value": j["peak_pull"],
                "unit": "N",
                "frame": j["peak_pull_frame"],
            }
            if j.get("peak_push"):
                yield {
                    "cable": name,
                    "quantity": "peak push by obstacles",
                    "value": j["peak_push"],
                    "unit": "N",
                    "frame": j["peak_push_frame"],
                }
        if j["frames_not_converged"]:
            yield _not_converged_row(name, "frames not converged", j)


def bill_rows(report: dict):
    """The bill of materials as rows of the report's CSV (the length to cut of one wire as the value)."""
    for w in report.get("bill_of_materials", ()):
        row = {
            "cable": w["cable"],
            "quantity": f"wire {w['wire']}: {w['count']} x {1e3 * w['diameter']:.2f} mm {w['material'] or ''}".rstrip(),
            "where": f"{w['from']} to {w['to'] or '(free end)'}",
            "value": w["length"],
            "unit": "m",
        }
        if w.get("problem"):
            row.update(where=w["problem"], ok=False)
        yield row


def write_csv(report: dict, path: Path) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for row in (*csv_rows(report), *junction_rows(report), *bill_rows(report)):
            writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in CSV_FIELDS})
    return path


def write_plots(log: dict, report: dict, folder: Path) -> list[Path]:
    """bend_radius.png (radius along each cable at its worst frame, with the allowed radius) and
    forces.png (force at every holder over the frames). Needs matplotlib; raises ImportError."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    cables = report["cables"]
    fig, axes = plt.subplots(len(cables), 1, figsize=(8, 2.6 * len(cables)), squeeze=False)
    for ax, c in zip(axes[:, 0], cables):
        solved = [r for r in log["frames"][c["cable"]] if r.get("converged", True)]
        if not solved:
            ax.set_title(f"{c['cable']}: no frame converged")
            continue
        frame = c["min_bend_radius_frame"]
        record = next((r for r in solved if r["frame"] == frame), solved[-1])
        s = [x for x, r in zip(record["bend_radius_s"], record["bend_radii"]) if r is not None]
        radius = [r for r in record["bend_radii"] if r is not None]
        ax.semilogy(s, radius, lw=1.4, label=f"frame {record['frame']}")
        if c["allowed_bend_radius"]:
            ax.axhline(c["allowed_bend_radius"], color="tab:red", ls="--", lw=1.0, label="allowed")
        ax.set_ylim(top=max(1.0, 2.0 * (c["allowed_bend_radius"] or 0.0)))
        ax.set_title(f"{c['cable']}: bend radius along the cable")
        ax.set_xlabel(f"arc length s ({PLOT_LENGTH_LABEL})")
        ax.set_ylabel(f"radius ({PLOT_LENGTH_LABEL})")
        ax.legend(loc="lower right", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    written.append(folder / "bend_radius.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(len(cables), 1, figsize=(8, 2.6 * len(cables)), squeeze=False)
    for ax, c in zip(axes[:, 0], cables):
        records = log["frames"][c["cable"]]
        frames = [r["frame"] for r in records]
        for holder in log["cables"][c["cable"]]["holders"]:
            # a frame that did not converge is a gap in the line, not a value
            values = [r["forces"].get(holder["key"]) if r.get("converged", True) else None for r in records]
            ax.plot(
                frames,
                [math.nan if v is None else v for v in values],
                lw=1.3,
                marker=".",
                ms=3,
                label=f"{holder['object']} ({holder['kind']})",
            )
        for k, frame in enumerate(c["frames_not_converged"]):
            ax.axvline(frame, color="tab:red", ls="--", lw=0.8, label="not converged" if k == 0 else None)
        ax.set_title(f"{c['cable']}: force on the cable at connectors and clips")
        ax.set_xlabel("frame")
        ax.set_ylabel("|F| (N)")
        ax.legend(loc="upper left", fontsize=7)
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    written.append(folder / "forces.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)
    return written


def _m(x):
    return "-" if x is None else f"{x:.4g} m"


def summary_text(report: dict) -> str:
    """A few readable lines per cable (console, operator messages)."""
    lines = []
    for c in report["cables"]:
        verdict = {True: "ok", False: "TOO TIGHT", None: "no limit set"}[c["bend_radius_ok"]]
        lines.append(
            f"{c['cable']}: length {_m(c['rest_length'])}, min bend radius {_m(c['min_bend_radius'])} "
            f"(frame {c['min_bend_radius_frame']}; allowed {_m(c['allowed_bend_radius'])}: {verdict}), "
            f"min clearance {_m(c['min_clearance'])} (frame {c['min_clearance_frame']})"
        )
        if c.get("swept_volume") is not None:
            lines.append(
                f"    swept envelope {c['swept_volume'] * 1e6:.4g} cm^3 (voxel {_m(c['swept_voxel'])}); least "
                f"clearance over the motion {_m(c['min_clearance'])} at frame {c['min_clearance_frame']}"
            )
        for h in c["peak_forces"]:
            lines.append(f"    peak {h['peak_force']:.3f} N at {h['object']} ({h['kind']}), frame {h['frame']}")
        if c["frames_not_converged"]:
            lines.append(f"    NOT CONVERGED at frames {c['frames_not_converged']}: not keyed, not in the values above")
    for j in report.get("junctions", []):
        if j["position"] is None:
            lines.append(f"junction {j['junction']}: NOT CONVERGED at any frame")
            continue
        where = ", ".join(f"{v:.4f}" for v in j["position"])
        lines.append(
            f"junction {j['junction']}{' (fixed)' if j['fixed'] else ''}: at ({where}) m, travelled "
            f"{_m(j['travel'])}; peak pull {j['peak_pull']:.3f} N by {j['peak_pull_branch']}, frame "
            f"{j['peak_pull_frame']}"
            + (
                f"; rests on an obstacle, peak push {j['peak_push']:.3f} N, frame {j['peak_push_frame']}"
                if j.get("peak_push")
                else ""
            )
        )
        if j["frames_not_converged"]:
            lines.append(f"    NOT CONVERGED at frames {j['frames_not_converged']}")
    bill = report.get("bill_of_materials") or []
    if bill:
        total = sum(w["total_length"] for w in bill)
        lines.append(f"wires: {sum(w['count'] for w in bill)} in {len(bill)} kinds, {total:.3f} m in all")
        for w in bill:
            if w.get("problem"):
                lines.append(f"    wire {w['wire']}: NOT ROUTED: {w['problem']}")
    return "\n".join(lines)


def write_report(log: dict, folder: Path, plots: bool = True) -> dict:
    """report.json, report.csv and (if matplotlib is there) the plots; returns what was written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    report = harness_report(log)
    out = {
        "report": report,
        "files": [write_json(report, folder / "report.json"), write_csv(report, folder / "report.csv")],
        "plots_skipped": None,
    }
    if plots:
        try:
            out["files"] += write_plots(log, report, folder)
        except ImportError:
            out["plots_skipped"] = "matplotlib is not installed: plots skipped"
    return out
