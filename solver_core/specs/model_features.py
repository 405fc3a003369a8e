# SPDX-License-Identifier: GPL-3.0-or-later
"""What each solver model can express: a CaseError naming the first feature of a case it cannot (a
case read, a cable added to a harness, or a dynamic step asked of it)."""

import numpy as np

from ..errors import CaseError, show

KIRCHHOFF_MAX_SEGMENTS = 400


def check_dynamics_features(model, junctions) -> None:
    """CaseError where the time integrator (dynamics.py) does not cover ``model`` or junctions."""
    if model not in ("cosserat", "cosserat_pbd"):
        raise CaseError(
            f"solver.dynamics: solver.model {show(model)} is quasi-static here; dynamics is solved with the "
            f"cosserat model (implicit time steps) or cosserat_pbd (XPBD steps)"
        )
    if junctions:
        raise CaseError(
            "solver.dynamics: junctions (branched harnesses) are solved quasi-statically only; "
            "remove solver.dynamics or the junctions"
        )


def _refuse_what_only_the_rod_has(where, cables, obstacles, contact, junctions, rest_shapes=False) -> None:
    """CaseError for contact, junctions and (unless ``rest_shapes``) rest shapes, which only the
    Cosserat rod models."""
    if obstacles:
        raise CaseError(f"obstacles: {where} has no contact with obstacles; use the cosserat model")
    if contact.get("cable_cable"):
        raise CaseError(f"contact.cable_cable: {where} has no contact between cables; use the cosserat model")
    if junctions:
        raise CaseError(f"junctions: {where} does not model junctions; use the cosserat model")
    for c in cables:
        if c.rest is not None and not rest_shapes:
            raise CaseError(f"cables.{c.id}.rest: {where} has no rest curvature (a pre-formed cable)")


def _check_mass_spring_features(cables, obstacles, contact, junctions) -> None:
    """CaseError naming the first feature of a case that Lv 2017's mass-spring chain (solver.model
    "mass_spring") does not express here."""
    where = 'solver.model "mass_spring" (Lv 2017 mass-spring chain)'
    # its contact with obstacles is the paper's (Sec. 3.2, mass_spring_contact.py); not with cables
    _refuse_what_only_the_rod_has(where, cables, (), contact, junctions)
    for c in cables:
        for k, clip in enumerate(c.clips):
            if clip.kind == "sliding" or clip.stiffness is not None or not clip.length > 0.0:
                raise CaseError(
                    f"cables.{c.id}.clips[{k}]: {where} holds a clip by its two end points (Eqs. 16-17): "
                    f"a fixed, rigid clip with a length; not a sliding, compliant or zero-length one"
                )


def check_model_features(model, cables, obstacles, contact, junctions) -> None:
    """CaseError naming the first feature of these cables and case settings that ``model`` does not
    express (a case read, or a cable added to a harness afterwards)."""
    if model == "mass_spring":
        _check_mass_spring_features(cables, obstacles, contact, junctions)
    if model == "kirchhoff_cg":
        _check_kirchhoff_features(cables, obstacles, contact, junctions)
    if model == "cosserat_pbd":
        _check_pbd_features(cables, obstacles, contact, junctions)


def _refuse_clips_and_moments(where, cables) -> None:
    for c in cables:
        if c.clips:
            raise CaseError(
                f"cables.{c.id}.clips: {where} holds a cable by its end frames only; use the cosserat model"
            )
        for k, load in enumerate(c.loads):
            if np.any(load.moment):
                raise CaseError(
                    f"cables.{c.id}.loads[{k}].moment: {where} takes point forces only (a dead moment is not "
                    f"the derivative of an energy in three dimensions)"
                )


def _check_pbd_features(cables, obstacles, contact, junctions) -> None:
    """CaseError naming the first feature of a case that Chen et al.'s Cosserat rod solved by
    position-based dynamics (solver.model "cosserat_pbd") does not express: the paper holds a cable
    by its end frames under gravity and point forces; its constraints carry rest shapes (Eq. 13)."""
    where = 'solver.model "cosserat_pbd" (Chen 2023 position-based Cosserat rod)'
    _refuse_what_only_the_rod_has(where, cables, obstacles, contact, junctions, rest_shapes=True)
    _refuse_clips_and_moments(where, cables)


def _check_kirchhoff_features(cables, obstacles, contact, junctions) -> None:
    """CaseError naming the first feature of a case that Linn et al.'s Kirchhoff rod minimised by
    nonlinear CG (solver.model "kirchhoff_cg") does not express: the paper holds a rod by its two end
    frames, under gravity and point forces, and nothing else."""
    where = 'solver.model "kirchhoff_cg" (Linn et al. Kirchhoff rod)'
    _refuse_what_only_the_rod_has(where, cables, obstacles, contact, junctions)
    for c in cables:
        if c.segments > KIRCHHOFF_MAX_SEGMENTS:
            raise CaseError(
                f"cables.{c.id}.segments: {where} takes at most {KIRCHHOFF_MAX_SEGMENTS} segments (its rest "
                f"states are verified minima by a dense difference Hessian: 0.6 s at 400 segments)"
            )
    _refuse_clips_and_moments(where, cables)
