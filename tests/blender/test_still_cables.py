# SPDX-License-Identifier: GPL-3.0-or-later
"""A Simulate tick leaves a cable whose inputs did not change where its last solve put it, unless a
cable being solved comes near it; Bake still records it at every frame."""

import json
import sys

import bpy
import numpy as np
from helpers.blender_scenes import curve_world_points, place


def _cable(name, y_m, with_obstacle_gap=0.0):
    """Two ceiling connectors 0.3 m apart along x at ``y_m`` and a 40-segment cable between them."""
    bpy.ops.cable_harness.add_connector()
    start = bpy.context.active_object
    place(start, (0.0, y_m, 0.0), 1.0)
    bpy.ops.cable_harness.add_connector()
    end = bpy.context.active_object
    place(end, (0.3, y_m, 0.0), 1.0)
    bpy.ops.object.select_all(action="DESELECT")
    for ob in (start, end):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = start
    before = {o.name for o in bpy.data.objects}
    assert bpy.ops.cable_harness.make_cable(segments=40, solve=False) == {"FINISHED"}
    (cable,) = [o for o in bpy.data.objects if o.name not in before and o.cable_harness.role == "CABLE"]
    cable.name = name
    return start, end, cable


def _simulation(extension):
    return sys.modules[f"{extension.__name__}.cable_harness.simulation"].HarnessSimulation(bpy.context.scene)


def test_dragging_one_cable_leaves_a_distant_one_as_it_was_solved(extension):
    _a0, a_end, a = _cable("A", 0.0)
    _b0, _b1, b = _cable("B", 0.5)
    simulation = _simulation(extension)
    first = simulation.tick(bpy.context)
    assert first.solved == 2 and not first.carried
    b_curve = curve_world_points(b)
    b_result = first.results["B"]
    for k in range(1, 4):
        place(a_end, (0.3 - 0.002 * k, 0.0, 0.0), 1.0)
        bpy.context.view_layer.update()
        report = simulation.tick(bpy.context)
        assert not report.failed and report.solved == 2
        assert report.carried == {"B"}  # solved before to the same inputs, nothing near it
        assert report.results["B"] is b_result
        assert np.array_equal(curve_world_points(b), b_curve)
    # A followed its connector
    assert np.allclose(curve_world_points(a)[-1], [0.294, 0.0, 0.0], atol=1e-6)
    # and B's carried result is its equilibrium: a fresh simulation of the scene solves it alike
    fresh = _simulation(extension).tick(bpy.context, write=False).results["B"]
    assert np.abs(np.asarray(fresh["nodes"]) - np.asarray(b_result["nodes"])).max() < 1e-6


def test_a_cable_dragged_next_to_a_still_one_is_solved_with_it(extension):
    bpy.context.scene.cable_harness.cable_cable = True
    _a0, a_end, a = _cable("A", 0.0)
    _b0, _b1, b = _cable("B", 0.05)
    simulation = _simulation(extension)
    simulation.tick(bpy.context)
    # A's end goes over to 15 mm from B's in 1 mm ticks: B, near it, is solved again (with A as a
    # cable to touch) rather than carried over
    carried_near, solved_near = [], 0
    for k in range(1, 36):
        place(a_end, (0.3, 0.001 * k, 0.0), 1.0)
        bpy.context.view_layer.update()
        report = simulation.tick(bpy.context)
        assert not report.failed, report.failed
        gap = np.linalg.norm(curve_world_points(a)[:, None, :] - curve_world_points(b)[None, :, :], axis=2).min()
        if gap < 0.02:
            if "B" in report.carried:
                carried_near.append((k, gap))
            solved_near += 1
    assert solved_near and not carried_near


def test_a_still_cable_is_recorded_at_every_baked_frame(extension):
    _a0, a_end, a = _cable("A", 0.0)
    _b0, _b1, b = _cable("B", 0.5)
    for cable in (a, b):
        cable.select_set(True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 6
    a_end.keyframe_insert("location", frame=1)
    place(a_end, (0.28, 0.0, 0.0), 1.0)
    a_end.keyframe_insert("location", frame=6)
    scene.frame_set(1)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    log = json.loads(bpy.data.texts["cable_harness_bake_log.json"].as_string())
    for name in ("A", "B"):
        assert [r["frame"] for r in log["frames"][name]] == list(range(1, 7))
        assert all(r["converged"] for r in log["frames"][name])
    lengths = [r["length"] for r in log["frames"]["B"]]
    assert max(lengths) - min(lengths) < 1e-9  # B's holders stay: the same equilibrium every frame


def test_nearness_is_never_missed_between_nodes(extension):
    # conservative against a brute force over points every 1/50 segment: cables whose surfaces come
    # within two contact reaches are always near (it may say near a little further out)
    too_near = sys.modules[f"{extension.__name__}.cable_harness.still_cables"].too_near
    rng = np.random.default_rng(4)
    missed = []
    for trial in range(300):
        n_a, n_b = rng.integers(2, 30, size=2)
        a = np.cumsum(rng.normal(scale=rng.uniform(0.001, 0.05), size=(n_a, 3)), axis=0)
        b = np.cumsum(rng.normal(scale=rng.uniform(0.001, 0.05), size=(n_b, 3)), axis=0) + rng.normal(scale=0.1, size=3)
        radius = {"a": rng.uniform(0.0005, 0.005), "b": rng.uniform(0.0005, 0.005)}

        def dense(x):
            t = np.linspace(0.0, 1.0, 51)[:, None, None]
            return (x[:-1][None] * (1.0 - t) + x[1:][None] * t).reshape(-1, 3)

        def reach(x, r):
            return max(r, 0.5 * float(np.linalg.norm(np.diff(x, axis=0), axis=1).max()))

        gap = np.linalg.norm(dense(a)[:, None] - dense(b)[None], axis=2).min() - radius["a"] - radius["b"]
        limit = 2.0 * max(reach(a, radius["a"]), reach(b, radius["b"]))
        if gap <= limit and not too_near({"a": a}, {"b": b}, radius):
            missed.append((trial, gap, limit))
    assert not missed
