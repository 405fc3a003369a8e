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


def check_id(value, where: str) -> str:
    """An id (cable, junction, wire, connector; a document's title): a non-empty string without control
    characters, which would forge or break the lines that name it (summaries, logs, CSV), without lone
    surrogates, which no UTF-8 output can hold (JSON's \\ud800 escape decodes to one), and without the
    non-characters U+FFFE and U+FFFF, which no XML (KBL, SVG) can hold."""
    if not isinstance(value, str) or not value:
        raise CaseError(f"{where} must be a non-empty string, got {show(value)}")
    for c in value:
        if 0xD800 <= ord(c) <= 0xDFFF:
            raise CaseError(f"{where} holds a lone surrogate (U+{ord(c):04X}), which is not a character")
        if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029":
            raise CaseError(f"{where} holds a control character (U+{ord(c):04X}); ids are one line of text")
        if c in "\ufffe\uffff":  # not characters: XML (KBL, SVG) cannot hold them
            raise CaseError(f"{where} holds U+{ord(c):04X}, which is not a character")
    return value


MAX_TITLE = 200  # characters of a document's title (a formboard's, a KBL harness's)


def check_title(value, where: str = "title") -> str:
    """A document's title: an id (check_id) of at most MAX_TITLE characters."""
    check_id(value, where)
    if len(value) > MAX_TITLE:
        raise CaseError(f"{where} has {len(value)} characters; a title has at most {MAX_TITLE}")
    return value
