"""Annotation workers on a Ray cluster: one actor per CPU, each holding the model, loaded once.

The model travels as its archive bytes (`to_bytes`), put in the object
store once and loaded by every actor when it starts (the task's `load`), so
the nodes need no shared filesystem and no copy of the model directory. Lines go to
the actors in batches, round robin, and the outputs come back to the
driver, which alone reads the input and writes the shards
(`spacy_ag.annotation.runner`). An actor lost with its worker or node is
started again, and its pending batches are sent again (a batch's output
depends on the batch alone), up to `MAX_RESTARTS` times.

Ray is imported here only, and this module only with ``--backend ray``.
"""
from __future__ import annotations

import os
from typing import Optional

from ..errors import AnnotationError, Errors, SpacyAgError
from ..runs.ray_cluster import RayActors, connect_ray
from .runner import BatchResult, annotate_batch
from .tasks import Batch

__all__ = ["MAX_RESTARTS", "RayWorkers"]

#: How often one actor may be started again after its worker or node was lost.
MAX_RESTARTS = 3
#: Batches in flight per actor: one running, one queued, so an actor never waits for the driver.
_PER_ACTOR = 2


class _Annotator:
    """The Ray actor: the model, loaded once, and the task applied to each batch sent to it."""

    def __init__(self, task, model_ref: list):
        import ray

        self.task = task
        self.model = task.load(ray.get(model_ref[0]))

    def where(self):
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def annotate(self, source: str, batch: Batch):
        try:
            return annotate_batch(self.task, self.model, batch, source)
        except SpacyAgError as err:  # bad input: the driver raises it as the one-line error it is
            return err


class RayWorkers(RayActors):
    """The actors of one run on the cluster at `address` (None: the local one, started if need be)."""

    def __init__(self, task, model, address: Optional[str] = None, workers: int = 0):
        ray, self.connected = connect_ray(address)
        self.ray = ray
        try:
            n = workers if workers > 0 else max(1, int(ray.cluster_resources().get("CPU", 1)))
            # held here for the run, so a restarted actor finds it; in a list, so that Ray does not resolve it
            self.model_ref = ray.put(model.to_bytes())
            actor = ray.remote(num_cpus=1, max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS)(_Annotator)
            self.actors = [actor.remote(task, [self.model_ref]) for _ in range(n)]
        except BaseException:
            self._disconnect()
            raise
        self.window = _PER_ACTOR * n
        self.sent = 0

    def where(self):
        """(node id, process id) of each actor, once it has started."""
        return self.ray.get([a.where.remote() for a in self.actors])

    def submit(self, source: str, batch: Batch):
        actor = self.actors[self.sent % len(self.actors)]
        self.sent += 1
        return actor.annotate.remote(source, batch)

    def ready(self, ref, timeout: float) -> bool:
        done, _ = self.ray.wait([ref], timeout=timeout)
        return bool(done)

    def result(self, ref) -> BatchResult:
        try:
            out = self.ray.get(ref)
        except self.ray.exceptions.RayActorError as err:
            reason = " ".join(str(err).split())[:160]
            raise AnnotationError(Errors.E134.format(times=MAX_RESTARTS + 1, err=reason)) from None
        if isinstance(out, BaseException):
            raise out
        return out
