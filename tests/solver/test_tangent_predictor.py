# SPDX-License-Identifier: GPL-3.0-or-later
"""The tangent predictor: a warm step of a cable out of contact starts from its first-order response to
the holders' move (solve/tangent_predictor.py). Checked against the equilibria the solver reaches
without it: the prediction's error falls with the square of the move (the carried start's with the
move itself), and warm steps end where they end without it, in fewer iterations."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, rotation

from solver_core import CableChange, Frame, Harness, parse_case
from solver_core.rod.rod_state import carry_boundary_motion
from solver_core.session import harness as harness_module
from solver_core.session import predictor as predictor_module
from solver_core.solve import tangent_predictor
from solver_core.solve.tangent_predictor import tangent_guess


def _u_cable(segments=60, end_normal=True, clips=()):
    """A 0.5 m cable hanging in a U from two connectors 0.2 m apart (the warm-step benchmark's)."""
    end = {"position": [0.2, 0.0, 0.0], "tangent": [0.0, 0.0, 1.0]}
    if end_normal:
        end["normal"] = [1.0, 0.0, 0.0]
    start = {"position": [0.0, 0.0, 0.0], "tangent": [0.0, 0.0, -1.0], "normal": [1.0, 0.0, 0.0]}
    lv2017 = {"preset": "lv2017_harness"}
    return cable(id="U", length=0.5, material=lv2017, segments=segments, start=start, end=end, clips=list(clips))


CLIP = {"s": 0.2, "kind": "fixed", "frame": {"position": [0.05, 0.0, -0.12], "tangent": [1.0, 0.0, 0.0]}}


def _solved(doc):
    h = Harness.from_case(parse_case(doc))
    assert h.solve_step()["U"].converged
    return h


def _moved_end(h, scale, shift=(0.001, 0.0, 0.0005), degrees=2.0, axis=(0.0, 1.0, 0.0)):
    """The end moved by ``scale`` times (shift, a turn of ``degrees`` about ``axis``)."""
    end = h.cables["U"].boundary.end
    R = rotation(list(axis), math.radians(scale * degrees))
    normal = None if end.normal is None else R @ end.normal
    frame = Frame(end.position + scale * np.array(shift), R @ end.tangent, normal)
    return h.changed_boundary("U", CableChange(end=frame))


def _equilibrium(doc, target):
    h = _solved(doc)
    report = h.solve_cable("U", target)
    assert report.converged, report.message
    return report.state


ROTATING = {"s": 0.2, "kind": "rotating", "length": 0.05, "frame": {"position": [0.05, 0, -0.12], "tangent": [1, 0, 0]}}


@pytest.mark.parametrize(
    "doc, axis",
    [
        (case(_u_cable()), (0.0, 1.0, 0.0)),
        # frames held in part, turned out of the plane: the free rows turn with the held ones
        (case(_u_cable(end_normal=False)), (1.0, 0.0, 0.0)),
        (case(_u_cable(clips=[ROTATING])), (0.0, 0.0, 1.0)),
        (case(_u_cable(clips=[CLIP])), (0.0, 1.0, 0.0)),
    ],
    ids=["clamped", "roll free", "rotating clip", "fixed clip"],
)
@pytest.mark.parametrize("kept", [False, True], ids=["assembled", "kept factor"])
def test_the_prediction_is_off_the_equilibrium_by_the_square_of_the_move(doc, axis, kept):
    """The distance of the prediction's nodes and frames from the equilibrium falls four-fold when the
    move halves (the carried start's two-fold): the response is right to first order, the held frames'
    turns, ends free to roll, rotating clips and a clip's held nodes included; with the Hessian
    assembled at the state, and with the factor its solve's stability test formed there."""
    h = _solved(doc)
    session = h.cables["U"]
    factor = None
    if kept:
        factor, positions, quats = session.free_factor
        assert np.array_equal(positions, session.state.positions) and np.array_equal(quats, session.state.quats)
    errors, turns, carried = [], [], []
    for scale in (4.0, 2.0, 1.0):
        target = _moved_end(h, scale, axis=axis)
        exact = _equilibrium(doc, target)
        guess = tangent_guess(session.model, session.state, target, factor)
        assert guess is not None
        errors.append(np.abs(guess.positions - exact.positions).max())
        # the frames' distance, either sign of a quaternion
        q, e = guess.quats, exact.quats
        turns.append(np.minimum(np.linalg.norm(q - e, axis=1), np.linalg.norm(q + e, axis=1)).max())
        start = session.state.copy()
        carry_boundary_motion(session.model, start, session.boundary, target)
        carried.append(np.abs(start.positions - exact.positions).max())
    for a, b in zip(errors, errors[1:]):
        assert 3.0 < a / b < 5.0, errors
    for a, b in zip(turns, turns[1:]):
        assert 3.0 < a / b < 5.0, turns
    for a, b in zip(carried, carried[1:]):
        assert 1.5 < a / b < 2.5, carried
    assert errors[-1] < 0.05 * carried[-1]


def test_the_kept_factor_serves_only_the_state_it_was_formed_at(monkeypatch):
    """A warm step uses the factor its cable's last solve formed, and assembles where the state has
    changed since (restored, moved by anything else): a factor of another state would predict from
    the wrong Hessian."""
    factors = []
    real = predictor_module.tangent_guess
    monkeypatch.setattr(predictor_module, "tangent_guess", lambda *args: factors.append(args[3]) or real(*args))
    h = _solved(case(_u_cable()))
    session = h.cables["U"]
    formed = session.free_factor[0]  # by the solve before
    assert h.solve_cable("U", _moved_end(h, 1.0)).converged
    assert factors[-1] is formed is not None
    session.state = session.state.copy()
    session.state.positions[10, 2] += 1e-9  # the same object no longer, nor the same values
    assert h.solve_cable("U", _moved_end(h, 1.0)).converged
    assert factors[-1] is None


def _drag(doc, steps, predictor_on, monkeypatch):
    """Iterations and final state of ``steps`` warm steps moving the end along a line while turning it."""
    if not predictor_on:
        monkeypatch.setattr(harness_module, "tangent_start", lambda *args: None)
    h = _solved(doc)
    total = 0
    for k in range(1, steps + 1):
        target = _moved_end(h, 1.0, shift=(0.002, 0.0, 0.001), degrees=1.5)
        report = h.solve_step({"U": CableChange(end=target.end)})["U"]
        assert report.converged and report.stable, report.message
        total += report.iterations
    monkeypatch.undo()
    return total, h.cables["U"].state


@pytest.mark.parametrize("segments", [30, 200])
def test_warm_steps_end_where_they_end_without_it_in_fewer_iterations(segments, monkeypatch):
    doc = case(_u_cable(segments=segments))
    with_it, state = _drag(doc, 6, True, monkeypatch)
    without, reference = _drag(doc, 6, False, monkeypatch)
    # both converged to the tolerance (2.5e-9 N per dof): the same equilibrium, far closer than a step
    assert np.abs(state.positions - reference.positions).max() < 1e-8
    assert with_it < without
    assert with_it <= 3 * 6


def test_a_compressed_straight_column_past_its_buckling_load_has_no_prediction():
    """Not at a strict minimum (H_ff indefinite): nothing to continue from (the warm step then starts
    as it did before). The same column unpressed has a prediction."""
    column = _u_cable(segments=40)
    column["length"] = 0.3
    column["start"] = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    column["end"] = {"position": [0.3, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    h = Harness.from_case(parse_case(case(column, gravity=[0.0, 0.0, 0.0])))
    session = h.cables["U"]
    # the straight state pressed 2 % short: far past Euler's load (4 pi^2 EI / L^2 at ~1e-5 strain)
    session.state.positions[:, 0] *= 0.98
    pressed = Frame(np.array([0.2939, 0.0, 0.0]), [1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    target = h.changed_boundary("U", CableChange(end=pressed))
    assert tangent_guess(session.model, session.state, target) is None
    session.state.positions[:, 0] /= 0.98
    assert tangent_guess(session.model, session.state, target) is not None


def test_a_prediction_far_beyond_the_holders_motion_is_not_used(monkeypatch):
    """Where the response is many times the holders' motion (near a fold) the linearisation says nothing
    of the branch: with the bound set below the U's own response the step starts as before and ends
    at the same equilibrium."""
    doc = case(_u_cable())
    h = _solved(doc)
    session = h.cables["U"]
    target = _moved_end(h, 1.0)
    assert tangent_guess(session.model, session.state, target) is not None
    monkeypatch.setattr(tangent_predictor, "MAX_AMPLIFICATION", 1e-3)
    assert tangent_guess(session.model, session.state, target) is None
    report = h.solve_cable("U", target)
    assert report.converged
    monkeypatch.undo()
    assert np.abs(report.state.positions - _equilibrium(doc, target).positions).max() < 1e-8


def test_not_used_in_contact_or_with_friction_or_where_the_holders_stay(monkeypatch):
    """Contact within a reach (the rod's Hessian does not know it), friction (the path decides) and a
    step whose holders stay (nothing to predict): the start is the one used before."""
    calls = []
    real = predictor_module.tangent_guess
    monkeypatch.setattr(predictor_module, "tangent_guess", lambda *args: calls.append(1) or real(*args))
    floor = {"type": "plane", "point": [0.0, 0.0, -0.2], "normal": [0.0, 0.0, 1.0]}
    on_floor = _solved(case(_u_cable(), obstacles=[floor]))
    assert on_floor.solve_cable("U", _moved_end(on_floor, 1.0)).converged
    assert calls == []
    rubbing = _solved(case(_u_cable(), obstacles=[floor], contact={"friction_static": 0.3, "friction_dynamic": 0.2}))
    assert rubbing.solve_cable("U", _moved_end(rubbing, 1.0)).converged
    assert calls == []
    free = _solved(case(_u_cable()))
    assert free.solve_cable("U", free.cables["U"].boundary).converged
    assert calls == []
    assert free.solve_cable("U", _moved_end(free, 1.0)).converged
    assert calls == [1]


def test_not_used_in_time_steps(monkeypatch):
    """A time step's inertia springs are part of the energy it minimises, not the rod's: the rod's
    response is no prediction of it (and the factor its solve forms includes them)."""
    calls = []
    real = predictor_module.tangent_guess
    monkeypatch.setattr(predictor_module, "tangent_guess", lambda *args: calls.append(1) or real(*args))
    doc = case(_u_cable(segments=20))
    doc["solver"] = {"dynamics": {"time_step": 0.004, "damping": 1.0}}
    h = _solved(doc)
    target = _moved_end(h, 1.0)
    assert h.solve_step({"U": CableChange(end=target.end)}, duration=0.02)["U"].converged
    assert calls == []
    assert h.solve_cable("U", _moved_end(h, 1.0)).converged  # quasi-static again: predicted
    assert calls == [1]


def test_a_prediction_adds_no_noise_across_a_plane_of_symmetry():
    """A weightless arch in the xz plane, its end turned about y: the prediction moves no node across
    the plane (its entries at round-off are dropped), so the noise of 1e-151 the state has there stays
    as the carried start leaves it. Where that noise decides the side of a later snap (two mirror
    images), the linear solve amplified it 60-fold and flipped its sign over two steps, and the arch
    snapped to the other side than without the prediction (reproduced at 40 segments, the end turned
    down 1.5 degrees a step: the snap at the 23rd)."""
    a = math.radians(20.0)
    c, s = math.cos(a), math.sin(a)
    arch = _u_cable(segments=40)
    arch["start"] = {"position": [0, 0, 0], "tangent": [c, 0, s], "normal": [-s, 0, c]}
    arch["end"] = {"position": [0.4, 0, 0], "tangent": [c, 0, -s], "normal": [s, 0, c]}
    h = _solved(case(arch, gravity=[0.0, 0.0, 0.0]))
    session = h.cables["U"]
    session.state.positions[1:-1, 1] += 1e-151 * np.sin(np.arange(39.0))  # the noise, whatever it is
    for factor in (None, session.free_factor[0]):
        target = _moved_end(h, 1.0, shift=(0.0, 0.0, 0.0), degrees=-1.5)
        guess = tangent_guess(session.model, session.state, target, factor)
        assert np.abs(guess.positions[:, 0] - session.state.positions[:, 0]).max() > 1e-4  # it moves in the plane
        assert np.array_equal(guess.positions[:, 1], session.state.positions[:, 1])
