# SPDX-License-Identifier: GPL-3.0-or-later
"""A cable's bending stiffness EI (and torsion stiffness GJ) fitted to bench tests, with the solver in
the loop so that large deflections and gravity are exact.

Tests (a calibration document, ``cable-harness-calibration/1``):

- ``cantilever``: the cable clamped level at one end, hanging under its own weight; measured: the
  height (and optionally the reach) of points at arc lengths ``s`` below the clamp.
- ``three_point``: a beam on two supports ``span`` apart, loaded by ``force`` at mid-span; measured:
  the mid-span ``deflection`` the force adds to the sag under its own weight. Solved as half the beam
  clamped level at mid-span (symmetry) and pushed up at the support by half the force and its weight,
  the beam sliding over the support (its arc length out to it found so that it reaches it); the
  support's push is taken vertical (its tilt with the beam's slope is left out). In the limit of
  small deflections this is F S^3 / (48 EI).
- ``twist``: a straight cable twisted by ``torque`` over ``length``; measured: the ``angle``. A straight
  rod twists linearly: GJ = T L / phi, fitted through the origin.

EI is fitted by Gauss-Newton on log EI over every bending measurement (residuals in metres, each
divided by its ``uncertainty`` where given), started from the small-deflection formula. The fit's
residual and a 95 % interval of EI come with it: from the scatter of the residuals (Student t) where
there are more measurements than one, from the stated uncertainty where there is one.
"""

import math

import numpy as np

from ..errors import CaseError, check_id
from ..geometry.polyline import point_at as _at
from ..specs.case import as_float
from ..specs.materials import MATERIAL_RANGE, PRESETS
from .run_case import solve_case

CALIBRATION_FORMAT = "cable-harness-calibration/1"
GRAVITY = 9.81
SEGMENTS = 40
NU = 0.3  # the section's Poisson ratio where only EI is fitted: it sets GJ and GA, which a bend barely feels
MAX_ITERATIONS = 30
SLIDE_ITERATIONS = 8  # secant steps for where a three-point beam meets its support
# a three-point test's deflection, of its span, beyond which the support's push tilts too far from
# vertical for the model (ASTM D790 stops at 5 % strain, about 17 % of the span for a 4 mm cable on 0.2 m)
MAX_THREE_POINT_DEFLECTION = 0.1
# two-sided 95 % quantiles of Student's t for 1-10 degrees of freedom (beyond: 1.96 + 2.4 / dof)
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


# the range of every length (m), force (N), torque (N m), angle (rad) and mass per length (kg/m) a bench
# test may give: beyond any real test, and narrow enough that the fit's arithmetic stays finite
RANGE = (1e-9, 1e6)


def _number(doc, key, where, positive=True):
    if key not in doc:
        raise CaseError(f"{where}.{key} is missing")
    value = as_float(doc[key], f"{where}.{key}")
    if positive and not value > 0.0:
        raise CaseError(f"{where}.{key} must be positive, got {value:g}")
    if not RANGE[0] <= abs(value) <= RANGE[1] and value != 0.0:
        raise CaseError(f"{where}.{key} = {value:g} is out of range ({RANGE[0]:g} to {RANGE[1]:g} in SI units)")
    return value


def _keys(doc, allowed, where) -> None:
    unknown = sorted(str(k) for k in doc if k not in allowed)
    if unknown:
        raise CaseError(f"{where}.{unknown[0]} is not a known key (known: {', '.join(allowed)})")


def _section(EI: float, diameter: float, linear_density: float) -> dict:
    """The material of a solid round section of this EI and mass per length."""
    return {"E": EI / (math.pi * diameter**4 / 64.0), "nu": NU, "linear_density": linear_density}


def _cantilever_case(EI, diameter, linear_density, length, tip_force=0.0, gravity=GRAVITY) -> dict:
    cable = {
        "id": "test",
        "length": length,
        "diameter": diameter,
        "material": _section(EI, diameter, linear_density),
        "segments": SEGMENTS,
        "start": {"position": [0.0, 0.0, 0.0], "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        "end": None,
    }
    if tip_force:
        cable["loads"] = [{"s": length, "force": [0.0, 0.0, tip_force]}]
    return {
        "format": "cable-harness-case/1",
        "gravity": [0.0, 0.0, -gravity],
        "cables": [cable],
        "solver": {"tolerance": 1e-10, "max_iterations": 400},
    }


def _solved_nodes(case: dict) -> tuple:
    """(nodes, arc lengths) of the test cable at rest; CaseError where it does not converge."""
    result = solve_case(case)["steps"][0]["cables"]["test"]
    if not result["converged"]:
        raise CaseError(f"calibration: the solver found no rest for a trial EI ({result.get('message')})")
    return np.asarray(result["nodes"]), np.asarray(result["arc_lengths"])


class _Cantilever:
    def __init__(self, doc, where, diameter, linear_density):
        _keys(doc, ("kind", "length", "points", "uncertainty"), where)
        self.where = where
        self.length = _number(doc, "length", where)
        self.diameter, self.linear_density = diameter, linear_density
        points = doc.get("points")
        if not isinstance(points, list) or not points:
            raise CaseError(f"{where}.points must be a non-empty list of {{s, z}} (and x) measurements")
        self.points = []
        for k, p in enumerate(points):
            at = f"{where}.points[{k}]"
            if not isinstance(p, dict):
                raise CaseError(f"{at} must be an object {{s, z}}")
            _keys(p, ("s", "x", "z"), at)
            s = _number(p, "s", at)
            if s > self.length:
                raise CaseError(f"{at}.s = {s:g} lies beyond the cable's length {self.length:g}")
            x = _number(p, "x", at, positive=False) if "x" in p else None
            z = _number(p, "z", at, positive=False)
            if z > 0.0:
                raise CaseError(f"{at}.z = {z:g}: a cantilever sags, z is at most 0 (m below the clamp)")
            if math.hypot(x or 0.0, z) > s * (1.0 + 1e-6):
                raise CaseError(f"{at} lies further from the clamp than the {s:g} m of cable before it")
            self.points.append((s, x, z))
        if all(z == 0.0 for _s, _x, z in self.points):
            raise CaseError(f"{where}.points: no point sags (z = 0 everywhere): nothing to fit EI to")
        self.uncertainty = _number(doc, "uncertainty", where) if "uncertainty" in doc else None

    def guess(self) -> float:
        """EI from the small-deflection sag of a uniformly loaded cantilever at the most bent point:
        z(s) = -w s^2 (6 L^2 - 4 L s + s^2) / (24 EI)."""
        w, L = self.linear_density * GRAVITY, self.length
        s, _x, z = max(self.points, key=lambda p: abs(p[2]))
        return w * s * s * (6 * L * L - 4 * L * s + s * s) / (24.0 * max(abs(z), 1e-12))

    def residuals(self, EI) -> list:
        nodes, arc = _solved_nodes(_cantilever_case(EI, self.diameter, self.linear_density, self.length))
        out = []
        for s, x, z in self.points:
            p = _at(nodes, arc, s)
            out.append(p[2] - z)
            if x is not None:
                out.append(p[0] - x)
        return out


class _ThreePoint:
    def __init__(self, doc, where, diameter, linear_density):
        _keys(doc, ("kind", "span", "force", "deflection", "uncertainty"), where)
        self.where = where
        self.span = _number(doc, "span", where)
        self.force = _number(doc, "force", where)
        self.deflection = _number(doc, "deflection", where)
        if self.deflection > MAX_THREE_POINT_DEFLECTION * self.span:
            raise CaseError(
                f"{where}.deflection is {100 * self.deflection / self.span:.0f} % of the span: beyond "
                f"{100 * MAX_THREE_POINT_DEFLECTION:.0f} % the support's tilt matters; use a cantilever test"
            )
        self.diameter, self.linear_density = diameter, linear_density
        self.uncertainty = _number(doc, "uncertainty", where) if "uncertainty" in doc else None

    def guess(self) -> float:
        return self.force * self.span**3 / (48.0 * self.deflection)

    def residuals(self, EI) -> list:
        return [self._rise(EI, 0.5 * self.force) - self._rise(EI, 0.0) - self.deflection]

    def _rise(self, EI, extra) -> float:
        """How far the support lies above mid-span: half the beam clamped level at mid-span, pushed up at
        its support by half the load and of its weight; the beam slides over the support, so the arc
        length a out to it is the one that reaches it (x = span / 2, by the secant method)."""
        half = 0.5 * self.span

        def tip(a):
            weight = self.linear_density * GRAVITY * a
            case = _cantilever_case(EI, self.diameter, self.linear_density, a, tip_force=weight + extra)
            return _solved_nodes(case)[0][-1]

        a0 = half
        p0 = tip(a0)
        a1 = min(a0 + (half - p0[0]), 2.0 * half)
        p1 = tip(a1)
        for _ in range(SLIDE_ITERATIONS):
            if abs(p1[0] - half) <= 1e-9 * half or p1[0] == p0[0]:
                break
            a_next = a1 + (half - p1[0]) * (a1 - a0) / (p1[0] - p0[0])
            a0, a1, p0 = a1, min(max(a_next, half), 2.0 * half), p1
            p1 = tip(a1)
        if abs(p1[0] - half) > 1e-6 * half:
            raise CaseError(f"calibration: at EI = {EI:.3g} N m^2 the beam sags off its supports")
        return float(p1[2])


class _Twist:
    def __init__(self, doc, where):
        _keys(doc, ("kind", "length", "torque", "angle"), where)
        self.length = _number(doc, "length", where)
        self.torque = _number(doc, "torque", where)
        self.angle = _number(doc, "angle", where)


def _check_guess(EI: float, diameter: float, where: str) -> None:
    """The small-deflection EI a bending test asks for must be a cable's: its modulus E = EI / I within
    what the solver takes (a zero or upward sag, or numbers in the wrong units, are not)."""
    inertia = math.pi * diameter**4 / 64.0
    low, high = MATERIAL_RANGE[0] * inertia, MATERIAL_RANGE[1] * inertia
    if not (math.isfinite(EI) and low <= EI <= high):
        raise CaseError(
            f"{where}: its deflection asks for EI = {EI:.3g} N m^2, outside {low:.3g} to {high:.3g} for a "
            f"{diameter * 1e3:g} mm section (check the units: m, N, kg/m; and that it sags)"
        )


def _torsion(twists, EI, diameter) -> tuple:
    """(GJ, its report): fitted to the twist tests, else a solid round section's from EI."""
    if not twists:
        return EI / (1.0 + NU), {"assumed": f"EI / (1 + {NU}) (no twist test)"}  # the assumed Poisson ratio
    GJ, twist_report = _fit_twist(twists)
    polar = math.pi * diameter**4 / 32.0
    if not (math.isfinite(GJ) and MATERIAL_RANGE[0] * polar <= GJ <= MATERIAL_RANGE[1] * polar):
        raise CaseError(f"tests: the twist tests give GJ = {GJ:.3g} N m^2, no cable's; check their units")
    return GJ, twist_report


def _reference(doc) -> str | None:
    """The document's ``reference`` (where the measurements come from), checked; None if not given."""
    reference = doc.get("reference")
    if reference is not None and (not isinstance(reference, str) or not reference.strip() or len(reference) > 2000):
        raise CaseError("calibration.reference must be a text of 1 to 2000 characters (where the tests come from)")
    return reference


def fit_stiffness(doc: dict) -> dict:
    """Fit EI (and GJ, given twist tests) to a calibration document; returns the material entry for a
    library (material_library.py) with the fit's report under ``fit``."""
    if not isinstance(doc, dict) or doc.get("format") != CALIBRATION_FORMAT:
        raise CaseError(f"format must be {CALIBRATION_FORMAT!r}")
    _keys(doc, ("format", "name", "diameter", "linear_density", "tests", "reference"), "calibration")
    reference = _reference(doc)
    name = doc.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise CaseError("name must be a text of 1 to 100 characters (the material's name in the library)")
    check_id(name, "name")
    if name in PRESETS and not PRESETS[name].source.startswith("measured"):
        raise CaseError(f"name {name!r} is a built-in preset's; give the measured material a name of its own")
    diameter = _number(doc, "diameter", "calibration")
    if diameter > 1.0:
        raise CaseError(f"calibration.diameter = {diameter:g} m: at most 1 m")
    linear_density = _number(doc, "linear_density", "calibration")
    tests = doc.get("tests")
    if not isinstance(tests, list) or not tests:
        raise CaseError("tests must be a non-empty list of cantilever, three_point or twist tests")
    bends, twists = [], []
    for k, t in enumerate(tests):
        where = f"tests[{k}]"
        kind = t.get("kind") if isinstance(t, dict) else None
        if kind == "cantilever":
            bends.append(_Cantilever(t, where, diameter, linear_density))
        elif kind == "three_point":
            bends.append(_ThreePoint(t, where, diameter, linear_density))
        elif kind == "twist":
            twists.append(_Twist(t, where))
        else:
            raise CaseError(f"{where}.kind must be 'cantilever', 'three_point' or 'twist', got {kind!r}")
    if not bends:
        raise CaseError("tests: at least one cantilever or three_point test is needed to fit EI")
    for test in bends:
        _check_guess(test.guess(), diameter, test.where)
    try:
        EI, report = _fit_bending(bends)
    except CaseError:
        raise CaseError(
            "calibration: the fit left the range of stiffnesses the solver takes (do the tests describe one "
            "cable? check their units)"
        ) from None
    entry = {"EI": EI, "linear_density": linear_density, "diameter": diameter, "source": "measured"}
    entry["GJ"], report["GJ"] = _torsion(twists, EI, diameter)
    # the stretch and shear a solid section of this diameter and EI would have (a bend barely feels them)
    area = math.pi * diameter**2 / 4.0
    E = EI / (math.pi * diameter**4 / 64.0)
    entry["EA"] = E * area
    entry["GA"] = 6.0 * (1.0 + NU) / (7.0 + 6.0 * NU) * E / (2.0 * (1.0 + NU)) * area
    if reference is not None:
        report["reference"] = reference
    entry["fit"] = report
    return entry


def _fit_bending(tests) -> tuple:
    """Gauss-Newton on p = log EI over all bending residuals (each / its uncertainty where given)."""
    p = float(np.mean([math.log(t.guess()) for t in tests]))  # the small-deflection formulas' EI

    def weighted(p):
        out = []
        for t in tests:
            r = np.asarray(t.residuals(math.exp(p)))
            out.append(r / t.uncertainty if t.uncertainty else r)
        return np.concatenate(out)

    r = weighted(p)
    iterations = 0
    for iterations in range(1, MAX_ITERATIONS + 1):
        h = 1e-4
        J = (weighted(p + h) - weighted(p - h)) / (2.0 * h)
        JJ = float(J @ J)
        if JJ == 0.0:
            raise CaseError("calibration: the measurements do not depend on EI (are the deflections zero?)")
        step = -float(J @ r) / JJ
        step = max(-1.0, min(1.0, step))
        cost = float(r @ r)
        while True:  # halve the step until the fit improves (Gauss-Newton with a line search)
            try:
                trial = weighted(p + step)
            except CaseError:  # a trial stiffness the test cannot take (it sags off its supports)
                trial = None
            if trial is not None and float(trial @ trial) <= cost:
                break
            if abs(step) < 1e-12:
                trial = r
                break
            step *= 0.5
        p, r = p + step, trial
        if abs(step) < 1e-9:
            break
    J = (weighted(p + 1e-4) - weighted(p - 1e-4)) / 2e-4
    n = r.shape[0]
    weighted_given = all(t.uncertainty for t in tests)
    report = {"tests": len(tests), "measurements": n, "iterations": iterations}
    # the residuals in metres: ``r`` itself unless some are divided by their uncertainty
    raw = r if not any(t.uncertainty for t in tests) else np.concatenate([t.residuals(math.exp(p)) for t in tests])
    report["residual_rms_m"] = float(np.sqrt(np.mean(raw**2)))
    se = None
    if n > 1:
        dof = n - 1
        sigma2 = float(r @ r) / dof
        se = math.sqrt(sigma2 / float(J @ J))
        t95 = T95[dof - 1] if dof <= len(T95) else 1.96 + 2.4 / dof
    elif weighted_given:
        se, t95 = 1.0 / math.sqrt(float(J @ J)), 1.96  # residuals are in units of the uncertainty
    if se is not None and math.isfinite(se) and t95 * se < 5.0:
        report["EI_interval_95"] = [math.exp(p - t95 * se), math.exp(p + t95 * se)]
    elif se is not None:
        report["EI_interval_95"] = None
        report["note"] = "the measurements do not determine EI (its 95 % interval spans more than 100x)"
    else:
        report["EI_interval_95"] = None
        report["note"] = "one measurement fits exactly: give its uncertainty (m) for a confidence interval"
    return math.exp(p), report


def _fit_twist(tests) -> tuple:
    """GJ through the origin of torque against angle per length: GJ = sum(T phi / L) / sum((phi / L)^2)."""
    rate = np.array([t.angle / t.length for t in tests])
    torque = np.array([t.torque for t in tests])
    GJ = float(rate @ torque / (rate @ rate))
    report = {"tests": len(tests), "residual_rms_Nm": float(np.sqrt(np.mean((GJ * rate - torque) ** 2)))}
    if len(tests) > 1:
        dof = len(tests) - 1
        se = math.sqrt(float(((GJ * rate - torque) ** 2).sum()) / dof / float(rate @ rate))
        t95 = T95[dof - 1] if dof <= len(T95) else 1.96 + 2.4 / dof
        report["GJ_interval_95"] = [GJ - t95 * se, GJ + t95 * se]
    return GJ, report
