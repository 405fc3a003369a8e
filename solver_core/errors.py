# SPDX-License-Identifier: GPL-3.0-or-later
"""Errors the solver raises on purpose, and how values appear in their messages; callers show the
messages to the user."""

import reprlib

_short = reprlib.Repr()
_short.maxstring, _short.maxother, _short.maxlist, _short.maxdict, _short.maxlevel = 40, 40, 4, 4, 2


class CaseError(ValueError):
    """An invalid case: the message names the offending field (e.g. ``cables[0].diameter``)."""


def show(value) -> str:
    """A value as it appears in a message: short and on one line, whatever was given."""
    try:
        text = _short.repr(value)
    except Exception:  # a value whose repr itself fails (e.g. nested too deeply)
        text = f"<{type(value).__name__}>"
    return text


def name(key) -> str:
    """A document key as it appears in a field path: itself when plain, quoted otherwise."""
    if isinstance(key, str) and key.isprintable() and 0 < len(key) <= 40 and "." not in key:
        return key
    return show(key)
