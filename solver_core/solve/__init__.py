# SPDX-License-Identifier: GPL-3.0-or-later
"""One cable's (or a group's) equilibrium: the Newton kernel, stability, saddle escape, dynamics, sessions."""
