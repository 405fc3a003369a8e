# SPDX-License-Identifier: GPL-3.0-or-later
"""The junctions' stiffness against their branches, and the Newton step and tests built on it.

The condensed stiffness (the Hessian of the reduced energy E(p, R), junctions.py) comes from the
branches' own Hessians where nothing is within reach of a branch (end_stiffness.py: exact), else from
finite differences of branch re-solves, kept between steps with Broyden's update and trusted for the
stability test while the loads and the junctions have changed little since it was formed. Newton
steps on the junctions use it, shifted positive definite where it is not (Dauphin et al. 2014), and a
state no step improves is judged balanced where all a Newton step could still gain is below the
energy's resolution. ``JunctionStiffness`` holds these methods for ``junctions.JunctionSystem``.

Variables are scaled to energy units as in junctions.py: y = (p / L, w), g_hat = (L dE/dp, dE/dw).
"""

import numpy as np

from ..solve.end_stiffness import Condensation, exact_for
from ..solve.sessions import restore_sessions
from .branch_partners import any_partner

# Finite-difference step of the condensed stiffness, in scaled variables (1e-4 L, 1e-4 rad): the
# branches are solved to a residual of the tolerance times their force scale, so the noise of a
# difference is that over h; at 1e-4 it stays a thousandth of a bending stiffness EI / L.
FD_STEP = 1e-4
# Where a branch touches something, a contact may come on or off within the step (a junction resting
# on a sphere sinks some 1e-8 m into its penalty; 1e-4 L is tens of micrometres): the two one-sided
# differences then disagree, and their mean is neither side's stiffness. Such a column is formed
# again with a step FD_SHRINK times shorter, at most FD_REFINEMENTS times, until they agree to
# FD_AGREEMENT of their size; the pair that agrees best is taken. A shorter step stops where the
# column no longer stands out of what the branches' tolerance lets a difference over it be
# (stiffness_noise scaled to the step): a re-solve within its tolerance already may not iterate at all
# and leave only the unrelaxed response of the branch end.
FD_SHRINK = 1e-2
FD_REFINEMENTS = 2
FD_AGREEMENT = 0.25

# A kept stiffness is formed afresh for the stability test after this many Broyden updates (a warm
# step makes about 8; forming it by differences costs 6 re-solves per branch end), and when, since it
# was formed, the loads on the branch ends changed by more than this fraction, or a junction moved
# more than this fraction of its shortest branch or turned more than this (rad)
STALE_AFTER = 40
TRUST_LOAD_CHANGE = 0.05
TRUST_MOVE = 0.02
TRUST_TURN = 0.05
# Energy changes below this fraction of the energies involved are round-off (sums over every segment's
# stretch, bend and weight): neither the step's agreement with the quadratic model (junctions.py) nor
# the balance test here (_balanced_to_resolution) judges them.
ENERGY_RESOLUTION = 1e-9
# All a Newton step could still gain, as a fraction of the same energies, for a state no step improves
# to count as balanced (_balanced_to_resolution): the energy's round-off with a margin (trial steps of
# the junctions lower it as predicted to 1e-15 of it). ENERGY_RESOLUTION here would accept a junction
# whose branches touch a bar with 6e-5 of its load out of balance, thousands of tolerances.
BALANCE_RESOLUTION = 1e-12


class JunctionStiffness:
    """The condensed stiffness of ``junctions.JunctionSystem``'s free junctions (a mixin: its methods read
    and write the system's fields and call its helpers)."""

    def _balanced_to_resolution(self, harness, frames, scaled, total, energy, noise) -> bool:
        """Whether a state no step improves is a minimum as far as the energy can tell: the condensed
        stiffness (formed here) positive definite beyond its noise, the junctions clear of obstacles,
        and all a Newton step could still gain, g K^-1 g / 2, below the energy's round-off
        (BALANCE_RESOLUTION). Branches
        in contact next to a junction answer its smallest moves with their contact's jumps, which can
        hold the force out of balance above the branches' summed tolerance (it is reported as is)."""
        K = 0.5 * (total + total.T)
        if np.linalg.eigvalsh(K)[0] <= noise:
            return False
        if any(self.contact[k].too_deep(harness.obstacles, frames.position[k]) for k in self.free):
            return False
        gain = 0.5 * float(scaled @ np.linalg.solve(K, scaled))
        return gain <= BALANCE_RESOLUTION * max(abs(energy), self.energy_scale)

    def _total_stiffness(self, harness, frames, L: float) -> np.ndarray:
        """The condensed stiffness of the branches (differences, Broyden) plus the Hessian of the
        junctions' own contact penalty, exact (a penalty stiffer than the branches by orders of magnitude
        would drown a secant model), in the scaled variables."""
        K = self.stiffness.copy()
        for i, k in enumerate(self.free):
            K[6 * i : 6 * i + 3, 6 * i : 6 * i + 3] += (
                L * L * self.contact[k].hessian(harness.obstacles, frames.position[k])
            )
        return K

    def _exact_stiffness(self, harness, frames, L: float) -> bool:
        """Form the condensed stiffness from the branches' Hessians if that is exact here."""
        K = self._analytic_stiffness(harness, frames, L)
        if K is None:
            return False
        self.stiffness = K
        self.broyden_updates = 0
        self.formed_at = (frames.copy(), self._end_loads(harness, L, frames))
        return True

    def _analytic_stiffness(self, harness, frames, L: float) -> np.ndarray | None:
        """The condensed stiffness from the branches' own Hessians (end_stiffness.py), in the scaled
        variables; None unless that is exact for every branch (none touches anything or hangs in a
        compliant or sliding clip) and each is at a strict minimum."""
        if any(self.contact[k].touching(harness.obstacles, frames.position[k]) for k in self.free):
            return None  # resting on an obstacle: the differences know the branches' contacts there too
        if any(harness.cables[cid].model.rot_couple.any() for cid in self.branches):
            return None  # a dead couple's work is in the gradient only, not in the rod's energy
        if any_partner(harness, self.branches, self._others):
            return None  # a cable that touches a branch gives way with it: only differences know how much
        place = {k: i for i, k in enumerate(self.free)}
        K = np.zeros((6 * len(self.free), 6 * len(self.free)))
        scale = np.concatenate([np.full(3, L), np.ones(3)])
        for cid in self.branches:
            session = harness.cables[cid]
            if not exact_for(session):
                return None
            ends = [(side, place[k]) for side, k in self.ends_at_free(cid)]
            sides = [side for side, _i in ends]
            # the one the harness's Newton prediction formed where it ended, which a solve of the branch
            # confirmed (junction_newton.py), or formed here; kept for the next step's prediction
            condensation = self.condensations.get(cid)
            if condensation is None or not condensation.formed_at(session.model, session.state, sides):
                condensation = Condensation.at(session.model, session.state, sides)
            if condensation is None:
                return None
            self.condensations[cid] = condensation
            S = condensation.stiffness(session.state)
            for a, (_side, i) in enumerate(ends):
                for b, (_side_b, j) in enumerate(ends):
                    block = S[6 * a : 6 * a + 6, 6 * b : 6 * b + 6]
                    K[6 * i : 6 * i + 6, 6 * j : 6 * j + 6] += scale[:, None] * block * scale[None, :]
        return K

    def _fd_stiffness(self, harness, targets, frames, L, counters) -> np.ndarray:
        """The condensed stiffness d g_hat / d y by forward differences, each column re-solving only the
        branches of the junction moved; the branches are put back afterwards. Where one of them touches
        something, by central differences: a contact that comes on within the step makes a one-sided
        difference the stiffness of one side of it (bench_junction_contact: 55 of 60 balanced against
        53, seeds 1 and 2); where the two sides still disagree, by shorter steps (FD_SHRINK)."""
        n = 6 * len(self.free)
        K = np.zeros((n, n))
        base = self._scaled(self._branch_gradient(harness), L)
        noise = stiffness_noise(self._tolerance(harness), L)  # of a difference over FD_STEP
        for i, k in enumerate(self.free):
            ids = self.adjacent(k)
            saved = self._snapshot(harness, ids)
            touching = any(
                harness.cables[cid].interactions.contacts(harness.cables[cid].state) for cid in ids
            ) or any_partner(harness, ids, self._others)
            for c in range(6):
                h, best = FD_STEP, None  # best: (the one-sided differences' disagreement, their mean)
                for _refinement in range(FD_REFINEMENTS + 1 if touching else 1):
                    columns = []
                    for sign in (1.0, -1.0) if touching else (1.0,):
                        step = np.zeros(n)
                        step[6 * i + c] = sign * h
                        moved = self._moved(frames, step, L)
                        ok, _message = self._evaluate(harness, targets, moved, ids, counters)
                        if ok:
                            columns.append((self._scaled(self._branch_gradient(harness), L) - base) / (sign * h))
                        restore_sessions(harness, saved)
                    if not columns:
                        break
                    if h < FD_STEP and max(float(np.abs(x).max()) for x in columns) <= noise * FD_STEP / h:
                        break  # the branches' tolerance hides the column over so short a step
                    if len(columns) == 2:
                        disagreement = _disagreement(*columns)
                    else:  # one side alone: across a contact, only where no pair was formed
                        disagreement = np.inf if touching else 0.0
                    if best is None or disagreement < best[0]:
                        best = (disagreement, np.mean(columns, axis=0))
                    if disagreement <= FD_AGREEMENT:
                        break
                    h *= FD_SHRINK
                if best is not None:
                    K[:, 6 * i + c] = best[1]
                else:  # a branch that cannot follow so small a move: take its stiffness as large
                    K[6 * i + c, 6 * i + c] = abs(base).max() / FD_STEP + 1.0
        self.broyden_updates = 0
        self.formed_at = (frames.copy(), self._end_loads(harness, L, frames))
        return K

    def _end_loads(self, harness, L: float, frames) -> np.ndarray:
        """Every junction-held branch end's force (times L) and moment, and the obstacles' force on each
        free junction (times L), one vector (energy units)."""
        parts = []
        for cid in self.branches:
            for _side, _k, force, moment in self._branch_loads(harness, cid):
                parts += [L * force, moment]
        for k in self.free:
            parts.append(L * self.contact[k].force(harness.obstacles, frames.position[k]))
        return np.concatenate(parts)

    def _kept_stiffness_holds(self, harness, frames, noise: float) -> bool:
        """Whether the kept condensed stiffness may stand for the one at ``frames`` in the stability test:
        clearly positive definite, few Broyden updates since it was formed by differences, and the
        junctions and the loads the branches carry near where they were then. A stiffness formed before
        a load came on (a column before the junction's weight pressed on it) says nothing of buckling."""
        if self.stiffness is None or self.formed_at is None or self.broyden_updates > STALE_AFTER:
            return False
        if weak(self.stiffness, noise):
            return False
        then, loads = self.formed_at
        L = self._length_scale(harness)
        change = np.linalg.norm(self._end_loads(harness, L, frames) - loads)
        if change > TRUST_LOAD_CHANGE * max(float(np.linalg.norm(loads)), 1e-300):
            return False
        for k in self.free:
            shortest = min(harness.cables[cid].model.cable.length for cid in self.adjacent(k))
            if np.linalg.norm(frames.position[k] - then.position[k]) > TRUST_MOVE * shortest:
                return False
            R = frames.rotation[k] @ then.rotation[k].T
            if np.arccos(np.clip(0.5 * (np.trace(R) - 1.0), -1.0, 1.0)) > TRUST_TURN:
                return False
        return True


def stiffness_noise(tolerance: np.ndarray, L: float) -> float:
    """The size of a stiffness entry that finite differences of branch solves cannot tell from zero."""
    scale = max(L * float(tolerance[:, :3].max()), float(tolerance[:, 3:].max()))
    return 10.0 * scale / FD_STEP


def weak(K: np.ndarray, noise: float) -> bool:
    """Whether a kept stiffness is too near losing definiteness to be trusted for the stability test."""
    return bool(np.linalg.eigvalsh(0.5 * (K + K.T))[0] < 10.0 * noise)


def _disagreement(forward: np.ndarray, backward: np.ndarray) -> float:
    """How far a column's forward and backward differences differ, as a fraction of the larger (small
    where no contact came on or went off within the step)."""
    size = max(float(np.abs(forward).max()), float(np.abs(backward).max()))
    return float(np.abs(forward - backward).max()) / size if size > 0.0 else 0.0


def negative_direction(K: np.ndarray, noise: float) -> tuple:
    """(whether K's symmetric part has an eigenvalue below -``noise``, its eigenvector or None): the way
    off a saddle."""
    values, vectors = np.linalg.eigh(0.5 * (K + K.T))
    if values[0] < -noise:
        return True, vectors[:, 0]
    return False, None


def newton_step(K: np.ndarray, g_hat: np.ndarray, noise: float) -> np.ndarray:
    """-K^-1 g where K's symmetric part is positive definite (K itself: away from a balance, the
    derivative of a moment by world-frame turns has the antisymmetric part [m]x / 2, Simo & Vu-Quoc
    1986); elsewhere with the symmetric part's eigenvalues taken at least ``noise`` in size, negative
    ones by their magnitude (a descent direction of the energy: Dauphin et al. 2014)."""
    values, vectors = np.linalg.eigh(0.5 * (K + K.T))
    if values[0] > noise:
        return -np.linalg.solve(K, g_hat)
    values = np.maximum(np.abs(values), noise)
    return -vectors @ ((vectors.T @ g_hat) / values)


def merit(g_hat: np.ndarray) -> float:
    """The squared size of a scaled force out of balance (steps are judged on it where the energy cannot
    tell)."""
    return float(g_hat @ g_hat)


def broyden_update(K: np.ndarray, step: np.ndarray, change: np.ndarray) -> None:
    """Broyden's ("good") update of the stiffness in place, for the secant ``step`` -> ``change``."""
    norm = float(step @ step)
    if norm > 0.0:
        K += np.outer(change - K @ step, step) / norm
