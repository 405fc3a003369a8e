# SPDX-License-Identifier: GPL-3.0-or-later
"""A sweep's worker processes on one machine: the standard library's process pool, a dead worker's
variants solved again, a variant that kills its worker set apart.

The workers are forked from the sweep's process, after it loaded the kernels, so that each starts
with them (spawned where that process runs other threads: a lock another thread holds at a fork
stays held in the child). A worker that dies (killed, out of memory, a crash in compiled code)
breaks the whole pool, and the rows of every task not yet returned go with it: those variants are
solved again by a new pool. Each worker marks in shared memory the variant it is solving, so the
variants a dead pool was solving are known: each is solved again alone, and one whose lone worker
dies too, ``DEATHS_ALONE`` times, gets a row saying so, as an invalid variant does, rather than end
a sweep of thousands (Dask ends it, KilledWorker, after 3 deaths of a task). Pools lost
``LOST_POOLS_IN_A_ROW`` times without a row or a variant set apart end the sweep
(``WorkersLost``): what kills the workers is not a variant.
"""

import concurrent.futures
import multiprocessing
import os
import time

from .forked_cluster import can_fork, frozen_heap

LOST_POOLS_IN_A_ROW = 3
DEATHS_ALONE = 2  # a suspect's lone worker may die this often; with its death in the pool, Dask's 3
_WAITING, _SOLVING, _SOLVED = 0, 1, 2

_marks = None  # in a worker: the shared array of the variants' _WAITING / _SOLVING / _SOLVED


class WorkersLost(Exception):
    """The pool kept dying with nothing solved between (what kills the workers is not a variant)."""


def _start(parent: int, marks, warm_up) -> bool:
    global _marks
    from .signals import for_worker

    _marks = marks
    for_worker(parent)  # Ctrl-C is the parent's to handle; dies with the parent
    return warm_up()


def _solve_marked(solve_chunk, case_doc, chunk, *args) -> list:
    """``solve_chunk`` a variant at a time, each marked while it is being solved."""
    rows = []
    for variant in chunk:
        _marks[variant[0]] = _SOLVING
        rows.extend(solve_chunk(case_doc, [variant], *args))
        _marks[variant[0]] = _SOLVED
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


class WorkerPool:
    """Solves chunks of variants ((index, assignment) pairs) with ``solve_chunk(case_doc, chunk,
    *args)`` on ``n_workers`` processes, handing each chunk's rows to ``take`` as they come;
    ``failed_row(variant, message)`` is the row of a variant that kept killing its worker."""

    def __init__(self, solve_chunk, case_doc, args, n_workers, warm_up, take, failed_row):
        self.solve_chunk, self.case_doc, self.args = solve_chunk, case_doc, tuple(args)
        self.n_workers, self.warm_up, self.take, self.failed_row = n_workers, warm_up, take, failed_row

    def solve(self, chunks: list) -> None:
        last = max((variant[0] for chunk in chunks for variant in chunk), default=0)
        marks = multiprocessing.RawArray("b", last + 1)  # zero: _WAITING
        lost_in_a_row = 0
        while chunks:
            taken, lost = self._run(chunks, marks, self.n_workers)
            suspects = [v for chunk in lost for v in chunk if marks[v[0]] == _SOLVING]
            chunks = [c for c in ([v for v in chunk if marks[v[0]] != _SOLVING] for chunk in lost) if c]
            for variant in suspects:
                marks[variant[0]] = _WAITING
                self._solve_alone(variant, marks)
            lost_in_a_row = 0 if (taken or suspects) else lost_in_a_row + 1
            if chunks and lost_in_a_row >= LOST_POOLS_IN_A_ROW:
                left = sorted(v[0] for chunk in chunks for v in chunk)
                named = ", ".join(str(i) for i in left[:5]) + (", ..." if len(left) > 5 else "")
                raise WorkersLost(
                    f"the sweep's worker processes died {lost_in_a_row} times in a row before one finished a "
                    f"variant (out of memory?); not solved: variant{'s' if len(left) > 1 else ''} {named}"
                )

    def _run(self, chunks, marks, n_workers) -> tuple:
        """(how many chunks' rows were taken, the chunks lost with a dead pool)."""
        context = multiprocessing.get_context("fork" if can_fork() else "spawn")
        pool = concurrent.futures.ProcessPoolExecutor(
            n_workers, mp_context=context, initializer=_start, initargs=(os.getpid(), marks, self.warm_up)
        )
        taken, lost, futures = 0, [], {}
        try:
            with frozen_heap():  # the first submit forks the workers
                for k, chunk in enumerate(chunks):
                    try:
                        futures[pool.submit(_solve_marked, self.solve_chunk, self.case_doc, chunk, *self.args)] = chunk
                    except concurrent.futures.process.BrokenProcessPool:  # a worker died already
                        lost.extend(chunks[k:])
                        break
            for future in concurrent.futures.as_completed(futures):
                try:
                    rows = future.result()
                except concurrent.futures.process.BrokenProcessPool:
                    lost.append(futures[future])  # its rows went with the pool
                    continue
                self.take(rows)
                taken += 1
        except BaseException:
            # interrupted (Cancel in Blender sends SIGTERM), or the output failed: the workers would
            # otherwise finish their queue (minutes) holding the caller's pipes, or outlive it for good
            stop_pool(pool)
            raise
        pool.shutdown(wait=True)
        return taken, sorted(lost, key=lambda chunk: chunk[0][0])  # in variant order again

    def _solve_alone(self, variant, marks) -> None:
        for _ in range(DEATHS_ALONE):
            taken, _ = self._run([[variant]], marks, 1)
            if taken:
                return
        self.take(
            [
                self.failed_row(
                    variant,
                    f"its worker process died while solving it, {DEATHS_ALONE + 1} times, {DEATHS_ALONE} of them "
                    f"alone (killed: out of memory? or a crash in compiled code)",
                )
            ]
        )
