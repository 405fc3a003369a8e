# SPDX-License-Identifier: GPL-3.0-or-later
"""Shipped kernels are used only where they were built for: otherwise nothing changes.

The success path (a zip with kernels installed through Blender's installer solves without compiling
one kernel) is tests/blender/test_extension_package.py."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest

from solver_core import _jit, prebuilt_kernels
from tools import build_extension


def _ship(folder, **changes):
    manifest = {**prebuilt_kernels.identity(_jit.SOURCE_DIGEST, _jit.__package__), **changes}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernels.json").write_text(json.dumps(manifest))
    (folder / "rod_energy.bend_energy-1.py311.nbi").write_bytes(b"not a real index")
    return folder


def _install(tmp_path, shipped):
    marker = tmp_path / "cache" / "warm-generic"
    used = prebuilt_kernels.install(
        str(tmp_path / "cache"), _jit.SOURCE_DIGEST, _jit.__package__, _jit.__file__, marker, shipped
    )
    return used, marker


@pytest.mark.parametrize(
    "field, value",
    [
        ("digest", "000000000000"),  # other sources: their kernels would be stale
        ("package", "bl_ext.blender_org.cable_harness.solver_core"),  # a kernel imports its module by name
        ("python", "cpython-313"),
        ("numba", "0.61.0"),
        ("machine", "aarch64"),
        ("cpu", "haswell"),
    ],
)
def test_kernels_built_for_something_else_are_not_used(tmp_path, field, value):
    before = (numba.config.CPU_NAME, numba.config.CPU_FEATURES)
    used, marker = _install(tmp_path, _ship(tmp_path / "shipped", **{field: value}))
    assert not used and not marker.exists() and not (tmp_path / "cache").exists()
    assert (numba.config.CPU_NAME, numba.config.CPU_FEATURES) == before


@pytest.mark.parametrize("content", ["", "{", "[]", '{"digest": 1}'])
def test_an_unreadable_manifest_is_ignored(tmp_path, content):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "kernels.json").write_text(content)
    assert _install(tmp_path, shipped) == (False, tmp_path / "cache" / "warm-generic")


def test_no_shipped_folder_in_a_checkout():
    assert not prebuilt_kernels.shipped_folder().exists() and not _jit.PREBUILT


@pytest.fixture
def cpu_environment():
    """What ``install`` may write to the environment, put back as it was after the test."""
    names = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", prebuilt_kernels.DISABLED)
    saved = {name: os.environ.get(name) for name in names}
    os.environ.pop(prebuilt_kernels.DISABLED, None)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def test_matching_kernels_are_used_only_where_numba_generates_code_for_their_cpu(tmp_path, cpu_environment):
    """This process has compiled kernels already, and numba's code generator keeps the target it was
    made for. Made for the host (as another add-on's kernels would make it), kernels for the generic
    CPU would never be looked up: they are left alone and its children are told so. Made for the
    generic CPU (NUMBA_CPU_NAME=generic, as CI runs), they are copied in and the marker left."""
    before = (numba.config.CPU_NAME, numba.config.CPU_FEATURES)
    shipped = _ship(tmp_path / "shipped")
    used, marker = _install(tmp_path, shipped)
    if before == (prebuilt_kernels.CPU_NAME, ""):
        assert used and marker.exists()
        copied = prebuilt_kernels.cache_subfolder(str(tmp_path / "cache"), _jit.__file__)
        assert [p.name for p in copied.iterdir()] == ["rod_energy.bend_energy-1.py311.nbi"]
    else:
        assert not used and not marker.exists() and not (tmp_path / "cache").exists()
        assert os.environ[prebuilt_kernels.DISABLED] == "0"
    assert (numba.config.CPU_NAME, numba.config.CPU_FEATURES) == before


def test_only_kernels_compiled_for_the_generic_cpu_are_exported(tmp_path):
    from solver_core.contact.clearance import clearance_to_triangles

    clearance_to_triangles(np.zeros((2, 3)), 0.001, np.eye(3)[None])  # a kernel in the cache, at least
    export = (_jit.CACHE_DIR, _jit.SOURCE_DIGEST, _jit.__package__, _jit.__file__, tmp_path)
    if (numba.config.CPU_NAME, numba.config.CPU_FEATURES) == (prebuilt_kernels.CPU_NAME, ""):
        assert prebuilt_kernels.export(*export) >= 2
        manifest = json.loads((tmp_path / "kernels.json").read_text())
        assert manifest == prebuilt_kernels.identity(_jit.SOURCE_DIGEST, _jit.__package__)
        # each sub-package's kernels in a folder of their own, as numba caches them
        assert any(p.name.startswith("clearance._nearest_segment_triangle") for p in (tmp_path / "contact").iterdir())
    else:
        with pytest.raises(RuntimeError, match="NUMBA_CPU_NAME=generic"):
            prebuilt_kernels.export(*export)
        assert not (tmp_path / "kernels.json").exists()


def test_the_zip_puts_the_kernels_where_the_installed_solver_looks(tmp_path):
    assert build_extension.KERNEL_FOLDER == prebuilt_kernels.FOLDER
    shipped = _ship(tmp_path / "shipped")
    (shipped / "notes.txt").write_text("not a cache file")
    names = sorted(name for _, name in build_extension.kernel_files(shipped))
    assert names == ["kernel_cache/kernels.json", "kernel_cache/rod_energy.bend_energy-1.py311.nbi"]
    with pytest.raises(build_extension.BuildError, match="kernels.json"):
        build_extension.kernel_files(tmp_path)


KERNEL_MODULE = """
import numba


@numba.njit(cache=True)
def twice(x):
    return 2.0 * x
"""

# Runs in a fresh Python: prebuilt_kernels loaded from its file (without solver_core, whose kernels
# would start numba's code generator first), a tiny cached kernel in kernels_mod.py.
STEP = """
import importlib.util, json, os, sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("prebuilt_kernels", sys.argv[1])
pk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pk)
mode, place, cache, shipped = sys.argv[2], Path(sys.argv[3]), sys.argv[4], Path(sys.argv[5])
module_file = str(place / "kernels_mod.py")
marker = Path(cache) / "warm-generic"
out = {}
if mode == "host-first":  # another add-on's kernel defined first: numba already generates for the host
    import numba
    numba.njit(lambda x: x)(1.0)
if mode == "export":
    import numba
    sys.path.insert(0, str(place))
    import kernels_mod
    kernels_mod.twice(2.0)
    out["files"] = pk.export(cache, "d1", "pkg", module_file, shipped)
else:
    out["used"] = pk.install(cache, "d1", "pkg", module_file, marker, shipped)
    out["env"] = [os.environ.get("NUMBA_CPU_NAME"), os.environ.get("NUMBA_CPU_FEATURES"), os.environ.get(pk.DISABLED)]
    out["marker"] = marker.exists()
    sys.path.insert(0, str(place))
    import kernels_mod
    out["value"] = kernels_mod.twice(2.0)
    stats = kernels_mod.twice.stats
    out["hits"], out["misses"] = sum(stats.cache_hits.values()), sum(stats.cache_misses.values())
print(json.dumps(out))
"""


def _step(mode, place, cache, shipped, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") and k != prebuilt_kernels.DISABLED}
    run = subprocess.run(
        [sys.executable, "-c", STEP, prebuilt_kernels.__file__, mode, str(place), str(cache), str(shipped)],
        env={**clean, "NUMBA_CACHE_DIR": str(cache), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_shipped_kernels_load_from_another_folder_without_compiling(tmp_path):
    """Exported where they were compiled (for the generic CPU), installed where the package lands on
    another machine: numba finds them in the folder its own locator names for the new path and
    compiles nothing; the CPU choice is in the environment for child processes; a second start copies
    nothing again. Where numba already generates code for the host CPU, they are left alone and the
    kernel compiles as usual."""
    built, installed = tmp_path / "build" / "pkg", tmp_path / "user" / "extensions" / "pkg"
    for place in (built, installed):
        place.mkdir(parents=True)
        (place / "kernels_mod.py").write_text(textwrap.dedent(KERNEL_MODULE))
    shipped = tmp_path / "kernel_cache"
    exported = _step("export", built, tmp_path / "build_cache", shipped, NUMBA_CPU_NAME="generic")
    assert exported["files"] == 2  # the index and one compiled version
    assert json.loads((shipped / "kernels.json").read_text())["cpu"] == "generic"

    cache = tmp_path / "user_cache"
    first = _step("install", installed, cache, shipped)
    assert first["used"] and first["marker"] and first["value"] == 4.0
    assert (first["hits"], first["misses"]) == (1, 0)
    assert first["env"] == ["generic", "", None]
    copied = sorted(p.name for p in prebuilt_kernels.cache_subfolder(str(cache), str(installed / "x.py")).iterdir())
    assert copied == sorted(p.name for p in shipped.iterdir() if p.suffix in (".nbi", ".nbc"))
    stamp = {p: p.stat().st_mtime_ns for p in Path(cache).rglob("*.nb*")}
    again = _step("install", installed, cache, shipped)
    assert again["used"] and (again["hits"], again["misses"]) == (1, 0)
    assert {p: p.stat().st_mtime_ns for p in Path(cache).rglob("*.nb*")} == stamp

    other = _step("host-first", installed, tmp_path / "other_cache", shipped)
    assert not other["used"] and not other["marker"] and other["env"] == [None, None, "0"]
    assert (other["hits"], other["misses"]) == (0, 1) and other["value"] == 4.0
