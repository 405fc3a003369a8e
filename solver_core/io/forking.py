# SPDX-License-Identifier: GPL-3.0-or-later
"""Forking a sweep's workers from its own process, which has loaded the kernels: when that is safe,
and what holds while it happens (the heap frozen, the command line's signals held). Shared by the
worker processes (worker_pool) and the local Dask cluster (forked_cluster)."""

import contextlib
import gc
import multiprocessing
import signal
import threading

from .signals import HANDLED


def can_fork() -> bool:
    """Whether this process may fork the workers: the platform forks, no other thread runs, and the
    process is not a daemonic worker itself (which multiprocessing forbids to have children)."""
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
        and not multiprocessing.current_process().daemon
    )


@contextlib.contextmanager
def frozen_heap():
    """What this process holds, frozen for the processes forked inside the block: a forked worker's
    garbage collector then never traverses the heap it inherits (the modules, the kernels), nor
    writes to its pages, which stay shared. This process gets its own back after the block: a
    program that runs a sweep keeps collecting what it frees later. (A collection first would find
    some 70 objects, for 30-55 ms before every fork.)"""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def signals_held():
    """The command line's signals (SIGINT, SIGTERM, SIGHUP) held back while workers are forked: a
    forked worker starts with this process's handlers, which raise the sweep's interruption, until
    its start (``signals.for_worker``) gives it its own and lets them through. A SIGTERM in between
    (a broken pool stops its other workers so, at once) then ends the worker as it should, rather
    than raise in whatever it was running and print a traceback. This process gets any signal that
    came meanwhile when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no fork either
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
