# SPDX-License-Identifier: GPL-3.0-or-later
"""The user's store of built kernels (tools/prebuild_kernels.py): a second clone of the same solver,
or the other README command, copies them instead of compiling; anything that does not match, a
store that cannot be written, and CI compile as a new machine does."""

import json
import os

import pytest

from tools import prebuild_kernels


def _built(folder, **changes):
    """A kernel folder as a build leaves it (one stand-in cache file and kernels.json)."""
    prebuilt = prebuild_kernels._prebuilt_module()
    wanted = prebuilt.identity(
        prebuilt.source_digest(prebuild_kernels.ROOT / "solver_core"), f"{prebuild_kernels.PACKAGE}.solver_core"
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernels.json").write_text(json.dumps({**wanted, **changes}))
    (folder / "rod_energy.bend_energy-1.py311.nbi").write_bytes(b"compiled")
    return folder


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A user cache folder of the test's own, outside CI; compiling records where it compiled."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.delenv("CI", raising=False)
    compiled = []

    def compile_into(folder):
        compiled.append(folder)
        _built(folder)

    monkeypatch.setattr(prebuild_kernels, "_compile", compile_into)
    return compiled


def test_a_second_clone_copies_the_kernels_the_first_compiled(tmp_path, home):
    first, second = tmp_path / "first" / "kernel_cache", tmp_path / "second" / "kernel_cache"
    assert not prebuild_kernels.built_before(first)
    assert prebuild_kernels.build(first) == first
    assert home == [first]  # compiled once, and kept for the user
    assert prebuild_kernels.built_before(second)
    assert prebuild_kernels.build(second) == second
    assert home == [first]  # the second copied them
    assert (second / "rod_energy.bend_energy-1.py311.nbi").read_bytes() == b"compiled"
    assert not [p for p in second.parent.iterdir() if p.name.startswith(".")]  # no partial copy left


@pytest.mark.parametrize("field, value", [("digest", "000000000000"), ("numba", "0.1"), ("python", "cpython-27")])
def test_a_store_built_for_something_else_is_compiled_again(tmp_path, home, field, value):
    _built(prebuild_kernels.store(), **{field: value})
    folder = tmp_path / "clone" / "kernel_cache"
    assert not prebuild_kernels.built_before(folder)
    prebuild_kernels.build(folder)
    assert home == [folder]
    # and the store now holds what was compiled
    assert json.loads((prebuild_kernels.store() / "kernels.json").read_text())[field] != value


def test_ci_neither_reads_nor_fills_the_store(tmp_path, home, monkeypatch):
    prebuild_kernels.build(tmp_path / "a")
    monkeypatch.setenv("CI", "true")
    assert prebuild_kernels.store() is None
    prebuild_kernels.build(tmp_path / "b")
    assert home == [tmp_path / "a", tmp_path / "b"]  # compiled again, as on a new machine


def test_a_store_path_that_is_a_file_leaves_the_build_as_it_was(tmp_path, home):
    # a home the store cannot be made in (as a read-only one, for a process that may write anywhere)
    (tmp_path / "user-cache").write_text("not a folder")
    folder = prebuild_kernels.build(tmp_path / "clone" / "kernel_cache")
    assert home == [folder] and prebuild_kernels._current(folder)


def test_the_store_keeps_the_newest_versions_only(tmp_path, home):
    kept = prebuild_kernels.store()
    for k in range(prebuild_kernels.STORE_VERSIONS + 2):
        old = _built(kept.parent / f"old{k}")
        os.utime(old, (1000.0 + k, 1000.0 + k))
    prebuild_kernels.build(tmp_path / "clone" / "kernel_cache")
    left = sorted(p.name for p in kept.parent.iterdir())
    newest_old = [f"old{k}" for k in range(2, prebuild_kernels.STORE_VERSIONS + 2)][
        -(prebuild_kernels.STORE_VERSIONS - 1) :
    ]
    assert left == sorted([kept.name, *newest_old])
