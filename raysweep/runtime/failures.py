"""What a failed trial's exception holds: the typed error one of its ranks raised, through Ray's wrappers.

A rank's exception reaches Tune wrapped: Ray Train keeps each worker's as a ``WorkerGroupError``'s
``worker_failures`` (each wrapped again with its traceback string), and Tune keeps the trial's
driver's as a ``RayTaskError``'s ``cause``.  Unwrapping the worker's uses Ray Train's private
``UserExceptionWithTraceback._base_exc`` (listed in this package's docstring).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

E = TypeVar("E", bound=BaseException)


def wrapped(error: BaseException) -> list[BaseException]:
    """The exceptions ``error`` wraps, one level down."""
    inner = [error.__cause__, error.__context__, getattr(error, "cause", None)]
    inner += [getattr(error, "controller_failure", None), getattr(error, "_base_exc", None)]
    inner += list((getattr(error, "worker_failures", None) or {}).values())
    return [e for e in inner if isinstance(e, BaseException)]


def chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error`` and every exception it wraps, each once."""
    stack, seen = ([error] if error is not None else []), set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(reversed(wrapped(current)))


def find_error(error: BaseException | None, kind: type[E]) -> E | None:
    """The first exception of type ``kind`` in ``error``'s chain."""
    return next((e for e in chain(error) if isinstance(e, kind)), None)
