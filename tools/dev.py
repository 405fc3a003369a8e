#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Developer entry point: makes the virtual environment, then runs the main job or the tests.

    python3 tools/dev.py demo      # the main job (see README)
    python3 tools/dev.py test      # all tests: solver tests first, then Blender tests
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
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements" / "dev.txt"
DEMOS_VENV = ROOT / ".venv-blender4.2"
DEMOS_REQUIREMENTS = ROOT / "requirements" / "blender42.txt"


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


def ensure_environment(where: Path = VENV, requirements: Path = REQUIREMENTS) -> Path:
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
    _say(f"installing {requirements.name} (bpy is a ~370-520 MB download the first time)")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", str(requirements)], check=True
    )
    stamp.write_text(wanted)
    return python


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
    python = ensure_environment()
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
    # Solver tests first (no bpy), then the Blender tests in their own process. The Blender tests use
    # the kernels built for the Linux zip (tools/prebuild_kernels.py): for a whole run they are built
    # meanwhile, at the lowest priority, on the core the serial solver tests leave idle (at normal
    # priority the build's two processes slowed the solver tests from 12.8 to 15.2 min on 2 cores);
    # a run with pytest arguments builds them in the Blender tests, where they are needed.
    build = [str(python), "-m", "tools.prebuild_kernels"]
    nice = {"preexec_fn": lambda: os.nice(19)} if hasattr(os, "nice") else {}
    kernels = None if rest else subprocess.Popen(build, cwd=ROOT, stdout=subprocess.DEVNULL, **nice)
    try:
        code = run(python, "-m", "pytest", "tests/solver", *rest)
    finally:
        built = 0 if kernels is None else kernels.wait()
    if code not in (0,):
        return code
    if built != 0:
        _say("building the kernels for the Blender tests failed (python -m tools.prebuild_kernels says why)")
        return built
    blender = run(python, "-m", "pytest", "tests/blender", *rest)
    return 0 if blender == 5 and rest else blender  # -k filters may select no Blender test


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
