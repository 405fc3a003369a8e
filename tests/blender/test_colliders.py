# SPDX-License-Identifier: GPL-3.0-or-later
"""Collider meshes hold cables up: Blender's BVH finds the triangles, the solver's narrow phase acts."""

import math
import sys

import bpy
import numpy as np
import pytest
from helpers.blender_scenes import curve_world_points, simple_harness


def _floor(z_m, scale, size_m=1.0):
    mesh = bpy.data.meshes.new("floor")
    s = size_m / scale
    mesh.from_pydata([(-s, -s, 0), (s, -s, 0), (s, s, 0), (-s, s, 0)], [], [(0, 1, 2, 3)])
    ob = bpy.data.objects.new("Floor", mesh)
    bpy.context.scene.collection.objects.link(ob)
    ob.location = (0.0, 0.0, z_m / scale)
    ob.cable_harness.role = "COLLIDER"
    bpy.context.view_layer.update()
    return ob


def _raise_floor_under_hanging_cable(extension, scale, margin_m=0.0):
    """Hang a cable, then raise a floor from below it to half its sag in 1 mm ticks of Simulate (a collider
    may move at most half a cable radius per tick: further, it could pass through the cable)."""
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    *_, cable = simple_harness(unit_scale=scale, with_clip=False)
    bpy.ops.cable_harness.solve()
    bottom = curve_world_points(cable, scale)[:, 2].min()
    floor = _floor(bottom - 0.01, scale)
    floor.cable_harness.collider_margin = margin_m / scale
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    target = 0.5 * bottom
    z = bottom - 0.01
    report = None
    while z < target:
        z = min(z + 0.001, target)
        floor.location.z = z / scale
        bpy.context.view_layer.update()
        report = simulation.tick(bpy.context)
        assert not report.failed, report.failed
    return cable, target, report


def test_collider_raised_under_a_cable_lifts_it_instead_of_passing_through(extension):
    cable, floor_z, report = _raise_floor_under_hanging_cable(extension, 1.0)
    resting = curve_world_points(cable)
    radius = 0.5 * cable.cable_harness.diameter
    assert resting[:, 2].min() >= floor_z + radius * 0.99  # held above the floor by its radius
    assert resting[:, 2].min() < floor_z + radius * 1.5  # and really lying on it
    assert report.candidate_triangles > 0


def test_collider_margin_keeps_the_cable_that_much_farther_away(extension):
    cable, floor_z, _report = _raise_floor_under_hanging_cable(extension, 1.0, margin_m=0.003)
    radius = 0.5 * cable.cable_harness.diameter
    lowest = curve_world_points(cable)[:, 2].min()
    assert floor_z + 0.003 + 0.99 * radius <= lowest < floor_z + 0.003 + 1.5 * radius


def test_collider_in_a_millimetre_scene_acts_the_same(extension):
    cable, _z, _report = _raise_floor_under_hanging_cable(extension, 1.0)
    metres = curve_world_points(cable, 1.0)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    cable, _z, _report = _raise_floor_under_hanging_cable(extension, 0.001)
    millimetres = curve_world_points(cable, 0.001)
    # Pushed up by the floor, the cable buckles sideways into one of its mirror images (about the
    # plane half way between its connectors, or the vertical plane through them) that round-off
    # chooses between: any is the same cable
    along = millimetres[::-1] * [-1.0, 1.0, 1.0] + [0.3, 0.0, 0.0]
    images = [millimetres, along, millimetres * [1.0, -1.0, 1.0], along * [1.0, -1.0, 1.0]]
    assert min(np.abs(image - metres).max() for image in images) < 1e-5


def test_a_deforming_collider_is_rebuilt_on_frame_change(extension):
    colliders = sys.modules[f"{extension.__name__}.cable_harness.colliders"]
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    *_, cable = simple_harness(with_clip=False)
    floor = _floor(-0.5, 1.0)
    # a modifier: its geometry may change with the frame (without a texture it lifts the floor by
    # strength / 2, to 0.4 m under the connectors, clear of the hanging cable)
    floor.modifiers.new("Displace", "DISPLACE").strength = 0.2
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    simulation.tick(bpy.context)
    builds = simulation.colliders.builds
    simulation.tick(bpy.context)
    assert simulation.colliders.builds == builds  # unchanged geometry: the tree is kept
    bpy.context.scene.frame_set(5)
    simulation.tick(bpy.context)
    assert simulation.colliders.builds == builds + 1  # rebuilt for the new frame
    assert floor.name not in colliders._dirty_geometry


@pytest.mark.parametrize("limit", [None, 4])
def test_bake_follows_a_collider_that_jumps_further_than_a_radius_per_frame(extension, monkeypatch, limit):
    # A floor keyed to rise from below a hanging cable to half its sag in a single frame (several
    # centimetres, over 30 cable radii): contact alone would let it pass through the cable, so the bake
    # solves at sub-frames and the cable ends up lying on the floor. With sub-frames and sub-steps
    # limited to 4 each (16 solves, not the 84 this move needs), a tick cannot follow the rest of the
    # move at once: the frame is recorded only once the ticks have caught up.
    if limit is not None:
        prefix = f"{extension.__name__}.cable_harness"
        monkeypatch.setattr(sys.modules[f"{prefix}.follow"], "MAX_FOLLOW_STEPS", limit)
    *_, cable = simple_harness(with_clip=False)
    bpy.ops.cable_harness.solve()
    bottom = curve_world_points(cable)[:, 2].min()
    floor = _floor(bottom - 0.01, 1.0)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 2
    scene.frame_set(1)
    floor.keyframe_insert("location", index=2, frame=1)
    floor.location.z = 0.5 * bottom
    floor.keyframe_insert("location", index=2, frame=2)
    radius = 0.5 * cable.cable_harness.diameter
    assert 0.5 * bottom - (bottom - 0.01) > 30 * radius
    for ob in scene.objects:
        ob.select_set(False)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    scene.frame_set(2)
    bpy.context.view_layer.update()
    lying = curve_world_points(cable)
    assert lying[:, 2].min() >= 0.5 * bottom + 0.99 * radius
    assert lying[:, 2].min() < 0.5 * bottom + 1.5 * radius


def test_a_collider_dragged_further_than_a_radius_in_one_tick_pushes_the_cable_along(extension):
    # Simulate: a floor under a hanging cable is lifted to half the cable's sag between two ticks (a
    # fast drag, over 30 cable radii at once). Contact alone would let it pass through the cable; the
    # tick follows the collider in sub-steps of 0.4 radii, and a drag longer than one tick's sub-steps
    # is followed over the next ticks: the solver's floor lags behind the scene's, the cable always
    # above it, until it catches up and the cable lies on the floor.
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    follow = sys.modules[f"{extension.__name__}.cable_harness.follow"]
    *_, cable = simple_harness(with_clip=False)
    bpy.ops.cable_harness.solve()
    bottom = curve_world_points(cable)[:, 2].min()
    floor = _floor(bottom - 0.01, 1.0)
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    assert not simulation.tick(bpy.context).failed
    radius = 0.5 * cable.cable_harness.diameter
    start, lifted = bottom - 0.01, 0.5 * bottom
    per_tick = follow.MAX_FOLLOW_STEPS * follow.FOLLOW_MOVE * radius
    assert lifted - start > per_tick  # more than one tick can follow
    floor.location.z = lifted
    bpy.context.view_layer.update()
    ticks = 0
    while True:
        report = simulation.tick(bpy.context)
        ticks += 1
        assert not report.failed, report.failed
        reached = lifted - report.to_follow * (lifted - start)  # the solver's floor after this tick
        lying = curve_world_points(cable)
        assert lying[:, 2].min() >= reached + 0.99 * radius
        if report.to_follow == 0.0 or ticks == 5:
            break
        assert "following a fast-moved collider" in report.summary()
    assert report.to_follow == 0.0 and ticks == math.ceil((lifted - start) / per_tick)
    assert lying[:, 2].min() < lifted + 1.5 * radius


def test_a_tick_with_nothing_changed_solves_nothing_and_any_change_solves_again(extension):
    """Simulate idles at no cost: the same holders, colliders and settings as the last settled tick
    are not solved again; a moved connector, a moved or edited collider, a changed setting are."""
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    start, end, clip, cable = simple_harness()
    floor = _floor(-0.5, 1.0)
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    first = simulation.tick(bpy.context)
    assert first.solved == 1 and not first.idle
    idle = simulation.tick(bpy.context)
    assert idle.idle and idle.solved == 0 and idle.solve_ms == 0.0 and not idle.results
    assert "nothing moved" in idle.summary()

    def solves_after(change):
        change()
        bpy.context.view_layer.update()
        report = simulation.tick(bpy.context)
        assert not report.idle and report.solved == 1, report.summary()
        assert simulation.tick(bpy.context).idle  # settled again

    solves_after(lambda: setattr(end.location, "y", end.location.y + 0.002))
    solves_after(lambda: setattr(clip.rotation_euler, "x", clip.rotation_euler.x + 0.05))
    solves_after(lambda: setattr(floor.location, "z", floor.location.z + 0.01))
    solves_after(lambda: (floor.data.vertices[0].co.__setitem__(2, 0.05), floor.data.update()))  # edited
    solves_after(lambda: setattr(bpy.context.scene.cable_harness, "friction_static", 0.4))
    solves_after(lambda: setattr(cable.cable_harness, "length", cable.cable_harness.length + 0.01))


def test_a_settled_tick_notices_a_clip_turned_round_and_a_connector_deleted(extension):
    """What a settled Simulate compares against includes which way the cable passes each clip and the
    collider each connector is Mounted On, though neither moves anything (both idled on the last
    result before); and a connector deleted with X lets go of the cable's end, as Solve does."""
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    _start, end, _clip, cable = simple_harness()
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    assert simulation.tick(bpy.context).solved == 1
    assert simulation.tick(bpy.context).idle
    before = curve_world_points(cable)
    cable.cable_harness.clips[0].reversed = True
    turned = simulation.tick(bpy.context)
    assert not turned.idle and turned.solved + len(turned.failed) == 1, turned.summary()
    assert turned.failed or np.abs(curve_world_points(cable) - before).max() > 1e-4  # it went the other way
    assert simulation.tick(bpy.context).idle
    floor = _floor(-0.5, 1.0)
    assert simulation.tick(bpy.context).solved == 1  # a new collider
    end.cable_harness.mounted_on = floor
    mounted = simulation.tick(bpy.context)
    assert not mounted.idle and mounted.solved == 1, mounted.summary()
    assert simulation.tick(bpy.context).idle
    bpy.context.scene.collection.objects.unlink(end)  # deleted with X: out of the scene, still pointed at
    bpy.context.view_layer.update()
    deleted = simulation.tick(bpy.context)
    assert not deleted.idle and deleted.solved == 1, deleted.summary()
    assert any(f"{end.name!r} was deleted" in w and "hangs free" in w for w in deleted.warnings)


def test_a_dynamic_scene_keeps_moving_with_nothing_changed(extension):
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    simple_harness(with_clip=False, segments=20)
    bpy.context.scene.cable_harness.motion = "DYNAMIC"
    simulation = simulation_module.HarnessSimulation(bpy.context.scene, seconds_per_tick=1.0 / 30.0)
    for _ in range(3):
        report = simulation.tick(bpy.context)
        assert not report.idle and report.solved == 1


def _counting_fetches(simulation):
    """Wrap the simulation's collider fetch to count its calls; returns the counter (a one-item list)."""
    calls = [0]
    fetch = simulation.colliders.nearby_triangles

    def counted(*args, **kwargs):
        calls[0] += 1
        return fetch(*args, **kwargs)

    simulation.colliders.nearby_triangles = counted
    return calls


def _grid_floor(z_m, half_m=0.3, cells=40):
    """A floor of 2 x cells^2 triangles (given as triangles: no triangulation left to Blender), a collider.
    Returns (object, its world triangles (k, 3, 3) in metres)."""
    xs = np.linspace(-half_m, half_m, cells + 1)
    verts = [(x, y, 0.0) for y in xs for x in xs]
    faces = []
    for j in range(cells):
        for i in range(cells):
            a, b = j * (cells + 1) + i, j * (cells + 1) + i + 1
            c, d = a + cells + 1, b + cells + 1
            faces += [(a, b, d), (a, d, c)]
    mesh = bpy.data.meshes.new("grid")
    mesh.from_pydata(verts, [], faces)
    ob = bpy.data.objects.new("Grid", mesh)
    bpy.context.scene.collection.objects.link(ob)
    ob.location = (0.15, 0.0, z_m)
    ob.cable_harness.role = "COLLIDER"
    bpy.context.view_layer.update()
    triangles = np.array(verts)[np.array(faces)] + np.array([0.15, 0.0, z_m])
    return ob, triangles


def _triangles_within(triangles, points, distance):
    """Indices of the horizontal ``triangles`` within ``distance`` of any of ``points`` (brute force)."""
    found = set()
    for p in points:
        a, b, c = triangles[:, 0, :2], triangles[:, 1, :2], triangles[:, 2, :2]
        q = p[:2]

        def cross(u, v):
            return u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]

        s1, s2, s3 = cross(b - a, q - a), cross(c - b, q - b), cross(a - c, q - c)
        inside = ((s1 >= 0) & (s2 >= 0) & (s3 >= 0)) | ((s1 <= 0) & (s2 <= 0) & (s3 <= 0))
        flat = np.full(len(triangles), np.inf)
        flat[inside] = 0.0
        for u, v in ((a, b), (b, c), (c, a)):
            t = np.clip(np.einsum("ij,ij->i", q - u, v - u) / np.einsum("ij,ij->i", v - u, v - u), 0.0, 1.0)
            flat = np.minimum(flat, np.linalg.norm(u + t[:, None] * (v - u) - q, axis=1))
        found |= set(np.flatnonzero(np.hypot(flat, p[2] - triangles[:, 0, 2]) <= distance).tolist())
    return found


def test_triangles_reused_within_the_skin_still_hold_every_triangle_near_the_cable(extension):
    """A cable lowered onto a finely divided floor and moved sideways on it, 1 mm per tick: the collider
    triangles are fetched a skin further out than the contact reach and reused while no node has moved
    that far (simulation.SKIN_REACHES), fewer times than there are ticks; after every tick the triangles
    the solver was given include every floor triangle within half a reach of the solved cable (by brute
    force), and the cable rests on the floor, never through it."""
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    start, end, _clip, cable = simple_harness(with_clip=False)
    bpy.ops.cable_harness.solve()
    floor_z = curve_world_points(cable)[:, 2].min() - 0.003
    _ob, triangles = _grid_floor(floor_z)
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    assert not simulation.tick(bpy.context).failed
    fetches = _counting_fetches(simulation)
    radius = 0.5 * cable.cable_harness.diameter
    reach = simulation.harness.contact_reach(cable.name)
    for tick in range(70):
        for ob in (start, end):  # lowered onto the floor, then moved sideways on it, past the skin
            if tick < 10:
                ob.location.z -= 0.001
            else:
                ob.location.y += 0.001
        bpy.context.view_layer.update()
        report = simulation.tick(bpy.context)
        assert not report.failed, report.failed
        nodes = simulation.harness.world_nodes(cable.name)
        handed = simulation.harness.obstacles.triangles
        centres = handed.mean(axis=1)
        for k in _triangles_within(triangles, nodes, 0.5 * reach):
            assert np.linalg.norm(centres - triangles[k].mean(axis=0), axis=1).min() < 1e-6, (tick, k)
        assert curve_world_points(cable)[:, 2].min() >= floor_z + 0.99 * radius  # never through it
    assert curve_world_points(cable)[:, 2].min() < floor_z + 1.5 * radius  # lying on it
    assert 1 < fetches[0] < 70  # fetched again as the cable went, not every tick


def test_fetched_triangles_are_fetched_again_when_a_collider_moves_changes_or_gets_a_margin(extension):
    """A tick whose cables did not move a skin reuses the last fetch only while the colliders are the
    same: moved, their mesh edited, their margin changed, each fetches again."""
    simulation_module = sys.modules[f"{extension.__name__}.cable_harness.simulation"]
    start, _end, _clip, cable = simple_harness(with_clip=False)
    bpy.ops.cable_harness.solve()
    floor = _floor(curve_world_points(cable)[:, 2].min() - 0.002, 1.0)
    simulation = simulation_module.HarnessSimulation(bpy.context.scene)
    assert not simulation.tick(bpy.context).failed
    start.location.x += 0.0001
    bpy.context.view_layer.update()
    assert not simulation.tick(bpy.context).failed  # (the first solve fetched about two places)
    fetches = _counting_fetches(simulation)

    def nudge_and_tick():
        start.location.x += 0.0001  # a tenth of a millimetre: well within the skin
        bpy.context.view_layer.update()
        assert not simulation.tick(bpy.context).failed
        return fetches[0]

    assert nudge_and_tick() == 0  # reused
    for change in ("moved", "edited", "a margin"):
        if change == "moved":
            floor.location.x += 0.001
        elif change == "edited":
            floor.data.vertices[0].co.x -= 0.01
            floor.data.update()
        else:
            floor.cable_harness.collider_margin = 0.001
        bpy.context.view_layer.update()
        before = fetches[0]
        after = nudge_and_tick()
        assert after > before, change  # fetched again
        assert nudge_and_tick() == after, change  # and that fetch reused
