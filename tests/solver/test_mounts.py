# SPDX-License-Identifier: GPL-3.0-or-later
"""Clips and connectors (mounts.py): fixed, sliding and compliant holders against closed forms."""

import numpy as np
from helpers.cases import cable, case, first, solve
from helpers.contact_scenes import LINEAR_DENSITY


class TestMounts:
    FRAME = {"position": [0.2, 0, -0.01], "tangent": [1, 0, 0], "normal": [0, 0, 1]}

    def test_sliding_clip_takes_no_force_along_its_axis(self):
        # Gravity is vertical and the clip axis horizontal: if the clip took no axial force, nothing
        # else but the start connector could, so its axial reaction (from its own pinned dofs) is zero.
        doc = case(
            cable(length=0.4, segments=80, clips=[{"s": 0.21, "kind": "sliding", "length": 0.01, "frame": self.FRAME}])
        )
        result = first(solve(doc))
        assert result["converged"]
        clip = np.array(result["clip_forces"][0]["force"])
        assert np.linalg.norm(clip) > 0.1
        assert abs(result["end_forces"]["start"]["force"][0]) < 1e-6 * np.linalg.norm(clip)
        fixed = first(
            solve(
                case(
                    cable(
                        length=0.4,
                        segments=80,
                        clips=[{"s": 0.21, "kind": "fixed", "length": 0.01, "frame": self.FRAME}],
                    )
                )
            )
        )
        assert abs(fixed["end_forces"]["start"]["force"][0]) > 0.1  # a fixed clip does hold axially
        # the cable passes through the clip on its axis
        nodes = np.array(result["nodes"])
        near = np.abs(nodes[:, 0] - 0.2) < 0.003
        assert np.abs(nodes[near, 2] + 0.01).max() < 1e-4

    def test_sliding_clip_lets_the_cable_be_pulled_through(self):
        # moving the start connector back pulls the cable through the sliding clip: the free part
        # beyond the clip gets shorter by as much; a fixed clip would not let it through
        doc = case(
            cable(length=0.4, segments=80, clips=[{"s": 0.21, "kind": "sliding", "length": 0.01, "frame": self.FRAME}])
        )
        doc["steps"] = [
            {"cables": {"W1": {"start": {"position": [-0.02 * k, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]}}}}
            for k in range(1, 4)
        ]
        steps = solve(doc)["steps"]
        tips = [np.array(s["cables"]["W1"]["nodes"][-1]) for s in steps]
        assert all(s["cables"]["W1"]["converged"] for s in steps)
        assert tips[-1][0] < tips[0][0] - 0.03

    def test_stiff_compliant_clip_gives_the_rigid_result_and_a_soft_one_yields_by_force_over_stiffness(self):
        rigid = first(
            solve(
                case(
                    cable(
                        length=0.4,
                        segments=80,
                        clips=[{"s": 0.21, "kind": "fixed", "length": 0.0, "frame": self.FRAME}],
                    )
                )
            )
        )
        weight = np.array([0, 0, -9.81 * LINEAR_DENSITY * 0.4])
        for k, close in ((1e9, True), (1e3, False)):
            clip = {
                "s": 0.21,
                "kind": "fixed",
                "length": 0.0,
                "frame": self.FRAME,
                "stiffness": {"translational": k, "rotational": k / 100},
            }
            result = first(solve(case(cable(length=0.4, segments=80, clips=[clip]))))
            assert result["converged"]
            diff = np.abs(np.array(result["nodes"]) - np.array(rigid["nodes"])).max()
            assert (diff < 1e-6) if close else (diff > 1e-4)
            # the clip's force from global balance (weight and the start connector's pinned reaction) ...
            clip_force = -(np.array(result["end_forces"]["start"]["force"]) + weight)
            deflection = np.array(result["clip_forces"][0]["deflection"]["translation"])
            # ... equals stiffness times deflection, opposite to it (linear spring)
            assert np.allclose(clip_force, -k * deflection, rtol=1e-4, atol=1e-9)

    def test_matrix_stiffness_in_the_clip_frame(self):
        # a clip soft only along its own y axis (world y here) yields only sideways under a sideways pull
        K = np.diag([1e9, 2e3, 1e9, 1e6, 1e6, 1e6]).tolist()
        clip = {
            "s": 0.2,
            "kind": "fixed",
            "length": 0.0,
            "stiffness": {"matrix": K},
            "frame": {"position": [0.2, 0, 0], "tangent": [1, 0, 0], "normal": [0, 0, 1]},
        }
        result = first(
            solve(
                case(
                    cable(length=0.3, segments=60, clips=[clip], loads=[{"s": 0.3, "force": [0, 1.0, 0]}]),
                    gravity=[0, 0, 0],
                )
            )
        )
        d = np.array(result["clip_forces"][0]["deflection"]["translation"])
        assert abs(d[1]) > 1e-4 and abs(d[0]) < 1e-8 and abs(d[2]) < 1e-8
