"""The online and batch-variational E-step on a Ray cluster: ``backend = "ray"`` with
``inference.mode = "online"`` or ``"vb"``.

Workers are Ray actors, one CPU each, that hold the compiled grammar (sent
once, through the object store). Per minibatch the driver puts the current
weights of G' in the object store once (`estep_weights`: the nodes the
yield trie gained since the last minibatch, which each worker adds to its
copy, `YieldTrie`; the entries' lists and the rule and entry weights),
splits the minibatch into one contiguous shard per worker with about equal terminals,
and sends each worker its shard's sentences and their seeds. The workers
return their sampled trees as flat records, the sufficient statistics from
which the driver counts f, g and h and grows the grammatons (`absorb`)
exactly as a local E-step's. Every sentence's random stream is seeded by its
position in the minibatch, so the model is the same, bit for bit, whatever
the number of workers, and the same as on the local backend. A worker leaves
out the trees that repeat an earlier one of their sentence and says how often
each was drawn (`sharded_estep.distinct`): on a stream of short utterances, a
third of the bytes to send back.

A worker lost with its process or node is started again by Ray and its
shard sent again (a shard's draws depend on its inputs alone; the new
worker fetches the whole trie, which the driver also puts in the object
store at every minibatch for such a worker), up to
`MAX_RESTARTS` times. The driver alone reads the corpus and writes
checkpoints, so nodes share no filesystem.

Ray is imported here only, and this module only when a run asks for it.
"""
from __future__ import annotations

import contextvars
import os
import time
from typing import Any, Callable, ContextManager, Dict, List, Optional, Union

import numpy as np

from .sharded_estep import (
    Draws, DistinctDraws, YieldTrie, compact, distinct, draw_trees, estep_templates, estep_view, estep_weights,
    merge_shards, pack_shard, split_batch,
)
from ..core.state import N_TRIE
from ..errors import Errors, TrainingLayerError
from .ray_cluster import RayActors, connect_ray, watching

__all__ = ["MAX_RESTARTS", "RayEStep", "watch_estep"]

#: How often one worker may be started again after its process or node was lost.
MAX_RESTARTS = 3

_WATCHER: contextvars.ContextVar[Optional[Callable[[Dict[str, Any]], None]]] = contextvars.ContextVar(
    "spacy_ag_ray_estep_watcher", default=None)


def watch_estep(watcher: Optional[Callable[[Dict[str, Any]], None]]) -> ContextManager[None]:
    """Report the E-step workers of the runs inside the ``with`` (as `spacy_ag.runs.ray_chains.watch_chains`
    does for chains): `watcher` receives ``{"event": "started", "workers": RayEStep}`` when they are up,
    and ``{"event": "closing", "workers": [{"node", "pid", "spans"}, ...], "stats": ...}`` before they stop,
    ``spans`` being the (start, end) wall times of each shard the worker drew and ``whole_tries`` how
    often it fetched the whole yield trie instead of the new nodes."""
    return watching(_WATCHER, watcher)


class _EStepWorker:
    """The Ray actor: the compiled grammar and a state template, kept for the whole run."""

    def __init__(self, grammar_ref: list):
        import numba
        import ray

        numba.set_num_threads(1)  # one CPU per actor: parallelism is across actors
        self.G, self.samples = ray.get(grammar_ref[0])
        self.template_S, self.template_V = estep_templates(self.G)
        self.trie = YieldTrie(self.G.n_term)
        self.record_factor = 4
        self.spans: List[tuple] = []
        self.whole_tries = 0  # times the worker had to fetch the whole trie

    def where(self):
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def draw(self, weights_ref: list, trie_ref: list, words, sent_ptr, seeds,
             repeats: bool) -> Union[Draws, DistinctDraws]:
        import ray

        started = time.time()
        weights = ray.get(weights_ref[0])
        first = int(weights["trie_from"][0])
        if first == 0:
            self.trie.replace(weights["trie_parent"], weights["trie_term"])
        elif not self.trie.extend(first, weights["trie_parent"], weights["trie_term"]):
            self.trie.replace(*ray.get(trie_ref[0]))  # new, restarted, or without a shard last time
            self.whole_tries += 1
        S, V = estep_view(self.template_S, self.template_V, weights, self.trie)
        batch = np.arange(len(sent_ptr) - 1, dtype=np.int64)
        draws, self.record_factor = draw_trees(self.G, S, V, words, sent_ptr, batch, seeds, self.samples,
                                               self.record_factor)
        out = compact(draws) if repeats else distinct(draws)
        self.spans.append((started, time.time()))
        return out

    def report(self):
        node, pid = self.where()
        return {"node": node, "pid": pid, "spans": list(self.spans), "whole_tries": self.whole_tries}


class RayEStep(RayActors):
    """The E-step workers of one run on the cluster at `address` (None: the local one, started if need be).

    `stats()` counts the bytes that crossed to and from the workers (the weights, once per minibatch
    and worker; the shards; the records), for `benchmarks/scale.py`.
    """

    def __init__(self, compiled, samples: int, address: Optional[str] = None, workers: int = 0):
        ray, self.connected = connect_ray(address)
        self.ray = ray
        try:
            n = workers if workers > 0 else max(1, int(ray.cluster_resources().get("CPU", 1)))
            # held here for the run, so a restarted actor finds it; in a list, so that Ray does not resolve it
            self.grammar_ref = ray.put((compiled.arrays, int(samples)))
            actor = ray.remote(num_cpus=1, max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS)(_EStepWorker)
            self.actors = [actor.remote([self.grammar_ref]) for _ in range(n)]
        except BaseException:
            self._disconnect()
            raise
        self.bytes_sent = 0  # weights to every worker, plus the shards
        self.bytes_received = 0  # the records
        self.weights_bytes = 0  # one copy of the weights per minibatch
        self.shard_bytes = 0
        self.minibatches = 0
        self.learner = None  # whose yield trie the workers copy, up to node trie_sent
        self.trie_sent = 0
        self.watcher = _WATCHER.get()
        if self.watcher is not None:
            self.watcher({"event": "started", "workers": self})

    def where(self):
        """(node id, process id) of each worker, once it has started."""
        return self.ray.get([a.where.remote() for a in self.actors])

    def draw(self, learner, words: np.ndarray, sent_ptr: np.ndarray, batch: np.ndarray, seeds: np.ndarray,
             repeats: bool = True) -> Union[Draws, DistinctDraws]:
        """The draws of `batch` under the learner's current G', from the workers: every tree
        (`Draws`), or with `repeats` False the distinct trees of each sentence (`DistinctDraws`)."""
        S = learner.state
        n_trie = int(S.counters[N_TRIE])
        if learner is not self.learner or n_trie < self.trie_sent:  # not the trie the workers copy
            self.learner, self.trie_sent = learner, 0
        weights = estep_weights(S, learner.V, trie_from=self.trie_sent)
        weights_ref = self.ray.put(weights)
        # the whole trie, fetched only by a worker whose copy does not end where the new nodes start
        trie_ref = self.ray.put((S.trie_parent[:n_trie], S.trie_term[:n_trie]))
        self.trie_sent = n_trie
        refs, shard_bytes = [], 0
        for i, (start, end) in enumerate(split_batch(sent_ptr, batch, len(self.actors))):
            shard = (*pack_shard(words, sent_ptr, batch, start, end), seeds[start:end])
            refs.append(self.actors[i].draw.remote([weights_ref], [trie_ref], *shard, repeats))
            shard_bytes += sum(a.nbytes for a in shard)
        weights_bytes = sum(a.nbytes for a in weights.values())
        self.weights_bytes += weights_bytes
        self.shard_bytes += shard_bytes
        self.bytes_sent += len(refs) * weights_bytes + shard_bytes
        try:
            parts = self.ray.get(refs)
        except self.ray.exceptions.RayActorError as err:
            reason = " ".join(str(err).split())[:160]
            raise TrainingLayerError(Errors.E049.format(times=MAX_RESTARTS + 1, err=reason)) from None
        self.bytes_received += sum(sum(a.nbytes for a in p) for p in parts)
        self.minibatches += 1
        return merge_shards(parts)

    def stats(self) -> Dict[str, float]:
        return {"workers": len(self.actors), "minibatches": self.minibatches, "bytes_sent": self.bytes_sent,
                "bytes_received": self.bytes_received, "weights_bytes": self.weights_bytes,
                "shard_bytes": self.shard_bytes}

    def close(self) -> None:
        """Stop the workers (their processes end), and the cluster if this run started it."""
        if self.watcher is not None:
            self.watcher({"event": "closing", "workers": self.ray.get([a.report.remote() for a in self.actors]),
                          "stats": self.stats()})
        super().close()
