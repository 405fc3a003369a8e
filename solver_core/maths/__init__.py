# SPDX-License-Identifier: GPL-3.0-or-later
"""Quaternions, small dense matrices and banded Cholesky: the numerics every kernel uses."""
