"""Concurrent classes: each canonical class of a build run on one of several CUDA streams, so
that classes which cannot fill the device overlap.

A class of high angular momentum has few quartets (tens to thousands for (gg|gg) in cc-pVQZ)
and one thread per item; alone on the device it runs at the latency of one long thread. On
several streams these overlap the other classes' kernels.

Contract: everything one class allocates, launches and frees happens on its stream, so CuPy's
per-stream memory pool never hands a buffer still read by one stream to another. What the
classes share (the densities, the screening blocks, J and K, the gradient) is made on the
caller's stream before the build and read or updated atomically by the classes; ``build``
orders the streams after the caller's work and the caller's stream after the streams' work.
Work lists the caller's stream makes during a build (the screening rounds of an energy build)
are read by the streams: the streams ``follow`` the caller's stream once a list is made (its
writing is on the caller's stream, which non-blocking streams do not otherwise wait for), and
the caller's stream ``wait``s for them (``mark``) before it lets go of a list, so that its next
allocation cannot reuse memory still being read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DEFAULT_STREAMS = 8
"""Streams of a GPU engine: enough for the long classes of a large basis to overlap."""


class ClassStreams:
    """A pool of ``count`` non-blocking streams of ``cupy``; ``count`` 1 runs every class on
    the caller's stream, in order, and needs no CuPy (the CPU backend's: ``cupy`` None)."""

    def __init__(self, cupy: Any, count: int = DEFAULT_STREAMS) -> None:
        if count < 1:
            raise ValueError(f"streams must be a positive count, got {count!r}")
        self._cp = cupy
        self._streams = (
            [cupy.cuda.Stream(non_blocking=True) for _ in range(count)] if count > 1 else []
        )
        self._last: list[Any] = [None] * len(self._streams)
        self._next = 0

    @property
    def count(self) -> int:
        return max(1, len(self._streams))

    @contextmanager
    def build(self) -> Iterator[None]:
        """One build: the streams start after the caller's stream's work so far, and the
        caller's stream continues after all of theirs (also when the build raises)."""
        if not self._streams:
            yield
            return
        self.follow()
        try:
            yield
        finally:
            self.wait(self.mark())

    def follow(self) -> None:
        """The streams' later work waits for the current stream's work so far (what it made
        for them to read), without the host waiting."""
        if not self._streams:
            return
        ready = self._cp.cuda.get_current_stream().record()
        for stream in self._streams:
            stream.wait_event(ready)

    def mark(self) -> list[Any]:
        """Events that complete when each stream's work so far is done (none with one
        stream)."""
        return [stream.record() for stream in self._streams]

    def wait(self, events: list[Any]) -> None:
        """The current stream's later work waits for ``events`` (``mark``), without the host
        waiting: what it allocates afterwards may reuse memory the streams read before."""
        if not events:
            return
        current = self._cp.cuda.get_current_stream()
        for event in events:
            current.wait_event(event)

    def _pick(self) -> int:
        """An idle stream (its last class done) if there is one, else the next in turn."""
        n = len(self._streams)
        for k in range(n):
            i = (self._next + k) % n
            last = self._last[i]
            if last is None or last.done:
                break
        else:
            i = self._next
        self._next = (i + 1) % n
        return i

    @contextmanager
    def one_class(self) -> Iterator[None]:
        """The stream one class's screening and kernels run on (current inside the block)."""
        if not self._streams:
            yield
            return
        i = self._pick()
        stream = self._streams[i]
        with stream:
            yield
        self._last[i] = stream.record()
