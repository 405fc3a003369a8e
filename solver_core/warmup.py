# SPDX-License-Identifier: GPL-3.0-or-later
"""Compile the solver's kernels ahead of the first solve.

numba compiles a kernel on its first call and caches it on disk (``_jit``); the first solve after an
install or an upgrade would otherwise spend minutes compiling, and a feature's first use (a branched
harness, dynamics) more. ``warm_up`` solves small cases that take every feature's kernel paths once
(``warmup_cases``), then leaves a marker in the cache folder: afterwards every kernel the solver
defines is in the cache (``kernel_names``; tests/blender/test_extension_package.py checks both). The
Blender layer runs it as ``python -m solver_core.warmup`` in a separate process, so that the compile
never holds up the interface, and shows its progress as kernels compiled of ``kernel_names``.

Where the machine has two cores and ``fork``, the compile runs in two processes (numba compiles a
kernel, and everything it calls, in one thread): the kernels of the obstacle tree, the pair search
and the contact energy, which the warm-up case reaches before its first Newton solve (a third of the
compile), and then the other models' own kernels (``warmup_cases.helper_cases``), are compiled by a
forked helper while this process compiles the Newton solver's tree (``newton_iterations``) on a
cable without obstacles; the cases after it then find the helper's kernels in the cache. The Newton
solver's own callees are compiled first, one by one, with its body run as Python, so that the two
processes' work does not overlap (docs/performance.md: 182 -> 141 s on 2 cores).
"""

import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

from . import _jit, prebuilt_kernels
from . import warmup_cases as cases
from ._jit import CACHE_DIR, SOURCE_DIGEST, WARM_MARKER
from .contact.clearance import clearance_to_triangles
from .geometry.contact_geometry import segments_near_capsules
from .io.run_case import solve_case
from .models import mass_spring_rest
from .session.harness import Harness
from .solve.tangent_predictor import tangent_guess
from .specs.case import parse_case


def kernel_names() -> list:
    """Every kernel the solver defines with its own cache ("module.function"; helpers inlined into
    their callers have none): what a complete warm-up leaves compiled, one index file each."""
    import ast

    names = []
    package_dir = Path(__file__).resolve().parent
    for path in sorted(package_dir.rglob("*.py"), key=lambda p: p.relative_to(package_dir).as_posix()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "njit" for d in node.decorator_list
            ):
                names.append(f"{path.stem}.{node.name}")
    return names


def compiled_kernel_names(cache_dir: str = CACHE_DIR) -> set:
    """The kernels with an index file in this package's cache folders ("module.function")."""
    names = set()
    for folder in prebuilt_kernels.cache_subfolders(cache_dir, _jit.__file__).values():
        if folder.exists():
            # numba names an index "<module>.<function>-<line>.<python tag>.nbi"
            names |= {p.name.split("-", 1)[0] for p in folder.glob("*.nbi")}
    return names


def _box_triangles() -> np.ndarray:
    vertices = np.array(cases.BOX["vertices"], dtype=np.float64)
    return vertices[np.array(cases.BOX["triangles"])]


class _Reached(BaseException):
    """The helper's stop at the first Newton solve (not an Exception: nothing on the way catches it)."""


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _compile_contact_kernels_aside() -> int | None:
    """Fork a helper that compiles what the warm-up case calls before its first Newton solve; returns
    its pid, or None where the compile stays in this process (no fork, one core)."""
    if not hasattr(os, "fork") or _cores() < 2:
        return None
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        if sys.platform.startswith("linux"):  # the helper ends with this process (a cancelled compile)
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        from .solve import equilibrium

        def reached(*args, **kwargs):
            raise _Reached

        equilibrium.minimise_rod_energy = reached
        # the contact kernels; then the other models' own kernels (the chain's springs, the Kirchhoff
        # rod's CG, XPBD), up to where any of them would solve by Newton, which the main process compiles
        for case in (cases.CONTACT, *(case for _name, case in cases.helper_cases())):
            try:
                solve_case(parse_case(case))
            except _Reached:
                pass
        code = 0
    finally:
        os._exit(code)


def _compile_newton_callees() -> None:
    """Compile the kernels the Newton solver calls, each on its own, by running its body as Python on
    the bare case: numba then compiles ``newton_iterations`` around kernels it has (a third less
    time in it), while the helper compiles the contact kernels. Only a head start: whatever fails
    here is compiled with the solver below."""
    from .solve import equilibrium, newton

    equilibrium.minimise_rod_energy = lambda *args: newton.as_newton_result(newton.newton_iterations.py_func(*args))
    try:
        solve_case(parse_case(cases.BARE))
    except Exception:
        pass
    finally:
        equilibrium.minimise_rod_energy = newton.minimise_rod_energy


def kernels_are_warm() -> bool:
    """Whether this solver's kernels (this exact source) have been compiled into the cache."""
    return WARM_MARKER.exists()


def warm_up() -> float:
    """Compile the kernels by solving the warm-up case; returns the seconds it took."""
    t0 = time.perf_counter()
    helper = _compile_contact_kernels_aside()
    try:
        if helper is not None:
            _compile_newton_callees()
        solve_case(parse_case(cases.BARE))
        if helper is not None:
            os.waitpid(helper, 0)
            helper = None
    finally:
        if helper is not None:  # this process failed or was interrupted: so is the compile
            os.kill(helper, signal.SIGKILL)
            os.waitpid(helper, 0)
    solve_case(parse_case(cases.CONTACT))
    # the clearance read-out of a bake and a report (not part of a solve)
    clearance_to_triangles(np.array([[0.15, 0.0, -0.1], [0.15, 0.0, -0.12]]), 0.002, _box_triangles())
    # whether other cables' segments come near (reached by a solve only where they are inside its box)
    segments_near_capsules(np.zeros((2, 3)), np.zeros(2, dtype=np.int64), np.ones((1, 3)), np.ones((1, 3)), np.ones(1))
    # a warm step's tangent predictor where no factor was kept (a state restored or solved with others)
    bare = Harness.from_case(parse_case(cases.BARE))
    bare.solve_step()
    session = bare.cables["clamped"]
    tangent_guess(session.model, session.state, session.boundary)
    # every other feature, so that none stops to compile on its first use (the helper's cases again:
    # loaded from the cache where it compiled them, compiled here where it could not run)
    for _name, case in cases.feature_cases():
        solve_case(parse_case(case))
    mass_spring_rest.warm_explicit_relaxation()
    seconds = time.perf_counter() - t0
    WARM_MARKER.parent.mkdir(parents=True, exist_ok=True)
    WARM_MARKER.write_text(f"{seconds:.1f} s\n")
    return seconds


def main(argv: list[str]) -> int:
    """``python -m solver_core.warmup`` compiles into the cache; ``--export FOLDER`` then copies the
    kernels out to be shipped (``prebuilt_kernels``: run with NUMBA_CPU_NAME=generic)."""
    seconds = warm_up()
    print(f"solver kernels compiled in {seconds:.1f} s", file=sys.stderr)
    if argv[:1] == ["--export"] and len(argv) == 2:
        count = prebuilt_kernels.export(CACHE_DIR, SOURCE_DIGEST, _jit.__package__, _jit.__file__, Path(argv[1]))
        print(f"{count} cache files exported to {argv[1]}", file=sys.stderr)
    elif argv:
        print("usage: python -m solver_core.warmup [--export FOLDER]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
