# SPDX-License-Identifier: GPL-3.0-or-later
"""The solver's matrices as dense numpy arrays, for tests against references."""

import numpy as np


def dense_from_band(band: np.ndarray, bw: int) -> np.ndarray:
    """The symmetric matrix whose lower band is stored by rows in ``band`` (band[i, bw - (i - j)])."""
    n = band.shape[0]
    H = np.zeros((n, n))
    for i in range(n):
        for c in range(bw + 1):
            j = i - (bw - c)
            if j >= 0:
                H[i, j] = H[j, i] = band[i, c]
    return H
