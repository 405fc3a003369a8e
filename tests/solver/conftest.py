# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the solver tests (no bpy anywhere below tests/solver)."""

import os

import numpy as np
import pytest
from hypothesis import settings

# On CI the property-based tests draw the same examples every run: a failure there is reproducible,
# never a draw that one run happened to make (locally they keep exploring).
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
