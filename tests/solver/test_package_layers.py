# SPDX-License-Identifier: GPL-3.0-or-later
"""solver_core's sub-packages stand in layers: each imports only from the layers below it.

The order is docs/architecture.md's: the numerics first, the runs of whole cases last. A module of
a lower layer that imports a higher one (a rod that knows its contact, a solve that knows the
harness) is the start of a circle, and is refused here by name.
"""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "solver_core"
# bottom to top; "" is the package's own foundation (_jit, kernel_arrays, errors, prebuilt_kernels)
LAYERS = ["", "maths", "geometry", "specs", "rod", "contact", "solve", "models", "junctions", "session", "io"]
# the package's faces: they hand on names from every layer
FACES = {"__init__", "__main__", "warmup", "warmup_cases"}


def _layer(path: Path) -> str:
    return "" if path.parent == PACKAGE else path.relative_to(PACKAGE).parts[0]


def _imported_layers(path: Path):
    """(line, layer) for each import of a module of solver_core in ``path`` (relative imports only:
    test_case_format refuses absolute ones)."""
    here = _layer(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        first = (node.module or "").split(".")[0]
        if node.level == 1 and here:
            yield node.lineno, here
        elif node.level == 1:  # from the foundation: ".x" a module beside it, ".layer.x" a sub-package
            names = [first] if first else [a.name for a in node.names]
            for name in names:
                yield node.lineno, name if name in LAYERS else ""
        else:
            yield node.lineno, first if first in LAYERS else ""


def _sources():
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts]


def test_every_module_of_solver_core_is_in_a_known_layer():
    assert {_layer(p) for p in _sources()} == set(LAYERS)
    assert len(_sources()) > 60


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_from_the_layers_below_it(layer):
    upward = []
    for path in _sources():
        if _layer(path) != layer or (layer == "" and path.stem in FACES):
            continue
        for line, target in _imported_layers(path):
            if LAYERS.index(target) > LAYERS.index(layer):
                upward.append(f"{path.relative_to(ROOT)}:{line} imports from {target or 'the foundation'}/")
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_the_check_finds_an_upward_import(tmp_path, monkeypatch):
    """The scan itself: a rod module importing contact, and the foundation importing a layer."""
    package = tmp_path / "solver_core"
    (package / "rod").mkdir(parents=True)
    (package / "rod" / "rod_model.py").write_text("from ..contact.obstacles import ObstacleSet\nfrom . import x\n")
    (package / "kernel_arrays.py").write_text("from .solve.newton import k\nfrom . import errors\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert list(_imported_layers(package / "rod" / "rod_model.py")) == [(1, "contact"), (2, "rod")]
    assert list(_imported_layers(package / "kernel_arrays.py")) == [(1, "solve"), (2, "")]
