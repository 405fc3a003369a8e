# SPDX-License-Identifier: GPL-3.0-or-later
"""One cable solved by a model other than the Newton-solved rod (solver.model "mass_spring",
"kirchhoff_cg", "cosserat_pbd"): its own rest search from the cable's last state with the holders
moved, turned into the SolveReport the harness keeps (converged only at a verified minimum)."""

import numpy as np

from ..contact.contact import PENETRATION_TOLERANCE
from ..rod.rod_model import Boundary
from ..rod.rod_state import apply_boundary, framed_state
from ..solve.equilibrium import SOLVE_BUDGET, SolveReport, _relative_residual
from .cosserat_pbd import solve_pbd
from .kirchhoff_cg import readings as kirchhoff_readings
from .kirchhoff_cg import solve_kirchhoff
from .mass_spring import is_minimum, readings
from .mass_spring_rest import solve_mass_spring


def solve_with_model(model_name: str, session, target: Boundary, max_iterations: int, predictor=None) -> SolveReport:
    """``session``'s cable held at ``target``, solved by ``model_name`` (not "cosserat"); ``predictor``:
    the nodes' secant displacement for this step (predictor.py) or None."""
    if model_name == "mass_spring" and not session.interactions.settings.cable_cable:
        return solve_mass_spring_cable(session, target, max_iterations, predictor)
    if session.interactions.uses_contact:
        return refused_for_contact(session, model_name)
    solve = {
        "kirchhoff_cg": solve_kirchhoff_cable,
        "cosserat_pbd": solve_pbd_cable,
    }[model_name]
    return solve(session, target, max_iterations)


def solve_mass_spring_cable(session, target: Boundary, max_iterations: int, predictor=None) -> SolveReport:
    """The cable as Lv 2017's mass-spring chain (mass_spring.py; its own step budget, not
    ``max_iterations``), relaxed from its last state moved by the secant ``predictor`` where there is
    one, with the held points moved (its first: from its initial guess); its readings kept for the
    results. Converged: every free point's force within the rod model's force tolerance, at a minimum."""
    model = session.model
    start = session.state.copy()  # before the first solve: the initial guess, sagging with the loads
    apply_boundary(model, start, target)
    guess = None
    if predictor is not None and not session.interactions.uses_contact:  # a guess may lie in an obstacle
        # a drag's next rest state is near the last one moved as the last step moved it: the
        # relaxation then walks the difference only (80 points, 2 mm end moves: 27-36k -> 18-23k steps)
        guess = session.state.copy()
        guess.positions += predictor
        apply_boundary(model, guess, target)
        guess = guess.positions
    free = ~model.held_nodes()
    tolerance = float(model.dof_tol[model.node_dof[free]].min()) if free.any() else 0.0
    interactions = session.interactions
    contact = None
    if interactions.uses_contact:  # Lv 2017, Sec. 3.2 (mass_spring_contact.py)
        settings = interactions.settings
        obstacles = interactions.obstacle_arrays()
        contact = (obstacles, interactions.radius, settings.friction_static, settings.friction_dynamic)
    if contact is not None and interactions.crosses_between(session.state, start):
        # the holders' jump itself carries a link through a face: the relaxation would start beyond it
        return _refused_jump(session, model)
    rest = solve_mass_spring(model, start.positions, target, tolerance, guess=guess, contact=contact)
    x, converged, steps, largest, ms, arrays = rest[:6]
    state, _roll = framed_state(model, target, x)
    which = (
        f"the mass-spring chain's Newton solve, stopped after {steps} iterations and explicit steps,"
        if rest.newton
        else f"the mass-spring relaxation, stopped after {steps} steps,"
    )
    message = _rest_message(converged, largest, tolerance, which)
    if largest == np.inf:  # relax's sign of a link swept through a face
        message = (
            "the mass-spring chain passed a link through an obstacle on its way to rest (its contact acts at "
            "its points, Lv 2017 Sec. 3.2): use more segments or the cosserat model"
        )
    if converged and contact is not None:
        # the chain's contact acts at its points: a link may still cut an edge or a thin plate
        depth = interactions.deepest_penetration(state)
        if depth > PENETRATION_TOLERANCE * interactions.radius:
            converged = False
            message = (
                f"the mass-spring chain came to rest with a link {depth * 1e3:.3g} mm into an obstacle (its "
                f"contact acts at its points, Lv 2017 Sec. 3.2): use more segments or the cosserat model"
            )
    # a dead moment is not conservative in 3-D (as for the rod: its stability is left unjudged)
    judged = not arrays.couple.any()
    # a positive definite stiffness at the rest state is a minimum; where it is not, the difference
    # Hessian's own test allows for its noise (minimum_check.py)
    stable = ((rest.minimum or is_minimum(x, arrays, contact)) if judged else None) if converged else False
    if converged and stable is False:
        converged = False
        message = "the mass-spring chain came to rest on a saddle of its energy: not an equilibrium to keep"
    passed_through = largest == np.inf  # no force to report: the state is not kept
    residual = 0.0 if passed_through else largest / model.force_scale
    report = SolveReport(state, converged, steps, residual, 0, ms, message)
    report.stable = stable
    # the last two: a step refused afterwards (ultimate strain) keeps reporting the state before it
    session.readings = ((state, readings(model, x, arrays, contact)), *(session.readings or ())[:1])
    return report


def _refused_jump(session, model) -> SolveReport:
    report = SolveReport(
        session.state.copy(),
        False,
        0,
        0.0,
        0,
        0.0,
        "the holders' move carries a link of the mass-spring chain through an obstacle: move them in "
        "smaller steps, or use the cosserat model",
    )
    report.stable = False
    return report


def refused_for_contact(session, model_name: str) -> SolveReport:
    """A model without contact next to obstacles handed over after the case was read (the Blender
    layer's colliders): not solved, so that the cable cannot pass through them."""
    report = SolveReport(
        session.state.copy(),
        False,
        0,
        0.0,
        0,
        0.0,
        f'solver.model "{model_name}" has no contact, and there are obstacles (colliders) near the cable: '
        f"not solved, so that it cannot pass through them; use the cosserat model",
    )
    report.refused = True
    return report


def solve_kirchhoff_cable(session, target: Boundary, max_iterations: int) -> SolveReport:
    """The cable as Linn et al.'s Kirchhoff rod (kirchhoff_cg.py), minimised by nonlinear CG from its
    last state with the held nodes moved (its first: from its initial guess), the end twist followed
    from its last solve; its readings kept for the results. Converged: every free node's force
    within the rod model's force tolerance, at a minimum."""
    model = session.model
    start = session.state.copy()
    apply_boundary(model, start, target)
    free = ~model.held_nodes()
    tolerance = float(model.dof_tol[model.node_dof[free]].min()) if free.any() else 0.0
    x, converged, stable, iterations, largest, ms, arrays = solve_kirchhoff(
        model,
        start.positions,
        target,
        tolerance,
        session.twist if session.solved else None,
        SOLVE_BUDGET * max_iterations,
    )
    own = kirchhoff_readings(model, x, arrays)
    state, _roll = framed_state(model, target, x, own["twist"] if arrays.twist_k > 0.0 else None)
    message = _rest_message(
        converged, largest, tolerance, f"the nonlinear CG minimisation, stopped after {iterations} iterations,"
    )
    if converged and not stable:
        converged = False
        message = "the Kirchhoff rod came to rest on a saddle of its energy: not an equilibrium to keep"
    report = SolveReport(state, converged, iterations, largest / model.force_scale, 0, ms, message)
    report.stable = stable
    session.readings = ((state, own), *(session.readings or ())[:1])
    return report


def solve_pbd_cable(session, target: Boundary, max_iterations: int) -> SolveReport:
    """The cable as Chen et al.'s Cosserat rod solved by position-based dynamics (cosserat_pbd.py):
    XPBD steps damped to rest from its last state with the held nodes and frames moved (its first:
    from its initial guess). Its unknowns and energy are the rod's, so its results are built as
    the rod's. Converged: every free dof's force within the rod model's tolerance, at a minimum
    of the rod's energy (its Hessian)."""
    model = session.model
    start = session.state.copy()
    apply_boundary(model, start, target)
    state, converged, stable, steps, projections, ratio, ms = solve_pbd(model, start, SOLVE_BUDGET * max_iterations)
    if converged and not stable:
        converged = False
        message = "the position-based Cosserat rod came to rest on a saddle of its energy: not an equilibrium"
    elif converged:
        message = "converged"
    elif not np.isfinite(ratio):
        message = "the position-based Cosserat rod blew up: its forces are not finite"
    else:
        message = (
            f"the position-based Cosserat rod did not come to rest in {steps} steps ({projections} "
            f"projections): largest force {ratio:.3g} times its tolerance"
        )
    report = SolveReport(state, converged, projections, _relative_residual(model, ratio), 0, ms, message)
    report.stable = stable
    return report


def _rest_message(converged: bool, largest: float, tolerance: float, which: str) -> str:
    """A model without Newton's method (mass_spring, kirchhoff_cg): what its rest search came to."""
    if converged:
        return "converged"
    if not np.isfinite(largest):
        return f"{which} blew up: its forces are not finite"
    return f"{which} did not come to rest: largest force on a free node {largest:.3g} N, tolerance {tolerance:.3g} N"
