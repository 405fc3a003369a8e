# SPDX-License-Identifier: GPL-3.0-or-later
"""A sweep's worker processes on one machine: the standard library's process pool, a dead worker's
variants solved again, a variant that kills its worker set apart.

The workers are forked from the sweep's process, after it loaded the kernels, so that each starts
with them (spawned where that process runs other threads: a lock another thread holds at a fork
stays held in the child). A worker that dies (killed, out of memory, a crash in compiled code)
breaks the whole pool: the pool stops its other workers (SIGTERM) and the rows of every task not
yet returned go with it. Those variants are solved again by a new pool. Each worker writes into
shared memory the variant it is solving, against its process id, so the variant the dead worker was
solving is known from the workers' exit codes: it is solved again alone, and if its lone worker
dies while solving it ``DEATHS_ALONE`` times it gets a row saying so (converged false), as an
invalid variant does, rather than end a sweep of thousands. Pools lost ``LOST_POOLS_IN_A_ROW``
times with no row between end the sweep (``WorkersLost``): what kills the workers then is not one
variant (memory that runs out, workers that cannot start).
"""

import concurrent.futures
import multiprocessing
import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool

from .forking import can_fork, frozen_heap, signals_held

LOST_POOLS_IN_A_ROW = 3
DEATHS_ALONE = 2  # a variant's lone worker may die this often while solving it (3 deaths with the first)
WORKER_DIED = "its worker process died while solving it"  # a failed row's message starts so

_solving = None  # in a worker: the shared array of which process solves each variant (0: none)


class WorkersLost(Exception):
    """The pool kept dying with no row between (what kills the workers is not a variant)."""


def _start_worker(parent: int, solving, warm_up) -> bool:
    global _solving
    from .signals import for_worker

    _solving = solving
    for_worker(parent)  # Ctrl-C is the parent's to handle; dies with the parent
    return warm_up()


def _solve_marked(solve_chunk, case_doc, chunk, *args) -> list:
    """``solve_chunk`` a variant at a time, each marked with this process's id while it is solved."""
    rows, pid = [], os.getpid()
    for variant in chunk:
        _solving[variant[0]] = pid
        rows.extend(solve_chunk(case_doc, [variant], *args))
        _solving[variant[0]] = 0
    return rows


def stop_pool(pool, timeout: float = 5.0) -> None:
    """Kill a ProcessPoolExecutor's worker processes and wait (bounded) until they are gone."""
    # the executor has no public way to stop running work; its processes are in ``_processes``
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for p in processes:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    deadline = time.monotonic() + timeout
    for p in processes:
        try:
            p.join(max(0.0, deadline - time.monotonic()))
        except (OSError, ValueError, AssertionError):
            pass
    pool.shutdown(wait=False, cancel_futures=True)


class _Round:
    """What one pool gave: how many rows were taken, the chunks lost with it, and which of its
    processes died by themselves (not stopped by the pool's SIGTERM) while solving which variant."""

    def __init__(self):
        self.rows, self.lost, self.died = 0, [], {}


class WorkerPool:
    """Solves chunks of variants ((index, assignment) pairs) with ``solve_chunk(case_doc, chunk,
    *args)`` on ``n_workers`` processes, handing each chunk's rows to ``take`` as they come;
    ``failed_row(variant, message)`` is the row of a variant that kept killing its worker."""

    def __init__(self, solve_chunk, case_doc, args, n_workers, warm_up, take, failed_row):
        self.solve_chunk, self.case_doc, self.args = solve_chunk, case_doc, tuple(args)
        self.n_workers, self.warm_up, self.take, self.failed_row = n_workers, warm_up, take, failed_row

    def solve(self, chunks: list) -> None:
        """Every variant of ``chunks`` solved (its row taken) or given a failed row; WorkersLost where
        the pools keep dying with no row between."""
        last = max((variant[0] for chunk in chunks for variant in chunk), default=0)
        solving = multiprocessing.RawArray("i", last + 1)
        lost_in_a_row = 0
        while chunks:
            done = self._run(chunks, solving, min(self.n_workers, len(chunks)))
            rows = done.rows
            # the variant a worker that died by itself was solving: solved again alone; the others
            # its pool stopped go back with the chunks not returned
            blamed = {v[0]: v for v in done.died.values() if v is not None}
            chunks = [c for c in ([v for v in chunk if v[0] not in blamed] for chunk in done.lost) if c]
            for _, variant in sorted(blamed.items()):
                solved, settled = self._solve_alone(variant, solving)
                rows += solved
                if not settled:
                    chunks.append([variant])
            # a failed row is no progress: where every variant kills its worker, the sweep ends
            lost_in_a_row = 0 if rows else lost_in_a_row + 1
            if chunks and lost_in_a_row >= LOST_POOLS_IN_A_ROW:
                left = sorted(v[0] for chunk in chunks for v in chunk)
                named = ", ".join(str(i) for i in left[:5]) + (", ..." if len(left) > 5 else "")
                raise WorkersLost(
                    f"the sweep's worker processes died {lost_in_a_row} times in a row before any returned its "
                    f"rows (out of memory? workers that cannot start?); not solved: "
                    f"variant{'s' if len(left) > 1 else ''} {named}"
                )

    def _run(self, chunks, solving, n_workers) -> _Round:
        context = multiprocessing.get_context("fork" if can_fork() else "spawn")
        pool = concurrent.futures.ProcessPoolExecutor(
            n_workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), solving, self.warm_up)
        )
        done, futures = _Round(), {}
        try:
            with frozen_heap(), signals_held():  # the first submit forks the workers
                for k, chunk in enumerate(chunks):
                    try:
                        futures[pool.submit(_solve_marked, self.solve_chunk, self.case_doc, chunk, *self.args)] = chunk
                    except (BrokenProcessPool, OSError):  # a worker died already, or no process could be made
                        done.lost.extend(chunks[k:])
                        break
            processes = dict(getattr(pool, "_processes", None) or {})  # pid: process, for the exit codes
            self._collect(futures, done)
            pool.shutdown(wait=True)
        except BaseException:
            # interrupted (Cancel in Blender sends SIGTERM), or the output failed: the workers would
            # otherwise finish their queue (minutes) holding the caller's pipes, or outlive it for good
            stop_pool(pool)
            raise
        if done.lost:
            for pid, process in processes.items():
                # stopped by the broken pool: SIGTERM; died by itself: anything else
                if process.exitcode is not None and process.exitcode != -signal.SIGTERM:
                    done.died[pid] = None
            for chunk in done.lost:
                for variant in chunk:
                    if solving[variant[0]] in done.died:
                        done.died[solving[variant[0]]] = variant
                    solving[variant[0]] = 0
        done.lost.sort(key=lambda chunk: chunk[0][0])  # in variant order again
        return done

    def _collect(self, futures, done) -> None:
        """Take the rows of ``futures`` as they come; a future the broken pool failed is lost."""
        for future in concurrent.futures.as_completed(futures):
            try:
                rows = future.result()
            except BrokenProcessPool:
                done.lost.append(futures[future])  # its rows went with the pool
                continue
            self.take(rows)
            done.rows += len(rows)

    def _solve_alone(self, variant, solving) -> tuple:
        """Solve ``variant`` in a pool of its own: (its rows solved, whether it is settled: solved, or
        given a failed row where its worker died solving it DEATHS_ALONE times). Pools that die before
        it is being solved do not count against it; after LOST_POOLS_IN_A_ROW of them it is not settled."""
        deaths, losses = 0, 0
        while deaths < DEATHS_ALONE and losses < LOST_POOLS_IN_A_ROW:
            done = self._run([[variant]], solving, 1)
            if done.rows:
                return done.rows, True
            if variant in done.died.values():
                deaths += 1
            else:
                losses += 1
        if deaths < DEATHS_ALONE:
            return 0, False
        message = (
            f"{WORKER_DIED}, {deaths + 1} times, {deaths} of them alone (killed: out of memory? or a crash in "
            f"compiled code)"
        )
        self.take([self.failed_row(variant, message)])
        return 0, True
