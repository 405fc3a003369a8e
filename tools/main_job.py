# SPDX-License-Identifier: GPL-3.0-or-later
"""The main job: route, simulate and report the demo harness.

Run through ``python3 tools/dev.py demo``. At this stage it solves the demo case with the
headless solver CLI (every step of its quasi-static path), writes out/desk_result.json and
prints a per-cable summary; later stages add the Blender scene, baking, rendering and reports
behind the same command.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "demo_blends" / "cases" / "desk_harness.json"
OUT = ROOT / "out"


def main() -> int:
    OUT.mkdir(exist_ok=True)
    result = OUT / "desk_result.json"
    print(f"[main job] solving {CASE.relative_to(ROOT)} with the solver CLI", flush=True)
    code = subprocess.run([sys.executable, "-m", "solver_core", "solve", str(CASE), "-o", str(result)],
                          cwd=ROOT).returncode
    if code == 0:
        print(f"[main job] result written to {result.relative_to(ROOT)}")
    return code


if __name__ == "__main__":
    sys.exit(main())
