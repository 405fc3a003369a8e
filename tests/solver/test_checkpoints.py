# SPDX-License-Identifier: GPL-3.0-or-later
"""Harness.checkpoint is a copy: restoring it puts back the state it was taken in, as often as asked,
whatever was solved in between; and the read-outs the Blender layer uses (held_end, is_branch,
junction_documents, branches_at) say what the harness holds."""

import numpy as np
from helpers.cases import harness
from helpers.harnesses import asymmetric_harness

from solver_core import CableChange, Frame


def _picture(h):
    """Everything a user sees of the harness: every cable's result and the junctions' block."""
    return {cid: h.cable_result(cid) for cid in h.cables}, h.junction_documents()


def _drag(h, dz):
    end = h.held_end("right", "end")
    moved = Frame(end.position + np.array([0.0, 0.0, dz]), end.tangent, end.normal)
    return h.solve_step({"right": CableChange(end=moved)})


def test_a_checkpoint_restores_the_same_harness_twice_after_other_solves():
    h = harness(asymmetric_harness(12))
    assert all(r.converged for r in h.solve_step().values())
    kept, before = h.checkpoint(list(h.cables)), _picture(h)
    for dz in (0.004, -0.003):
        assert all(r.converged for r in _drag(h, dz).values())
        assert _picture(h) != before  # the drag moved something, so the restore below has work to do
        h.restore(kept)
        assert _picture(h) == before
    # and the restored harness takes the same step as one never disturbed
    fresh = harness(asymmetric_harness(12))
    fresh.solve_step()
    _drag(h, 0.002)
    _drag(fresh, 0.002)
    for cid in h.cables:
        assert np.allclose(h.cable_result(cid)["nodes"], fresh.cable_result(cid)["nodes"], atol=1e-9)


def test_the_read_outs_name_what_the_harness_holds():
    h = harness(asymmetric_harness(12))
    h.solve_step()
    assert h.held_end("trunk", "start") is not None
    assert np.allclose(h.held_end("right", "end").position, [0.5, -0.12, 0.0])
    assert all(h.is_branch(cid) for cid in ("trunk", "left", "right"))
    documents = h.junction_documents()
    assert list(documents) == ["J"] and documents["J"]["converged"] and not documents["J"]["fixed"]
    assert sorted(h.branches_at("J")) == ["left", "right", "trunk"]
    assert h.branches_at("no such junction") == []
