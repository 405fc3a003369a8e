#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the installable extension: one zip per platform, each carrying numba and llvmlite for every
Python that Blender ships, so that it installs offline.

    python3 tools/build_extension.py                        # all platforms of the manifest -> dist/
    python3 tools/build_extension.py --platform linux-x64   # one platform
    python3 tools/build_extension.py --offline               # use only wheels already in wheels/
    python3 tools/build_extension.py --kernels dist/kernel_cache   # ship prebuilt kernels (Linux)

Needs only the Python standard library (and pip to fetch missing wheels); no Blender executable.
The zip layout and the generated manifest block are those of Blender's own ``extension build
--split-platforms``, so Blender's installer (Preferences > Get Extensions > Install from Disk) takes
it. The script checks the manifest first, pins every wheel to the sha256 in tools/wheels.lock, and
refuses (deletes) a zip that misses a wheel its platform needs. ``--kernels`` adds the solver's
kernels compiled ahead for x86-64 (tools/prebuild_kernels.py, which needs numba) to the Linux zip,
so that a fresh install solves without compiling; ``python3 tools/dev.py build`` does both.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = "blender_manifest.toml"
LOCK = ROOT / "tools" / "wheels.lock"
PACKAGES = ("cable_harness", "solver_core")  # the Python packages the extension consists of
ROOT_FILES = (MANIFEST, "__init__.py", "LICENSE", "README.md")
KERNEL_FOLDER = "kernel_cache"  # solver_core.prebuilt_kernels.FOLDER: where the installed solver looks
KERNEL_PLATFORM = "linux-x64"  # the one platform the kernels are compiled for (numba's generic x86-64)

# What every platform zip must carry: these distributions, for each of these Pythons
# (Blender 4.2 to 5.0 ship CPython 3.11, Blender 5.1 and newer 3.13).
REQUIRED_DISTRIBUTIONS = ("numba", "llvmlite")
REQUIRED_PYTHONS = ("cp311", "cp313")
KNOWN_PLATFORMS = ("linux-x64", "linux-arm64", "windows-x64", "windows-arm64", "macos-x64", "macos-arm64")
MANIFEST_REQUIRED = {
    "schema_version": str,
    "id": str,
    "version": str,
    "name": str,
    "tagline": str,
    "maintainer": str,
    "type": str,
    "blender_version_min": str,
    "license": list,
}


class BuildError(Exception):
    pass


@dataclass(frozen=True)
class Wheel:
    path: str  # as written in the manifest: ./wheels/<file>.whl
    distribution: str
    version: str
    python: str
    abi: str
    platform_tags: tuple[str, ...]

    @property
    def filename(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def blender_platform(self) -> str:
        tags = self.platform_tags
        if any(t.startswith(("manylinux", "musllinux", "linux")) and t.endswith("x86_64") for t in tags):
            return "linux-x64"
        if any(t.startswith(("manylinux", "musllinux", "linux")) and t.endswith("aarch64") for t in tags):
            return "linux-arm64"
        if "win_amd64" in tags:
            return "windows-x64"
        if "win_arm64" in tags:
            return "windows-arm64"
        if any(t.startswith("macosx") and t.endswith("arm64") for t in tags):
            return "macos-arm64"
        if any(t.startswith("macosx") and t.endswith("x86_64") for t in tags):
            return "macos-x64"
        raise BuildError(f"wheel {self.filename}: platform tag {'.'.join(tags)} is not a Blender platform")

    @staticmethod
    def parse(path: str) -> Wheel:
        name = path.rsplit("/", 1)[-1]
        parts = name[: -len(".whl")].split("-") if name.endswith(".whl") else []
        if len(parts) not in (5, 6):
            raise BuildError(
                f"manifest wheels: {path!r} is not a wheel file name (name-version-python-abi-platform.whl)"
            )
        return Wheel(
            path, parts[0].lower().replace("_", "-"), parts[1], parts[-3], parts[-2], tuple(parts[-1].split("."))
        )


def check_manifest(manifest: dict) -> list[Wheel]:
    """The checks Blender's validator makes that a build can get wrong, with the field named."""
    for key, kind in MANIFEST_REQUIRED.items():
        if key not in manifest:
            raise BuildError(f"{MANIFEST}: `{key}` is missing")
        if not isinstance(manifest[key], kind):
            raise BuildError(f"{MANIFEST}: `{key}` must be a {kind.__name__}")
    if manifest["schema_version"] != "1.0.0":
        raise BuildError(f"{MANIFEST}: schema_version {manifest['schema_version']!r} is not 1.0.0")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", manifest["id"]):
        raise BuildError(f"{MANIFEST}: id {manifest['id']!r} must be a Python identifier")
    if not re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"]):
        raise BuildError(f"{MANIFEST}: version {manifest['version']!r} is not semantic (x.y.z)")
    if manifest["type"] not in ("add-on", "theme"):
        raise BuildError(f"{MANIFEST}: type must be 'add-on' or 'theme'")
    if len(manifest["tagline"]) > 64 or manifest["tagline"].endswith((".", "!", "?")):
        raise BuildError(f"{MANIFEST}: tagline must be at most 64 characters without closing punctuation")
    if not re.fullmatch(r"\d+\.\d+\.\d+", manifest["blender_version_min"]):
        raise BuildError(f"{MANIFEST}: blender_version_min must be x.y.z")
    if tuple(int(v) for v in manifest["blender_version_min"].split(".")) < (4, 2, 0):
        raise BuildError(f"{MANIFEST}: blender_version_min must be 4.2.0 or newer (extensions started in 4.2)")
    if not manifest["license"] or not all(str(x).startswith("SPDX:") for x in manifest["license"]):
        raise BuildError(f"{MANIFEST}: license entries must be SPDX identifiers (SPDX:...)")
    for key, reason in manifest.get("permissions", {}).items():
        if key not in ("files", "network", "clipboard", "camera", "microphone"):
            raise BuildError(f"{MANIFEST}: permissions.{key} is not a known permission")
        if not isinstance(reason, str) or not reason or reason.endswith(".") or len(reason) > 64:
            raise BuildError(
                f"{MANIFEST}: permissions.{key} needs a reason of at most 64 characters without a closing period"
            )
    platforms = manifest.get("platforms", [])
    for platform in platforms:
        if platform not in KNOWN_PLATFORMS:
            raise BuildError(f"{MANIFEST}: platform {platform!r} is not one of {', '.join(KNOWN_PLATFORMS)}")
    wheels = []
    for path in manifest.get("wheels", []):
        if not path.startswith("./wheels/"):
            raise BuildError(f"{MANIFEST}: wheel path {path!r} must start with ./wheels/")
        wheels.append(Wheel.parse(path))
    for platform in platforms:
        missing = missing_wheels(platform, wheels)
        if missing:
            raise BuildError(f"{MANIFEST}: no wheel for {platform}: {', '.join(missing)}")
    return wheels


def missing_wheels(platform: str, wheels) -> list[str]:
    have = {(w.distribution, w.python) for w in wheels if w.blender_platform == platform}
    return [f"{d} ({p})" for d in REQUIRED_DISTRIBUTIONS for p in REQUIRED_PYTHONS if (d, p) not in have]


def read_lock() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split()
            pins[name] = digest
    return pins


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_wheel(wheel: Wheel, folder: Path, offline: bool, pins: dict[str, str]) -> Path:
    target = folder / wheel.filename
    if not target.exists():
        if offline:
            raise BuildError(f"{target} is missing (run without --offline to download it)")
        folder.mkdir(parents=True, exist_ok=True)
        print(f"[build] downloading {wheel.filename}", flush=True)
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--abi",
            wheel.abi,
            "--python-version",
            f"{wheel.python[2]}.{wheel.python[3:]}",
            "-d",
            str(folder),
        ]
        for tag in wheel.platform_tags:
            command += ["--platform", tag]
        command.append(f"{wheel.distribution}=={wheel.version}")
        if subprocess.run(command).returncode != 0 or not target.exists():
            raise BuildError(f"could not download {wheel.filename} (pip download failed or named it differently)")
    if wheel.filename not in pins:
        raise BuildError(f"{wheel.filename} has no pinned sha256 in {LOCK.relative_to(ROOT)}")
    if sha256(target) != pins[wheel.filename]:
        raise BuildError(f"{target}: sha256 differs from {LOCK.relative_to(ROOT)}; delete it and build again")
    return target


def source_files() -> list[tuple[Path, str]]:
    files = [(ROOT / name, name) for name in ROOT_FILES]
    for missing in [str(p) for p, _ in files if not p.exists()]:
        raise BuildError(f"{missing} is missing")
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                files.append((path, path.relative_to(ROOT).as_posix()))
    return files


def generated_manifest(text: str, platform: str, wheels: list[Wheel]) -> str:
    # The block Blender's `extension build --split-platforms` appends, so installers see one platform.
    listed = ", ".join(f'"{w.path}"' for w in wheels)
    return (
        text + "\n\n# BEGIN GENERATED CONTENT.\n# This must not be included in source manifests.\n"
        f'[build.generated]\nplatforms = ["{platform}"]\nwheels = [{listed}]\n# END GENERATED CONTENT.\n'
    )


def verify_zip(path: Path, platform: str) -> None:
    """Re-read a built zip the way an installer would; a zip missing a wheel is an error."""
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        manifest = tomllib.loads(archive.read(MANIFEST).decode("utf-8"))
    generated = manifest.get("build", {}).get("generated", {})
    if generated.get("platforms") != [platform]:
        raise BuildError(f"{path.name}: generated platforms are {generated.get('platforms')}, not [{platform!r}]")
    listed = [Wheel.parse(p) for p in generated.get("wheels", [])]
    absent = [w.filename for w in listed if w.path[2:] not in names]
    if absent:
        raise BuildError(f"{path.name}: lists wheels it does not contain: {', '.join(absent)}")
    missing = missing_wheels(platform, listed)
    if missing:
        raise BuildError(f"{path.name}: misses wheels for {platform}: {', '.join(missing)}")
    for package in PACKAGES:
        if f"{package}/__init__.py" not in names:
            raise BuildError(f"{path.name}: {package} is missing")


def kernel_files(folder: Path) -> list[tuple[Path, str]]:
    """The prebuilt kernels' files as (source, name in the zip); refused without their kernels.json."""
    if not (folder / "kernels.json").is_file():
        raise BuildError(f"{folder}: no kernels.json (make it with tools/prebuild_kernels.py)")
    # the kernels of each of solver_core's sub-packages in a folder of their own, as numba caches them
    return [
        (path, f"{KERNEL_FOLDER}/{path.relative_to(folder).as_posix()}")
        for path in sorted(folder.rglob("*"))
        if path.suffix in (".nbi", ".nbc") or path.relative_to(folder).as_posix() == "kernels.json"
    ]


def build(
    platforms: list[str] | None, output: Path, wheel_folder: Path, offline: bool, kernels: Path | None = None
) -> list[Path]:
    manifest_text = (ROOT / MANIFEST).read_text(encoding="utf-8")
    manifest = tomllib.loads(manifest_text)
    wheels = check_manifest(manifest)
    wanted = platforms or manifest.get("platforms", [])
    for platform in wanted:
        if platform not in manifest.get("platforms", []):
            raise BuildError(f"platform {platform!r} is not in the manifest's platforms")
    pins = read_lock()
    files = source_files()
    prebuilt = kernel_files(kernels) if kernels is not None else []
    output.mkdir(parents=True, exist_ok=True)
    built = []
    for platform in wanted:
        own = [w for w in wheels if w.blender_platform == platform]
        local = [fetch_wheel(w, wheel_folder, offline, pins) for w in own]
        path = output / f"{manifest['id']}-{manifest['version']}-{platform.replace('-', '_')}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
            for source, name in files:
                if name == MANIFEST:
                    archive.writestr(name, generated_manifest(manifest_text, platform, own))
                else:
                    archive.write(source, name)
            for wheel, source in zip(own, local):
                archive.write(source, wheel.path[2:], compress_type=zipfile.ZIP_STORED)  # wheels are zips
            if platform == KERNEL_PLATFORM:
                for source, name in prebuilt:
                    archive.write(source, name)
        try:
            verify_zip(path, platform)
        except BuildError:
            path.unlink()
            raise
        print(
            f"[build] {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
            f"({path.stat().st_size / 1e6:.1f} MB, {len(own)} wheels)",
            flush=True,
        )
        built.append(path)
    return built


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", action="append", help="build only this platform (repeatable)")
    parser.add_argument("--output", type=Path, default=ROOT / "dist")
    parser.add_argument("--wheels", type=Path, default=ROOT / "wheels", help="where wheels are kept")
    parser.add_argument("--offline", action="store_true", help="do not download missing wheels")
    parser.add_argument("--kernels", type=Path, help="prebuilt kernels to ship in the Linux zip")
    args = parser.parse_args(argv)
    try:
        build(args.platform, args.output, args.wheels, args.offline, args.kernels)
    except BuildError as exc:
        print(f"[build] error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
