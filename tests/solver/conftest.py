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


def pytest_collection_modifyitems(config, items):
    """CABLE_HARNESS_TEST_SHARD="k/n" keeps every n-th test from the k-th (tools/dev.py test runs the
    solver tests as two such shards side by side on a 2-core machine). The collection order is the
    same in every shard, so the shards together run each test exactly once."""
    shard = os.environ.get("CABLE_HARNESS_TEST_SHARD")
    if not shard:
        return
    k, n = (int(part) for part in shard.split("/"))
    kept = [item for i, item in enumerate(items) if i % n == k]
    config.hook.pytest_deselected(items=[item for i, item in enumerate(items) if i % n != k])
    items[:] = kept
