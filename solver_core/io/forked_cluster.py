# SPDX-License-Identifier: GPL-3.0-or-later
"""A local Dask cluster whose workers are forked from the sweep's own process after it loaded the
solver's kernels, so that every worker starts with them.

A worker that Dask spawns is a new interpreter: it imports distributed, numba and the solver, sets up
numba's code generator and loads the kernels, then those its first variant adds: 1.3 s of one core
before its first variant. On 16 cores that fixed start is a third of a 640-variant sweep of the
equipment bay and kept 16 workers near 10x one (docs/performance.md). Forked here, after the kernels
were loaded once (0.3-0.5 s), 16 workers are registered with the scheduler within 0.4 s even on 2
cores.

Only a process with one thread is forked: a lock another thread holds at the fork (the scheduler's
event loop, a logging handler) would stay held in the child for good. So the workers are forked
before the scheduler starts, and are sent its address through a pipe once it runs. They run
``distributed.Worker`` without a nanny: the scheduler gives a dead worker's variants to the others,
and the sweep starts a spawned worker in its place (``replace_lost``), as a nanny would.
"""

import asyncio
import contextlib
import logging
import multiprocessing
import os
import sys
import time

from .forking import frozen_heap, signals_held

STARTUP_TIMEOUT = 60.0  # [s] a forked worker waits this long for the scheduler's address, then ends


def _serve(receive, inherited, parent: int, index: int, timeout: float) -> None:
    """A forked worker: waits for the scheduler's address on ``receive``, then serves it until the
    scheduler or a second message on ``receive`` tells it to close. ``inherited``: the pipes to the
    workers forked before this one, which are not this worker's to hold open."""
    from .signals import for_worker

    for_worker(parent)  # Ctrl-C is the parent's to handle; dies with the parent
    for pipe in inherited:
        pipe.close()
    if not receive.poll(STARTUP_TIMEOUT):
        return
    address = receive.recv()
    if not address:  # the scheduler did not start
        return
    from distributed import Worker

    # what a worker would log (its start and close at INFO, a heartbeat meeting a closing scheduler
    # as a traceback) is the sweep's to say, in its one line; a worker spawned in place of a lost one
    # has distributed's own levels, not those its parent set
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(("distributed", "tornado")):
            logging.getLogger(name).setLevel(logging.CRITICAL)

    async def serve():
        # death_timeout: a scheduler that never answers ends the worker rather than keeping it
        async with Worker(address, nthreads=1, name=f"forked-{index}", death_timeout=timeout) as worker:
            told = asyncio.Event()
            asyncio.get_running_loop().add_reader(receive.fileno(), told.set)  # a message, or the parent gone
            finished, stop = asyncio.ensure_future(worker.finished()), asyncio.ensure_future(told.wait())
            await asyncio.wait([finished, stop], return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
        # leaving the block closed the worker: it said goodbye to the scheduler, which still runs

    try:
        asyncio.run(serve())
    except Exception as exc:  # one line, not multiprocessing's traceback: the others go on without it
        sys.stderr.write(f"sweep worker {index} stopped: {type(exc).__name__}: {' '.join(str(exc).split())[:120]}\n")
        sys.exit(1)


class ForkedCluster:
    """A LocalCluster's scheduler (its dashboard, the same code as on a cluster) with ``n_workers``
    single-threaded workers forked from this process after ``warm_up`` loaded the kernels. Call
    ``can_fork`` first; ``stop_workers`` before the client closes, ``close`` after it."""

    def __init__(self, n_workers: int, warm_up, timeout: float):
        from distributed import LocalCluster

        warm_up()
        self.timeout = timeout
        context = multiprocessing.get_context("fork")
        self.processes, self._pipes = [], []
        try:
            with frozen_heap(), signals_held():
                self._fork(n_workers, context, timeout)
            self.cluster = LocalCluster(n_workers=0, processes=True, dashboard_address=":0", silence_logs=logging.ERROR)
        except BaseException:
            self._tell(None)
            self._reap(5.0)
            for pipe in self._pipes:
                pipe.close()
            raise
        self.scheduler_address = self.cluster.scheduler_address
        self._tell(self.scheduler_address)

    def _fork(self, n_workers: int, context, timeout: float) -> None:
        for index in range(n_workers):
            receive, send = context.Pipe(duplex=False)
            process = context.Process(
                target=_serve,
                args=(receive, list(self._pipes), os.getpid(), index, timeout),
                name=f"sweep-worker-{index}",
                daemon=True,
            )
            process.start()
            receive.close()
            self.processes.append(process)
            self._pipes.append(send)

    def _tell(self, message) -> None:
        for pipe in self._pipes:
            with contextlib.suppress(OSError):  # a worker that is gone reads nothing
                pipe.send(message)

    def replace_lost(self) -> None:
        """Start a worker in place of each that died (what a nanny does), spawned: this process runs
        threads now, so the new worker is a new interpreter that loads its own kernels. A variant
        that kills every worker that takes it still fails the sweep: the scheduler gives up on it
        once it has killed more than distributed's allowed-failures (3) workers."""
        context = multiprocessing.get_context("spawn")
        for index, process in enumerate(self.processes):
            if process.is_alive():
                continue
            process.join(0)
            receive, send = context.Pipe(duplex=False)
            worker = context.Process(
                target=_serve,
                args=(receive, [], os.getpid(), index, self.timeout),
                name=f"sweep-worker-{index}",
                daemon=True,
            )
            worker.start()
            receive.close()
            self._pipes[index].close()
            self.processes[index], self._pipes[index] = worker, send
            with contextlib.suppress(OSError):
                send.send(self.scheduler_address)

    def stop_workers(self, timeout: float, finished: bool) -> None:
        """Before the client closes. A ``finished`` sweep's workers are told to close (each says
        goodbye to the scheduler and exits; one still there after ``timeout`` is killed); an
        interrupted or failed sweep's are killed at once: one may be inside a variant for minutes,
        and what they would still solve has nowhere to go (rows are written as they come in)."""
        if finished:
            self._tell("close")
        self._reap(timeout if finished else 0.0)

    def close(self, timeout: float) -> None:
        """Close the scheduler, after the workers (closed first, it would meet a worker's heartbeat
        on its way, which the worker logs as a traceback), and the pipes to them."""
        self._reap(0.0)
        for pipe in self._pipes:
            pipe.close()
        with contextlib.suppress(Exception):
            self.cluster.close(timeout=timeout)

    def _reap(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in self.processes:
            if process.is_alive():
                with contextlib.suppress(OSError):
                    process.kill()
                process.join(1.0)
