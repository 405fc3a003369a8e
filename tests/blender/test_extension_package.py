# SPDX-License-Identifier: GPL-3.0-or-later
"""The installable package: the build refuses incomplete zips, and the built Linux zip goes through
Blender's own extension installer (install, enable, solve, disable, uninstall) in a fresh process,
and with the kernels it ships solves without compiling any."""

import tomllib
import zipfile

import pytest
from helpers.blender_env import ROOT

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
    kernels = prebuild_kernels.build(out / "kernel_cache")  # compiled for the generic x86-64 CPU
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
