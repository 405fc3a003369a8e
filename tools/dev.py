#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Developer entry point: makes the virtual environment, then runs the main job or the tests.

    python3 tools/dev.py demo      # the main job (see README)
    python3 tools/dev.py test      # all tests: solver and Blender tests, on two cores
    python3 tools/dev.py test -k cantilever          # extra arguments go to pytest
    python3 tools/dev.py lint      # ruff: lint and format check
    python3 tools/dev.py bench     # the benchmarks (print figures)
    python3 tools/dev.py demos     # rebuild the demo files in demo_blends/
    python3 tools/dev.py build     # the installable extension zips in dist/, the Linux one with its
                                   # kernels compiled ahead (tools/prebuild_kernels.py, build_extension.py)

The environment lives in .venv (Python 3.11, the Python that bpy 5.0 needs) and is rebuilt
only when requirements/dev.txt changes. The demo files are built in .venv-blender4.2 (bpy 4.2 LTS,
requirements/blender42.txt), so that every Blender from 4.2 on opens them.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements" / "dev.txt"
DEMOS_VENV = ROOT / ".venv-blender4.2"
DEMOS_REQUIREMENTS = ROOT / "requirements" / "blender42.txt"
SHARD = "CABLE_HARNESS_TEST_SHARD"  # read by tests/solver/conftest.py


def _say(text: str) -> None:
    print(f"[dev] {text}", flush=True)


def _python311() -> str:
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which("python3.11")
    if found:
        return found
    sys.exit("[dev] Python 3.11 is needed (bpy 5.0 is built for it); install it and run again with python3.11")


def venv_python(where: Path = VENV) -> Path:
    return where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_environment(where: Path = VENV, requirements: Path = REQUIREMENTS, build_kernels: bool = False) -> Path:
    wanted = hashlib.sha256(requirements.read_bytes()).hexdigest()
    python = venv_python(where)
    stamp = where / ".requirements.sha256"
    if python.exists() and stamp.exists() and stamp.read_text().strip() == wanted:
        return python
    if not python.exists():
        _say(f"creating virtual environment in {where}")
        base = _python311()
        if base == sys.executable:
            venv.EnvBuilder(with_pip=True, clear=True).create(where)
        else:
            subprocess.run([base, "-m", "venv", "--clear", str(where)], check=True)
    build = None
    if build_kernels:
        # the kernels the main job loads need only numpy and numba: compiled (tools/prebuild_kernels.py,
        # ~2 min on 2 cores) while pip fetches and unpacks the rest, so that its routing finds them. Not
        # for the tests: they compile these beside the solver tests' own, on the other core
        core = _pins(requirements, ("numpy", "numba", "llvmlite"))
        if len(core) == 3:
            _pip_install(python, *core)
            build = _start_kernel_build(python, where)
    _say(f"installing {requirements.name} (bpy is a ~370-520 MB download the first time)")
    try:
        _pip_install(python, "-r", str(requirements))
    except BaseException:
        if build is not None:
            build[0].kill()
            build[0].wait()
        raise
    if build is not None:
        _finish_kernel_build(*build)
    stamp.write_text(wanted)
    return python


def _pins(requirements: Path, names) -> list:
    """The requirement lines (``name==version``) of ``names`` in the requirements file."""
    lines = [line.split("#", 1)[0].strip() for line in requirements.read_text().splitlines()]
    return [line for line in lines if line.split("==", 1)[0].strip().lower() in names]


def _pip_install(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *args], check=True)


def _start_kernel_build(python: Path, where: Path):
    """(process, log path, start time) of the kernels' build in the background, or None."""
    log = where / "kernel-build.log"
    try:
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(python), "-m", "tools.prebuild_kernels"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
            )
    except OSError:
        return None
    _say("compiling the solver's kernels beside the install (once per solver version)")
    return process, log, time.monotonic()


def _finish_kernel_build(process, log: Path, started: float) -> None:
    """Wait for the kernels' build: the main job takes them from dist/kernel_cache, and a second build
    into that folder must not start beside this one."""
    code = process.wait()
    if code == 0:
        _say(f"solver kernels ready ({time.monotonic() - started:.0f} s after the build started)")
    else:
        _say(f"compiling the kernels beside the install failed ({log}); they are compiled when first needed")


def run(python: Path, *args: str) -> int:
    return subprocess.run([str(python), *args], cwd=ROOT).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "bench", "demos", "build", "lint"):
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "build":  # the kernels need numba (the environment); the zips only the standard library
        kernels = ROOT / "dist" / "kernel_cache"
        return run(ensure_environment(), "-m", "tools.prebuild_kernels", str(kernels)) or run(
            Path(sys.executable), str(ROOT / "tools" / "build_extension.py"), "--kernels", str(kernels), *rest
        )
    if command == "demos":
        ensure_environment()  # the extension's kernel cache and repository link live in .venv
        return run(ensure_environment(DEMOS_VENV, DEMOS_REQUIREMENTS), "-m", "demo_blends.build_demos", *rest)
    python = ensure_environment(build_kernels=command == "demo")
    if command == "lint":
        return run(python, "-m", "ruff", "check", ".", *rest) or run(python, "-m", "ruff", "format", "--check", ".")
    if command == "demo":
        return run(python, "-m", "tools.main_job", *rest)
    if command == "bench":
        code = 0
        for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
            _say(f"running {script.name}")
            code |= run(python, "-m", f"benchmarks.{script.stem}", *rest)
        return code
    if rest:  # a selection: the solver tests, then the Blender tests (which build their kernels if needed)
        code = run(python, "-m", "pytest", "tests/solver", *rest)
        if code not in (0, 5):
            return code
        blender = run(python, "-m", "pytest", "tests/blender", *rest)
        return 0 if blender == 5 or (blender == 0 and code in (0, 5)) else blender
    return _test_everything(python)


def _test_everything(python: Path) -> int:
    """All tests on two cores. Compiling the kernels comes first, as two builds side by side: the
    solver tests' (solver_core.warmup) and the Blender tests' (tools/prebuild_kernels.py: the Linux
    zip's, under the installed extension's module name, so numba caches them apart). Then the solver
    tests run as two shards side by side (tests/solver/conftest.py): two fifths, then the Blender
    tests, beside the other three fifths. One serial run with the Blender kernels built at low priority
    beside it took 20.4 min; the docs/performance.md table has this layout's figures."""
    started = time.monotonic()
    builds = [
        subprocess.Popen([str(python), "-m", "solver_core.warmup"], cwd=ROOT, stdout=subprocess.DEVNULL),
        subprocess.Popen([str(python), "-m", "tools.prebuild_kernels"], cwd=ROOT, stdout=subprocess.DEVNULL),
    ]
    warmed, built = (build.wait() for build in builds)
    _say(f"kernels compiled in {time.monotonic() - started:.0f} s")
    if warmed or built:
        _say("compiling the kernels failed (python -m solver_core.warmup or -m tools.prebuild_kernels says why)")
        return warmed or built
    log = ROOT / ".pytest_cache" / "solver-shard-2.log"
    log.parent.mkdir(exist_ok=True)
    pytest = [str(python), "-m", "pytest", "tests/solver"]
    with open(log, "w") as out:
        second = subprocess.Popen(
            pytest, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, SHARD: "2:5/5"}
        )
        try:
            first = subprocess.run(pytest, cwd=ROOT, env={**os.environ, SHARD: "0:2/5"}).returncode
            blender = run(python, "-m", "pytest", "tests/blender")
        finally:
            other = second.wait()
    _say("the solver tests' second shard:")
    print(log.read_text(), flush=True)
    _say(f"all tests in {time.monotonic() - started:.0f} s")
    return first or other or blender


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
