# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the solver tests (no bpy anywhere below tests/solver)."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
