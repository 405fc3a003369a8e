# SPDX-License-Identifier: GPL-3.0-or-later
"""The swept envelope (io/envelope.py): closed (every edge met once each way round), enclosing exactly
its voxels' volume, and converging on the Steiner formula of the region a straight cable sweeps when
moved rigidly or turned about its end: the points within r of a flat convex region of area A and
perimeter P fill 2 A r + (pi / 2) P r^2 + (4 / 3) pi r^3. The command line writes STL or OBJ, gives the
least clearance with its step and place, and refuses bad requests in one line."""

import collections
import json
import math
import struct
import subprocess
import sys

import numpy as np
import pytest

from solver_core import CaseError
from solver_core.io.envelope import enclosed_volume, motion_envelope, swept_envelope

L, R = 0.2, 0.005


def steiner(area, perimeter, r=R):
    return 2.0 * area * r + 0.5 * math.pi * perimeter * r * r + 4.0 / 3.0 * math.pi * r**3


def straight(n=11):
    return np.column_stack([np.linspace(0.0, L, n), np.zeros(n), np.zeros(n)])


def closed(envelope) -> bool:
    """Every edge met as often one way round as the other (voxels meeting along an edge meet it twice)."""
    t = envelope.triangles
    directed = collections.Counter(map(tuple, np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]).tolist()))
    return all(directed[(b, a)] == n for (a, b), n in directed.items())


def test_a_cable_moved_rigidly_sweeps_a_slab_with_rounded_edges():
    D = 0.05
    states = [straight() + [0.0, D * k / 4, 0.0] for k in range(5)]
    envelope = swept_envelope(states, R, R / 8)
    assert closed(envelope)
    assert enclosed_volume(envelope.vertices, envelope.triangles) == pytest.approx(envelope.volume, rel=1e-12)
    assert envelope.volume == pytest.approx(steiner(L * D, 2 * (L + D)), rel=0.005)


@pytest.mark.parametrize("angle, voxel", [(math.pi / 6, R / 8), (math.pi / 2, R / 4)])
def test_a_cable_turned_about_its_end_sweeps_a_sector(angle, voxel):
    states = []
    for k in range(13):
        a = angle * k / 12
        states.append(
            straight() @ np.array([[math.cos(a), math.sin(a), 0.0], [-math.sin(a), math.cos(a), 0.0], [0, 0, 1]])
        )
    envelope = swept_envelope(states, R, voxel)
    assert closed(envelope)
    assert envelope.volume == pytest.approx(steiner(0.5 * angle * L * L, 2 * L + angle * L), rel=0.005)


def test_states_far_apart_are_joined_without_gaps():
    far = swept_envelope([straight(), straight() + [0.0, 0.04, 0.0]], R, R / 4)
    many = swept_envelope([straight() + [0.0, 0.04 * k / 40, 0.0] for k in range(41)], R, R / 4)
    # (interpolated at other places than the 41: the same to the lattice; unjoined, 40 % of it)
    assert far.volume == pytest.approx(many.volume, rel=2e-3)


def test_one_state_is_the_cable_itself():
    envelope = swept_envelope([straight()], R, R / 8)
    # a lone cylinder 8 voxels in radius: the lattice's count of its section is 1 % off
    assert envelope.volume == pytest.approx(math.pi * R * R * L + 4.0 / 3.0 * math.pi * R**3, rel=0.02)


@pytest.mark.parametrize(
    "states, voxel, words",
    [
        ([straight()], 0.0, "voxel must be a positive"),
        ([straight()], float("nan"), "voxel must be a positive"),
        ([], R, "one or more states"),
        ([straight(), straight(5)], R, "one shape"),
        ([straight()], 1e-7, "coarser voxel"),
        ([straight()], 1e-300, "coarser voxel"),
        ([straight()], 2 * R, "finer voxel"),
        ([straight() * np.nan], R / 4, "finite coordinates"),
    ],
)
def test_bad_requests_are_refused_by_name(states, voxel, words):
    with pytest.raises(CaseError, match=words):
        swept_envelope(states, R, voxel)


def hanging_case(obstacle_z=-0.2):
    end = {"position": [0.3, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0]}
    return {
        "format": "cable-harness-case/1",
        "cables": [
            {
                "id": "W1",
                "length": 0.35,
                "diameter": 0.004,
                "material": {"preset": "lv2017_harness"},
                "segments": 30,
                "start": {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0]},
                "end": end,
            }
        ],
        "obstacles": [{"type": "plane", "point": [0.0, 0.0, obstacle_z], "normal": [0.0, 0.0, 1.0]}],
        "steps": [{"cables": {"W1": {"end": {**end, "position": [0.3, 0.0, -0.02 * k]}}}} for k in (1, 2, 3)],
    }


def test_the_least_clearance_is_found_with_its_step_and_place():
    envelope, clearance = motion_envelope(hanging_case(), "W1", voxel=0.001)
    assert closed(envelope)
    # the cable's end goes down in steps: it comes nearest the floor at the last one, near its middle
    assert clearance["step"] == 3 and 0.1 < clearance["s"] < 0.3
    assert 0.0 < clearance["gap"] < 0.2 - 0.06


def test_the_command_line_writes_stl_and_obj_and_refuses_in_one_line(tmp_path):
    path = tmp_path / "case.json"
    path.write_text(json.dumps(hanging_case()))
    run = [sys.executable, "-m", "solver_core", "envelope", str(path)]
    stl = tmp_path / "e.stl"
    done = subprocess.run([*run, "-o", str(stl), "--voxel", "0.002"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = stl.read_bytes()
    (count,) = struct.unpack("<I", data[80:84])
    assert len(data) == 84 + 50 * count and count > 0 and "least clearance" in done.stdout
    obj = tmp_path / "e.obj"
    assert subprocess.run([*run, "-o", str(obj), "--voxel", "0.002"], capture_output=True).returncode == 0
    faces = [line for line in obj.read_text().splitlines() if line.startswith("f ")]
    assert len(faces) == count
    two = hanging_case()
    two["cables"].append({**two["cables"][0], "id": "W2", "start": {"position": [0, 0.1, 0], "tangent": [1, 0, 0]}})
    two["cables"][1]["end"] = {"position": [0.3, 0.1, 0.0], "tangent": [1.0, 0.0, 0.0]}
    path2 = tmp_path / "two.json"
    path2.write_text(json.dumps(two))
    for args, words in (
        ([*run, "-o", str(tmp_path / "e.ply")], r"\.stl or \.obj"),
        ([sys.executable, "-m", "solver_core", "envelope", str(path2), "-o", str(stl)], "--cable: the case has 2"),
        ([*run, "-o", str(stl), "--cable", "W9"], "no cable 'W9'"),
        ([*run, "-o", str(stl), "--voxel", "1e-7"], "coarser voxel"),
    ):
        refused = subprocess.run(args, capture_output=True, text=True)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert __import__("re").search(words, refused.stderr), refused.stderr


@pytest.mark.parametrize(
    "result, words",
    [
        ({"steps": []}, "no steps"),
        ({"steps": [{"cables": []}]}, "has no cable 'W1'"),
        ({"steps": [{"cables": {"W1": {"nodes": "abc"}}}]}, r"nodes must be a list"),
        ({"steps": [{"cables": {"W1": {"nodes": [[0, 0], [1, 1]]}}}]}, "31 nodes of 3 finite numbers"),
        ({"steps": [{"cables": {"W1": {"nodes": [[0, 0, 1e999]] * 31}}}]}, "31 nodes of 3 finite numbers"),
    ],
)
def test_a_malformed_result_is_refused_by_name(result, words):
    with pytest.raises(CaseError, match=words):
        motion_envelope(hanging_case(), "W1", result)
