# SPDX-License-Identifier: GPL-3.0-or-later
"""Errors the solver raises on purpose; callers show their message to the user."""


class CaseError(ValueError):
    """An invalid case: the message names the offending field (e.g. ``cables[0].diameter``)."""
