# SPDX-License-Identifier: GPL-3.0-or-later
"""The user's store of built kernels (tools/kernel_store.py, used by tools/prebuild_kernels.py): a
second clone of the same solver, or the other README command, copies them instead of compiling;
anything that does not match, a store that cannot be written, and CI compile as a new machine does."""

import json
import os
import time

import pytest

from tools import kernel_store, prebuild_kernels


def _built(folder, **changes):
    """A kernel folder as a build leaves it (one stand-in cache file and kernels.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernels.json").write_text(json.dumps({**prebuild_kernels._wanted(), **changes}))
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
    assert prebuild_kernels.provide(first) == (first, "compiled")
    assert home == [first]  # compiled once, and kept for the user
    assert prebuild_kernels.provide(second) == (second, "copied")
    assert home == [first]
    assert (second / "rod_energy.bend_energy-1.py311.nbi").read_bytes() == b"compiled"
    assert prebuild_kernels.provide(second) == (second, "present")
    assert not [p for p in second.parent.iterdir() if p.name.startswith(".")]  # no partial copy left
    assert not [p for p in prebuild_kernels.store().parent.iterdir() if p.name.startswith(".")]


def test_the_store_is_named_by_what_its_kernels_were_built_for(tmp_path, home):
    """Two environments on one machine (another numba, another Python) keep a folder each."""
    wanted = prebuild_kernels._wanted()
    here = kernel_store.store_folder(wanted)
    assert here.name.startswith(wanted["digest"])
    assert kernel_store.store_folder({**wanted, "numba": "0.1"}) != here
    assert kernel_store.store_folder({**wanted, "python": "cpython-27"}) != here


@pytest.mark.parametrize("field, value", [("digest", "000000000000"), ("numba", "0.1"), ("python", "cpython-27")])
def test_a_store_built_for_something_else_is_compiled_again(tmp_path, home, field, value):
    _built(prebuild_kernels.store(), **{field: value})  # a mismatched manifest where ours would be
    folder = tmp_path / "clone" / "kernel_cache"
    assert prebuild_kernels.provide(folder) == (folder, "compiled")
    # and the store now holds what was compiled
    assert json.loads((prebuild_kernels.store() / "kernels.json").read_text())[field] != value


def test_ci_neither_reads_nor_fills_the_store(tmp_path, home, monkeypatch):
    prebuild_kernels.build(tmp_path / "a")
    before = sorted(p.name for p in (tmp_path / "user-cache").rglob("*"))
    monkeypatch.setenv("CI", "true")
    assert prebuild_kernels.store() is None
    assert prebuild_kernels.provide(tmp_path / "b") == (tmp_path / "b", "compiled")  # as on a new machine
    assert home == [tmp_path / "a", tmp_path / "b"]
    assert sorted(p.name for p in (tmp_path / "user-cache").rglob("*")) == before  # nothing added


def test_no_home_means_no_store_and_never_one_beside_the_working_folder(tmp_path, home, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG spec says to ignore it
    monkeypatch.setenv("HOME", "~")  # what expanduser gives without a home
    monkeypatch.chdir(tmp_path)
    assert prebuild_kernels.store() is None
    assert prebuild_kernels.provide(tmp_path / "clone")[1] == "compiled"
    assert not (tmp_path / "relative").exists() and not (tmp_path / "~").exists()


def test_a_store_path_that_is_a_file_leaves_the_build_as_it_was(tmp_path, home):
    # a home the store cannot be made in (as a read-only one, for a process that may write anywhere)
    (tmp_path / "user-cache").write_text("not a folder")
    folder = prebuild_kernels.build(tmp_path / "clone" / "kernel_cache")
    assert home == [folder] and prebuild_kernels._current(folder)


def test_the_store_keeps_the_versions_used_last_and_clears_what_was_left_over(tmp_path, home):
    stored = prebuild_kernels.store()
    for k in range(kernel_store.STORE_VERSIONS + 2):
        old = _built(stored.parent / f"old{k}")
        os.utime(old, (1000.0 + k, 1000.0 + k))
    stale, fresh = stored.parent / ".old9.abc", stored.parent / ".old8.def"  # an interrupted copy's
    stale.mkdir()
    fresh.mkdir()
    os.utime(stale, (time.time() - 2 * kernel_store.LEFT_OVER_SECONDS,) * 2)
    prebuild_kernels.build(tmp_path / "clone" / "kernel_cache")
    kept = kernel_store.STORE_VERSIONS - 1  # besides this version's own
    newest_old = [f"old{k}" for k in range(kernel_store.STORE_VERSIONS + 2)][-kept:]
    assert sorted(p.name for p in stored.parent.iterdir()) == sorted([stored.name, fresh.name, *newest_old])


def test_a_copy_finished_meanwhile_by_another_process_is_kept(tmp_path):
    source, target = _built(tmp_path / "source"), tmp_path / "target"
    _built(target)
    (target / "theirs").write_text("kept")
    kernel_store.copy_whole(source, target, lambda folder: True)
    assert (target / "theirs").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source", "target"]  # nothing left beside
