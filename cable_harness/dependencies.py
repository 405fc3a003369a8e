# SPDX-License-Identifier: GPL-3.0-or-later
"""What the extension needs from the Python that Blender runs, said in one sentence where it is missing.

Blender 4.2 and newer install numba and llvmlite from the wheels in the extension's zip. Blender 3.4
to 4.1 load the folder as a legacy add-on and take numba from Blender's own Python (Debian's Blender
3.4 with Debian's numba 0.56 is tested: tools/gui_smoke_test.sh). numba 0.56 is the oldest the
solver's kernels are known to compile with; SciPy is never needed (solver_core.maths.small_dense).
"""

import sys

MINIMUM_NUMBA = (0, 56)


def _version(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def numba_problem(version: str | None, python: str = sys.executable) -> str | None:
    """Why the solver cannot run with this numba (None: it can). ``version``: numba's, or None when
    it cannot be imported."""
    needed = ".".join(map(str, MINIMUM_NUMBA))
    how = f"install it into Blender's Python ({python} -m pip install 'numba>={needed}'), or use Blender 4.2 or "
    how += "newer, whose extension zip brings it"
    if version is None:
        return f"Cable Harness needs numba {needed} or newer, which Blender's Python does not have: {how}"
    if _version(version) < MINIMUM_NUMBA:
        return f"Cable Harness needs numba {needed} or newer, but Blender's Python has numba {version}: {how}"
    return None


def check() -> None:
    """Raise ImportError with one sentence where numba is missing or too old (Blender then does not
    enable the extension and shows the sentence)."""
    try:
        import numba
    except ImportError:
        version = None
    else:
        version = getattr(numba, "__version__", "0")
    problem = numba_problem(version)
    if problem:
        raise ImportError(problem)
