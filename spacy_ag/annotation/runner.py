"""The driver of a directory run: streams every input file in batches to the workers, writes the shards.

The driver reads each input file line by line (`spacy_ag.corpus.iter_lines`,
so bytes that are not UTF-8 are a one-line error naming file and line), cuts
it into batches of the task's size and submits them to the workers. Results
come back in the order they were submitted and are written into their
shard, which is renamed into place after its last batch. At most
`workers.window` batches are in flight, so the driver holds only those,
whatever the size of the corpus or of one file.

The workers are either `LocalWorkers` (this process, one batch after the
other) or `spacy_ag.annotation.on_ray.RayWorkers`; both apply the same task
function to the same batches, so the shards are the same byte for byte.

A file that is not UTF-8 stops the run at its bad line, after the shards
before it are complete. SIGINT and SIGTERM are recorded rather than raised while a batch runs; the
run then stops at once: the shards being written are removed, the complete
ones stay, and `AnnotationInterrupted` (a KeyboardInterrupt) carries the
signal to the command line.
"""
from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence

from ..corpus import chunked, iter_lines
from ..errors import SpacyAgError
from ..runs.signals import ParentSignals
from .shards import Shard, ShardWriter
from .tasks import Batch

__all__ = ["AnnotationInterrupted", "BatchResult", "LocalWorkers", "annotate_batch", "annotate_shards"]

#: Seconds between the driver's looks at a pending batch and at the signals.
POLL = 0.2
Event = Dict[str, Any]


class AnnotationInterrupted(KeyboardInterrupt):
    """The run was stopped by a signal (`signum`); complete shards stay, a rerun resumes."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


@dataclass
class BatchResult:
    """A task's output for one batch, with which process made it and when (for the progress and tests)."""

    lines: List[str]
    warnings: List[str]
    pid: int
    started: float
    ended: float


def annotate_batch(task, model, batch: Batch, source: str) -> BatchResult:
    """Apply `task` to one batch: what every worker runs."""
    started = time.time()
    lines, warnings = task(model, batch, source)
    return BatchResult(lines, warnings, os.getpid(), started, time.time())


class LocalWorkers:
    """The model in this process: a batch is annotated when it is submitted."""

    window = 1

    def __init__(self, task, model):
        self.task, self.model = task, model

    def submit(self, source: str, batch: Batch) -> BatchResult:
        return annotate_batch(self.task, self.model, batch, source)

    def ready(self, handle: BatchResult, timeout: float) -> bool:
        return True

    def result(self, handle: BatchResult) -> BatchResult:
        return handle

    def close(self) -> None:
        """Nothing to stop: the model lives in this process."""


@dataclass
class _InFlight:
    writer: ShardWriter
    handle: Any = None  # None marks the end of the writer's shard
    nbytes: int = 0  # for a batch, its estimated size; for an end, what the estimates left of the file's size


def annotate_shards(task, workers, shards: Sequence[Shard],
                    report: Optional[Callable[[Event], None]] = None) -> Dict[str, int]:
    """Write the shards with `workers`; `report` receives one event per batch, shard and warning.

    Events: ``{"event": "batch", "source", "lines", "bytes", "pid", "started",
    "ended"}``, ``{"event": "shard", "source", "bytes"}`` (a shard renamed into
    place; the bytes of all events of a file add up to its size) and
    ``{"event": "warning", "message"}``. RETURNS: counts of files, lines and
    warnings.
    """
    report = report or (lambda event: None)
    counts = {"files": 0, "lines": 0, "warnings": 0}
    queue: Deque[_InFlight] = deque()
    open_writers: List[ShardWriter] = []
    try:
        with ParentSignals() as signals:
            def stop_if_signalled() -> None:
                if signals.signum:
                    raise AnnotationInterrupted(signals.signum)

            def drain() -> None:
                item = queue.popleft()
                source = str(item.writer.shard.source)
                if item.handle is None:
                    item.writer.commit()
                    open_writers.remove(item.writer)
                    counts["files"] += 1
                    report({"event": "shard", "source": source, "bytes": item.nbytes})
                    return
                while not workers.ready(item.handle, POLL):
                    stop_if_signalled()
                done = workers.result(item.handle)
                item.writer.write(done.lines)
                counts["lines"] += len(done.lines)
                counts["warnings"] += len(done.warnings)
                for message in done.warnings:
                    report({"event": "warning", "message": message})
                report({"event": "batch", "source": source, "lines": len(done.lines), "bytes": item.nbytes,
                        "pid": done.pid, "started": done.started, "ended": done.ended})
                stop_if_signalled()

            unreadable = None
            for shard in shards:
                writer = ShardWriter(shard)
                open_writers.append(writer)
                estimated = 0
                lines = chunked(iter_lines(shard.source), task.batch_size)
                while True:
                    try:
                        batch = next(lines, None)
                    except SpacyAgError as err:  # bytes that are not UTF-8: finish the shards before this one
                        unreadable = err
                        break
                    if batch is None:
                        queue.append(_InFlight(writer, None, shard.size - estimated))
                        break
                    nbytes = min(sum(len(text.encode("utf8", "surrogatepass")) + 1 for _, text in batch),
                                 shard.size - estimated)
                    estimated += nbytes
                    queue.append(_InFlight(writer, workers.submit(str(shard.source), batch), nbytes))
                    while len(queue) >= workers.window or (queue and queue[0].handle is None):
                        drain()
                if unreadable is not None:
                    break
            while queue:
                drain()
            if unreadable is not None:
                raise unreadable
    finally:
        for writer in open_writers:
            writer.discard()
    return counts
