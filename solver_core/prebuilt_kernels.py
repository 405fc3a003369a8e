# SPDX-License-Identifier: GPL-3.0-or-later
"""Kernels compiled ahead of time for any x86-64 CPU, shipped in the extension's zip.

A fresh install would otherwise compile every kernel before its first solve (minutes on a small
machine, docs/performance.md). The Linux zip carries a ``kernel_cache`` folder next to this
package: numba's cache files of the warm-up case (``warmup.py``), compiled for numba's ``generic``
CPU (baseline x86-64, measured as fast as the host's own on bench_solver and bench_contact), with
``kernels.json`` naming what they were built for. ``install`` copies them into this process's
cache folder, where numba looks them up, and selects the same CPU target for this process.

numba's cache is keyed by the source file's content, the function's line, the Python version and
the CPU target, and a loaded kernel imports its module by name: the shipped files serve only the
same sources (the digest), the same package name (``bl_ext.user_default.cable_harness``, an
extension installed from disk), the same Python, numba and machine. Anything else, or a CPU target
chosen by the user (NUMBA_CPU_NAME), leaves the kernels to be compiled as before. The choice holds
for the whole process (numba has one code generator): numba kernels of other add-ons defined after
this solver's are compiled for the generic CPU too.
"""

import hashlib
import json
import os
import platform
import shutil
import sys
from pathlib import Path

import numba
from numba.core import config

try:
    from numba.core.caching import UserProvidedCacheLocator
except ImportError:  # numba before 0.57 (Debian 12's 0.56, which its Blender 3.4 runs) names it privately
    from numba.core.caching import _UserProvidedCacheLocator as UserProvidedCacheLocator

FOLDER = "kernel_cache"
MANIFEST = "kernels.json"
CPU_NAME = "generic"
# "0" in a process that could not use them: its children (the background warm-up, the CLI for
# sweeps) must compile for the same CPU target as it, or they would warm a cache it never reads
DISABLED = "CABLE_HARNESS_PREBUILT_KERNELS"


# Development only: the folder tools/prebuild_kernels.py built, for an extension loaded from a checkout
# under the installed package name (the Blender tests), which has no kernel folder of its own
FOLDER_OVERRIDE = "CABLE_HARNESS_KERNEL_FOLDER"


def source_digest(folder: Path) -> str:
    """The digest of the solver's sources (every module of ``folder`` and its sub-packages): compiled
    kernels are kept per digest (_jit), as numba would not notice a kernel's callee changing in another
    module."""
    h = hashlib.sha1()
    for path in sorted(Path(folder).rglob("*.py"), key=lambda p: p.relative_to(folder).as_posix()):
        if "__pycache__" not in path.parts:
            h.update(path.relative_to(folder).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


def source_folders(package_dir: Path) -> list:
    """The package's folder and its sub-packages' (relative, the package's own first): numba keeps
    the kernels of each folder in a cache folder of its own."""
    package_dir = Path(package_dir)
    found = {p.parent.relative_to(package_dir) for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts}
    return sorted(found, key=lambda rel: (rel != Path("."), rel.as_posix()))


def shipped_folder() -> Path:
    """Where a zip puts the prebuilt kernels: beside this package, inside the extension's folder."""
    if os.environ.get(FOLDER_OVERRIDE):
        return Path(os.environ[FOLDER_OVERRIDE])
    return Path(os.path.abspath(__file__)).parent.parent / FOLDER


def identity(digest: str, package: str) -> dict:
    """What a set of cache files is valid for; ``kernels.json`` must equal this to be used."""
    return {
        "digest": digest,
        "package": package,
        "python": sys.implementation.cache_tag,
        "numba": numba.__version__,
        "machine": platform.machine().lower(),
        "cpu": CPU_NAME,
    }


def _select_generic_cpu() -> bool:
    """Compile and look up kernels for the generic CPU in this process and its children, unless the
    user chose another target (or only half of one) or numba's code generator already runs for
    another one (another add-on's kernels defined first)."""
    chosen = (config.CPU_NAME, config.CPU_FEATURES)
    if chosen not in ((None, None), (CPU_NAME, "")):
        return False
    config.CPU_NAME, config.CPU_FEATURES = CPU_NAME, ""
    from numba.core.registry import cpu_target

    # the code generator reads the target once, when it is created: one created earlier keeps its own
    if tuple(cpu_target.target_context.codegen().magic_tuple()[1:]) != (CPU_NAME, ""):
        config.CPU_NAME, config.CPU_FEATURES = chosen
        return False
    # numba re-reads its settings from the environment when a NUMBA_ variable changed since it was
    # imported (numba.core.config.reload_config): there, and in child processes, the choice stands
    os.environ["NUMBA_CPU_NAME"], os.environ["NUMBA_CPU_FEATURES"] = CPU_NAME, ""
    return True


def cache_subfolder(cache_dir: str, module_file: str) -> Path:
    """The folder numba files the kernels of ``module_file``'s folder in (its locator for a set
    NUMBA_CACHE_DIR)."""
    return Path(cache_dir) / UserProvidedCacheLocator.get_suitable_cache_subpath(os.path.abspath(module_file))


def cache_subfolders(cache_dir: str, module_file: str) -> dict:
    """For each folder of the package ``module_file`` lies in (relative to it), numba's cache folder."""
    package_dir = Path(os.path.abspath(module_file)).parent
    return {rel: cache_subfolder(cache_dir, str(package_dir / rel / "x.py")) for rel in source_folders(package_dir)}


def install(
    cache_dir: str, digest: str, package: str, module_file: str, warm_marker: Path, folder: Path | None = None
) -> bool:
    """Use the kernels shipped in ``folder`` (default ``shipped_folder()``) if they were built for this
    solver and this process: select their CPU target and, once per cache folder, copy them in and
    leave ``warm_marker``. Returns whether they are in use. Never raises: without them, kernels
    compile on first use as they always did."""
    folder = folder or shipped_folder()
    if os.environ.get(DISABLED) == "0":
        return False
    try:
        shipped = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if shipped != identity(digest, package):
        return False
    if not _select_generic_cpu():
        os.environ[DISABLED] = "0"
        return False
    copies = []  # (shipped file, cache folder)
    try:
        if warm_marker.exists():
            return True
        for rel, target in cache_subfolders(cache_dir, module_file).items():
            if (folder / rel).is_dir():
                copies += [(p, target) for p in (folder / rel).iterdir() if p.suffix in (".nbc", ".nbi")]
        # data files first, the indexes that name them last: an index never points at a missing file
        copies.sort(key=lambda copy: copy[0].suffix == ".nbi")
        for source, target in copies:
            target.mkdir(parents=True, exist_ok=True)
            # copied under another name and renamed: a second Blender starting meanwhile never reads
            # half a file
            partial = target / (source.name + f".{os.getpid()}.part")
            shutil.copyfile(source, partial)
            os.replace(partial, target / source.name)
        warm_marker.write_text("prebuilt\n")
    except OSError:
        # a full or read-only disk: whatever was copied goes, and the kernels compile for this target
        for source, target in copies:
            for stale in (target / source.name, target / (source.name + f".{os.getpid()}.part")):
                try:
                    stale.unlink(missing_ok=True)
                except OSError:
                    pass
    return True


def export(cache_dir: str, digest: str, package: str, module_file: str, folder: Path) -> int:
    """Copy this process's compiled kernels into ``folder`` with their ``kernels.json`` (the build
    step, after a warm-up for the generic CPU); returns the number of files."""
    if (config.CPU_NAME, config.CPU_FEATURES) != (CPU_NAME, ""):
        raise RuntimeError(f"kernels must be compiled with NUMBA_CPU_NAME={CPU_NAME} to be shipped")
    count = 0
    for rel, source_folder in cache_subfolders(cache_dir, module_file).items():
        if not source_folder.is_dir():
            continue
        (folder / rel).mkdir(parents=True, exist_ok=True)
        for source in source_folder.iterdir():
            if source.suffix in (".nbc", ".nbi"):
                shutil.copyfile(source, folder / rel / source.name)
                count += 1
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).write_text(json.dumps(identity(digest, package), indent=1) + "\n", encoding="utf-8")
    return count
