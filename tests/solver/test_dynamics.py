# SPDX-License-Identifier: GPL-3.0-or-later
"""Dynamic steps (solver.dynamics, solver_core/solve/dynamics.py) against closed forms and conservation:
the cantilever's first frequency, the energy of an undamped swing over 100 periods, the decay the set
damping gives, a damped motion settling where the quasi-static solve puts the cable, contact kept
intersection-free through fast motions onto thin geometry, and the failure paths (a step refused
undoes the whole motion; bad input named by its field)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver_core import CableChange, CaseError, Frame, Harness, kinetic_energy, parse_case, solve_case
from solver_core.solve.diagnostics import elastic_and_load_energy, max_axial_strain

L, D, E, RHO = 0.3, 0.004, 2e9, 1400.0
EI = E * math.pi * D**4 / 64.0
MU = RHO * math.pi * D**2 / 4.0
# the clamped-free beam's first bending mode (Euler-Bernoulli): beta_1 L = 1.8751
F1 = 1.875104**2 * math.sqrt(EI / (MU * L**4)) / (2.0 * math.pi)
T1 = 1.0 / F1


def cantilever(gravity, segments, dynamics=None, **cable):
    doc = {
        "format": "cable-harness-case/1",
        "gravity": [0.0, 0.0, gravity],
        "cables": [
            {
                "id": "c",
                "length": L,
                "diameter": D,
                "material": {"E": E, "nu": 0.35, "density": RHO},
                "segments": segments,
                "start": {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
                "end": None,
                **cable,
            }
        ],
    }
    if dynamics is not None:
        doc["solver"] = {"dynamics": dynamics}
    return doc


def released_cantilever(segments, time_step, damping=0.0):
    """A cantilever bent by its weight, released in zero gravity: it swings about the straight line in
    (almost only) its first mode, with the static deflection as amplitude (2.4 % of L)."""
    bent = Harness.from_case(parse_case(cantilever(-9.81, segments)))
    assert bent.solve_step()["c"].converged
    free = Harness.from_case(parse_case(cantilever(0.0, segments, {"time_step": time_step, "damping": damping})))
    assert free.solve_step()["c"].converged  # the first solve: at rest, straight
    free.cables["c"].state = bent.cables["c"].state.copy()
    return free


def total_energy(harness):
    s = harness.cables["c"]
    return kinetic_energy(s) + elastic_and_load_energy(s.model, s.state)


def upward_crossings(times, values):
    t, v = np.asarray(times), np.asarray(values)
    k = np.flatnonzero((v[:-1] < 0.0) & (v[1:] >= 0.0))
    return t[k] - v[k] * (t[k + 1] - t[k]) / (v[k + 1] - v[k])


def test_cantilever_first_frequency_matches_euler_bernoulli():
    """1.875^2 sqrt(EI / (mu L^4)) / 2 pi within 2 % (the issue's bound); here within 0.5 %: the lumped
    masses of 40 segments and the integrator's period error ((omega h)^2 / 12 at most) are below it."""
    harness = released_cantilever(40, T1 / 40)
    times, tip = [], []
    for _ in range(6 * 40):
        report = harness.solve_step(duration=T1 / 40)["c"]
        assert report.converged and report.stable, report.message
        times.append(harness.time)
        tip.append(harness.cables["c"].state.positions[-1, 2])
    period = float(np.mean(np.diff(upward_crossings(times, tip))))
    assert abs(period - T1) / T1 < 5e-3, (period, T1)


def test_undamped_swing_keeps_its_energy_for_100_periods():
    """No damping set: the energy (kinetic + elastic) drifts less than 1 % over 100 periods of the first
    mode (Bathe's rule keeps 99.89 % of a linear oscillator's at 100 steps per period; the stiff axial
    and shear modes it damps hold almost none of it here)."""
    harness = released_cantilever(20, T1 / 100)
    start = total_energy(harness)
    worst = 0.0
    for _ in range(100):  # one step per period, 100 time steps each
        report = harness.solve_step(duration=T1)["c"]
        assert report.converged, report.message
        worst = max(worst, abs(total_energy(harness) - start) / start)
    assert worst < 0.01, worst
    assert harness.time == pytest.approx(100 * T1)


def test_mass_proportional_damping_takes_energy_at_its_rate():
    """A force -c m v on every node takes energy at dE/dt = -c m v^2 = -2 c KE, and over whole periods
    KE is half the energy: E(t + T) = E(t) exp(-c T), to within the integrator's own loss (measured
    0.1 % per period; a damping 1 % off would be 2.5 times the tolerance)."""
    c = 2.0
    harness = released_cantilever(20, T1 / 50, damping=c)
    energies = [total_energy(harness)]
    for _ in range(8):
        assert harness.solve_step(duration=T1)["c"].converged
        energies.append(total_energy(harness))
    ratios = np.array(energies[2:]) / np.array(energies[1:-1])  # the first period starts from rest
    assert ratios == pytest.approx(math.exp(-c * T1), rel=3e-3)


def hanging_case(dynamics, segments=20, ultimate_strain=None):
    doc = {
        "format": "cable-harness-case/1",
        "gravity": [0.0, 0.0, -9.81],
        "cables": [
            {
                "id": "c",
                "length": 0.5,
                "diameter": 0.004,
                "material": {"preset": "lv2017_harness"},
                "segments": segments,
                "start": {"position": [0.0, 0.0, 0.3], "tangent": [1.0, 0.0, 0.0]},
                "end": {"position": [0.4, 0.0, 0.3], "tangent": [1.0, 0.0, 0.0]},
            }
        ],
    }
    if dynamics is not None:
        doc["solver"] = {"dynamics": dynamics}
    if ultimate_strain is not None:
        doc.setdefault("solver", {})["ultimate_strain"] = ultimate_strain
    return doc


def moved_end(harness, offset):
    end = harness.cables["c"].boundary.end
    return {"c": CableChange(end=Frame(end.position + np.asarray(offset), end.tangent, end.normal))}


def swing_loss(time_step, seconds=1.0):
    """A sagging cable swung by its end (moved 5 cm sideways in 0.1 s, then held), undamped: (its swing
    energy one frame after the end stopped, the energy (kinetic + elastic + gravity) it has lost after
    ``seconds`` more, the most it ever had above that)."""
    harness = Harness.from_case(parse_case(hanging_case({"time_step": time_step})))
    assert harness.solve_step()["c"].converged
    assert harness.solve_step(moved_end(harness, [0.0, 0.05, 0.0]), duration=0.1)["c"].converged
    assert harness.solve_step(duration=1.0 / 24.0)["c"].converged
    swing = kinetic_energy(harness.cables["c"])
    start = total_energy(harness)
    gain = 0.0
    for _ in range(round(seconds * 24)):
        assert harness.solve_step(duration=1.0 / 24.0)["c"].converged
        gain = max(gain, total_energy(harness) - start)
    return swing, start - total_energy(harness), gain


def test_an_undamped_swing_loses_energy_only_as_the_integrator_is_known_to():
    """Undamped, a swinging cable never gains energy, and loses only what Bathe's rule takes from modes
    the time step hardly resolves (its string and axial modes, which the swing excites), less as the
    step shrinks: measured 7.7 % of the swing energy per second at h = 2 ms, 1.6 % at 0.5 ms."""
    swing, coarse, coarse_gain = swing_loss(0.002)
    _, fine, fine_gain = swing_loss(0.0005)
    assert swing > 1e-3
    assert max(coarse_gain, fine_gain) < 1e-4 * swing
    assert 0.0 < fine < 0.3 * coarse
    assert fine < 0.03 * swing


@pytest.mark.parametrize("model", ["cosserat", "cosserat_pbd"])
def test_a_damped_motion_settles_where_the_quasi_static_solve_puts_the_cable(model):
    """Either integrator (Bathe's rule; XPBD steps, pbd_dynamics.py) comes to rest on the rod's
    quasi-static solution."""
    moves = [[0.0, 0.05, -0.03], [0.02, 0.0, 0.02]]
    still = Harness.from_case(parse_case(hanging_case(None)))
    doc = hanging_case({"time_step": 0.005, "damping": 20.0})
    doc["solver"]["model"] = model
    moving = Harness.from_case(parse_case(doc))
    for h in (still, moving):
        assert h.solve_step()["c"].converged
    for offset in moves:
        assert still.solve_step(moved_end(still, offset))["c"].converged
        assert moving.solve_step(moved_end(moving, offset), duration=0.2)["c"].converged
    for _ in range(6):
        assert moving.solve_step(duration=0.5)["c"].converged
    a, b = still.cables["c"].state.positions, moving.cables["c"].state.positions
    assert np.abs(a - b).max() < 1e-4 * 0.5
    assert kinetic_energy(moving.cables["c"]) < 1e-9


def plate_case(segments, dynamics):
    doc = hanging_case(dynamics, segments)
    doc["obstacles"] = [
        {  # a zero-thickness plate under the middle of the cable
            "type": "mesh",
            "vertices": [[0.1, -0.2, 0.0], [0.3, -0.2, 0.0], [0.3, 0.2, 0.0], [0.1, 0.2, 0.0]],
            "triangles": [[0, 1, 2], [0, 2, 3]],
        }
    ]
    return doc


def lowest_over_plate(harness):
    p = harness.cables["c"].state.positions + harness.cables["c"].model.origin
    over = (p[:, 0] > 0.1) & (p[:, 0] < 0.3)
    return p[over, 2].min() if over.any() else np.inf


@pytest.mark.parametrize("segments, speed", [(8, 0.4), (8, 1.0), (30, 2.0)])
def test_a_cable_thrown_onto_a_thin_plate_never_passes_through(segments, speed):
    """Coarse segments (62 mm against a plate of no thickness) and fast motions (the ends dropped at
    up to 2 m/s, then stopped dead): every step converges with the cable on or above the plate, and it
    comes to rest lying on it."""
    harness = Harness.from_case(parse_case(plate_case(segments, {"time_step": 0.004, "damping": 5.0})))
    assert harness.solve_step()["c"].converged
    radius = 0.002
    drop = 0.25
    frames = max(1, round(drop / speed * 24))
    for k in range(frames + 24):
        offset = [0.0, 0.0, -drop / frames if k < frames else 0.0]
        report = harness.solve_step(moved_end_and_start(harness, offset))["c"]
        assert report.converged, (k, report.message)
        assert lowest_over_plate(harness) > radius * (1.0 - 0.02)
    assert lowest_over_plate(harness) < 3.0 * radius  # it lies on the plate


def test_a_throw_that_would_tear_the_cable_is_refused_and_nothing_moves():
    """8 segments dropped at 2 m/s from rest: the jerk stretches the cable 0.6 % (ultimate 0.5 %) in the
    second time step; the step is refused and the cable stays where it was, above the plate."""
    harness = Harness.from_case(parse_case(plate_case(8, {"time_step": 0.004, "damping": 5.0})))
    assert harness.solve_step()["c"].converged
    before = harness.cables["c"].state.positions.copy()
    report = harness.solve_step(moved_end_and_start(harness, [0.0, 0.0, -0.25 / 3]))["c"]
    assert not report.converged and "stretch" in report.message
    assert np.array_equal(harness.cables["c"].state.positions, before)
    assert harness.time == 0.0


def moved_end_and_start(harness, offset):
    b = harness.cables["c"].boundary
    return {
        "c": CableChange(
            start=Frame(b.start.position + np.asarray(offset), b.start.tangent, b.start.normal),
            end=Frame(b.end.position + np.asarray(offset), b.end.tangent, b.end.normal),
        )
    }


def test_a_strain_wave_past_the_ultimate_strain_refuses_the_whole_step():
    """An end jerked 3 cm in 10 ms (3 m/s) sends an axial wave of strain v / c_axial (1.3 %) down a
    soft cable: refused (ultimate strain 0.2 %) at the time step where it happens, and the harness is
    put back where the step started, motion and time included. The same move made quasi-statically
    stretches it 0.01 % and is accepted."""
    still = Harness.from_case(parse_case(hanging_case(None, ultimate_strain=0.002)))
    assert still.solve_step()["c"].converged
    assert still.solve_step(moved_end(still, [0.0, 0.0, 0.03]))["c"].converged
    assert max_axial_strain(still.cables["c"].model, still.cables["c"].state) < 0.002

    harness = Harness.from_case(parse_case(hanging_case({"time_step": 0.001}, ultimate_strain=0.002)))
    assert harness.solve_step()["c"].converged
    assert harness.solve_step(duration=0.05)["c"].converged
    s = harness.cables["c"]
    before = (s.state.positions.copy(), s.motion.velocity.copy(), s.boundary, harness.time)
    report = harness.solve_step(moved_end(harness, [0.0, 0.0, 0.03]), duration=0.01)["c"]
    assert not report.converged
    assert "t = " in report.message and "stretch" in report.message and "undone" in report.message
    assert np.array_equal(s.state.positions, before[0])
    assert np.array_equal(s.motion.velocity, before[1])
    assert s.boundary is before[2] and harness.time == before[3]


def test_case_format_dynamics_round_trip_and_results():
    doc = hanging_case({"time_step": 0.01, "damping": 1.5})
    doc["steps"] = [
        {"cables": {"c": {"end": {"position": [0.4, 0.02, 0.3], "tangent": [1, 0, 0]}}}, "duration": 0.1},
        {"cables": {}},
    ]
    case = parse_case(doc)
    assert case.solver.dynamics.time_step == 0.01 and case.solver.dynamics.damping == 1.5
    assert case.step_durations == (0.1, 1.0 / 24.0)
    from solver_core import case_to_dict

    assert case_to_dict(parse_case(case_to_dict(case))) == case_to_dict(case)
    result = solve_case(case)
    times = [step["time"] for step in result["steps"]]
    assert times == pytest.approx([0.0, 0.1, 0.1 + 1.0 / 24.0])
    cable = result["steps"][1]["cables"]["c"]
    assert cable["converged"] and cable["time"] == pytest.approx(0.1)
    assert cable["kinetic_energy"] > 0.0 and len(cable["velocities"]) == 21
    assert cable["substeps"] == 10  # 0.1 s in time steps of 0.01 s


@pytest.mark.parametrize(
    "change, field",
    [
        ({"solver": {"dynamics": {"time_step": 0.0}}}, "solver.dynamics.time_step"),
        ({"solver": {"dynamics": {"time_step": -1}}}, "solver.dynamics.time_step"),
        ({"solver": {"dynamics": {"damping": 1.0}}}, "solver.dynamics.time_step"),
        ({"solver": {"dynamics": {"time_step": 0.01, "damping": -1}}}, "solver.dynamics.damping"),
        ({"solver": {"dynamics": {"time_step": 0.01, "mass": 1}}}, "solver.dynamics"),
        ({"solver": {"dynamics": [0.01]}}, "solver.dynamics"),
        ({"solver": {"dynamics": {"time_step": "fast"}}}, "solver.dynamics.time_step"),
        ({"solver": {"dynamics": {"time_step": 1e-9}}}, "steps[0].duration"),
        ({"solver": {"model": "mass_spring", "dynamics": {"time_step": 0.01}}}, "solver.dynamics"),
        ({"steps": [{"cables": {}, "duration": 0.1}]}, "steps[0].duration"),
        ({"solver": {"dynamics": {"time_step": 0.01}}, "steps": [{"duration": 0}]}, "steps[0].duration"),
        ({"solver": {"dynamics": {"time_step": 0.01}}, "steps": [{"duration": "1s"}]}, "steps[0].duration"),
    ],
)
def test_bad_dynamics_input_is_named(change, field):
    doc = hanging_case(None)
    doc["steps"] = [{"cables": {}}]
    doc.update(change)
    with pytest.raises(CaseError) as err:
        parse_case(doc)
    assert field in str(err.value)


def test_junctions_are_refused_in_dynamic_mode():
    from helpers.harnesses import v_on

    doc = v_on([])
    doc["solver"] = {"dynamics": {"time_step": 0.01}}
    with pytest.raises(CaseError, match="solver.dynamics: junctions"):
        parse_case(doc)


def test_duration_outside_a_dynamic_case_or_not_positive_is_refused():
    harness = Harness.from_case(parse_case(hanging_case(None)))
    with pytest.raises(CaseError, match="duration"):
        harness.solve_step(duration=0.1)
    moving = Harness.from_case(parse_case(hanging_case({"time_step": 0.01})))
    moving.solve_step()
    for bad in (0.0, -1.0, float("nan"), "x"):
        with pytest.raises(CaseError, match="duration"):
            moving.solve_step(duration=bad)


@settings(max_examples=40, deadline=None)
@given(
    time_step=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3), st.none()),
    damping=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5)),
    duration=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.booleans()),
)
def test_any_dynamics_input_is_a_case_or_a_named_error(time_step, damping, duration):
    doc = hanging_case({"time_step": time_step, "damping": damping})
    doc["steps"] = [{"cables": {}, "duration": duration}]
    try:
        case = parse_case(doc)
    except CaseError as err:
        assert "solver.dynamics" in str(err) or "steps[0].duration" in str(err)
        return
    d = case.solver.dynamics
    assert 0.0 < d.time_step and 0.0 <= d.damping and math.isfinite(d.damping)
    assert 0.0 < case.step_durations[0] / d.time_step <= 100_000


def test_stages_reproduce_bathes_rule_on_a_damped_oscillator():
    """Every free node of a cable on a linear spring K (each stage's minimum of k/2 |x - p|^2 + K/2 x^2
    is x = k p / (k + K)): the stages' springs and motion updates step each node as a damped oscillator,
    against x(t) = exp(-c t / 2) (cos w_d t + c / (2 w_d) sin w_d t) to within Bathe's error at 100
    steps per period."""
    from solver_core.solve import dynamics

    harness = Harness.from_case(parse_case(hanging_case({"time_step": 0.01})))
    harness.solve_step()
    session = harness.cables["c"]
    free = ~session.model.held_nodes()
    mass = dynamics.node_masses(session)[:, None]
    omega, c, h = 2.0 * math.pi, 0.7, 0.01
    K = omega**2 * mass
    x0 = session.state.positions.copy()
    session.state.positions[free] = 0.0
    session.state.positions[free] += 1.0  # every coordinate of every free node starts at 1
    session.motion = dynamics.Motion.at_rest(len(x0))
    session.motion.acceleration[free] = -(omega**2)  # at rest away from the spring's zero
    x = session.state.positions

    def stage(springs):
        p = np.zeros_like(x)
        k = np.zeros((len(x), 1))
        p[springs.node], k[springs.node, 0] = springs.centre, springs.K[:, 0, 0]
        x[free] = (k * p / (k + K))[free]

    for _ in range(200):
        start = (x.copy(), session.motion)
        springs, predicted = dynamics.trapezoid_springs(session, 0.5 * h, c)
        stage(springs)
        session.motion = dynamics.trapezoid_motion(session, start[1], start[0], predicted, 0.5 * h)
        middle = (x.copy(), session.motion)
        stage(dynamics.backward_springs(session, start, middle, h, c))
        session.motion = dynamics.backward_motion(session, start, middle, h)
    t = 200 * h
    wd = math.sqrt(omega**2 - c**2 / 4.0)
    exact = math.exp(-c * t / 2.0) * (math.cos(wd * t) + c / (2.0 * wd) * math.sin(wd * t))
    assert np.abs(x[free] - exact).max() < 2e-3
    assert np.ptp(x[free]) < 1e-12  # every node alike, whatever its mass


def test_a_step_of_some_cables_holds_the_others_at_rest():
    doc = hanging_case({"time_step": 0.005})
    other = dict(doc["cables"][0], id="d")
    other["start"] = {"position": [0.0, 0.5, 0.3], "tangent": [1.0, 0.0, 0.0]}
    other["end"] = {"position": [0.4, 0.5, 0.3], "tangent": [1.0, 0.0, 0.0]}
    doc["cables"].append(other)
    harness = Harness.from_case(parse_case(doc))
    assert all(r.converged for r in harness.solve_step().values())
    harness.solve_step(duration=0.05)
    assert harness.cables["d"].motion is not None
    kept = harness.cables["d"].state.positions.copy()
    reports = harness.solve_step(moved_end(harness, [0.0, 0.03, 0.0]), cable_ids=["c"], duration=0.05)
    assert list(reports) == ["c"] and reports["c"].converged
    assert np.array_equal(harness.cables["d"].state.positions, kept)
    assert harness.cables["d"].motion is None  # held still: at rest when it moves again
    assert kinetic_energy(harness.cables["c"]) > 0.0
    assert harness.time == pytest.approx(0.1)


def test_checkpoint_restore_puts_back_motion_and_time():
    harness = Harness.from_case(parse_case(hanging_case({"time_step": 0.005})))
    harness.solve_step()
    harness.solve_step(moved_end(harness, [0.0, 0.03, 0.0]), duration=0.05)
    saved = harness.checkpoint(["c"])
    before = (harness.time, harness.cables["c"].motion.velocity.copy(), harness.cables["c"].state.positions.copy())
    harness.solve_step(duration=0.1)
    assert harness.time > before[0]
    harness.restore(saved)
    assert harness.time == before[0]
    assert np.array_equal(harness.cables["c"].motion.velocity, before[1])
    assert np.array_equal(harness.cables["c"].state.positions, before[2])


def test_a_case_built_in_code_steps_with_the_default_duration():
    from dataclasses import replace

    from solver_core import Dynamics, SolverSettings

    parsed = parse_case(dict(hanging_case(None), steps=[{"cables": {}}, {"cables": {}}]))
    case = replace(parsed, solver=SolverSettings(dynamics=Dynamics(0.01, 1.0)))
    result = solve_case(case)
    assert [step["time"] for step in result["steps"]] == pytest.approx([0.0, 1.0 / 24.0, 2.0 / 24.0])
    from solver_core.specs.case import check_dynamics

    with pytest.raises(CaseError, match="junctions"):
        check_dynamics(replace(case, junctions={"J": None}), 0.1)
    with pytest.raises(CaseError, match="mass_spring"):
        check_dynamics(replace(case, solver=SolverSettings("mass_spring", dynamics=Dynamics(0.01))), 0.1)
    harness = Harness.from_case(case)
    harness.solve_step()
    with pytest.raises(CaseError, match="duration"):
        harness.solve_step(duration=1e4)  # a million time steps
