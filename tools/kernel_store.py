# SPDX-License-Identifier: GPL-3.0-or-later
"""The user's store of built kernel folders (tools/prebuild_kernels.py), one per solver version.

A folder of kernels compiled for the generic CPU is 32 MB and two minutes of compiling on 2 cores.
Kept in ``~/.cache/cable_harness/kernels`` (or ``$XDG_CACHE_HOME``), named by what it was built for
(the solver's source digest, Python, numba, machine), another clone of the same solver or the other
README command copies it in under a second. The STORE_VERSIONS folders used last are kept.

Every change of the store is a rename: a folder is copied beside its place under a dot-name and
renamed into it, and pruned by renaming it to a dot-name first, so a reader finds a whole folder or
none. Dot-names left by an interrupted process are removed once they are an hour old. Under CI
(``CI=true``) there is no store: a clean checkout compiles as a new machine does.
"""

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

STORE_VERSIONS = 4  # solver versions whose kernels the store keeps (those used last)
LEFT_OVER_SECONDS = 3600.0  # a dot-name this old belongs to no running copy


def store_folder(identity: dict) -> Path | None:
    """Where the store keeps kernels built for ``identity`` (prebuilt_kernels.identity), or None under
    CI or where no absolute cache folder is known (no home: never a folder relative to the cwd)."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative (which the XDG spec says to ignore)
        base = os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    tag = hashlib.sha1(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]
    return Path(base, "cable_harness", "kernels", f"{identity['digest']}-{tag}")


def copy_whole(source: Path, target: Path, done) -> None:
    """``source``'s files into ``target`` by a copy beside it renamed into place; ``done(target)``
    says whether another process has put them there meanwhile (then this copy is dropped)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    old = target.with_name(f".{target.name}.old.{os.getpid()}")
    try:
        shutil.copytree(source, partial, dirs_exist_ok=True)
        if done(target):
            return
        if target.exists():
            os.replace(target, old)
        os.replace(partial, target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def keep_newest(used: Path) -> None:
    """Mark ``used`` as used now and remove all but the STORE_VERSIONS folders used last, and any
    dot-name an interrupted process left over an hour ago."""
    os.utime(used)
    now = time.time()
    versions = []
    for entry in used.parent.iterdir():
        if entry.name.startswith("."):
            if now - entry.stat().st_mtime > LEFT_OVER_SECONDS:
                shutil.rmtree(entry, ignore_errors=True)
        elif entry.is_dir():
            versions.append(entry)
    versions.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in versions[STORE_VERSIONS:]:
        gone = old.with_name(f".{old.name}.gone.{os.getpid()}")
        try:
            os.replace(old, gone)  # out of sight at once: never half a folder to copy
        except OSError:
            continue  # another process pruned it first
        shutil.rmtree(gone, ignore_errors=True)
