# SPDX-License-Identifier: GPL-3.0-or-later
"""SciPy made unimportable, as in Blender's own Python (numpy and no SciPy), for this interpreter and
every child that inherits PYTHONPATH: put this folder first on PYTHONPATH (tools/without_scipy.py).

numba reaches BLAS and LAPACK through SciPy: without it a kernel using them fails to compile, and a
cached one aborts the process. The build compiles the shipped kernels so, and the tests run the
installed extension so."""

import sys


class _NoSciPy:
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ModuleNotFoundError(f"No module named {name!r} (as in Blender's Python)", name=name)
        return None


sys.meta_path.insert(0, _NoSciPy())
