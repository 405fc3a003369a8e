# SPDX-License-Identifier: GPL-3.0-or-later
"""The seed models other than the Newton-solved rod: mass-spring, Kirchhoff CG and Cosserat PBD."""
