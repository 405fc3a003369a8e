# SPDX-License-Identifier: GPL-3.0-or-later
"""Processes as Linux's /proc shows them: a process's children, and whether one still runs (the
tests of signalled sweeps and killed workers)."""

import os


def children(pid) -> list:
    """The pids whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def running(pid) -> bool:
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
