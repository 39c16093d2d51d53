"""Micro batches prepared ahead of the step in a thread of their own (on CUDA, on a stream of their own).

An image folder's batch leaves the loader workers as bytes or pixels; decoding it on the device,
cropping it and normalising it between steps would make every step wait for it.  Done here, it
overlaps the step: the kernels of the next batch queue on a side stream while the model's run on the
default one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from typing import TypeVar

import torch

Item = TypeVar("Item")
Batch = tuple[torch.Tensor, ...]
# batches ready ahead of the one the step holds: one overlaps the step, the other absorbs jitter
DEPTH = 2
# seconds between looks at the stop flag while the queue is full
POLL_S = 0.1

_END = object()


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


def prefetched(
    items: Iterable[Item], prepare: Callable[[Item], Batch], device: torch.device, depth: int = DEPTH
) -> Iterator[Batch]:
    """``prepare(item)`` for each of ``items`` in order, computed up to ``depth`` batches ahead of the consumer.

    On CUDA the consumer's stream waits for each batch's event, and each tensor is recorded on that
    stream, so the allocator keeps its memory until the step has used it.  An exception in
    ``items`` or ``prepare`` is raised to the consumer at the batch it stopped; closing the
    iterator early stops the thread after the batch in hand.
    """
    cuda = device.type == "cuda"
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    side = torch.cuda.Stream(device) if cuda else None

    def hand_over(entry) -> bool:
        while not stop.is_set():
            try:
                ready.put(entry, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            if cuda:
                # the current device is per thread; the stream's device has its index where ``device``
                # may not (``torch.device("cuda")`` means the caller's current one)
                torch.cuda.set_device(side.device)
            with torch.cuda.stream(side) if cuda else nullcontext():
                for item in items:
                    batch = prepare(item)
                    event = torch.cuda.Event() if cuda else None
                    if event is not None:
                        event.record(side)
                    if not hand_over((batch, event)):
                        return
        except BaseException as e:  # re-raised in the consumer, whatever it is
            hand_over((_Raised(e), None))
            return
        hand_over((_END, None))

    thread = threading.Thread(target=produce, name="raysweep-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            batch, event = ready.get()
            if batch is _END:
                return
            if isinstance(batch, _Raised):
                raise batch.error
            if event is not None:
                current = torch.cuda.current_stream(device)
                current.wait_event(event)
                for tensor in batch:
                    tensor.record_stream(current)
            yield batch
    finally:
        stop.set()
        thread.join()
