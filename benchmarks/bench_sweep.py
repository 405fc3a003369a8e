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
result documents, outputs), then ``run_sweep`` on a LocalCluster of 1 and of 2 worker processes (after
the cluster started and its workers loaded the kernels): wall time, speed-up, and the sweep's cost per
variant over the solve itself, and how parallel the machine is at the moment (two busy loops in two
processes against one). Targets: 2 workers >= 1.7x one on 2 cores;
overhead <= 20 %. Figures are printed, not asserted.

Then the sweep at more workers than this machine has cores (``--emulate 16``): ``run_sweep`` on 16
worker processes whose variants stand in for themselves, each sleeping the time it took to solve
above and returning the row it gave. The cores then carry only the sweep's machinery (scheduler,
chunks, transfers, the table streamed to disk), so its efficiency at 16 workers is measured as it
would be on 16 cores; the kernels' own scaling (memory, clock) is not. Beside it, what one worker
costs to start (process, imports, kernels, as ``run_sweep`` starts it), measured on its own, and the
speed-up the two give on 16 cores for the issue's 640 variants: serial time over start plus the
emulated sweep. The same for ``--executor processes`` (what Blender's Variation Study runs), whose
workers are forked after the kernels were loaded once, so that none loads its own.
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
from solver_core.io.sweep import _warm_up, parse_sweep, run_sweep, solve_variant


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


def _stand_in(durations, rows):
    """Run in each worker of the emulated sweep: variant i sleeps the time variant i mod n took to
    solve in ``serial`` and returns that variant's row under its own index and values; the kernels
    are not loaded (no variant is solved)."""
    from solver_core.io import sweep as module

    def solve_variant(case_doc, index, assignment, keep_shapes=False, timeout=None):
        time.sleep(durations[index % len(durations)])
        return {**rows[index % len(rows)], "variant": index, **assignment}

    module.solve_variant = solve_variant  # solve_chunk looks it up when called
    module._warm_up = lambda: True
    return True


def _local_cluster(workers: int):
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
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


def forked_start() -> float:
    """Wall seconds a fresh process that has imported the solver (as the command line has when it
    starts a sweep) takes to load the kernels its forked workers inherit (_warm_up)."""
    import subprocess

    code = (
        "import time, solver_core.io.sweep as s; t = time.perf_counter(); s._warm_up(); print(time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def emulated_forked(sweep, durations, rows, workers: int):
    """As ``emulated``, with ``--executor processes`` (forked workers, what Blender's Variation Study
    runs): the stand-ins are installed here, where the workers are forked from, and taken out after."""
    from solver_core.io import sweep as module

    saved = module.solve_variant, module._warm_up
    _stand_in(durations, rows)
    try:
        wall, summary = _timed_sweep(sweep, workers=workers, executor="processes")
    finally:
        module.solve_variant, module._warm_up = saved
    return wall, _ideal(sweep, durations, workers), summary["converged"]


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
    times = {}
    for workers in (1, 2):
        started, w, summary = on_cluster(sweep, workers)
        times[workers] = w
        print(
            f"  sweep on {workers} worker{'s' if workers > 1 else ''}: {w:.2f} s ({1e3 * w / n:.1f} ms per variant; "
            f"cluster start {started:.1f} s, not counted), {summary['converged']} converged",
            flush=True,
        )
    print(
        f"  speed-up 2 workers / 1: {times[1] / times[2]:.2f}x (target >= 1.7x on 2 cores, "
        f"{os.cpu_count()} cores here; two busy loops in two processes run {machine_parallelism():.2f}x "
        f"faster than in one now)"
    )
    print(
        f"  sweep cost per variant over the solve itself (1 worker against one after another): "
        f"{100.0 * (times[1] - wall) / wall:+.1f} % (target <= 20 %)"
    )
    if args.emulate > 0:
        big = parse_sweep(json.loads(json.dumps(bay_sweep(max(1, args.emulated_variants // 2)))))
        m = len(big.variants())
        start = min(worker_start() for _ in range(3))
        sweep_wall, ideal, converged = emulated(big, durations, rows, args.emulate)
        one = start + ideal * args.emulate  # one worker: its start, then every variant
        print(
            f"  {m} variants on {args.emulate} workers, each variant sleeping its solve time above (the "
            f"machinery alone): {sweep_wall:.2f} s against {ideal:.2f} s of solving per worker: efficiency "
            f"{ideal / sweep_wall:.3f}, {converged} rows",
            flush=True,
        )
        print(
            f"  a worker's start (process, imports, kernels; best of 3): {start:.2f} s; on {args.emulate} cores "
            f"that sweep would take {start + sweep_wall:.1f} s against {one:.1f} s on one worker: "
            f"{one / (start + sweep_wall):.1f}x (target >= 13x at 16 workers)",
            flush=True,
        )
        start = min(forked_start() for _ in range(3))
        sweep_wall, ideal, converged = emulated_forked(big, durations, rows, args.emulate)
        one = start + ideal * args.emulate
        print(
            f"  the same with --executor processes (forked workers, Blender's Variation Study): machinery "
            f"{sweep_wall:.2f} s against {ideal:.2f} s (efficiency {ideal / sweep_wall:.3f}, {converged} rows); "
            f"kernels loaded once before the fork {start:.2f} s; on {args.emulate} cores {start + sweep_wall:.1f} s "
            f"against {one:.1f} s on one worker: {one / (start + sweep_wall):.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
