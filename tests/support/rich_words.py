"""A report model's rich text as plain words, for tests that read what a page will say."""

from __future__ import annotations


def words(parts: object) -> str:
    """``parts`` (a rich text, a span, a value, a link or a plain string) as its words."""
    if isinstance(parts, str):
        return parts
    if isinstance(parts, tuple):
        return "".join(words(p) for p in parts)
    for attr in ("value", "parts"):
        if hasattr(parts, attr):
            return words(getattr(parts, attr))
    return str(parts)
