# SPDX-License-Identifier: GPL-3.0-or-later
"""Result files written whole or not at all, keeping what the user expects of the file they named.

``AtomicOutput`` writes through a temporary file beside the target and renames it over the target
when complete, so that a failure or an interruption midway leaves any previous result as it was (and
several processes writing one file leave one whole document). Around that:

- the file keeps its identity: an existing file's permission bits (and owner, where allowed), else
  those the umask gives a new file; a symbolic link is written through (the temporary file is made
  beside the link's target and renamed over the target, so the link stays a link);
- a hard link is not followed: the name given gets the new result, the file's other names keep the
  previous one (writing in place would give up the whole-or-nothing guarantee);
- a character device or a pipe (``/dev/stdout``, ``/dev/null``, a FIFO) is written to directly:
  there is nothing to rename over;
- temporary files are named ``.<name>.<pid>.<random>.tmp``: one left by a process that no longer
  runs (killed with SIGKILL, or by a power cut) is removed by the next run writing the same output.
"""

import os
import re
import stat
import tempfile

from ..errors import CaseError


def _umask() -> int:
    """The process's umask, read without changing it where /proc tells it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process, or a number that is not a pid: leave its file alone
    return True


def remove_stale_temporaries(folder: str, base: str) -> list:
    """Remove the temporary files of ``base`` in ``folder`` whose writing process no longer runs;
    returns the names removed."""
    pattern = re.compile(rf"^\.{re.escape(base)}\.(\d+)\.[A-Za-z0-9_]+\.tmp$")
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for entry in names:
        m = pattern.match(entry)
        if m is None or _alive(int(m.group(1))):
            continue
        try:
            os.unlink(os.path.join(folder, entry))
            removed.append(entry)
        except OSError:
            pass
    return removed


class AtomicOutput:
    """An output file written through a temporary file in the target's folder and renamed over it when
    complete (os.replace is atomic within a file system). Opening it checks the target before any work
    is done."""

    def __init__(self, path: str, option: str = "-o"):
        self.path, self.option, self.temp = path, option, None
        if not path:
            raise CaseError(f"{option}: the output path is empty")
        if os.path.isdir(path):
            raise CaseError(f"{option} {path}: is a folder, not a file")
        try:
            existing = os.stat(path)  # through symbolic links
        except OSError:
            existing = None
        if existing is not None and (stat.S_ISCHR(existing.st_mode) or stat.S_ISFIFO(existing.st_mode)):
            try:
                self.file = open(path, "w", encoding="utf-8")
            except OSError as exc:
                raise CaseError(f"{option} {path}: cannot write: {exc.strerror}") from None
            return
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise CaseError(f"{option} {path}: is not a regular file")
        self.target = os.path.realpath(path)
        folder = os.path.dirname(self.target)
        if not os.path.isdir(folder):
            raise CaseError(f"{option} {path}: the folder {folder} does not exist")
        if existing is not None and not os.access(self.target, os.W_OK):
            raise CaseError(f"{option} {path}: the file is not writable")
        base = os.path.basename(self.target)
        remove_stale_temporaries(folder, base)
        try:
            fd, self.temp = tempfile.mkstemp(dir=folder, prefix=f".{base}.{os.getpid()}.", suffix=".tmp")
        except OSError as exc:
            raise CaseError(f"{option} {path}: cannot write in {folder}: {exc.strerror}") from None
        try:
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                if (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
                    try:
                        os.fchown(fd, existing.st_uid, existing.st_gid)
                    except OSError:  # not allowed to give it away: it stays ours, with the file's mode
                        pass
            else:
                os.fchmod(fd, 0o666 & ~_umask())
        except OSError:
            pass
        self.file = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, text: str) -> None:
        try:
            self.file.write(text)
        except OSError as exc:
            self.discard()
            raise CaseError(f"{self.option} {self.path}: writing failed: {exc.strerror}") from None

    def write_bytes(self, data: bytes) -> None:
        """Bytes after what was written as text (a binary format, e.g. STL)."""
        try:
            self.file.flush()
            self.file.buffer.write(data)
        except OSError as exc:
            self.discard()
            raise CaseError(f"{self.option} {self.path}: writing failed: {exc.strerror}") from None

    def commit(self) -> None:
        try:
            self.file.flush()
            if self.temp is not None:
                os.fsync(self.file.fileno())
            self.file.close()
            if self.temp is not None:
                os.replace(self.temp, self.target)
                self.temp = None
        except OSError as exc:
            self.discard()
            raise CaseError(f"{self.option} {self.path}: writing failed: {exc.strerror}") from None

    def discard(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass
        if self.temp is not None:
            try:
                os.unlink(self.temp)
            except OSError:
                pass
            self.temp = None
