# SPDX-License-Identifier: GPL-3.0-or-later
"""Clips and connectors (mounts.py): fixed, sliding and compliant holders against closed forms."""

import numpy as np
import pytest
from helpers.cases import cable, case, first, solve
from helpers.contact_scenes import LINEAR_DENSITY
from helpers.kernel_inputs import compliant_clips


class TestMounts:
    FRAME = {"position": [0.2, 0, -0.01], "tangent": [1, 0, 0], "normal": [0, 0, 1]}

    def test_sliding_clip_is_a_frictionless_ring_at_each_end_plane(self):
        # Reference: a frictionless ring can push the cable only normal to it. At each end plane the
        # force the clip puts on the segment crossing it (the sum over its two nodes) must be normal to
        # that segment, although the cable leaves the clip bent under the weight of its free end (the
        # force then has a part along the clip's axis, which the start connector balances); the two
        # planes' forces add up to the reported clip force. A fixed clip holds the cable along it.
        from solver_core import Harness, parse_case
        from solver_core.contact.mounts import sliding_crossings, sliding_energy

        doc = case(
            cable(length=0.4, segments=80, clips=[{"s": 0.21, "kind": "sliding", "length": 0.01, "frame": self.FRAME}])
        )
        result = first(solve(doc))
        assert result["converged"]
        clip = np.array(result["clip_forces"][0]["force"])
        assert np.linalg.norm(clip) > 0.1
        start = np.array(result["end_forces"]["start"]["force"])
        weight = LINEAR_DENSITY * 0.4 * 9.81
        assert np.allclose(clip + start, [0.0, 0.0, weight], atol=1e-6 * weight)

        h = Harness.from_case(parse_case(doc))
        h.solve_step()
        session = h.cables["W1"]
        model, x = session.model, session.state.positions
        arrays = session.interactions.kernel_arrays(session.boundary)
        sl_point, sl_axis, sl_k = arrays.sl_point, arrays.sl_axis, arrays.sl_stiff
        total = np.zeros(3)
        for m in range(2):
            seg, t, part = np.zeros(1, dtype=np.int64), np.zeros(1), np.zeros(1, dtype=np.int64)
            sliding_crossings(
                x, np.zeros(len(x), dtype=np.int64), sl_point[m : m + 1], sl_axis[m : m + 1], part, seg, t
            )
            grad = np.zeros(model.n_dof)
            sliding_energy(
                x,
                model.node_dof,
                sl_point[m : m + 1],
                sl_axis[m : m + 1],
                sl_k[m : m + 1],
                seg,
                t,
                grad,
                np.zeros((1, 1)),
                0,
                1,
                np.zeros(1),
            )
            i = seg[0]
            force = -(
                grad[model.node_dof[i] : model.node_dof[i] + 3]
                + grad[model.node_dof[i + 1] : model.node_dof[i + 1] + 3]
            )
            e = (x[i + 1] - x[i]) / np.linalg.norm(x[i + 1] - x[i])
            assert abs(force @ e) <= 1e-9 * np.linalg.norm(force)
            total += force
        assert np.allclose(total, clip, rtol=1e-6, atol=1e-9)
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

    def test_the_sliding_clip_energy_has_the_gradient_of_finite_differences(self, rng):
        # the crossing parameter follows the nodes: its derivative is part of the gradient
        from solver_core.contact.mounts import sliding_energy

        x = np.array([[0.0, 0.0, 0.0], [0.01, 0.002, -0.001], [0.02, 0.001, 0.003]]) + 1e-3 * rng.standard_normal(
            (3, 3)
        )
        node_dof = np.array([0, 3, 6])
        point, axis = np.array([[0.006, 0.0, 0.0]]), np.array([[1.0, 0.0, 0.0]])
        stiffness, seg = np.array([1e4]), np.array([0])

        def energy(pos, grad, mode):
            return sliding_energy(
                pos, node_dof, point, axis, stiffness, seg, np.zeros(1), grad, np.zeros((1, 1)), 0, mode, np.zeros(1)
            )

        grad = np.zeros(9)
        energy(x, grad, 1)
        h = 1e-8
        for k in range(6):
            e = np.zeros(9)
            e[k] = h
            fd = (energy(x + e.reshape(3, 3), np.zeros(9), 0) - energy(x - e.reshape(3, 3), np.zeros(9), 0)) / (2 * h)
            assert fd == pytest.approx(grad[k], rel=1e-6, abs=1e-9 * np.abs(grad).max())

    def test_the_sliding_clip_energy_has_the_hessian_of_finite_differences(self, rng):
        # mode 2 is the exact Hessian (the crossing point turns with the nodes), mode 3 its
        # Gauss-Newton part k J^T J, which differs from it where the clip pushes
        from solver_core.contact.mounts import sliding_energy
        from tests.helpers.matrices import dense_from_band

        x = np.array([[0.0, 0.0, 0.0], [0.01, 0.002, -0.001], [0.02, 0.001, 0.003]]) + 1e-3 * rng.standard_normal(
            (3, 3)
        )
        node_dof = np.array([0, 3, 6])
        point, axis = np.array([[0.006, 0.0, 0.0]]), np.array([[0.8, 0.6, 0.0]])
        stiffness, seg, bw = np.array([1e4]), np.array([0]), 8

        def terms(pos, mode):
            grad, band = np.zeros(9), np.zeros((9, bw + 1))
            sliding_energy(pos, node_dof, point, axis, stiffness, seg, np.zeros(1), grad, band, bw, mode, np.zeros(1))
            return grad, dense_from_band(band, bw)

        _, H = terms(x, 2)
        _, H_gn = terms(x, 3)
        h = 1e-7
        fd = np.zeros((6, 6))
        for k in range(6):
            e = np.zeros(9)
            e[k] = h
            fd[:, k] = (terms(x + e.reshape(3, 3), 1)[0][:6] - terms(x - e.reshape(3, 3), 1)[0][:6]) / (2 * h)
        scale = np.abs(fd).max()
        assert np.abs(H[:6, :6] - fd).max() < 1e-5 * scale
        assert np.abs(H_gn[:6, :6] - fd).max() > 1e-3 * scale

    def test_the_compliant_clip_energy_has_the_hessian_of_finite_differences(self, rng):
        # mode 2 is the exact Hessian in the rod's variables (x + dx, q exp(dtheta / 2)), mode 3 its
        # Gauss-Newton part J^T K J, which differs from it where the clip is turned and pushes back
        from solver_core.contact.mounts import compliant_energy
        from solver_core.maths.rotations import matrix_to_quat, quat_retract
        from tests.helpers.matrices import dense_from_band

        pos = np.array([[0.01, -0.02, 0.005]])
        quat = np.empty((1, 4))
        quat_retract(matrix_to_quat(np.eye(3)), np.array([0.3, -0.5, 0.2]), quat[0])  # turned about 0.6 rad
        node_dof, rot_dof = np.array([0]), np.array([3])
        A = rng.standard_normal((6, 6))
        K = A @ A.T + np.diag([2000.0, 2000.0, 2000.0, 1.0, 1.0, 1.0])
        clip = compliant_clips([0], [0], np.zeros((1, 3)), [[1.0, 0.0, 0.0, 0.0]], K[None])
        bw = 5

        def terms(x, q, mode):
            grad, band = np.zeros(6), np.zeros((6, bw + 1))
            compliant_energy(x, q, node_dof, rot_dof, clip, grad, band, bw, mode, np.empty((1, 6)))
            return grad, dense_from_band(band, bw)

        def moved(delta):
            q = np.empty((1, 4))
            quat_retract(quat[0], delta[3:], q[0])
            return pos + delta[:3], q

        _, H = terms(pos, quat, 2)
        _, H_gn = terms(pos, quat, 3)
        h = 1e-6
        fd = np.zeros((6, 6))
        for k in range(6):
            e = np.zeros(6)
            e[k] = h
            fd[:, k] = (terms(*moved(e), 1)[0] - terms(*moved(-e), 1)[0]) / (2 * h)
        fd = 0.5 * (fd + fd.T)  # the rotation update's own curvature is symmetric at a point
        scale = np.abs(fd).max()
        assert np.abs(H - fd).max() < 1e-6 * scale
        assert np.abs(H_gn - fd)[3:, 3:].max() > 1e-3 * np.abs(fd[3:, 3:]).max()

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
