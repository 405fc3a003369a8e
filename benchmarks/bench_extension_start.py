# SPDX-License-Identifier: GPL-3.0-or-later
"""Start-up cost of the installed extension: the built Linux zip is installed through Blender's
installer (the first solve compiles the kernels into the per-user cache), then each fresh process
enables it and solves once with that warm cache. Target: first solve <= 2 s after process start."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import build_extension

ROOT = Path(__file__).resolve().parent.parent


def probe(mode, user, *args):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user))
    env.pop("NUMBA_CACHE_DIR", None)
    run = subprocess.run([sys.executable, "-m", "tools.extension_probe", mode, *map(str, args)], cwd=ROOT,
                         env=env, capture_output=True, text=True)
    line = [x for x in run.stdout.splitlines() if x.startswith("PROBE ")]
    if run.returncode or not line:
        raise SystemExit(run.stdout[-2000:] + run.stderr[-2000:])
    return json.loads(line[-1][6:])


def main():
    with tempfile.TemporaryDirectory() as scratch:
        (zip_path,) = build_extension.build(["linux-x64"], Path(scratch) / "dist", ROOT / "wheels", offline=False)
        user = Path(scratch) / "user"
        cold = probe("install", user, zip_path)
        print(f"install + enable + first solve with an empty cache (compiles): {cold['first_solve_since_start_s']:.1f} s "
              f"(solve {cold['solve_s']:.1f} s)")
        for run in range(3):
            warm = probe("start", user)
            print(f"fresh process {run + 1}: import bpy + enable + first solve, warm cache: "
                  f"{warm['first_solve_since_start_s']:.2f} s (enable {warm['enable_s']:.2f} s, solve "
                  f"{warm['solve_s']:.2f} s)  target <= 2 s")
        probe("remove", user)


if __name__ == "__main__":
    main()
