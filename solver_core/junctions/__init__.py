# SPDX-License-Identifier: GPL-3.0-or-later
"""Branched harnesses: the junctions' equilibrium by static condensation over the branch solves."""
