# SPDX-License-Identifier: GPL-3.0-or-later
"""The solver benchmarks on two revisions of solver_core in one process, interleaved.

    python -m benchmarks.compare_revisions [REV]      # REV: the commit to compare with (HEAD~1)
        [--rounds N]                                   # interleaved rounds, the best of each kept (3)
    python -m benchmarks.compare_revisions REV --results   # the same result documents? (no timing)

A figure measured in two processes minutes apart moves by up to 2x on a shared virtual machine; in
one process, round after round with the order of the two versions alternating, both see the same
machine. REV's solver_core is taken from git into a folder of its own (kept under
``$XDG_CACHE_HOME/cable_harness/revisions``, so its kernels compile once per revision) and imported
as ``solver_core_prev``. Each benchmark module (bench_solver, bench_contact, bench_harness,
bench_models) is then imported twice: once as it is, and once with ``solver_core`` standing for
REV's package while its imports run, so that its functions solve with REV's code. A module of REV is
found under this checkout's name for it by its file name (``solver_core.solve.newton`` is REV's
``newton.py`` wherever REV keeps it), so revisions before and after a move of modules compare.

Prints, per figure, the best over the rounds of each revision and their ratio; iteration counts
are printed beside the times where the benchmark returns them (they must be equal when a change
keeps the results). ``--results`` instead solves the demo scenes' and the shared outside cases
(RESULT_CASES) with both revisions and says, per case, whether the result documents are the same to
the last bit, timings left out; exit code 1 where one differs.
"""

import argparse
import importlib
import importlib.util
import os
import pkgutil
import statistics
import subprocess
import sys
import tarfile
import time
import types
from io import BytesIO
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PREVIOUS = "solver_core_prev"
BENCHES = ("bench_solver", "bench_contact", "bench_harness", "bench_models")
RESULT_CASES = [
    ROOT / "demo_blends" / "cases" / f"{name}.json"
    for name in ("desk", "desk_harness", "branched_harness", "equipment_bay")
]
RESULT_CASES += sorted(p for p in (ROOT.parent / "shared" / "cases").glob("*.json") if not p.name.startswith("sweep"))
TIMINGS = ("_ms", "seconds")  # keys of a result document that are times, not results


def _revision_folder(rev: str) -> Path:
    """REV's solver_core, extracted once into a folder named after its commit."""
    sha = subprocess.run(["git", "rev-parse", rev], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cable_harness" / "revisions"
    folder = base / sha.strip()[:12]
    if not (folder / PREVIOUS / "__init__.py").exists():
        archive = subprocess.run(["git", "archive", rev, "solver_core"], cwd=ROOT, capture_output=True, check=True)
        stage = folder / "stage"
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(stage, filter="data")
        (stage / "solver_core").rename(folder / PREVIOUS)
        stage.rmdir()
    return folder


def _import_previous(folder: Path) -> types.ModuleType:
    sys.path.insert(0, str(folder))
    try:
        package = importlib.import_module(PREVIOUS)
        for info in pkgutil.walk_packages(package.__path__, PREVIOUS + "."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
    finally:
        sys.path.remove(str(folder))
    return package


def _import_current() -> dict:
    """This checkout's solver_core, every module imported (so that its kernels are defined while
    numba's cache folder is its own, _jit); returns its module names by file name ("newton" ->
    "solver_core.solve.newton")."""
    import solver_core

    names = {}
    for info in pkgutil.walk_packages(solver_core.__path__, "solver_core."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
        names[info.name.rsplit(".", 1)[-1]] = info.name
    return names


def _aliases(previous: types.ModuleType, current: dict) -> dict:
    """sys.modules entries that make ``solver_core...`` REV's modules, under this checkout's names
    (``current``, from _import_current) and REV's own."""
    out = {"solver_core": previous}
    for name, module in list(sys.modules.items()):
        if not name.startswith(PREVIOUS + ".") or module is None:
            continue
        stem = name.rsplit(".", 1)[-1]
        out["solver_core" + name[len(PREVIOUS) :]] = module
        if stem in current:
            out[current[stem]] = module
    for name in list(out):  # this checkout's sub-packages as namespaces holding REV's modules
        parts = name.split(".")
        for depth in range(2, len(parts)):
            parent = ".".join(parts[:depth])
            if parent not in out:
                out[parent] = types.ModuleType(parent)
                out[parent].__path__ = []
            setattr(out[parent], parts[depth], out[".".join(parts[: depth + 1])])
    return out


def _load_bench(name: str, previous: types.ModuleType | None, current: dict) -> types.ModuleType:
    """benchmarks/NAME.py as a module of its own, solving with REV's solver_core if ``previous``."""
    tag = "prev" if previous is not None else "this"
    spec = importlib.util.spec_from_file_location(f"_{name}_{tag}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    if previous is None:
        spec.loader.exec_module(module)
        return module
    saved = {k: v for k, v in sys.modules.items() if k == "solver_core" or k.startswith("solver_core.")}
    for k in saved:
        del sys.modules[k]
    aliases = _aliases(previous, current)
    sys.modules.update(aliases)
    try:
        spec.loader.exec_module(module)
    finally:
        for k in aliases:
            sys.modules.pop(k, None)
        sys.modules.update(saved)
    return module


def _harness_figures(m) -> dict:
    """bench_harness's cold solve (best of 3) and warm step (median of its steps), in ms."""
    case = m.parse_case(m.harness_case())
    cold = []
    for _ in range(3):
        h = m.Harness.from_case(case)
        t0 = time.perf_counter()
        h.solve_step()
        cold.append((time.perf_counter() - t0) * 1e3)
    end = h.cables["leaf4a"].boundary.end
    warm = []
    for k in range(1, m.STEPS + 1):
        moved = m.Frame(end.position + np.array([0.0, 0.0, 0.001 * k]), end.tangent, end.normal)
        t0 = time.perf_counter()
        h.solve_step({"leaf4a": m.CableChange(end=moved)})
        warm.append((time.perf_counter() - t0) * 1e3)
    return {"harness cold solve": (min(cold), None), "harness warm step": (statistics.median(warm), None)}


def figures(b: dict) -> dict:
    """{figure: (milliseconds, iterations or None)} of one revision's benchmark modules ``b``."""
    out = {}
    solver = b["bench_solver"]
    for segments, repeats in ((100, 5), (1000, 3)):
        out[f"solver cold, {segments} segments"] = solver.cold_ms(segments, False, repeats)
        out[f"solver warm, {segments} segments"] = solver.warm_ms(segments, 4 * repeats)
    contact = b["bench_contact"]
    _tris, cold, _contacts, median, _worst, _failed, iterations = contact.single_cable_on_mesh()
    out["contact on a mesh, cold"] = (cold * 1e3, None)
    out["contact on a mesh, step"] = (median, sum(iterations))
    cold, _touching, median, _worst, _failed, iterations = contact.ten_touching_cables()
    out["ten touching cables, cold"] = (cold * 1e3, None)
    out["ten touching cables, step"] = (median, sum(iterations))
    out.update(_harness_figures(b["bench_harness"]))
    models = b["bench_models"]
    out["mass_spring (Lv 2017, 80 points)"] = (models.headline(), None)
    out["kirchhoff_cg (Linn, per step)"] = (models.linn_headline(), None)
    out["cosserat_pbd (Chen 2023, 50 nodes)"] = (models.chen_headline(50)[1], None)
    return out


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if not k.endswith(TIMINGS)}
    if isinstance(value, (list, tuple)):
        return [_without_timings(v) for v in value]
    return value.tolist() if hasattr(value, "tolist") else value


def _first_difference(a, b, where="") -> str | None:
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} / {type(b).__name__}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(set(a) ^ set(b))}"
        return next((d for k in a if (d := _first_difference(a[k], b[k], f"{where}.{k}"))), None)
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} / {len(b)} items"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := _first_difference(x, y, f"{where}[{i}]"))), None)
    same = a == b or (isinstance(a, float) and a != a and b != b)  # NaN as NaN
    return None if same else f"{where}: {a!r} / {b!r}"


def same_results(previous: types.ModuleType) -> int:
    """Solve RESULT_CASES with REV's solver_core and this one; 0 when every result is the same."""
    import json

    import solver_core

    differing = 0
    for path in RESULT_CASES:
        doc = json.loads(path.read_text(encoding="utf-8"))
        prev, this = (_without_timings(api.solve_case(doc)) for api in (previous, solver_core))
        difference = _first_difference(prev, this)
        differing += difference is not None
        print(f"{path.name}: {'the same to the last bit' if difference is None else 'differs at ' + difference}")
    return 1 if differing else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", nargs="?", default="HEAD~1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--results", action="store_true", help="compare result documents, not times")
    parser.add_argument("--previous-first", action="store_true", help="import REV's solver_core before this one")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    t0 = time.perf_counter()
    # The revision imported second runs call-heavy benchmarks (harness, models) 2-3 times slower in
    # this process (docs/performance.md): compare them with the order swapped too.
    if args.previous_first:
        previous = _import_previous(_revision_folder(args.rev))
        current = _import_current()
    else:
        current = _import_current()
        previous = _import_previous(_revision_folder(args.rev))
    if args.results:
        return same_results(previous)
    versions = {
        "this": {n: _load_bench(n, None, current) for n in BENCHES},
        "prev": {n: _load_bench(n, previous, current) for n in BENCHES},
    }
    print("compiling both revisions' kernels (once per revision) ...", file=sys.stderr)
    for b in versions.values():
        figures(b)
    print(f"ready after {time.perf_counter() - t0:.0f} s; {args.rounds} interleaved rounds", file=sys.stderr)
    best = {"prev": {}, "this": {}}
    for r in range(args.rounds):
        order = ("prev", "this") if r % 2 == 0 else ("this", "prev")
        for tag in order:
            for name, (ms, iterations) in figures(versions[tag]).items():
                kept = best[tag].get(name)
                if kept is None or ms < kept[0]:
                    best[tag][name] = (ms, iterations)
    print(f"solver_core at {args.rev} (prev) and this checkout (this), one process, best of {args.rounds} rounds")
    print(f"{'figure':40s} {'prev ms':>10s} {'this ms':>10s} {'this/prev':>10s}  iterations prev / this")
    for name, (prev_ms, prev_it) in best["prev"].items():
        this_ms, this_it = best["this"][name]
        its = "" if prev_it is None else f"  {prev_it} / {this_it}"
        print(f"{name:40s} {prev_ms:10.2f} {this_ms:10.2f} {this_ms / prev_ms:10.3f}{its}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
