# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs of whole cases: the command line, variation sweeps, signals and the output files."""
