"""Batches prepared ahead in a thread: order kept, look-ahead bounded, errors raised where they happened."""

from __future__ import annotations

import itertools
import threading
import time

import pytest
import torch

from trainers.data.prefetch import DEPTH, prefetched

CPU = torch.device("cpu")


def as_batch(i: int) -> tuple[torch.Tensor]:
    return (torch.tensor([i]),)


def wait_for(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_every_item_is_prepared_once_in_order():
    assert [int(b[0]) for b in prefetched(range(7), as_batch, CPU)] == list(range(7))


def test_preparation_runs_ahead_of_the_consumer_but_no_further_than_its_depth():
    prepared = []

    def prepare(i: int) -> tuple[torch.Tensor]:
        prepared.append(i)
        return as_batch(i)

    batches = prefetched(itertools.count(), prepare, CPU)
    next(batches)
    # one batch in hand, DEPTH in the queue, and one prepared that waits for room
    assert wait_for(lambda: len(prepared) == DEPTH + 2)
    time.sleep(0.3)
    assert len(prepared) == DEPTH + 2
    batches.close()


def test_an_error_while_reading_reaches_the_consumer_after_the_batches_before_it():
    def items():
        yield from range(3)
        raise ValueError("imagefolder: cannot decode broken.jpg")

    batches = prefetched(items(), as_batch, CPU)
    assert [int(next(batches)[0]) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="broken.jpg"):
        next(batches)


def test_closing_early_stops_the_thread():
    before = threading.active_count()
    batches = prefetched(itertools.count(), as_batch, CPU)
    next(batches)
    batches.close()
    assert threading.active_count() == before
