# SPDX-License-Identifier: GPL-3.0-or-later
"""solver.model "kirchhoff_cg" (Linn et al., kirchhoff_cg.py): the energy's gradient against finite
differences (the twist's through the centre line's holonomy included), rest states against closed forms,
the elastica BVP (test_analytic_references.py) and the Cosserat rod as segments double, the paper's
Omega shape twisted by 2 pi in 25 steps against the Cosserat rod, the holders' forces and moments in
balance with the loads, a column past buckling shown as the saddle it is, and case features the model
does not express refused by name."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, harness, solve

from solver_core import CableChange, CaseError, Frame, build_rod_model, parse_case
from solver_core.models.kirchhoff_cg import arrays_for, end_twist, kirchhoff_energy
from solver_core.rod.rod_model import Boundary
from solver_core.rod.rod_state import initial_state

MODEL = {"model": "kirchhoff_cg"}


def _clamped_both(segments, end_normal=(0.0, 0.0, 1.0), end_position=(0.25, 0.02, 0.01)):
    """Both ends clamped (the end normal along z: the end frame turned 90 degrees about its tangent
    against the start's as carried along a plain route)."""
    start = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": list(end_position), "tangent": [0.0, 1.0, 0.0], "normal": list(end_normal)}
    return case(cable(length=0.3, segments=segments, start=start, end=end), solver=MODEL)


@pytest.mark.parametrize("twist_held", [True, False])
def test_the_gradient_is_the_derivative_of_the_energy(twist_held):
    """Central differences of the energy at random, bent centre lines, with both ends clamped (the
    twist term on, coupled to every node through the carried frame) and with the end roll-free."""
    rng = np.random.default_rng(7)
    normal = (0.0, 0.0, 1.0) if twist_held else None
    doc = parse_case(_clamped_both(8))
    spec = doc.cables[0]
    if not twist_held:
        from dataclasses import replace

        spec = replace(spec, end=replace(spec.end, normal=normal))
    model = build_rod_model(spec, doc.gravity, 1e-8)
    boundary = Boundary.of(spec)
    for _trial in range(4):
        x = initial_state(model, boundary, sag=0.0).positions + rng.normal(scale=0.01, size=(9, 3))
        full = arrays_for(model, boundary, x, None)
        assert (full.twist_k > 0.0) is twist_held
        # each term alone (the twist's gradient is 1e-4 of the stretch's: checked on its own, to 1e-6)
        terms = {
            "all": full,
            "twist": full._replace(k_stretch=0.0 * full.k_stretch, bend=0.0, force=0.0 * full.force),
            "bend": full._replace(k_stretch=0.0 * full.k_stretch, twist_k=0.0, force=0.0 * full.force),
        }
        for name, a in terms.items():
            grad = np.zeros_like(x)
            kirchhoff_energy(x, a, grad)
            h = 1e-7
            scratch = np.zeros_like(x)
            for i in range(9):
                for k in range(3):
                    up, down = x.copy(), x.copy()
                    up[i, k] += h
                    down[i, k] -= h
                    fd = (kirchhoff_energy(up, a, scratch) - kirchhoff_energy(down, a, scratch)) / (2 * h)
                    assert abs(grad[i, k] - fd) <= 1e-6 * abs(grad).max() + 1e-9, (name, i, k, grad[i, k], fd)


def _omega_steps(model, segments, steps=25):
    """Linn et al.'s Fig. 1: a rod clamped at both ends with the outlets bent inward into an (upside
    down) Omega, then the end frame turned by 2 pi about its tangent in ``steps`` steps."""
    r = 1.0 / math.sqrt(2.0)
    start = {"position": [0.0, 0.0, 0.0], "tangent": [-r, 0.0, r], "normal": [0.0, 1.0, 0.0]}
    end = {"position": [0.1, 0.0, 0.0], "tangent": [-r, 0.0, -r], "normal": [0.0, 1.0, 0.0]}
    doc = case(
        cable(length=0.4, diameter=0.004, segments=segments, start=start, end=end),
        gravity=[0.0, 0.0, 0.0],
    )
    doc["cables"][0]["material"] = {"EA": 2e4, "EI": 1e-3, "GJ": 1e-3 / 1.3, "GA": 2e4, "linear_density": 0.01}
    if model:
        doc["solver"] = {"model": model}
    h = harness(doc)
    assert all(r.converged for r in h.solve_step().values())
    tangent = np.array([-1.0, 0.0, -1.0]) / math.sqrt(2.0)
    shapes = [h.world_nodes("W1")]
    for k in range(1, steps + 1):
        angle = 2.0 * math.pi * k / steps
        normal = math.cos(angle) * np.array([0.0, 1.0, 0.0]) + math.sin(angle) * np.cross(tangent, [0.0, 1.0, 0.0])
        frame = Frame(np.array([0.1, 0.0, 0.0]), tangent, normal)
        reports = h.solve_step({"W1": CableChange(end=frame)})
        assert all(r.converged and r.stable for r in reports.values()), [r.message for r in reports.values()]
        shapes.append(h.world_nodes("W1"))
    return h, shapes


def test_the_omega_twisted_by_two_pi_follows_the_cosserat_rod():
    """The bend-twist coupling of the paper's Fig. 1: the twist turns the planar Omega out of its plane
    (the twist is followed through the whole turn, not taken within half of one), step by step where
    the Cosserat rod goes, closer as segments double."""
    gaps = []
    for n in (10, 20):
        ours, shapes = _omega_steps("kirchhoff_cg", n)
        _, rod = _omega_steps(None, n)
        # the end turned once: twist and writhe share the turn (the shape writhes, so Tw < 2 pi), and the
        # twist is the one followed through the turn, not the angle within half of one (near 0)
        assert 1.5 * math.pi < end_twist_of(ours) <= 2.0 * math.pi
        out_of_plane = max(float(np.abs(s[:, 1]).max()) for s in shapes)
        assert out_of_plane > 0.002  # it left the plane
        gaps.append(max(float(np.abs(a - b).max()) for a, b in zip(shapes, rod)))
    assert gaps[1] < 0.5 * gaps[0] and gaps[1] < 0.02 * 0.4, gaps


def end_twist_of(h):
    session = h.cables["W1"]
    return next(r["twist"] for kept, r in session.readings if kept is session.state)


def test_holders_balance_the_loads_from_the_result_alone():
    """Both ends clamped, under gravity: the two holders' forces carry the weight, and their moments
    (with the forces' moments about the start) balance the weight's moment about the start."""
    twisted = (0.8, 0.0, 0.6)  # perpendicular to the end's tangent (0, 1, 0), turned 37 degrees off z
    result = first(solve(_clamped_both(20, end_normal=twisted)))
    assert result["converged"] and result["stable"]
    weight = np.array([0.0, 0.0, -9.81]) * 0.3 * parse_case(_clamped_both(4)).cables[0].section.linear_density
    ends = result["end_forces"]
    force = np.add(ends["start"]["force"], ends["end"]["force"])
    assert np.abs(force + weight).max() <= 1e-6 * np.abs(weight).max()
    nodes = np.asarray(result["nodes"])
    node_weight = np.zeros(len(nodes))
    lengths = np.linalg.norm(np.diff(nodes, axis=0), axis=1)
    node_weight[:-1] += 0.5
    node_weight[1:] += 0.5
    node_weight *= weight[2] / node_weight.sum()
    moment = np.add(ends["start"]["moment"], ends["end"]["moment"])
    moment = moment + np.cross(nodes[-1] - nodes[0], ends["end"]["force"])
    moment = moment + sum(np.cross(p - nodes[0], [0.0, 0.0, w]) for p, w in zip(nodes, node_weight))
    assert np.abs(moment).max() <= 1e-4 * np.abs(weight).max() * 0.3, moment
    assert lengths.sum() == pytest.approx(0.3, rel=1e-3)


PLATE = {"type": "plane", "point": [0, 0, -1], "normal": [0, 0, 1]}
CLIP = {"s": 0.1, "frame": {"position": [0.1, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}}


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda d: d.update(obstacles=[PLATE]), "obstacles"),
        (lambda d: d.update(contact={"cable_cable": True}), "contact.cable_cable"),
        (lambda d: d["cables"][0].update(clips=[CLIP]), "clips"),
        (lambda d: d["cables"][0].update(rest={"curvature": [1.0, 0.0], "twist": 0.0}), "rest"),
        (lambda d: d["cables"][0].update(loads=[{"s": 0.3, "moment": [0.0, 0.1, 0.0]}]), "loads[0].moment"),
        (lambda d: d["solver"].update(dynamics={"time_step": 0.01}), "solver.dynamics"),
    ],
    ids=["obstacles", "cable-contact", "clip", "pre-formed", "dead-moment", "dynamics"],
)
def test_features_the_kirchhoff_rod_does_not_express_are_refused_by_name(edit, named):
    doc = case(cable(length=0.3, segments=10), solver=dict(MODEL))
    edit(doc)
    with pytest.raises(CaseError) as refused:
        parse_case(doc)
    assert named in str(refused.value) and "kirchhoff_cg" in str(refused.value)


def test_end_twist_is_followed_through_whole_turns():
    doc = parse_case(_clamped_both(8))
    spec = doc.cables[0]
    model = build_rod_model(spec, doc.gravity, 1e-8)
    boundary = Boundary.of(spec)
    x = initial_state(model, boundary, sag=0.0).positions
    least = end_twist(x, arrays_for(model, boundary, x, None))
    wound = arrays_for(model, boundary, x, least + 4.0 * math.pi + 0.1)
    assert abs(least) <= math.pi
    assert end_twist(x, wound) == pytest.approx(least + 4.0 * math.pi)


@pytest.mark.parametrize("model", ["kirchhoff_cg", "cosserat_pbd"])
def test_obstacles_handed_over_later_refuse_a_model_without_contact(model):
    """The Blender layer hands the colliders near a cable to the harness after the case was read (so
    the case's own refusal of obstacles does not see them): a model without contact refuses to solve
    rather than pass through them."""
    from solver_core import ObstacleSet

    doc = case(cable(length=0.3, segments=10), solver={"model": model})
    h = harness(doc)
    plate = np.array([[[-1.0, -1.0, -0.05], [1.0, -1.0, -0.05], [0.0, 1.0, -0.05]]])
    h.set_obstacles(ObstacleSet().with_triangles(plate, 0))
    report = h.solve_step()["W1"]
    assert not report.converged and "no contact" in report.message and model in report.message


def _wound(segments=20, turns=1.2):
    """A cable clamped at both ends on one axis, its end turned ``turns`` times about the axis in steps."""
    start = {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    end = {"position": [0.2995, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}
    doc = case(cable(length=0.3, segments=segments, start=start, end=end), gravity=[0.0, 0.0, 0.0], solver=MODEL)
    doc["cables"][0]["material"] = {"EA": 2e4, "EI": 1e-3, "GJ": 1e-3 / 1.3, "GA": 2e4, "linear_density": 0.01}
    doc["solver"]["ultimate_strain"] = 0.01
    h = harness(doc)
    assert h.solve_step()["W1"].converged
    steps = round(turns * 16)
    for k in range(1, steps + 1):
        angle = 2.0 * math.pi * turns * k / steps
        frame = Frame(
            np.array([0.2995, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, -math.sin(angle), math.cos(angle)])
        )
        assert h.solve_step({"W1": CableChange(end=frame)})["W1"].converged
    return h


def test_the_twist_is_kept_through_refused_steps_and_a_restore():
    """1.2 turns wound in: the followed twist stays 1.2 turns after two steps refused for stretch (the
    end pulled beyond the cable's length) and after a checkpoint restored, not the 0.2 turn within half
    a turn of the end's angle."""
    h = _wound()
    wound = h.cables["W1"].twist
    assert wound == pytest.approx(2.0 * math.pi * 1.2, abs=0.05)
    end = h.cables["W1"].boundary.end
    saved = h.checkpoint(["W1"])
    for pull in (0.305, 0.306):  # 1.7 % and 2 % stretch: refused
        far = Frame(np.array([pull, 0.0, 0.0]), end.tangent, end.normal)
        assert not h.solve_step({"W1": CableChange(end=far)})["W1"].converged
    assert h.cables["W1"].twist == wound
    h.restore(saved)
    assert h.cables["W1"].twist == wound
    closer = Frame(np.array([0.299, 0.0, 0.0]), end.tangent, end.normal)
    assert h.solve_step({"W1": CableChange(end=closer)})["W1"].converged
    assert h.cables["W1"].twist == pytest.approx(wound, abs=0.05)


def test_a_large_step_of_a_wound_cable_follows_the_twist_through_the_half_turn():
    """The wound cable's end brought from 299.5 to 150 mm in one step: the roll passes half a turn on
    the way (the cable writhes), and the twist is followed through it, as the Cosserat rod does."""
    h = _wound()
    end = h.cables["W1"].boundary.end
    near = Frame(np.array([0.15, 0.0, 0.0]), end.tangent, end.normal)
    report = h.solve_step({"W1": CableChange(end=near)})["W1"]
    assert report.converged and report.stable, report.message


def test_a_cable_added_later_is_refused_what_the_model_does_not_express():
    from dataclasses import replace

    from solver_core import Clip

    h = harness(case(cable(length=0.3, segments=10), solver=MODEL))
    spec = h.case.cables[0]
    frame = Frame(np.array([0.1, 0.0, -0.02]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    with pytest.raises(CaseError, match="clips"):
        h.add_cable(replace(spec, clips=(Clip(0.1, frame),)))
