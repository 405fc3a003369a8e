# SPDX-License-Identifier: GPL-3.0-or-later
"""SIGINT, SIGTERM and SIGHUP as one kind of interruption for the command line.

Blender's Cancel button sends SIGTERM, a closed terminal SIGHUP, Ctrl-C SIGINT: each must end a run
the same way, with its temporary files removed, its worker processes stopped and one line on stderr.
Python's default for SIGTERM and SIGHUP is to die at once (no ``finally`` runs), so the command line
turns all three into an ``Interrupted`` exception raised where the main thread is.

A signal that arrives while numba's compiled code runs surfaces when the kernel returns, and numba's
dispatcher then reports it as ``SystemError: ... returned a result with an exception set`` whose
context is the interruption: ``received`` remembers the signal, so that whatever exception it turns
into, the run is reported as interrupted."""

import os
import signal

HANDLED = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)

received = None  # the first signal received (a number), None when none was


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; ``exit_code`` is the shell's convention, 128 + its number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _raise(signum, frame):
    global received
    if received is None:
        received = signum
    raise Interrupted(signum)


def install() -> dict:
    """Turn the handled signals into ``Interrupted`` in this (main) thread; returns the previous handlers."""
    global received
    received = None
    previous = {}
    for s in HANDLED:
        try:
            previous[s] = signal.signal(s, _raise)
        except (ValueError, OSError):  # not the main thread (e.g. main() called from a worker thread)
            pass
    return previous


def restore(previous: dict) -> None:
    """Give the handlers back; the run that installed them has dealt with any signal received."""
    global received
    received = None
    for s, handler in previous.items():
        try:
            signal.signal(s, handler)
        except (ValueError, OSError, TypeError):
            pass


def as_interruption(exc: BaseException) -> "Interrupted | None":
    """The interruption behind ``exc``: itself, one in its chain of causes (numba's SystemError), or
    any exception after a signal was received; None otherwise."""
    seen = exc
    for _ in range(20):
        if seen is None:
            break
        if isinstance(seen, Interrupted):
            return seen
        if isinstance(seen, KeyboardInterrupt):
            return Interrupted(signal.SIGINT)
        seen = seen.__cause__ or seen.__context__
    if received is not None:
        return Interrupted(received)
    return None


def for_worker(parent: int) -> None:
    """In a forked worker process of ``parent``: the parent decides when workers end (it kills them),
    so the terminal's Ctrl-C, sent to the whole process group, is ignored here and SIGTERM/SIGHUP end
    the worker at once; and the worker dies with its parent should the parent be killed outright
    (Linux: PR_SET_PDEATHSIG), so that no worker outlives even a SIGKILLed sweep."""
    for s in HANDLED:
        signal.signal(s, signal.SIG_IGN if s == signal.SIGINT else signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # held while the parent forked this worker (forking.signals_held)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
    if not os.path.exists("/proc/self"):  # not Linux: no parent-death signal to ask for
        return
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
