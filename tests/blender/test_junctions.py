# SPDX-License-Identifier: GPL-3.0-or-later
"""Junctions in Blender: an Empty marked Junction joins branches drawn with Cable Between Selected (one
branch per selected connector), the scene is exported as the case format's `junctions`, a free
junction's empty moves to its solved frame as the CLI solves the exported case, a fixed one dragged in
Simulate carries its branches, and only empties can be junctions."""

import json
import sys

import bpy
import numpy as np
import pytest
from helpers.blender_env import MODULE
from helpers.blender_scenes import curve_world_points, place, y_harness


def test_only_empties_can_be_junctions():
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.active_object
    roles = [item.identifier for item in cube.cable_harness.bl_rna.properties["role"].enum_items]
    assert "JUNCTION" not in roles
    assert bpy.ops.cable_harness.add_junction() == {"FINISHED"}
    j = bpy.context.active_object
    assert j.type == "EMPTY" and j.cable_harness.role == "JUNCTION"


@pytest.mark.parametrize("unit_scale", [1.0, 0.001])
def test_a_free_junction_moves_to_its_balance_as_the_cli_solves_the_exported_case(tmp_path, unit_scale):
    j, trunk, branches = y_harness(unit_scale)
    assert len(branches) == 2  # one branch per selected connector
    assert trunk.cable_harness.end == j
    assert all(b.cable_harness.start == j for b in branches)
    path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(path)) == {"FINISHED"}
    doc = json.loads(path.read_text())
    assert doc["junctions"] == [{"id": j.name, "position": pytest.approx([0.25, 0.0, 0.0]), "fixed": False}]
    ends = {c["id"]: c for c in doc["cables"]}
    assert ends[trunk.name]["end"]["junction"] == j.name
    assert ends[trunk.name]["end"]["outlet"] == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)
    out = np.array([0.2, 0.15, 0.0]) / 0.25
    outlets = sorted(tuple(ends[b.name]["start"]["outlet"]) for b in branches)
    np.testing.assert_allclose(outlets, sorted([tuple(out * [1, -1, 1]), tuple(out)]), atol=1e-6)
    before = np.array(j.matrix_world.translation) * unit_scale
    for ob in (trunk, *branches):
        ob.select_set(True)
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert all(ob.cable_harness.result_converged for ob in (trunk, *branches))
    solver = sys.modules[f"{MODULE}.solver_core"]
    result = solver.solve_case(doc)["steps"][-1]
    solved = np.asarray(result["junctions"][j.name]["position"])
    moved = np.array(j.matrix_world.translation) * unit_scale
    assert np.linalg.norm(moved - before) > 1e-3  # it sagged
    np.testing.assert_allclose(moved, solved, atol=1e-6)
    R = np.array([list(r) for r in j.matrix_world.to_3x3().normalized()])
    np.testing.assert_allclose(R, np.asarray(result["junctions"][j.name]["rotation"]), atol=1e-6)
    for ob in (trunk, *branches):
        np.testing.assert_allclose(curve_world_points(ob, unit_scale), result["cables"][ob.name]["nodes"], atol=1e-6)
    # the panel's read-out: balanced, and every branch's pull as the CLI has it
    readout = j.cable_harness.junction_readout
    assert readout.startswith("balanced")
    for b in result["junctions"][j.name]["branches"]:
        assert f"{b['cable']} {np.linalg.norm(b['force']):.3g} N" in readout


def test_solving_one_branch_solves_its_whole_harness():
    j, trunk, branches = y_harness()
    bpy.ops.object.select_all(action="DESELECT")
    branches[0].select_set(True)
    bpy.context.view_layer.objects.active = branches[0]
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    assert all(ob.cable_harness.result_converged for ob in (trunk, *branches))


def test_a_fixed_junction_dragged_in_simulate_carries_its_branches():
    j, trunk, branches = y_harness(fixed=True)
    simulation = sys.modules[f"{MODULE}.cable_harness.simulation"]
    sim = simulation.HarnessSimulation(bpy.context.scene)
    report = sim.tick(bpy.context)
    assert not report.failed, report.failed
    place(j, (0.25, 0.0, 0.03), 1.0)
    report = sim.tick(bpy.context)
    assert not report.failed, report.failed
    np.testing.assert_allclose(curve_world_points(trunk)[-1], [0.25, 0.0, 0.03], atol=1e-9)
    for b in branches:
        np.testing.assert_allclose(curve_world_points(b)[0], [0.25, 0.0, 0.03], atol=1e-9)
    np.testing.assert_allclose(np.array(j.matrix_world.translation), [0.25, 0.0, 0.03], atol=1e-12)


def test_bake_keys_the_free_junction_with_its_branches(tmp_path):
    """Playback without the extension: the junction empty is keyed where it was solved at each frame,
    and the report gives its place, travel and its branches' largest pull."""
    j, trunk, branches = y_harness()
    scene = bpy.context.scene
    end = branches[0].cable_harness.end
    scene.frame_start, scene.frame_end = 1, 3
    for frame, z in ((1, 0.0), (3, 0.03)):
        end.location.z = z
        end.keyframe_insert("location", frame=frame)
    bpy.ops.object.select_all(action="DESELECT")
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    assert not [m for m in scene.timeline_markers]  # no frame failed
    assert j.animation_data is not None and j.animation_data.action is not None
    positions = []
    for frame in (1, 3):
        scene.frame_set(frame)
        positions.append(np.array(j.matrix_world.translation))
        # the branches' keyed curves still meet at the keyed junction
        np.testing.assert_allclose(curve_world_points(trunk)[-1], positions[-1], atol=1e-6)
    assert np.linalg.norm(positions[1] - positions[0]) > 1e-4  # it followed the connector
    assert bpy.ops.cable_harness.export_report(directory=str(tmp_path)) == {"FINISHED"}
    report = json.loads((tmp_path / "report.json").read_text())
    (junction,) = report["junctions"]
    assert junction["junction"] == j.name and not junction["fixed"] and not junction["frames_not_converged"]
    np.testing.assert_allclose(junction["position"], positions[-1], atol=1e-6)
    assert junction["travel"] == pytest.approx(np.linalg.norm(positions[1] - positions[0]), rel=1e-6)
    assert junction["peak_pull"] > 0.0 and junction["peak_pull_branch"].split(" (")[0] in {
        trunk.name,
        *[b.name for b in branches],
    }
    assert f"junction {j.name}" in (tmp_path / "report.csv").read_text()


def test_an_exported_junction_harness_imports_back_with_its_junction(tmp_path):
    j, trunk, branches = y_harness()
    j.cable_harness.junction_mass = 0.02
    names = j.name, trunk.name, [b.name for b in branches]
    path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(path)) == {"FINISHED"}
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.cable_harness.import_case(filepath=str(path), colliders=False) == {"FINISHED"}
    junctions = [o for o in bpy.context.scene.objects if o.cable_harness.role == "JUNCTION"]
    assert [o.name for o in junctions] == [names[0]] and junctions[0].type == "EMPTY"
    assert junctions[0].cable_harness.junction_mass == pytest.approx(0.02)
    cables = [o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE"]
    held = sorted(c.name for c in cables if junctions[0] in (c.cable_harness.start, c.cable_harness.end))
    assert held == sorted([names[1], *names[2]])
    again = tmp_path / "again.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(again)) == {"FINISHED"}
    first, second = json.loads(path.read_text()), json.loads(again.read_text())
    assert second["junctions"] == first["junctions"]
    for a, b in zip(sorted(first["cables"], key=lambda c: c["id"]), sorted(second["cables"], key=lambda c: c["id"])):
        for side in ("start", "end"):
            if "junction" in (a[side] or {}):
                assert b[side]["junction"] == a[side]["junction"]
                np.testing.assert_allclose(b[side]["outlet"], a[side]["outlet"], atol=1e-6)


@pytest.mark.parametrize("unit_scale", [1.0, 0.001])
def test_a_wire_named_on_two_branches_is_billed_once_from_connector_to_connector(tmp_path, unit_scale):
    """A wire with the same ID on the trunk and one branch runs through the junction: one row of the
    bill of materials from the trunk's connector to that branch's, cut to the two branches' lengths
    (in metres, whatever the scene's unit); the ID goes out with Export Case and comes back in."""
    j, trunk, branches = y_harness(unit_scale)
    for ob, ids in ((trunk, ("W1", "W2")), (branches[0], ("W1",)), (branches[1], ("W2", ""))):
        bpy.context.view_layer.objects.active = ob
        for wire_id in ids:
            assert bpy.ops.cable_harness.wire_add() == {"FINISHED"}
            w = ob.cable_harness.wires[-1]
            w.diameter, w.count, w.material, w.wire_id = 0.0016 / unit_scale, 1, "pvc_wire", wire_id
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 1
    bpy.ops.object.select_all(action="DESELECT")
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    assert bpy.ops.cable_harness.export_report(directory=str(tmp_path)) == {"FINISHED"}
    bill = {w["wire"]: w for w in json.loads((tmp_path / "report.json").read_text())["bill_of_materials"]}
    assert set(bill) == {"W1", "W2", f"{branches[1].name}.2"}  # the wire without an ID stays on its branch
    for wire_id, branch in (("W1", branches[0]), ("W2", branches[1])):
        row = bill[wire_id]
        assert (row["from"], row["to"]) == (trunk.cable_harness.start.name, branch.cable_harness.end.name)
        assert row["cable"] == f"{trunk.name} > {branch.name}" and "problem" not in row
        expected = (trunk.cable_harness.length + branch.cable_harness.length) * unit_scale
        assert row["length"] == pytest.approx(expected, rel=1e-6)
    path = tmp_path / "case.json"
    assert bpy.ops.cable_harness.export_case(filepath=str(path)) == {"FINISHED"}
    doc = json.loads(path.read_text())
    ids = {c["id"]: [w.get("id") for w in c["bundle"]["wires"]] for c in doc["cables"]}
    assert ids == {trunk.name: ["W1", "W2"], branches[0].name: ["W1"], branches[1].name: ["W2", None]}
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.cable_harness.import_case(filepath=str(path), colliders=False) == {"FINISHED"}
    for c in doc["cables"]:
        assert [w.wire_id for w in bpy.data.objects[c["id"]].cable_harness.wires] == [i or "" for i in ids[c["id"]]]


def test_a_wire_id_that_ends_inside_a_junction_is_refused_by_name():
    j, trunk, branches = y_harness()
    bpy.context.view_layer.objects.active = trunk
    assert bpy.ops.cable_harness.wire_add() == {"FINISHED"}
    trunk.cable_harness.wires[-1].wire_id = "W9"
    bpy.ops.object.select_all(action="DESELECT")
    trunk.select_set(True)
    bpy.context.view_layer.objects.active = trunk
    with pytest.raises(RuntimeError, match=rf"cable '{trunk.name}' .*wire 'W9' ends inside junction '{j.name}'"):
        bpy.ops.cable_harness.solve()
    assert not trunk.cable_harness.result_converged and "W9" in trunk.cable_harness.result_message


def test_a_heavy_junction_comes_to_rest_on_a_collider():
    """The junction drawn low, so that its branches rise from it (a V): heavy, it sinks onto a
    collider plane under it and rests there, clear of it within the contact tolerance, and its panel
    read-out says so."""
    j, trunk, branches = y_harness(junction_z=-0.04)
    j.cable_harness.junction_mass = 0.2
    bpy.ops.mesh.primitive_plane_add(size=0.4, location=(0.25, 0.0, -0.05))
    plane = bpy.context.active_object
    plane.cable_harness.role = "COLLIDER"
    bpy.ops.object.select_all(action="DESELECT")
    trunk.select_set(True)
    bpy.context.view_layer.objects.active = trunk
    assert bpy.ops.cable_harness.solve() == {"FINISHED"}
    radius = 0.5 * max(ob.cable_harness.diameter for ob in (trunk, *branches))
    z = j.matrix_world.translation.z
    messages = [ob.cable_harness.result_message for ob in (trunk, *branches)]
    assert trunk.cable_harness.result_converged and all(b.cable_harness.result_converged for b in branches), messages
    assert z - (-0.05) - radius >= -0.005 * radius and z - (-0.05) - radius < 1e-6
    assert "resting on an obstacle" in j.cable_harness.junction_readout


def test_a_settled_harness_with_a_free_junction_idles():
    # the tick moves the free junction's empty to its balance: the next tick sees the tick's own result,
    # not a user's move, and solves nothing; a junction dragged away is solved back to its balance
    j, trunk, branches = y_harness()
    simulation = sys.modules[f"{MODULE}.cable_harness.simulation"]
    sim = simulation.HarnessSimulation(bpy.context.scene)
    first = sim.tick(bpy.context)
    assert first.solved == 3 and not first.idle
    assert sim.tick(bpy.context).idle
    balanced = np.array(j.matrix_world.translation)
    place(j, (0.25, 0.05, 0.0), 1.0)
    assert sim.tick(bpy.context).solved == 3
    np.testing.assert_allclose(np.array(j.matrix_world.translation), balanced, atol=1e-6)
    assert sim.tick(bpy.context).idle
    end = branches[0].cable_harness.end
    place(end, np.array(end.matrix_world.translation) + [0.0, 0.0, 0.01], 1.0)
    assert sim.tick(bpy.context).solved == 3
