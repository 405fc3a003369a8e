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
    """CABLE_HARNESS_TEST_SHARD="a:b/n" keeps the tests whose place in the collection, modulo n, lies in
    [a, b) (tools/dev.py test runs the solver tests as two such shards side by side on a 2-core
    machine, the one followed by the Blender tests smaller). The collection order is the same in
    every shard, so shards that cover [0, n) together run each test exactly once."""
    shard = os.environ.get("CABLE_HARNESS_TEST_SHARD")
    if not shard:
        return
    places, n = shard.split("/")
    first, stop = (int(part) for part in places.split(":"))
    keep = [first <= i % int(n) < stop for i in range(len(items))]
    config.hook.pytest_deselected(items=[item for item, kept in zip(items, keep) if not kept])
    items[:] = [item for item, kept in zip(items, keep) if kept]
