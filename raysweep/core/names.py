"""The answer to a name that is not known (a parameter, a space, a model, a dataset, an engine): the closest
known names (difflib), then all of them where they are few, or where to list them where they are many."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# More names than this are not listed in a message; it points at their listing instead.
LISTED_AT_MOST = 16
# difflib's similarity (2 x matching characters / both lengths) a suggestion needs, and how far below the
# closest one another may be: num_worker suggests num_workers (0.95), not also cpus_per_worker (0.64).
CLOSE_ENOUGH = 0.6
WITHIN_OF_CLOSEST = 0.1


def closest(name: object, known: Iterable[str], count: int = 3) -> list[str]:
    """Up to ``count`` of ``known`` closest to ``name``, closest first, each within ``WITHIN_OF_CLOSEST`` of the
    closest; none where nothing is ``CLOSE_ENOUGH``."""
    name = str(name)
    matches = difflib.get_close_matches(name, list(known), n=count, cutoff=CLOSE_ENOUGH)
    ratios = [difflib.SequenceMatcher(None, name, match).ratio() for match in matches]
    return [match for match, ratio in zip(matches, ratios) if ratio >= ratios[0] - WITHIN_OF_CLOSEST]


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
