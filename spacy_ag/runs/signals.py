"""SIGINT and SIGTERM: every way spacy-ag turns a signal into a clean stop, in one place.

A training run must stop between iterations, with its checkpoints written,
whether the signal reaches the process running the chain (`StopRequest`), the
parent of parallel chains (`ParentSignals`), the training layer while it holds
its output lock (`sigterm_as_interrupt`), or an atomic write that must not be
cut in half (`holding_sigterm`). `TrainingInterrupted` and `Terminated` carry
the signal, so the command line exits with 128 + its number.
"""
from __future__ import annotations

import contextlib
import functools
import signal
import threading
from typing import Dict, Iterator, Optional

__all__ = ["ParentSignals", "StopRequest", "Terminated", "TrainingInterrupted", "holding_sigterm",
           "raise_terminated", "sigterm_as_interrupt"]


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C (SIGINT) or SIGTERM, its checkpoints written.

    `signum` is the signal (SIGINT also for a KeyboardInterrupt raised by a
    callback); the command line exits with 128 + signum.
    """

    def __init__(self, *args, signum: Optional[int] = None):
        super().__init__(*args)
        self._signum = signum

    @property
    def signum(self) -> int:
        # raised in an `except KeyboardInterrupt:` after a `StopRequest`, the signal is on the context
        return int(self._signum or getattr(self.__context__, "signum", None) or signal.SIGINT)


class StopRequest:
    """Turns the first SIGINT (Ctrl-C) or SIGTERM into a request honoured between iterations.

    A signal landing inside a sweep would otherwise leave a half-done
    iteration in the checkpoint; a second signal stops at once. In a worker of
    parallel chains, `shared` (a shared int) carries the parent's request (its
    signal number, 0 for none), and `orphaned` is set once the parent is gone.
    Entering it again (`run_chain` in a worker) changes nothing.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, shared=None):
        self.received = 0  # the first signal this process got
        self.shared = shared
        self.orphaned = False
        self._previous: Dict[int, object] = {}
        self._depth = 0

    @property
    def signum(self) -> int:
        """The signal the stop was asked with (0: no stop asked)."""
        return (self.received or (self.shared.value if self.shared is not None else 0)
                or (signal.SIGTERM if self.orphaned else 0))

    @property
    def requested(self) -> bool:
        return bool(self.signum)

    def __enter__(self):
        self._depth += 1
        if self._depth == 1 and threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                if signal.getsignal(signum) is not None:
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.received:
            raise KeyboardInterrupt
        self.received = signum

    def __exit__(self, exc_type, exc, tb):
        self._depth -= 1
        if self._depth == 0:
            for signum, previous in self._previous.items():
                signal.signal(signum, previous)
            self._previous = {}
        if isinstance(exc, KeyboardInterrupt) and self.signum:  # the exit code names the signal
            if isinstance(exc, TrainingInterrupted):
                exc._signum = exc._signum or self.signum
            elif getattr(exc, "signum", None) is None:
                exc.signum = self.signum
        return False


class ParentSignals:
    """SIGINT and SIGTERM in the parent of parallel chains: recorded (the first) and counted, never raised."""

    def __init__(self):
        self.signum = 0
        self.count = 0
        self._previous: Dict[int, object] = {}

    def __enter__(self) -> "ParentSignals":
        if threading.current_thread() is threading.main_thread():
            for signum in StopRequest.SIGNALS:
                if signal.getsignal(signum) is not None:
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self.signum = self.signum or signum
        self.count += 1

    def __exit__(self, *exc) -> bool:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        return False


class Terminated(KeyboardInterrupt):
    """SIGTERM during a run: handled like Ctrl-C, exit code 128 + 15."""

    signum = signal.SIGTERM


def raise_terminated(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is None:
        yield
        return
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def holding_sigterm(write):
    """Hold SIGTERM back while `write` runs, then deliver it to the handler there was.

    Without this, SIGTERM's default action would kill the process mid-write and leave the
    temporary sibling behind; held back, the write finishes (or fails and cleans up) first.
    Only in the main thread, where Python runs signal handlers.
    """

    @functools.wraps(write)
    def held(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is None:
            return write(*args, **kwargs)
        received = []
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
        try:
            return write(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, previous)
            if received:
                signal.raise_signal(signal.SIGTERM)

    return held
