# SPDX-License-Identifier: GPL-3.0-or-later
"""The installable package: the build refuses incomplete zips, and the built Linux zip goes through
Blender's own extension installer (install, enable, solve, disable, uninstall) in a fresh process,
and with the kernels it ships solves without compiling any."""

import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers.blender_env import MODULE, ROOT

from tools import build_extension, prebuild_kernels
from tools.extension_probe import run_probe


def _manifest():
    return tomllib.loads((ROOT / "blender_manifest.toml").read_text())


def test_manifest_bundles_every_wheel_each_platform_needs():
    wheels = build_extension.check_manifest(_manifest())
    for platform in ("linux-x64", "windows-x64", "macos-arm64"):
        have = {(w.distribution, w.python) for w in wheels if w.blender_platform == platform}
        assert have == {(d, p) for d in ("numba", "llvmlite") for p in ("cp311", "cp313")}, platform


def test_manifest_missing_a_wheel_is_refused_with_its_name():
    manifest = _manifest()
    manifest["wheels"] = [w for w in manifest["wheels"] if not ("numba" in w and "cp313" in w and "win" in w)]
    with pytest.raises(build_extension.BuildError, match=r"windows-x64: numba \(cp313\)"):
        build_extension.check_manifest(manifest)


def test_manifest_field_errors_name_the_field():
    manifest = _manifest()
    manifest["permissions"] = {"files": "x" * 65}
    with pytest.raises(build_extension.BuildError, match="permissions.files"):
        build_extension.check_manifest(manifest)
    manifest = _manifest()
    del manifest["tagline"]
    with pytest.raises(build_extension.BuildError, match="tagline"):
        build_extension.check_manifest(manifest)


@pytest.fixture(scope="module")
def linux_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    # compiled for the generic x86-64 CPU without SciPy (dist/kernel_cache, kept while the solver is)
    kernels = prebuild_kernels.build()
    (path,) = build_extension.build(["linux-x64"], out, ROOT / "wheels", offline=False, kernels=kernels)
    return path


def test_zip_without_a_wheel_is_refused(linux_zip, tmp_path):
    broken = tmp_path / linux_zip.name
    with zipfile.ZipFile(linux_zip) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            if not (item.filename.startswith("wheels/llvmlite") and "cp311" in item.filename):
                target.writestr(item, source.read(item.filename))
    with pytest.raises(build_extension.BuildError, match="does not contain: llvmlite-0.50.0-cp311"):
        build_extension.verify_zip(broken, "linux-x64")


def test_built_zip_installs_solves_and_uninstalls_through_blenders_installer(linux_zip, tmp_path):
    user = tmp_path / "blender_user"
    installed = run_probe("install", user, linux_zip)
    assert installed["install_result"] == ["FINISHED"] and installed["installed_dir"]
    assert installed["enabled"] == [True, True]
    assert installed["module_file"].startswith(str(user))  # the installed copy, not the checkout
    assert installed["solve_result"] == ["FINISHED"] and installed["converged"]
    # the centre line of a cable between two connectors keeps its length (inextensible to 1e-3)
    assert installed["length"] == pytest.approx(installed["cable_length"], rel=1e-3)
    # compiled kernels went to the extension's per-user folder
    assert installed["numba_cache_dir"].startswith(str(user / "extensions" / ".user"))
    assert installed["numba_cache_files"] > 0
    # the kernels shipped in the zip were used: the first solve after the install compiled none
    assert installed["prebuilt_kernels"] and installed["kernels_compiled"] == 0
    assert not installed["top_level_solver_core"]  # only the extension's own package names
    # the bundled wheels were installed into Blender's extension site-packages
    assert list((user / "extensions" / ".local").rglob("llvmlite/__init__.py"))

    removed = run_probe("remove", user)
    assert removed["enabled_before"] == [True, True]
    assert removed["enabled_after_disable"] == [False, False]
    assert not removed["operator_after_disable"]
    assert removed["uninstall_result"] == ["FINISHED"]
    assert not removed["installed_dir"] and not removed["numba_left_in_local"]


@pytest.fixture(scope="module")
def tours(linux_zip, tmp_path_factory):
    """Every feature used once (tools/feature_tour.py) in a fresh install of the Linux zip, in a Blender
    whose Python cannot import SciPy (as Blender's own) and in one that can."""
    return {
        scipy: run_probe("tour", tmp_path_factory.mktemp("user"), linux_zip, timeout=1800, without_scipy=not scipy)
        for scipy in (False, True)
    }


def test_every_feature_runs_in_a_blender_without_scipy(tours):
    tour = tours[False]
    assert not tour["scipy_importable"] and tours[True]["scipy_importable"]
    assert tour["enabled"] == [True, True]
    failed = {name: f["error"] for name, f in tour["features"].items() if "error" in f}
    assert not failed
    assert set(tour["features"]) >= {
        "simple_cable", "clip_kinds", "mesh_collider", "cable_cable_contact", "junctions", "bundle", "rest_shape",
        "model_cosserat_pbd", "model_kirchhoff_cg", "model_mass_spring", "simulate", "dynamics_cosserat",
        "dynamics_cosserat_pbd", "bake_and_report", "engineering_outputs", "variation_study",
    }  # fmt: skip


def test_results_without_scipy_equal_those_with_it(tours):
    for name, without in tours[False]["features"].items():
        with_scipy = tours[True]["features"][name]
        a, b = np.array(without["fingerprint"]), np.array(with_scipy["fingerprint"])
        assert a.shape == b.shape and a.size > 0, name
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=name)


def test_no_feature_compiles_a_kernel_on_its_first_use(tours):
    for tour in tours.values():
        assert tour["prebuilt_kernels"]
        compiled = {name: (f["compiled"], f["cache_changes"]) for name, f in tour["features"].items()}
        assert all(n == 0 and not changes for n, changes in compiled.values()), compiled
        assert tour["kernels_compiled"] == 0


def test_the_zip_ships_every_kernel_the_solver_defines(linux_zip):
    kernel_names = sys.modules[f"{MODULE}.solver_core.warmup"].kernel_names()
    with zipfile.ZipFile(linux_zip) as z:
        indexes = [Path(n) for n in z.namelist() if n.endswith(".nbi")]
    # each module's kernels in the folder of its sub-package, as numba caches them (solve/newton.py's
    # in kernel_cache/solve/)
    folder_of = {
        s.stem: s.parent.relative_to(ROOT / "solver_core").as_posix() for s in (ROOT / "solver_core").rglob("*.py")
    }
    assert indexes and all(
        p.parent.relative_to("kernel_cache").as_posix() == folder_of[p.name.split(".", 1)[0]] for p in indexes
    )
    shipped = {p.name.split("-", 1)[0] for p in indexes}
    assert len(kernel_names) > 100
    assert not set(kernel_names) - shipped, sorted(set(kernel_names) - shipped)
