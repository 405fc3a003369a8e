# SPDX-License-Identifier: GPL-3.0-or-later
"""A variation sweep of the equipment bay's three cables: 1 worker against 2, and the cost of the
sweep machinery per variant.

    .venv/bin/python -m benchmarks.bench_sweep [--variants 200]

The case: the bay's power, signal and sensor cables between the sockets of devices A and B and through
the clips in front of the two brackets (positions from demo_blends/bay_geometry.py, kinds, lengths and
materials as the demo scene gives them; the bay's solids are left out, a floor plane stands for them).
What varies: the power cable's length (+-1 %, uniform), its first clip's height (+-2 mm, uniform) and the
signal cable's modulus (a grid of two values), 100 samples each: 200 variants.

Prints: the variants solved one after another in this process (the solve itself: parse, build, solve,
result documents, outputs), then ``run_sweep`` as the command line runs it by default (worker
processes forked from this one; one worker solves in this process) on 1 and 2 workers, timed whole:
wall time, speed-up, and the sweep's cost per variant over the solve itself, and how parallel the
machine is at the moment (two busy loops in two processes against one); the same on a local Dask
cluster of 1 and 2 workers started beforehand (``--executor dask``). Targets: 2 workers >= 1.7x one
on 2 cores; overhead <= 20 %. Figures are printed, not asserted.

Then the sweep at more workers than this machine has cores (``--emulate 16``): the issue's 640
variants on 16 workers whose variants stand in for themselves, each sleeping the time it took to
solve above and returning the row it gave. The cores then carry only the sweep's machinery (forks,
chunks, transfers, the table streamed to disk; with Dask the scheduler and client); the kernels' own
scaling (memory, clock) is not measured. Each sweep runs whole as the command line runs it, in a new
process: the kernels loaded there, what is solved before the fork solved there (for real), the
workers forked, the sweep, the close; a worker's first variant is solved for real where the worker
lacks kernels it calls. One worker (the default solves in the sweep's process: every variant for
real) is the reference. For the default and for ``--executor dask``: 16 workers, whose starts,
messages and closes share this machine's cores; then each worker on a core of its own, as on 16
cores: as many workers as this machine has cores, each with the variants a worker has at 16 (2
workers, 80 variants), whose fixed cost (the sweep's time beyond its workers' sleeping) is added to
the 640 variants' time per worker at 16, with the forks of the 14 more workers (measured): the
speed-up projected on 16 cores; and again with what 16 workers add for the sweep's one process (its
CPU while they solve, against that at 2) counted whole as waiting, a bound. Last a local Dask
cluster of spawned workers (where the sweep's process runs other threads, or with ``--scheduler``;
each worker's own start measured alone), against the variants' solve time alone.
"""

import argparse
import json
import logging
import os
import sys
import tempfile
import time

import numpy as np

from demo_blends import bay_geometry as bay
from solver_core.io.sweep import _cores, _warm_up, parse_sweep, run_sweep, solve_variant


def _mm(p):
    return [v / 1000.0 for v in p]


def _cable(cid, start, clips, end, length, diameter, preset, segments):
    """A cable through its clips, each clip at the arc length that shares the slack out evenly."""
    points = [np.array(start)] + [np.array(c["position"]) for c in clips] + [np.array(end)]
    gaps = np.linalg.norm(np.diff(points, axis=0), axis=1)
    s = np.cumsum(gaps)[:-1] * length / gaps.sum()
    out = []
    for c, at in zip(clips, s):
        clip = {
            "s": float(at),
            "kind": c.get("kind", "fixed"),
            "length": c.get("length", 0.0),
            "frame": {"position": c["position"], "tangent": [1.0, 0.0, 0.0]},
        }
        if "stiffness" in c:
            clip["stiffness"] = c["stiffness"]
        out.append(clip)
    return {
        "id": cid,
        "length": length,
        "diameter": diameter,
        "material": {"preset": preset},
        "segments": segments,
        "start": {"position": start, "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        "end": {"position": end, "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        "clips": out,
    }


def bay_case() -> dict:
    y_clip = (bay.BRACKET_FACE_Y + 14.0) / 1000.0
    x1, x2 = (x / 1000.0 for x in bay.BRACKET_X)
    a = {k: _mm(p) for k, p in bay.DEVICE_A_SOCKETS.items()}
    b = {k: _mm(p) for k, p in bay.DEVICE_B_SOCKETS.items()}
    power = _cable(
        "power",
        a["power"],
        [
            {"position": [x1, y_clip, 0.112]},
            {"position": [x2, y_clip, 0.112], "stiffness": {"translational": 400.0, "rotational": 0.5}},
        ],
        b["power"],
        0.640,
        0.006,
        "pvc_wire",
        80,
    )
    signal = _cable(
        "signal",
        a["signal"],
        [
            {"position": [x1, y_clip, 0.086], "kind": "rotating"},
            {"position": [x2, y_clip, 0.086], "kind": "sliding", "length": 0.020},
        ],
        b["signal"],
        0.660,
        0.004,
        "lv2017_harness",
        70,
    )
    sensor = _cable("sensor", a["sensor"], [], b["sensor"], 0.540, 0.004, "lv2017_harness", 70)
    return {
        "format": "cable-harness-case/1",
        "gravity": [0.0, 0.0, -9.81],
        "cables": [power, signal, sensor],
        "obstacles": [{"type": "plane", "point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}],
    }


def bay_sweep(samples: int) -> dict:
    return {
        "format": "cable-harness-sweep/1",
        "case": bay_case(),
        "samples": samples,
        "seed": 1,
        "vary": [
            {"path": "cables[0].length", "uniform": [0.640 * 0.99, 0.640 * 1.01]},
            {"path": "cables[0].clips[0].frame.position[2]", "uniform": [0.110, 0.114]},
            {"path": "cables[1].material.E", "values": [110e6, 140e6]},
        ],
    }


def serial(sweep):
    """Every variant solved here, one after another: (wall s, self-reported solve ms, rows, each
    variant's wall s)."""
    variants = sweep.variants()
    _warm_up()  # kernels loaded, as a worker has them
    solve_variant(sweep.case_doc, 0, variants[0])  # and those a variant adds (compiled, if not yet)
    rows, durations = [], []
    t0 = time.perf_counter()
    for i, a in enumerate(variants):
        t = time.perf_counter()
        rows.append(solve_variant(sweep.case_doc, i, a))
        durations.append(time.perf_counter() - t)
    wall = time.perf_counter() - t0
    solve_ms = sum(v for r in rows for k, v in r.items() if k.endswith(".solve_ms") and v is not None)
    return wall, solve_ms, rows, durations


def _stand_in(durations, rows, parent=None):
    """Run in each worker of the emulated sweep: variant i sleeps the time variant i mod n took to
    solve in ``serial`` and returns that variant's row under its own index and values; the kernels
    are not loaded (no variant is solved). With ``parent`` (the sweep's process, which loads the
    kernels before it forks the workers) variants are solved as they are there, and so is a worker's
    first variant where the worker lacks kernels it calls (which it then loads, as it would)."""
    from solver_core.contact.pair_search import find_pairs
    from solver_core.io import sweep as module

    real = module.solve_variant
    solved_here = []

    def solve_variant(case_doc, index, assignment, keep_shapes=False, timeout=None):
        if parent is not None and (os.getpid() == parent or (not solved_here and not find_pairs.overloads)):
            solved_here.append(index)
            return real(case_doc, index, assignment, keep_shapes, timeout)
        time.sleep(durations[index % len(durations)])
        return {**rows[index % len(rows)], "variant": index, **assignment}

    module.solve_variant = solve_variant  # solve_chunk looks it up when called
    if parent is None:
        module._warm_up = lambda: True
    return True


def _local_cluster(workers: int):
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.CRITICAL
    )


def _timed_sweep(sweep, **options):
    """(wall s, summary) of ``run_sweep`` into a scratch folder."""
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        summary = run_sweep(sweep, out, plots=False, **options)
        return time.perf_counter() - t0, summary


def _ideal(sweep, durations, workers: int) -> float:
    """The sweep's solve time (variant i as variant i mod n of ``serial``) over the workers."""
    return sum(durations[i % len(durations)] for i in range(len(sweep.variants()))) / workers


def worker_start() -> float:
    """Wall seconds from nothing to one worker ready to solve, as run_sweep makes it: the LocalCluster
    started, its worker process spawned, then the worker's imports and kernels loaded (_warm_up)."""
    from distributed import Client

    t0 = time.perf_counter()
    cluster = _local_cluster(1)
    try:
        with Client(cluster) as client:
            client.run(_warm_up)
            return time.perf_counter() - t0
    finally:
        cluster.close()


_FIRST_VARIANT = """
import json, sys, time
from benchmarks.bench_sweep import bay_sweep
from solver_core.io.sweep import _warm_up, parse_sweep, solve_variant
sweep = parse_sweep(bay_sweep(1))
t = time.perf_counter()
_warm_up()
t1 = time.perf_counter()
solve_variant(sweep.case_doc, 0, sweep.variants()[0])
print(json.dumps([t1 - t, time.perf_counter() - t1]))
"""


def _python(code: str, *args) -> str:
    """The last line ``code`` prints, run in a new interpreter at the repository's root."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=root, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_sweep: a measuring process failed:\n{done.stderr[-2000:]}")
    return done.stdout.splitlines()[-1]


def first_variant(durations) -> tuple:
    """(the kernels' load, the first variant's own kernels) in seconds, in a new process that has
    imported the solver, as a spawned worker has when it starts: ``_warm_up`` there, then the bay's
    first variant beyond the time it takes once its kernels are loaded (``durations[0]``)."""
    warm, first = json.loads(_python(_FIRST_VARIANT))
    return warm, max(0.0, first - durations[0])


def emulate_default(path: str) -> None:
    """Run in a new process by ``emulated_default``: the stand-ins installed for the workers, then
    ``run_sweep`` as the command line runs it (its default, or the spec's executor), this process
    loading the kernels before it forks the workers; prints (wall s, converged, whether the workers
    were forked, one fork's seconds, this process's CPU seconds while the workers solve)."""
    import multiprocessing

    from solver_core.io import sweep as module
    from solver_core.io.forking import can_fork
    from solver_core.io.worker_pool import WorkerPool

    spec = json.load(open(path, encoding="utf-8"))
    _stand_in(spec["durations"], spec["rows"], parent=os.getpid())
    forked = can_fork()
    busy = []

    def timed(function):
        def run(*args, **kwargs):
            t0 = time.process_time()  # every thread of this process: a client's and a scheduler's too
            try:
                return function(*args, **kwargs)
            finally:
                busy.append(time.process_time() - t0)

        return run

    module._solve_on = timed(module._solve_on)  # Dask: the sweep once the workers are forked
    solve = WorkerPool.solve
    WorkerPool.solve = timed(solve)  # the worker processes: likewise
    try:
        sweep = parse_sweep(spec["sweep"])
        wall, summary = _timed_sweep(sweep, workers=spec["workers"], executor=spec["executor"])
    finally:
        WorkerPool.solve = solve
    forks, context = [], multiprocessing.get_context("fork")
    for _ in range(8):  # a worker's fork, this process as it is now
        receive, send = context.Pipe(duplex=False)
        t0 = time.perf_counter()
        child = context.Process(target=receive.poll, args=(5.0,), daemon=True)
        child.start()
        forks.append(time.perf_counter() - t0)
        send.send(None)
        child.join()
    print(json.dumps([wall, summary["converged"], forked, float(np.median(forks)), sum(busy)]))


def emulated_default(sweep_doc, durations, rows, workers: int, executor=None):
    """As ``emulated``, as the command line runs it: by default worker processes forked from the
    sweep's process once it loaded the kernels (``executor`` "dask": a local Dask cluster whose
    workers are forked likewise). Run whole in a new process, which loads the kernels itself (this
    one may run Dask's threads by now, and would spawn its workers). (wall s, the ideal, converged,
    forked, one fork's seconds, the sweep's process's CPU seconds while the workers solve)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "emulated.json")
        spec = {"sweep": sweep_doc, "durations": durations, "rows": rows, "workers": workers, "executor": executor}
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        code = "import sys; from benchmarks.bench_sweep import emulate_default; emulate_default(sys.argv[1])"
        wall, converged, forked, fork, busy = json.loads(_python(code, path))
    return wall, _ideal(parse_sweep(sweep_doc), durations, workers), converged, forked, fork, busy


def emulated(sweep, durations, rows, workers: int):
    """``run_sweep`` of ``sweep`` on ``workers`` processes whose variants stand in for themselves
    (_stand_in): (wall s, the ideal: the variants' solve time over the workers, converged)."""
    from distributed import Client

    cluster = _local_cluster(workers)
    try:
        with Client(cluster) as client:
            client.run(_stand_in, durations, rows)
        wall, summary = _timed_sweep(sweep, scheduler=cluster.scheduler_address)
    finally:
        cluster.close()
    return wall, _ideal(sweep, durations, workers), summary["converged"]


def _busy(_):
    t0, total = time.perf_counter(), 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - t0


def machine_parallelism() -> float:
    """How much faster two processes finish two busy loops than one process does, right now: on a
    machine shared with other jobs the sweep cannot scale beyond this."""
    import multiprocessing

    one = _busy(0)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_busy, [0, 1])  # started
        t0 = time.perf_counter()
        pool.map(_busy, [0, 1])
        two = time.perf_counter() - t0
    return 2.0 * one / two


def on_cluster(sweep, workers: int):
    from distributed import Client

    t0 = time.perf_counter()
    cluster = _local_cluster(workers)
    started = time.perf_counter() - t0
    try:
        with Client(cluster) as client:  # every worker loads the kernels before the clock starts
            client.run(_warm_up)
        wall, summary = _timed_sweep(sweep, scheduler=cluster.scheduler_address)
    finally:
        cluster.close()
    return started, wall, summary


def projected(big_doc, durations, rows, k: int, alone: float, executor=None, name="") -> None:
    """Print ``k`` workers emulated on this machine's cores, then projected with each worker on a core
    of its own, against ``alone`` (one worker as the command line runs it, every variant solved for
    real, in another minute than the durations the stand-ins sleep) and against those durations
    summed (the variants' solve time in one process, no sweep at all: the stricter reference)."""
    m, cores = len(parse_sweep(big_doc).variants()), _cores()
    sweep_wall, ideal, converged, forked, _, busy_k = emulated_default(big_doc, durations, rows, k, executor)
    solo = ideal * k
    print(
        f"  {name}{'' if forked else ' (NOT forked)'}: {k} workers {sweep_wall:.2f} s against {ideal:.2f} s of "
        f"solving per worker (efficiency {ideal / sweep_wall:.3f}, {converged} rows): {alone / sweep_wall:.1f}x "
        f"one worker ({solo / sweep_wall:.1f}x the solve time alone), emulated, with the {k} workers' starts, "
        f"messages and closes sharing {cores} cores",
        flush=True,
    )
    # each worker on a core of its own, as on k cores: as many workers as there are cores here, each
    # with the variants a worker has at k (and so the same chunks); the forks this leaves out added
    here = max(1, min(k, cores))
    part_doc = json.loads(json.dumps(bay_sweep(max(1, m * here // k // 2))))
    part_wall, part_ideal, _, _, fork, busy_here = emulated_default(part_doc, durations, rows, here, executor)
    on_cores = ideal + (part_wall - part_ideal) + (k - here) * fork
    # what k workers add for the sweep's one process (k/here times the chunks and rows; with Dask the
    # registrations, the scheduler and client), counted whole as if none of it overlapped the solving
    bound = on_cores + max(0.0, busy_k - busy_here)
    print(
        f"    each worker on a core of its own: {here} worker{'s' if here > 1 else ''} on {cores} cores with "
        f"{m * here // k} variants ({m // k} each, as at {k}): {part_wall:.2f} s against {part_ideal:.2f} s "
        f"(efficiency {part_ideal / part_wall:.3f}, the sweep's fixed cost {part_wall - part_ideal:.2f} s); "
        f"with {k - here} forks more ({1e3 * fork:.1f} ms each), on {k} cores {on_cores:.2f} s: "
        f"{alone / on_cores:.1f}x one worker, {solo / on_cores:.1f}x the solve time alone, projected (target "
        f">= 13x), the sweep's machinery {1e3 * (on_cores - ideal) * k / m:.1f} ms of a worker's time per "
        f"variant; the sweep's process busy {busy_k:.2f} s while {k} workers solve, {busy_here:.2f} s while "
        f"{here} do: with the difference all on the critical path {alone / bound:.1f}x, {solo / bound:.1f}x",
        flush=True,
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=200, help="an even number (two grid points)")
    parser.add_argument("--emulate", type=int, default=16, help="workers of the emulated sweep (0: none)")
    parser.add_argument("--emulated-variants", type=int, default=640, help="variants of the emulated sweep")
    args = parser.parse_args(argv)
    sweep = parse_sweep(json.loads(json.dumps(bay_sweep(max(1, args.variants // 2)))))
    n = len(sweep.variants())
    wall, solve_ms, rows, durations = serial(sweep)
    converged = sum(r["converged"] for r in rows)
    print(f"{n} variants of the equipment bay (3 cables, 80/70/70 segments), {converged} converged")
    print(
        f"  one after another in this process: {wall:.2f} s, {1e3 * wall / n:.1f} ms per variant "
        f"({solve_ms / n:.1f} ms of it solving, self-reported)",
        flush=True,
    )
    # the default first: once this process runs Dask's threads, it would spawn its workers
    times, dask = {}, {}
    for workers in (1, 2):
        w, summary = _timed_sweep(sweep, workers=workers)
        times[workers] = w
        print(
            f"  the command line's default (worker processes, forked), timed whole, on {workers} "
            f"worker{'s' if workers > 1 else ''}: {w:.2f} s ({1e3 * w / n:.1f} ms per variant), "
            f"{summary['converged']} converged",
            flush=True,
        )
    for workers in (1, 2):
        started, dask[workers], _ = on_cluster(sweep, workers)
    print(
        f"  speed-up 2 workers / 1: {times[1] / times[2]:.2f}x (target >= 1.7x on 2 cores, "
        f"{os.cpu_count()} cores here; two busy loops in two processes run {machine_parallelism():.2f}x "
        f"faster than in one now)"
    )
    print(
        f"  sweep cost per variant over the solve itself (1 worker against one after another): "
        f"{100.0 * (times[1] - wall) / wall:+.1f} %, {1e3 * (times[1] - wall) / n:+.1f} ms (target <= 20 %); "
        f"on a local Dask cluster started "
        f"beforehand (--executor dask): {100.0 * (dask[1] - wall) / wall:+.1f} %, 2 workers {dask[2]:.2f} s, "
        f"{dask[1] / dask[2]:.2f}x one",
        flush=True,
    )
    if args.emulate > 0:
        big_doc = json.loads(json.dumps(bay_sweep(max(1, args.emulated_variants // 2))))
        big = parse_sweep(json.loads(json.dumps(big_doc)))
        m, k = len(big.variants()), args.emulate
        print(
            f"  {m} variants on {k} workers, each variant sleeping its solve time above (the machinery alone), "
            f"the sweep run whole in a new process, which loads the kernels:"
        )
        alone, _, _, _, _, _ = emulated_default(big_doc, durations, rows, 1)
        print(f"  one worker (the default: in the sweep's process, no variant sleeping): {alone:.1f} s", flush=True)
        projected(big_doc, durations, rows, k, alone, None, "the command line's default, worker processes")
        projected(big_doc, durations, rows, k, alone, "dask", "--executor dask, a local Dask cluster")
        _, first = min(first_variant(durations) for _ in range(3))
        start = min(worker_start() for _ in range(3)) + first
        sweep_wall, ideal, converged = emulated(big, durations, rows, k)
        one = start + ideal * k
        print(
            f"  a local Dask cluster with spawned workers (--executor dask where the sweep's process runs other "
            f"threads, or --scheduler): {sweep_wall:.2f} s (efficiency {ideal / sweep_wall:.3f}); each worker's "
            f"own start (process, imports, kernels, the first variant's; best of 3) {start:.2f} s: "
            f"{one / (start + sweep_wall):.1f}x the variants' solve time alone"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
