# SPDX-License-Identifier: GPL-3.0-or-later
"""Coulomb friction (lagged, smoothed) against closed-form sticking and sliding limits."""

import math

import numpy as np
import pytest
from helpers.cases import cable, case, first, solve
from helpers.contact_scenes import (
    TABLE,
    R,
    no_penetration,
)
from helpers.drapes import drape_case, far_side


class TestFriction:
    """A cable lying across an incline, clamped at one end: it holds while tan(theta) < mu_s, and once it
    slips it sags in the incline's plane as a cantilever under w (sin(theta) - mu_d cos(theta))."""

    E = 2e9
    L = 0.3

    def _solve(self, theta_deg, mu_s, mu_d):
        th = math.radians(theta_deg)
        n = np.array([0, -math.sin(th), math.cos(th)])
        doc = case(
            cable(
                length=self.L,
                segments=60,
                material={"E": self.E, "nu": 0.3, "density": 1500},
                start={"position": (R * n).tolist(), "tangent": [1, 0, 0], "normal": n.tolist()},
            ),
            obstacles=[{"type": "plane", "point": [0, 0, 0], "normal": n.tolist()}],
            contact={"friction_static": mu_s, "friction_dynamic": mu_d},
        )
        result = first(solve(doc))
        assert result["converged"]
        no_penetration(result, doc)
        downslope = np.array([0, -math.cos(th), -math.sin(th)])
        return float(np.array(result["nodes"][-1]) @ downslope), th

    def _cantilever(self, th, mu_d):
        w = 1500 * math.pi * 0.004**2 / 4 * 9.81
        EI = self.E * math.pi * 0.004**4 / 64
        return w * (math.sin(th) - mu_d * math.cos(th)) * self.L**4 / (8 * EI)

    def test_holds_below_the_static_limit(self):
        for theta, mu_s in ((10, 0.3), (20, 0.5)):
            deflection, th = self._solve(theta, mu_s, 0.2)
            assert deflection < 0.05 * self._cantilever(th, 0.0)  # only the stick compliance

    def test_slips_above_the_static_limit_against_dynamic_friction(self):
        for theta in (20, 30):
            deflection, th = self._solve(theta, 0.3, 0.2)
            assert deflection == pytest.approx(self._cantilever(th, 0.2), rel=0.01)

    def test_frictionless_slides_freely(self):
        deflection, th = self._solve(10, 0.0, 0.0)
        assert deflection == pytest.approx(self._cantilever(th, 0.0), rel=0.01)

    def test_friction_makes_the_result_depend_on_the_path(self):
        # The start connector of a cable lying on a table is moved sideways and back. Frictionless,
        # the cable just follows and ends where it began; with friction the far part holds on while
        # the near part bends, and the way back leaves it bent: the result depends on the path.
        def round_trip(mu):
            doc = case(
                cable(
                    length=0.3, segments=60, start={"position": [0, 0, R], "tangent": [1, 0, 0], "normal": [0, 0, 1]}
                ),
                obstacles=[TABLE],
                contact={"friction_static": mu, "friction_dynamic": mu},
            )
            moves = [[0, 0.01, R], [0, 0.02, R], [0, 0.01, R], [0, 0.0, R]]
            doc["steps"] = [
                {"cables": {"W1": {"start": {"position": p, "tangent": [1, 0, 0], "normal": [0, 0, 1]}}}} for p in moves
            ]
            steps = solve(doc)["steps"]
            assert all(s["cables"]["W1"]["converged"] for s in steps)
            return np.array(steps[0]["cables"]["W1"]["nodes"]), np.array(steps[-1]["cables"]["W1"]["nodes"])

        before, after = round_trip(0.0)
        assert np.abs(after - before).max() < 1e-6
        before, after = round_trip(0.5)
        assert np.abs(after - before).max() > 1e-3


INCLINE = math.radians(20.0)
WIRE_MASS_PER_LENGTH = 7958.0 * math.pi * 0.002**2  # helpers.cases.WIRE, 4 mm


def _incline_case(mu_static, mu_dynamic):
    """A 0.3 m cable laid down a 20 degree incline from its top, held there by a clamp."""
    down = np.array([-math.cos(INCLINE), 0.0, -math.sin(INCLINE)])
    normal = np.array([-math.sin(INCLINE), 0.0, math.cos(INCLINE)])
    top = 0.3 * -down + 0.002 * normal
    start = {"position": top.tolist(), "tangent": down.tolist(), "normal": normal.tolist()}
    doc = case(
        cable(length=0.3, segments=30, start=start, route=[top.tolist(), (top + 0.3 * down).tolist()]),
        obstacles=[{"type": "plane", "point": [0.0, 0.0, 0.0], "normal": normal.tolist()}],
        contact={"friction_static": mu_static, "friction_dynamic": mu_dynamic},
    )
    return doc, down, normal


def _contact_forces(result):
    """(the sum of the contacts' normal forces, of their friction) of a cable's result."""
    normal_forces = sum((np.array(c["force"]) for c in result["contacts"]), np.zeros(3))
    friction = sum((np.array(c.get("friction", [0.0, 0.0, 0.0])) for c in result["contacts"]), np.zeros(3))
    return normal_forces, friction


def _out_of_balance(result, weight):
    """|weight + end forces + contacts' normal forces + friction| of a cable's result (N)."""
    ends = sum((np.array(e["force"]) for e in result["end_forces"].values()), np.zeros(3))
    return float(np.linalg.norm(weight + ends + sum(_contact_forces(result))))


@pytest.mark.parametrize("mu", [(0.6, 0.5), (0.2, 0.15)], ids=["sticking", "sliding"])
def test_every_force_is_reported_and_they_balance_the_weight(mu):
    """Weight, the clamp's force, the contacts' normal forces and their friction sum to zero (1e-6 of
    the weight), sticking (mu_s 0.6 > tan 20 deg) and held against sliding (0.2 < tan 20 deg)."""
    doc, down, normal = _incline_case(*mu)
    result = first(solve(doc))
    assert result["converged"]
    weight = WIRE_MASS_PER_LENGTH * 0.3 * np.array([0.0, 0.0, -9.81])
    normal_forces, friction = _contact_forces(result)
    assert _out_of_balance(result, weight) <= 1e-6 * np.linalg.norm(weight)
    # friction acts along the incline, up it (against the weight's pull down it), within mu N
    assert abs(friction @ normal) <= 1e-9 and friction @ down < 0.0
    assert np.linalg.norm(friction) <= mu[0] * np.linalg.norm(normal_forces) * (1 + 1e-9)
    for c in result["contacts"]:
        f = np.array(c["friction"])
        assert np.linalg.norm(f) <= mu[0] * np.linalg.norm(c["force"]) * (1 + 1e-6) + 1e-12


# Drapes drawn as users draw them (helpers/drapes.py, seeds (7, i) of bench_robustness's first-solve
# study) that slide off their obstacle frictionless during the first solve's descent in pseudo-time
FAR_WITHOUT_FRICTION = (114, 120, 181, 224, 288)  # a plate, a box, three spheres; 10-74 segments


def _drape(seed, mu):
    rng = np.random.default_rng((7, seed))
    snapped = bool(rng.random() < 0.5)
    drawn = drape_case(rng, clear=1e-4 if snapped else None)
    drawn["case"]["cables"][0]["id"] = "W1"
    if mu:
        drawn["case"]["contact"] = {"friction_static": mu, "friction_dynamic": 2.0 * mu / 3.0}
    return drawn


@pytest.mark.parametrize("seed", FAR_WITHOUT_FRICTION)
def test_friction_holds_a_drape_where_it_lands_during_its_first_solve(seed):
    """A route drawn clear of a part touches it only on the way down: friction must act on the contacts
    that close during the solve's descent, not only on those present when it starts. Frictionless,
    none of these drapes rests on the side it was drawn over (the drawn side's equilibrium is unstable:
    they slide off sideways and hang under their obstacle, or run out of iterations on the way); with
    mu_s = 0.3 each stays there, every contact within its friction cone, and the reported forces
    balance the weight (1e-6)."""
    frictionless = _drape(seed, 0.0)
    result = first(solve(frictionless["case"]))
    obstacle = frictionless["case"]["obstacles"][0]
    assert not result["converged"] or far_side(np.array(result["nodes"]), obstacle, "over")

    drawn = _drape(seed, 0.3)
    doc = drawn["case"]
    result = first(solve(doc))
    assert result["converged"]
    assert not far_side(np.array(result["nodes"]), obstacle, drawn["side"])
    assert result["contacts"], "held by friction, so touching"
    cable_doc = doc["cables"][0]
    weight = cable_doc["material"]["density"] * math.pi * cable_doc["diameter"] ** 2 / 4.0 * cable_doc["length"]
    weight = weight * np.array([0.0, 0.0, -9.81])
    assert _out_of_balance(result, weight) <= 1e-6 * np.linalg.norm(weight)
    for c in result["contacts"]:
        f = np.array(c.get("friction", [0.0, 0.0, 0.0]))
        assert np.linalg.norm(f) <= 0.3 * np.linalg.norm(c["force"]) * (1 + 1e-6) + 1e-12
