# SPDX-License-Identifier: GPL-3.0-or-later
"""Variation sweeps: variants of a case solved in parallel, tabulated and summarised.

A sweep file (format ``cable-harness-sweep/1``) names a base case and what varies::

    {"format": "cable-harness-sweep/1", "case": "case.json" or {...}, "samples": 200, "seed": 1,
     "vary": [{"path": "cables[0].length", "uniform": [0.31, 0.35]},
              {"path": "cables[0].clips[1].frame.position[2]", "normal": [0.05, 0.002]},
              {"path": "cables[1].material.E", "values": [1e8, 1.26e8, 1.5e8]}]}

``values`` lists form a grid (their Cartesian product, in the order given); ``uniform`` [low, high]
and ``normal`` [mean, standard deviation] entries are drawn ``samples`` times from a generator seeded
with ``seed``, and every grid point is crossed with the same draws (so grid points are compared on
equal samples). Without sampled entries the variants are the grid alone. A path is a field of the
case document (``a.b[2]``) that the base case has, or a material value beside a preset (``material.E``).

Each variant is solved as ``solve`` would solve its case (every step); its row holds the varied values,
whether every cable converged, then per cable: converged, length (last step), min bend radius, max
tension (EA times the largest axial strain), peak connector or clip force, min clearance to the
obstacles, solve time; extremes are taken over all steps. A variant that is invalid or does not
converge is a row with converged false and its message. Rows are appended to results.csv as they
come in, so a sweep run again into the same folder solves only the variants still missing.

With ``shapes`` (``--shapes``) each variant's solved centre lines (last step) are kept as well, in
``shapes/<variant>.npz`` with one (nodes, 3) array per cable named ``c0``, ``c1``, ... in the case's
order (metres): what draws the envelope of the shapes in Blender. The variants run in processes
of the standard library (``concurrent.futures``) forked from this one after it loaded the kernels
(spawned where it runs other threads; one after another in this process where the platform cannot
fork), or with ``--executor dask`` or a ``--scheduler`` on Dask, with the same rows.
"""

import copy
import csv
import gc
import hashlib
import io
import itertools
import json
import logging
import math
import os
import re
import sys
import time

import numpy as np

from ..errors import CaseError, show
from ..specs.case import as_float, as_int, read_json
from ..specs.materials import MATERIAL_KEYS
from .forked_cluster import ForkedCluster
from .forking import can_fork
from .signals import as_interruption
from .worker_pool import WORKER_DIED, WorkerPool, WorkersLost

SWEEP_FORMAT = "cable-harness-sweep/1"
METRICS = ("converged", "length", "min_bend_radius", "max_tension", "peak_force", "min_clearance", "solve_ms")
# the direction in which an output gets worse, for the summary's worst variant
WORSE = {
    "length": max,
    "min_bend_radius": min,
    "max_tension": max,
    "peak_force": max,
    "min_clearance": min,
    "solve_ms": max,
}
MAX_VARIANTS = 1_000_000
_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\.")


# ---------------------------------------------------------------- the sweep file


def parse_path(text, where) -> tuple:
    """``cables[0].clips[1].frame.position[2]`` as ("cables", 0, "clips", 1, "frame", "position", 2)."""
    if not isinstance(text, str) or not text:
        raise CaseError(f"{where} must be a field path such as cables[0].length, got {show(text)}")
    keys, pos, expect_name = [], 0, True
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or (m.group(0) == "." and expect_name) or (m.group(1) and not expect_name):
            raise CaseError(f"{where} {show(text)} is not a field path such as cables[0].length")
        if m.group(1):
            keys.append(m.group(1))
            expect_name = False
        elif m.group(2):
            if expect_name and keys:
                raise CaseError(f"{where} {show(text)} is not a field path such as cables[0].length")
            keys.append(int(m.group(2)))
        else:
            expect_name = True
        pos = m.end()
    if expect_name or not keys or not isinstance(keys[0], str):
        raise CaseError(f"{where} {show(text)} is not a field path such as cables[0].length")
    return tuple(keys)


def set_path(doc, keys, value, where):
    """Set a field of a case document in place; every container on the way must exist."""
    target = doc
    for depth, key in enumerate(keys[:-1]):
        target = _child(target, key, keys[: depth + 1], where)
    last = keys[-1]
    if isinstance(last, int):
        if not isinstance(target, list) or last >= len(target):
            raise CaseError(f"{where}: the case has no {_path_text(keys)}")
        target[last] = value
    else:
        # a new key only where a material names a value its preset supplies (material.E beside a preset)
        new_ok = len(keys) >= 2 and keys[-2] == "material" and last in MATERIAL_KEYS
        if not isinstance(target, dict) or (last not in target and not new_ok):
            raise CaseError(f"{where}: the case has no {_path_text(keys)}")
        target[last] = value


def _child(target, key, keys, where):
    if isinstance(key, int) and isinstance(target, list) and key < len(target):
        return target[key]
    if isinstance(key, str) and isinstance(target, dict) and isinstance(target.get(key), (dict, list)):
        return target[key]
    raise CaseError(f"{where}: the case has no {_path_text(keys)}")


def _path_text(keys) -> str:
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out


class Sweep:
    """A parsed sweep: the base case document, what varies, and the variants in order."""

    def __init__(self, case_doc: dict, vary: list, samples: int, seed: int):
        self.case_doc, self.vary, self.samples, self.seed = case_doc, vary, samples, seed
        self.columns = [v["path"] for v in vary]

    def variants(self) -> list:
        """[{path: value}] in variant order: grid points (first entry slowest), each crossed with the draws."""
        grid = [v for v in self.vary if "values" in v]
        sampled = [v for v in self.vary if "values" not in v]
        rng = np.random.default_rng(self.seed)
        draws = np.empty((self.samples if sampled else 1, len(sampled)))
        for j, v in enumerate(sampled):
            a, b = v["params"]
            column = rng.uniform(a, b, self.samples) if v["kind"] == "uniform" else rng.normal(a, b, self.samples)
            draws[:, j] = column
        out = []
        for point in itertools.product(*(v["values"] for v in grid)):
            for row in draws:
                assignment = {v["path"]: value for v, value in zip(grid, point)}
                assignment.update({v["path"]: float(x) for v, x in zip(sampled, row)})
                out.append({c: assignment[c] for c in self.columns})
        return out

    def digest(self) -> str:
        text = json.dumps(
            {"case": self.case_doc, "vary": self.vary, "samples": self.samples, "seed": self.seed},
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_sweep(doc, folder=".") -> Sweep:
    """Validate a sweep document; a case given by file name is read relative to ``folder``."""
    if not isinstance(doc, dict):
        raise CaseError("sweep must be an object")
    for key in doc:
        if key not in ("format", "case", "samples", "seed", "vary"):
            raise CaseError(
                f"sweep.{key if isinstance(key, str) else show(key)} is not a known key "
                f"(known: format, case, samples, seed, vary)"
            )
    if doc.get("format") != SWEEP_FORMAT:
        raise CaseError(f"sweep.format must be {SWEEP_FORMAT!r}, got {show(doc.get('format'))}")
    case = doc.get("case")
    if isinstance(case, str):
        case = read_json(os.path.join(folder, case))
    if not isinstance(case, dict):
        raise CaseError("sweep.case must be a case document or the name of a case file")
    from ..specs.case import parse_case

    parse_case(case)  # the base case itself must be valid
    vary_raw = doc.get("vary")
    if not isinstance(vary_raw, list) or not vary_raw:
        raise CaseError("sweep.vary must be a non-empty list")
    vary, seen = [], set()
    for i, v in enumerate(vary_raw):
        where = f"sweep.vary[{i}]"
        if not isinstance(v, dict) or "path" not in v:
            raise CaseError(f"{where} must be an object with a path")
        kinds = [k for k in ("uniform", "normal", "values") if k in v]
        extra = [k for k in v if k not in ("path", "uniform", "normal", "values")]
        if extra or len(kinds) != 1:
            raise CaseError(f"{where} needs a path and exactly one of uniform, normal, values")
        keys = parse_path(v["path"], f"{where}.path")
        text = _path_text(keys)
        if text in seen:
            raise CaseError(f"{where}.path {text} is varied twice")
        seen.add(text)
        set_path(copy.deepcopy(case), keys, 0.0, f"{where}.path")  # the field exists
        kind = kinds[0]
        entry = {"path": text, "kind": kind}
        if kind == "values":
            values = v["values"]
            if not isinstance(values, list) or not values:
                raise CaseError(f"{where}.values must be a non-empty list")
            entry["values"] = [
                as_float(x, f"{where}.values[{k}]") if not isinstance(x, str) else x for k, x in enumerate(values)
            ]
        else:
            params = v[kind]
            if not isinstance(params, list) or len(params) != 2:
                raise CaseError(f"{where}.{kind} must be [{'low, high' if kind == 'uniform' else 'mean, sd'}]")
            a, b = (as_float(x, f"{where}.{kind}[{k}]") for k, x in enumerate(params))
            if kind == "uniform" and not a <= b:
                raise CaseError(f"{where}.uniform must be [low, high] with low <= high")
            if kind == "uniform" and not math.isfinite(b - a):  # numpy's draw overflows on such a range
                raise CaseError(f"{where}.uniform [{a:g}, {b:g}] is wider than a double can hold (high - low)")
            if kind == "normal" and b < 0:
                raise CaseError(f"{where}.normal standard deviation must not be negative")
            entry["params"] = [a, b]
        vary.append(entry)
    sampled = any("values" not in v for v in vary)
    samples = as_int(doc.get("samples", 1), "sweep.samples", 1, MAX_VARIANTS)
    if not sampled and "samples" in doc and samples != 1:
        raise CaseError("sweep.samples: no uniform or normal entry to sample (the grid alone is swept)")
    seed = as_int(doc.get("seed", 0), "sweep.seed", 0, 2**63 - 1)
    count = samples if sampled else 1
    for v in vary:
        count *= len(v.get("values", [None]))
    if count > MAX_VARIANTS:
        raise CaseError(f"sweep: {count} variants, more than {MAX_VARIANTS}")
    return Sweep(case, vary, samples if sampled else 1, seed)


def load_sweep(path) -> Sweep:
    return parse_sweep(read_json(path, "sweep file"), os.path.dirname(os.path.abspath(path)))


# ---------------------------------------------------------------- one variant (runs on a worker)


def min_clearance(nodes, radius, obstacles) -> float | None:
    """Smallest gap between the cable's surface and the obstacles: exact for planes and spheres (over
    the segments), segment-triangle distances for meshes (clearance.py); None without obstacles."""
    from ..contact.clearance import clearance_to_triangles
    from ..geometry.mounting import cut_zone

    best = math.inf
    a, b = nodes[:-1], nodes[1:]
    for o in obstacles:
        if o["type"] == "plane":
            n, p = np.asarray(o["normal"]), np.asarray(o["point"])
            best = min(best, float(((nodes - p) @ n).min()) - radius)
        elif o["type"] == "sphere":
            c = np.asarray(o["center"])
            d = b - a
            t = np.clip(np.einsum("ij,ij->i", c - a, d) / np.maximum(np.einsum("ij,ij->i", d, d), 1e-300), 0, 1)
            gap = np.linalg.norm(a + t[:, None] * d - c, axis=1).min() - o["radius"] - radius
            best = min(best, float(gap))
        else:
            tris = np.asarray(o["vertices"], dtype=np.float64)[np.asarray(o["triangles"])]
            # where a connector is mounted on the mesh, the cable leaves its face: the mount zones
            # are no obstacle to the solve (obstacles_from_case), nor to the clearance
            for *centre, zone in o.get("mount_zones", ()):
                tris = cut_zone(tris, np.zeros(len(tris)), np.zeros((len(tris), 3)), np.array(centre), zone)[0]
            if len(tris):
                best = min(best, clearance_to_triangles(nodes, radius, tris)[0])
    return best if math.isfinite(best) else None


def _cable_outputs(case, cid, steps) -> dict:
    from ..session.results import unpack

    spec = case.cable(cid)
    docs = [s["cables"][cid] for s in steps]
    radii = [d["min_bend_radius"] for d in docs if d["min_bend_radius"] is not None]
    forces = [
        np.linalg.norm(fm["force"]) for d in docs for fm in list(d["end_forces"].values()) + list(d["clip_forces"])
    ]
    clearances = [min_clearance(unpack(d["nodes"]), spec.diameter / 2.0, case.obstacles) for d in docs]
    clearances = [c for c in clearances if c is not None]
    return {
        "converged": all(d["converged"] for d in docs),
        "length": docs[-1]["length"],
        "min_bend_radius": min(radii) if radii else None,
        "max_tension": max(spec.section.stretch_stiffness * d["max_strain"] for d in docs),
        "peak_force": float(max(forces)) if forces else 0.0,
        "min_clearance": min(clearances) if clearances else None,
        "solve_ms": float(sum(d["solve_ms"] for d in docs)),
    }


class VariantTimeout(BaseException):
    """A variant ran past ``--variant-timeout``. A BaseException, as KeyboardInterrupt is, so that no
    ``except Exception`` on the way out of the solver takes it for a failure of its own."""


def _stop_at(harness, deadline) -> None:
    """Make every solve of ``harness`` (each quasi-static step, each stage of a dynamic one) first check
    ``deadline``: the harness has no callback, and solve_boundaries is where every step passes."""
    solve = harness.solve_boundaries

    def checked(ids, targets):
        if time.monotonic() > deadline:
            raise VariantTimeout
        return solve(ids, targets)

    harness.solve_boundaries = checked


class _Alarm:
    """SIGALRM after ``seconds`` raising VariantTimeout, where this is the main thread (a forked worker,
    or the sweep's own process): it also ends a long solve between two of its compiled kernels. A Dask
    worker's tasks run in other threads: there the checks between solves (_stop_at) stop the variant."""

    def __init__(self, seconds):
        import signal
        import threading

        self.seconds, self.previous = seconds, None
        self.usable = (
            seconds is not None
            and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()
        )

    def __enter__(self):
        import signal

        if self.usable:
            self.previous = signal.signal(signal.SIGALRM, self._raise)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        import signal

        if self.usable:
            signal.setitimer(signal.ITIMER_REAL, 0.0)
            signal.signal(signal.SIGALRM, self.previous)
        return False

    @staticmethod
    def _raise(signum, frame):
        raise VariantTimeout


def _timed_out(exc) -> bool:
    """VariantTimeout itself, or numba's SystemError around one raised while its kernel ran."""
    for _ in range(20):
        if exc is None:
            return False
        if isinstance(exc, VariantTimeout):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def solve_variant(case_doc: dict, index: int, assignment: dict, keep_shapes: bool = False, timeout=None) -> dict:
    """The row of one variant: its values, then per cable the outputs (METRICS), never an exception;
    with ``keep_shapes`` also ``row["shapes"]``: each cable's last centre line, (nodes, 3) in metres.
    A variant still solving after ``timeout`` seconds is stopped: a row that says it timed out."""
    from ..session.harness import Harness
    from ..session.results import unpack
    from ..specs.case import parse_case
    from .run_case import iter_steps

    row = {"variant": index, **assignment, "converged": False, "message": ""}
    try:
        doc = copy.deepcopy(case_doc)
        for path, value in assignment.items():
            set_path(doc, parse_path(path, "vary.path"), value, f"variant {index}")
        case = parse_case(doc)
        with _Alarm(timeout), np.errstate(all="ignore"):
            harness = Harness.from_case(case)
            if timeout is not None:
                _stop_at(harness, time.monotonic() + timeout)
            steps = list(iter_steps(case, harness, packed=True))  # the per-node arrays stay arrays
        ok = True
        for c in case.cables:
            outputs = _cable_outputs(case, c.id, steps)
            ok = ok and outputs["converged"]
            row.update({f"{c.id}.{k}": v for k, v in outputs.items()})
        row["converged"] = ok
        if keep_shapes:
            row["shapes"] = [unpack(steps[-1]["cables"][c.id]["nodes"]) for c in case.cables]
        if not ok:
            row["message"] = "; ".join(
                f"{cid}: {d['message']}" for step in steps for cid, d in step["cables"].items() if "message" in d
            )[:500]
    except VariantTimeout:
        row["message"] = f"timed out: still solving after {timeout:g} s (--variant-timeout)"
    except CaseError as exc:
        row["message"] = f"invalid variant: {exc}"
    except Exception as exc:  # a bug: the row says so, the study goes on
        stop = as_interruption(exc)
        if stop is not None:
            # Cancel (SIGTERM) or Ctrl-C while a kernel ran, which numba's dispatcher reports as a
            # SystemError: the run stops, and the variant gets no row (a rerun solves it)
            raise stop from None
        if _timed_out(exc):
            row["message"] = f"timed out: still solving after {timeout:g} s (--variant-timeout)"
        else:
            row["message"] = f"internal error: {type(exc).__name__}: {exc}"
    row["message"] = " ".join(row["message"].split())
    return row


def solve_chunk(case_doc, chunk, keep_shapes=False, timeout=None) -> list:
    return [solve_variant(case_doc, index, assignment, keep_shapes, timeout) for index, assignment in chunk]


# ---------------------------------------------------------------- the table


def columns_of(sweep: Sweep) -> list:
    ids = [c["id"] for c in sweep.case_doc["cables"]]
    return ["variant"] + sweep.columns + ["converged"] + [f"{cid}.{m}" for cid in ids for m in METRICS] + ["message"]


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return str(value)


def _parse_cell(column, text):
    if column == "message" or text == "":
        return text if column == "message" else None
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text) if column == "variant" else float(text)
    except ValueError:
        return text


def read_rows(path, columns) -> dict:
    """{variant: row} of the complete rows of a results.csv written with ``columns`` (a row cut short by
    an interruption is left out, and solved again)."""
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header != columns:
            return None
        for cells in reader:
            if len(cells) != len(columns) or not cells[0].isdigit():
                continue
            row = {c: _parse_cell(c, t) for c, t in zip(columns, cells)}
            rows[row["variant"]] = row
    return rows


def _csv_line(columns, row) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([_cell(row.get(c)) for c in columns])
    return buf.getvalue()


class OutputFailed(CaseError):
    """A file of the output folder could not be written (read-only, full, removed): the rows written
    before are kept."""


def _output_failed(path, exc: OSError) -> OutputFailed:
    reason = exc.strerror or type(exc).__name__
    return OutputFailed(
        f"-o {os.path.dirname(path)}: writing {os.path.basename(path)} failed: {reason} (the rows written "
        f"before are kept: run the sweep again to resume)"
    )


def _write_atomic(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _output_failed(path, exc) from None


def summarise(sweep: Sweep, rows: list) -> dict:
    """Per output: min, max, mean, percentiles and the worst variant, over the converged variants."""
    ok = [r for r in rows if r["converged"]]
    out = {
        "format": "cable-harness-sweep-summary/1",
        "variants": len(rows),
        "converged": len(ok),
        "failed": [r["variant"] for r in rows if not r["converged"]],
        "outputs": {},
    }
    ids = [c["id"] for c in sweep.case_doc["cables"]]
    for cid in ids:
        for metric in METRICS[1:]:
            column = f"{cid}.{metric}"
            pairs = [(r[column], r) for r in ok if isinstance(r.get(column), (int, float))]
            if not pairs:
                continue
            values = np.array([v for v, _ in pairs], dtype=float)
            worst_value, worst_row = WORSE[metric](pairs, key=lambda p: p[0])
            p5, p50, p95 = np.percentile(values, [5, 50, 95])
            out["outputs"][column] = {
                "min": float(values.min()),
                "max": float(values.max()),
                "mean": float(values.mean()),
                "p5": float(p5),
                "p50": float(p50),
                "p95": float(p95),
                "worst": {
                    "variant": worst_row["variant"],
                    "value": float(worst_value),
                    "inputs": {c: worst_row[c] for c in sweep.columns},
                },
            }
    return out


def plot(sweep: Sweep, rows: list, folder: str) -> list:
    """One figure per output: its histogram, then the output against each varied input (failed variants
    marked); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(folder, exist_ok=True)
    written = []
    ids = [c["id"] for c in sweep.case_doc["cables"]]
    for cid in ids:
        for metric in METRICS[1:]:
            column = f"{cid}.{metric}"
            have = [r for r in rows if isinstance(r.get(column), (int, float))]
            if not have:
                continue
            inputs = [c for c in sweep.columns if all(isinstance(r[c], (int, float)) for r in have)]
            fig, axes = plt.subplots(1, 1 + len(inputs), figsize=(3.2 * (1 + len(inputs)), 2.8), squeeze=False)
            good = [r[column] for r in have if r["converged"]]
            axes[0][0].hist(good or [r[column] for r in have], bins=min(30, max(5, len(have) // 5)))
            axes[0][0].set_xlabel(column)
            axes[0][0].set_ylabel("variants")
            for ax, c in zip(axes[0][1:], inputs):
                for converged, style in ((True, dict(s=8, c="tab:blue")), (False, dict(s=14, c="tab:red", marker="x"))):
                    pts = [(r[c], r[column]) for r in have if r["converged"] is converged]
                    if pts:
                        ax.scatter(*zip(*pts), label="converged" if converged else "not converged", **style)
                ax.set_xlabel(c)
                ax.set_ylabel(column)
            fig.tight_layout()
            name = os.path.join(folder, re.sub(r"[^A-Za-z0-9_.-]+", "_", column) + ".png")
            fig.savefig(name, dpi=80)
            plt.close(fig)
            written.append(name)
    return written


# ---------------------------------------------------------------- running it


CLUSTER_TIMEOUT = 30.0  # [s] default wait for a scheduler's answer, or for a worker when none is left
WATCH_INTERVAL = 1.0  # [s] between checks of the cluster while waiting for rows


class ClusterLost(CaseError):
    """The scheduler or every worker went away during a sweep: the rows so far are kept."""


def _quiet_dask_loggers() -> list:
    """Set the loggers of distributed, tornado and asyncio to CRITICAL for a sweep on Dask; returns
    (logger, level before) pairs to give back. distributed logs a lost connection as tracebacks on
    stderr (from loggers with levels of their own, configured as it is imported), asyncio reports the
    gathers of a closed client's lost results when collected, and tornado's loop reports
    distributed's cancel callback failing (a NameError) when a signal interrupts a call into the
    client or cluster before its future exists: the sweep's one line says what happened."""
    try:
        import distributed  # noqa: F401  (its loggers and their levels exist once it is imported)
    except ImportError:
        return []
    names = [n for n in list(logging.root.manager.loggerDict) if n.startswith(("distributed", "tornado"))]
    quiet = [(logging.getLogger(n), logging.getLogger(n).level) for n in [*names, "asyncio"]]
    for logger, _ in quiet:
        logger.setLevel(logging.CRITICAL)
    return quiet


def _client(scheduler, n_workers: int, timeout=CLUSTER_TIMEOUT, before_fork=None):
    """(Dask client, its local cluster or None); (None, None) where ``distributed`` is missing and no
    scheduler is named: the variants then run in processes of the standard library. The local
    cluster's ``n_workers`` workers are forked from this process where it can fork (forked_cluster), after
    ``before_fork`` (default: loading the kernels), else spawned."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        if scheduler:
            raise CaseError(
                "--scheduler needs the dask and distributed packages (pip install dask distributed)"
            ) from None
        return None, None
    if scheduler:
        return _connect(Client, scheduler, timeout), None
    if can_fork():
        # the kernels loaded here once, and every worker forked with them: a spawned worker's start
        # (1.3 s: a new interpreter, its imports, numba's code generator, the kernels, those of its
        # first variant) on every core kept 16 workers near 10x one on 640 variants (docs/performance.md)
        cluster = ForkedCluster(n_workers, before_fork or _warm_up, timeout)
        try:
            # not waiting for the workers: the scheduler hands the first variants to the first that
            # register while the others still start
            client = Client(cluster.cluster)
        except BaseException:
            cluster.close(timeout)
            raise
        return client, cluster
    cluster = LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
    )
    return Client(cluster), cluster


def _connect(Client, scheduler, timeout):
    """A client of the scheduler at ``scheduler``, or CaseError within ``timeout`` seconds. Client's own
    timeout covers the TCP connect but not distributed's handshake after it, which waits for good on
    a port that accepts connections and never answers: the client is made in a thread given a deadline
    (left behind as a daemon when it passes; the command then ends)."""
    import threading

    box = {}

    def make():
        try:
            # the timeout also bounds the reconnection after a lost connection, before the client closes
            box["client"] = Client(scheduler, timeout=timeout)
        except BaseException as exc:  # said in the main thread
            box["error"] = exc

    thread = threading.Thread(target=make, name="dask-connect", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if thread.is_alive():
        raise CaseError(
            f"--scheduler {scheduler}: no Dask scheduler answered within {timeout:g} s (the address "
            f"accepts connections but does not speak to a Dask client)"
        )
    if "error" in box:
        exc = box["error"]
        if isinstance(exc, (OSError, TimeoutError, ValueError)):
            raise CaseError(f"--scheduler {scheduler}: cannot connect: {' '.join(str(exc).split())[:120]}") from None
        raise exc
    return box["client"]


def _warm_up():
    """Load (or compile) the solver's kernels in a worker once, before any variant is timed: a worker
    process keeps them for every task it runs."""
    from ..session.harness import Harness
    from ..specs.case import parse_case

    doc = {
        "format": "cable-harness-case/1",
        "cables": [
            {
                "id": "w",
                "length": 0.3,
                "diameter": 0.004,
                "material": {"preset": "lv2017_harness"},
                "segments": 4,
                "start": {"position": [0, 0, 0], "tangent": [1, 0, 0]},
                "end": {"position": [0.2, 0, 0], "tangent": [1, 0, 0]},
            }
        ],
    }
    Harness.from_case(parse_case(doc)).solve_step()
    return True


def run_sweep(
    sweep: Sweep,
    outdir: str,
    scheduler=None,
    workers=None,
    progress=None,
    plots=True,
    chunk_size=None,
    shapes=False,
    executor=None,
    cluster_timeout=CLUSTER_TIMEOUT,
    variant_timeout=None,
) -> dict:
    """Solve the variants missing from ``outdir``/results.csv; write results.csv (all rows, in variant
    order), summary.json, plots/ and with ``shapes`` shapes/<variant>.npz. Returns the summary.
    ``executor`` "processes" runs them in processes of the standard library forked from this one (the
    default on this machine: no scheduler to start or talk to, docs/performance.md), "dask" on a local
    Dask cluster or the one at ``scheduler`` (the default with a scheduler)."""
    if executor is None:
        executor = "dask" if scheduler else "processes"
    if executor not in ("dask", "processes"):
        raise CaseError(f"--executor must be dask or processes, got {show(executor)}")
    if executor == "processes" and scheduler:
        raise CaseError("--scheduler needs --executor dask")
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise CaseError(f"-o {outdir}: is a file, not a folder")
    parent = os.path.dirname(os.path.abspath(outdir))
    if not os.path.isdir(parent):
        raise CaseError(f"-o {outdir}: the folder {parent} does not exist")
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as exc:
        raise CaseError(f"-o {outdir}: cannot make the folder: {exc.strerror}") from None
    if not os.access(outdir, os.W_OK):
        raise CaseError(f"-o {outdir}: the folder is not writable")
    columns = columns_of(sweep)
    stamp_path, table = os.path.join(outdir, "sweep.json"), os.path.join(outdir, "results.csv")
    stamp = {"format": SWEEP_FORMAT, "digest": sweep.digest(), "columns": columns}
    rows = {}
    if os.path.exists(stamp_path):
        try:
            old = json.load(open(stamp_path, encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if not isinstance(old, dict) or old.get("digest") != stamp["digest"]:
            raise CaseError(f"-o {outdir}: holds the results of another sweep; use another folder")
        rows = read_rows(table, columns) or {}
        # a variant whose worker kept dying (memory that ran out then, perhaps) is tried again
        rows = {i: r for i, r in rows.items() if not str(r.get("message") or "").startswith(WORKER_DIED)}
    else:
        _write_atomic(stamp_path, json.dumps(stamp, indent=1))
    variants = sweep.variants()
    todo = [(i, a) for i, a in enumerate(variants) if i not in rows]
    # the table as far as it is complete (a line cut short by an interruption is dropped), then appended to
    _write_atomic(
        table,
        "".join(
            [_csv_line(columns, dict(zip(columns, columns)))] + [_csv_line(columns, rows[i]) for i in sorted(rows)]
        ),
    )
    if progress:
        progress(f"{len(variants)} variants, {len(rows)} already in {table}, {len(todo)} to solve")
    if todo:
        sink = _Sink(columns, table, rows, progress, len(todo), os.path.join(outdir, "shapes") if shapes else None)
        sink.timeout = variant_timeout
        _solve(sweep, todo, sink, executor, scheduler, workers or _cores(), chunk_size, cluster_timeout)
    ordered = [rows[i] for i in range(len(variants))]
    _write_atomic(
        table, "".join([_csv_line(columns, dict(zip(columns, columns)))] + [_csv_line(columns, r) for r in ordered])
    )
    summary = summarise(sweep, ordered)
    if plots:
        try:
            written = plot(sweep, ordered, os.path.join(outdir, "plots"))
        except OSError as exc:
            raise _output_failed(str(exc.filename or os.path.join(outdir, "plots")), exc) from None
        except ImportError:  # matplotlib is not installed (Blender's Python): the table and summary stand
            written = []
            summary["plots_skipped"] = "matplotlib is not installed"
        summary["plots"] = [os.path.relpath(p, outdir) for p in written]
    _write_atomic(os.path.join(outdir, "summary.json"), json.dumps(summary, indent=1, allow_nan=False))
    return summary


def _solve(sweep, todo, sink, executor, scheduler, n_workers, chunk_size, cluster_timeout) -> None:
    """Solve the variants ``todo`` into ``sink`` with ``executor``; a lost cluster or pool is
    ClusterLost saying that the rows so far are kept."""
    rest = todo

    def before_fork():
        nonlocal rest
        rest = _load_before_fork(sweep, todo, sink, n_workers)

    quiet = _quiet_dask_loggers() if executor == "dask" else []
    try:
        client, cluster = (
            _client(scheduler, n_workers, cluster_timeout, before_fork) if executor == "dask" else (None, None)
        )
        finished = False
        try:
            if client is None:
                _solve_locally(sweep, todo, sink, n_workers, chunk_size)
            else:
                where = f"--scheduler {scheduler}" if scheduler else "the local Dask cluster"
                forked = cluster if isinstance(cluster, ForkedCluster) else None
                _solve_on(client, sweep, rest, sink, chunk_size, where, cluster_timeout, forked)
            finished = True
        except ClusterLost as exc:
            raise ClusterLost(
                f"{exc}; the rows solved so far are kept in {sink.table}, run the sweep again to resume"
            ) from None
        finally:
            if client is not None:
                _close(client, cluster, cluster_timeout, finished)
                gc.collect()
    finally:
        for logger, level in quiet:
            logger.setLevel(level)


class _Sink:
    """Where solved rows go as they come in: appended to results.csv (after their shape file, so that
    a row in the table always has its shape), kept in ``rows``, counted for the progress line."""

    def __init__(self, columns, table, rows, progress, total, shape_dir):
        self.columns, self.table, self.rows, self.progress = columns, table, rows, progress
        self.total, self.shape_dir = total, shape_dir
        self.done, self.started, self.last = 0, time.perf_counter(), 0.0
        self.timeout = None  # --variant-timeout, for the workers
        if shape_dir:
            try:
                os.makedirs(shape_dir, exist_ok=True)
            except OSError as exc:
                raise _output_failed(shape_dir, exc) from None

    def take(self, chunk_rows) -> None:
        try:
            fh = open(self.table, "a", encoding="utf-8")
        except OSError as exc:
            raise _output_failed(self.table, exc) from None
        with fh:
            for row in chunk_rows:
                shapes = row.pop("shapes", None)
                if self.shape_dir and shapes is not None:
                    path = os.path.join(self.shape_dir, f"{row['variant']}.npz")
                    tmp = f"{path}.tmp{os.getpid()}.npz"
                    # made in memory, then written: numpy's zip writer meeting a full disk also fails
                    # again when collected, printing a traceback beside the one-line message
                    packed = io.BytesIO()
                    np.savez(packed, **{f"c{k}": nodes for k, nodes in enumerate(shapes)})
                    try:
                        with open(tmp, "wb") as shape_file:
                            shape_file.write(packed.getbuffer())
                        os.replace(tmp, path)
                    except OSError as exc:
                        if os.path.exists(tmp):
                            os.unlink(tmp)
                        raise _output_failed(path, exc) from None
                try:
                    fh.write(_csv_line(self.columns, row))
                    fh.flush()  # a row in the table is a row a rerun need not solve again
                except OSError as exc:
                    raise _output_failed(self.table, exc) from None
                self.rows[row["variant"]] = row
                self.done += 1
        now = time.perf_counter()
        if self.progress and (now - self.last > 2.0 or self.done == self.total):
            self.last = now
            self.progress(f"{self.done}/{self.total} variants solved ({now - self.started:.1f} s)")


def _chunks(todo, n_workers, chunk_size) -> list:
    size = chunk_size or max(1, min(8, len(todo) // (4 * n_workers)))
    return [todo[k : k + size] for k in range(0, len(todo), size)]


def _close(client, cluster, timeout, finished=True) -> None:
    """Close a client (and its local cluster), bounded in time: the scheduler may be gone. Forked
    workers are stopped first (killed unless the sweep ``finished``): running on after the client,
    each result they report makes the scheduler log a traceback of the closed client."""
    if isinstance(cluster, ForkedCluster):
        cluster.stop_workers(timeout, finished)
    try:
        client.close(timeout=timeout)
    except Exception:  # nothing is left to say to a scheduler that is gone
        pass
    if cluster is not None:
        try:
            cluster.close(timeout=timeout)
        except Exception:
            pass


class _Call:
    """A call of a solver function, pickled by reference: unpickling it makes the call (pickle's
    REDUCE). Submitted as ``pickle.loads(bytes)``, the task is a standard-library function and opaque
    bytes, which the scheduler can deserialise without importing solver_core; only the workers run
    (and so import) the solver."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


def _solve_on(
    client, sweep, todo, sink, chunk_size, where="the local Dask cluster", timeout=CLUSTER_TIMEOUT, forked=None
):
    """Solve the variants on a Dask cluster, checking it every WATCH_INTERVAL: a scheduler that is lost
    or does not answer within ``timeout``, or a cluster without workers for ``timeout``, is
    ClusterLost, never a wait for good. ``forked``: the ForkedCluster whose workers started with the
    kernels (no warm-up; they may still be registering), each that dies replaced."""
    import asyncio
    import concurrent.futures
    import pickle

    from distributed import wait

    answered = False

    def workers() -> dict:
        nonlocal answered
        try:
            threads = client.nthreads(callback_timeout=timeout)
        except TimeoutError:
            # silence from a scheduler that answered before is a lost connection (a killed scheduler
            # on a loaded machine times out before the client sees its socket close)
            what = "the connection to the scheduler was lost" if answered else "the scheduler does not answer"
            raise ClusterLost(f"{where}: {what} (no answer within {timeout:g} s)") from None
        except (OSError, RuntimeError, asyncio.CancelledError):  # a closed connection, or a closed client
            raise ClusterLost(f"{where}: the connection to the scheduler was lost") from None
        answered = True
        return threads

    try:
        n_workers = len(forked.processes) if forked is not None else max(1, len(workers()))
        if forked is None:
            client.run(_warm_up)
        keep = sink.shape_dir is not None
        futures = [
            client.submit(
                pickle.loads, pickle.dumps(_Call(solve_chunk, sweep.case_doc, c, keep, sink.timeout)), pure=False
            )
            for c in _chunks(todo, n_workers, chunk_size)
        ]
        pending, workerless_since = set(futures), None
        while pending:
            try:
                done, pending = wait(pending, timeout=WATCH_INTERVAL, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            for future in done:
                if future.status == "cancelled" or client.status != "running":  # the scheduler is gone
                    raise ClusterLost(f"{where}: the connection to the scheduler was lost")
                if future.status == "error":  # e.g. distributed's KilledWorker: its workers kept dying
                    exc = future.exception(timeout=timeout)
                    what = f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}"
                    raise ClusterLost(f"{where}: a task failed: {what}")
                try:
                    rows = future.result(timeout=timeout)
                except (TimeoutError, OSError):
                    # its rows went with their worker: the scheduler solves the task again elsewhere (or,
                    # with no worker left, the check below ends the sweep)
                    pending.add(future)
                    continue
                sink.take(rows)
            if not pending:
                break
            if client.status != "running":
                raise ClusterLost(f"{where}: the connection to the scheduler was lost")
            if forked is not None:
                forked.replace_lost()
            if workers():
                workerless_since = None
            elif workerless_since is None:
                workerless_since = time.monotonic()
            elif time.monotonic() - workerless_since > timeout:
                raise ClusterLost(f"{where}: every worker was lost (none for {timeout:g} s)")
    except (OSError, asyncio.CancelledError, concurrent.futures.CancelledError) as exc:
        # distributed's CommClosedError is an OSError; its futures cancelled with a lost scheduler raise
        # (Futures)CancelledError from wait()
        lost = "the connection to the scheduler was lost" if client.status != "running" else "a worker was lost"
        raise ClusterLost(f"{where}: {lost} ({type(exc).__name__})") from None


def _cores() -> int:
    """The cores this process may run on: its affinity (taskset, a container's cpuset), not a CPU
    quota, which the system does not say per process."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def _load_before_fork(sweep, todo, sink, n_workers: int) -> list:
    """Load the kernels in this process before ``n_workers`` workers are forked from it, so that each
    starts with them. The first variant adds kernels of its own to ``_warm_up``'s (contact, clips:
    0.10-0.14 s for the equipment bay). Where each worker has a core, every worker loads those
    beside the others while it solves its first variant, and no worker waits for a variant solved
    here (one of a few seconds would keep every core idle that long). Where the workers outnumber
    the cores, those loads would queue for the cores: the first variant is solved here, its kernels
    loaded once, before the fork. Returns the variants left to the workers."""
    _warm_up()
    if n_workers <= _cores():
        return todo
    sink.take(solve_chunk(sweep.case_doc, todo[:1], sink.shape_dir is not None, sink.timeout))
    return todo[1:]


def _solve_locally(sweep, todo, sink, n_workers, chunk_size):
    """Without Dask: worker processes (worker_pool) forked after this one loaded the kernels
    (_load_before_fork; spawned, each loading its own, where this process runs other threads), or
    this process alone where the platform cannot fork or one worker is asked for."""
    import multiprocessing

    keep = sink.shape_dir is not None
    if n_workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        chunks = _chunks(todo, n_workers, chunk_size)
        _warm_up()  # as a worker does: loading the kernels is not the first variant's time (nor limit)
        for c in chunks:
            sink.take(solve_chunk(sweep.case_doc, c, keep, sink.timeout))
        return
    if can_fork():
        # the kernels loaded here, before the fork, are every worker's from its start: a worker that
        # loaded its own would pay numba's code generator and the kernels (0.3 s) on every core, the
        # fixed cost that kept 16 workers under 13x one on a sweep of 640 variants (docs/performance.md)
        todo = _load_before_fork(sweep, todo, sink, n_workers)
    pool = WorkerPool(solve_chunk, sweep.case_doc, (keep, sink.timeout), n_workers, _warm_up, sink.take, _failed_row)
    try:
        pool.solve(_chunks(todo, n_workers, chunk_size))
    except WorkersLost as exc:
        raise ClusterLost(str(exc)) from None


def _failed_row(variant, message) -> dict:
    index, assignment = variant
    return {"variant": index, **assignment, "converged": False, "message": message}


def add_sweep_parser(sub) -> None:
    sweep = sub.add_parser(
        "sweep",
        help="solve variants of a case in parallel and summarise them",
        description="Solve the variants of a sweep file (cable-harness-sweep/1) in parallel, on this "
        "machine or a Dask cluster, and write OUTDIR/results.csv (a row per variant), summary.json and "
        "plots/. Run it again with the same OUTDIR to finish an interrupted sweep.",
    )
    sweep.add_argument("sweep", help="sweep JSON file (format cable-harness-sweep/1)")
    sweep.add_argument(
        "-o", "--output", required=True, metavar="OUTDIR", help="output folder (results.csv, summary.json, plots/)"
    )
    sweep.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="address of a running Dask scheduler, e.g. tcp://host:8786 (default: worker processes on "
        "this machine, one per core)",
    )
    sweep.add_argument("--workers", type=int, help="worker processes on this machine (default: one per core)")
    sweep.add_argument(
        "--executor",
        choices=("dask", "processes"),
        help="processes (default without --scheduler): processes of the standard library forked on this "
        "machine; dask (default with --scheduler): a local Dask cluster, or the one at --scheduler",
    )
    sweep.add_argument(
        "--cluster-timeout",
        type=float,
        default=CLUSTER_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for a Dask scheduler's answer, or for a worker when none is left, before the "
        f"sweep ends (the rows so far kept; default {CLUSTER_TIMEOUT:g})",
    )
    sweep.add_argument(
        "--variant-timeout",
        type=float,
        metavar="SECONDS",
        help="stop a variant still solving after this long: its row says it timed out (converged false) and "
        "the sweep goes on (default: no limit)",
    )
    sweep.add_argument("--no-plots", action="store_true", help="write no plots")
    sweep.add_argument(
        "--shapes",
        action="store_true",
        help="also keep each variant's solved centre lines: OUTDIR/shapes/<variant>.npz, one (nodes, 3) "
        "array in metres per cable, named c0, c1, ... in the case's order",
    )
    sweep.add_argument("-q", "--quiet", action="store_true", help="no progress on stdout")


def run_sweep_command(args) -> int:
    sweep = load_sweep(args.sweep)
    if args.workers is not None and args.workers < 1:
        raise CaseError(f"--workers must be at least 1, got {args.workers}")
    if args.variant_timeout is not None and not 0.01 <= args.variant_timeout <= 1e7:  # also NaN
        raise CaseError(f"--variant-timeout must be from 0.01 to 1e7 seconds, got {args.variant_timeout:g}")
    if not 0.1 <= args.cluster_timeout <= 1e6:  # also NaN
        raise CaseError(f"--cluster-timeout must be from 0.1 to 1e6 seconds, got {args.cluster_timeout:g}")
    echo = None if args.quiet else print
    summary = run_sweep(
        sweep,
        args.output,
        args.scheduler,
        args.workers,
        echo,
        plots=not args.no_plots,
        shapes=args.shapes,
        executor=args.executor,
        cluster_timeout=args.cluster_timeout,
        variant_timeout=args.variant_timeout,
    )
    if echo:
        print(
            f"{summary['converged']} of {summary['variants']} variants converged; results in "
            f"{os.path.join(args.output, 'results.csv')}",
            file=sys.stdout,
        )
    return 0 if summary["converged"] == summary["variants"] else 1
