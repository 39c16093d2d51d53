"""The answer to a name that is not known (a parameter, a space, a model, a dataset, an engine): the closest
known names (difflib), then all of them where they are few, or where to list them where they are many."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# More names than this are not listed in a message; it points at their listing instead.
LISTED_AT_MOST = 16


def closest(name: object, known: Iterable[str], count: int = 3) -> list[str]:
    """Up to ``count`` of ``known`` closest to ``name``, closest first; none where nothing is close."""
    return difflib.get_close_matches(str(name), list(known), n=count, cutoff=0.6)


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """``"; did you mean 'a' or 'b'?"``, or ``""`` where no known name is close to ``name``."""
    close = closest(name, known)
    return f"; did you mean {' or '.join(map(repr, close))}?" if close else ""


def unknown_name(what: str, name: object, known: Iterable[str], listing: str | None = None) -> str:
    """``unknown {what} 'name'; did you mean 'x'? (one of a, b, c)``, or ``(all: {listing})`` where ``listing``
    says where to see them (``--list-params``) or the names are too many to list."""
    known = list(known)
    message = f"unknown {what} {name!r}{did_you_mean(name, known)}"
    if listing is not None:
        return f"{message} (all: {listing})"
    if len(known) <= LISTED_AT_MOST:
        return f"{message} (one of {', '.join(known)})"
    return message
