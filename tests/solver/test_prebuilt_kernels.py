# SPDX-License-Identifier: GPL-3.0-or-later
"""Shipped kernels are used only where they were built for: otherwise nothing changes.

The success path (a zip with kernels installed through Blender's installer solves without compiling
one kernel) is tests/blender/test_extension_package.py."""

import json

import numba
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


def test_matching_kernels_wait_while_numba_generates_code_for_another_cpu(tmp_path):
    """This process compiled kernels for the host first (as another add-on's kernels would make it):
    its code generator keeps that target, so kernels for the generic CPU would never be looked up."""
    if numba.config.CPU_NAME == prebuilt_kernels.CPU_NAME:
        pytest.skip("this run compiles for the generic CPU already (NUMBA_CPU_NAME=generic)")
    before = (numba.config.CPU_NAME, numba.config.CPU_FEATURES)
    used, marker = _install(tmp_path, _ship(tmp_path / "shipped"))
    assert not used and not marker.exists()
    assert (numba.config.CPU_NAME, numba.config.CPU_FEATURES) == before


def test_export_needs_kernels_compiled_for_the_generic_cpu(tmp_path):
    if numba.config.CPU_NAME == prebuilt_kernels.CPU_NAME:
        pytest.skip("this run compiles for the generic CPU (NUMBA_CPU_NAME=generic)")
    with pytest.raises(RuntimeError, match="NUMBA_CPU_NAME=generic"):
        prebuilt_kernels.export(_jit.CACHE_DIR, _jit.SOURCE_DIGEST, _jit.__package__, _jit.__file__, tmp_path)
    assert not (tmp_path / "kernels.json").exists()


def test_the_zip_puts_the_kernels_where_the_installed_solver_looks(tmp_path):
    assert build_extension.KERNEL_FOLDER == prebuilt_kernels.FOLDER
    shipped = _ship(tmp_path / "shipped")
    (shipped / "notes.txt").write_text("not a cache file")
    names = sorted(name for _, name in build_extension.kernel_files(shipped))
    assert names == ["kernel_cache/kernels.json", "kernel_cache/rod_energy.bend_energy-1.py311.nbi"]
    with pytest.raises(build_extension.BuildError, match="kernels.json"):
        build_extension.kernel_files(tmp_path)
