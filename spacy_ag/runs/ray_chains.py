"""MCMC chains as tasks of a Ray cluster: ``backend = "ray"`` of the training settings.

Chains are independent until their kept samples are pooled, so they spread
over the nodes of a cluster as they spread over the cores of one machine
(`spacy_ag.runs.chain_pool._ChainPool`). `run_chains_on_ray` is the driver: it runs
every `ChainJob` as one Ray task (one CPU each) and returns what
`run_chains` returns, so the caller pools the maximum-marginal counts on the
driver exactly as for local chains, and the result is the local one, bit for
bit (each chain's random stream depends only on its seed).

Everything a chain sends goes through one small actor, the hub, which the
driver empties every `_POLL` seconds: its trace lines (handed to the driver's
callback, each iteration once) and its checkpoints, as bytes. The driver
writes those to the chain's checkpoint file, or keeps them in memory for a
run without one. So the output directory lives on the driver alone, and no
filesystem has to be shared between nodes; a worker (or node) that is lost
costs only its chain's last checkpoint interval: the driver starts the chain
again from the last checkpoint it holds, and since a checkpoint carries the
chain's random generator, the run still ends as an uninterrupted one. The
hub's answer to each message is the stop request: SIGINT or SIGTERM on the
driver stops every chain at its next iteration boundary, after a
checkpoint; chains still running `STOP_GRACE` seconds later, or at a second
signal, are cancelled (their worker processes killed). A cluster the driver
started is shut down when the run ends, however it ends.

Ray is imported here only, and this module only when a run asks for it.
"""
from __future__ import annotations

import contextvars
import dataclasses
import os
import shutil
import signal
import tempfile
import time
import traceback
from typing import Any, Callable, ContextManager, Dict, List, Optional, Tuple

from ..archive import read_checkpoint_bytes, write_atomic_file
from ..errors import Errors, TrainingLayerError
from .chain_pool import (
    STOP_GRACE, ChainDriver, ChainJob, ChainResult, RemoteTraceback, TraceCallback, picklable_error, run_chain,
)
from .marginal_decoding import MarginalCounts
from .ray_cluster import connect_ray, watching
from .signals import ParentSignals, StopRequest, TrainingInterrupted

__all__ = ["MAX_RESTARTS", "run_chains_on_ray", "watch_chains"]

#: How often one chain may be started again after its worker or node was lost, before the run gives up.
MAX_RESTARTS = 3
_POLL = 0.2  # seconds between the driver's looks at the hub, the tasks and signals

ChainEvent = Dict[str, Any]
_WATCHER: contextvars.ContextVar[Optional[Callable[[ChainEvent], None]]] = contextvars.ContextVar(
    "spacy_ag_ray_chain_watcher", default=None)


def watch_chains(watcher: Optional[Callable[[ChainEvent], None]]) -> ContextManager[None]:
    """Report where and when the Ray chains of the runs inside the ``with`` run.

    The training API has no place for it (a trace line must not depend on the
    backend), so, like `spacy_ag.components.fitting.observe_fitting`, it is a
    context: `watcher` receives one dict per event, ``{"event": "started",
    "chain", "attempt", "pid", "node", "time"}``, ``{"event": "ended", ...}``
    and ``{"event": "lost", "chain", "attempt", "error", "iteration"}`` (the
    iteration its next attempt starts from).
    """
    return watching(_WATCHER, watcher)


class _Hub:
    """The actor every chain reports to; `put` answers with the stop request (a signal number, 0 for none)."""

    def __init__(self):
        self.items: List[Tuple[int, int, Tuple]] = []
        self.stop = 0

    def put(self, chain: int, attempt: int, item: Tuple) -> int:
        self.items.append((chain, attempt, item))
        return self.stop

    def take(self) -> List[Tuple[int, int, Tuple]]:
        items, self.items = self.items, []
        return items

    def request_stop(self, signum: int) -> None:
        self.stop = self.stop or signum


class _StopFlag:
    """The driver's stop request as a Ray worker last heard it (`StopRequest.shared`)."""

    value = 0


def _chain_task(job: ChainJob, attempt: int, hub, checkpoint: Optional[bytes]) -> Tuple:
    """On a Ray worker: run one chain (from `checkpoint`, when given), reporting to the hub.

    The chain checkpoints into a scratch file of this worker, whose bytes go to
    the hub each time. Returns ("done",), ("stopped", signal) or ("error",
    exception, traceback); the result itself is the last checkpoint sent.
    """
    import ray

    scratch = tempfile.mkdtemp(prefix=f"spacy-ag-ray-chain-{job.chain_index}-")
    local = dataclasses.replace(job, checkpoint=os.path.join(scratch, "chain.npz"), resume=checkpoint is not None)
    if checkpoint is not None:
        with open(local.checkpoint, "wb") as f:
            f.write(checkpoint)
    stop = StopRequest(_StopFlag())

    def send(*item) -> None:
        if stop.orphaned:
            return
        try:
            stop.shared.value = ray.get(hub.put.remote(job.chain_index, attempt, item))
        except ray.exceptions.RayError:  # the driver is gone: stop at the next iteration boundary
            stop.orphaned = True

    def saved(path: str) -> None:
        with open(path, "rb") as f:
            send("checkpoint", f.read())

    try:
        with stop:
            send("started", os.getpid(), ray.get_runtime_context().get_node_id(), time.time())
            try:
                run_chain(local, report=lambda line: send("line", line), stop=stop, saved=saved)
            except TrainingInterrupted as err:
                return ("stopped", err.signum)
            except KeyboardInterrupt:  # a second signal before the chain was set up
                return ("stopped", stop.signum or signal.SIGINT)
            except BaseException as err:
                return ("error", picklable_error(err), traceback.format_exc())
            finally:
                send("ended", os.getpid(), time.time())
            return ("done",)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@dataclasses.dataclass
class _Running:
    job: ChainJob
    attempt: int
    ref: Any  # the task's ObjectRef


class _RayChains(ChainDriver):
    """The driver of one run: starts the chains' tasks, relays their messages, restarts lost ones."""

    def __init__(self, ray, jobs: List[ChainJob], workers: int, callback: Optional[TraceCallback]):
        self.ray, self.jobs, self.callback = ray, jobs, callback
        self.by_index = {job.chain_index: job for job in jobs}
        self.limit = workers if workers > 0 else len(jobs)
        self.watcher = _WATCHER.get()
        self.pending = list(jobs)
        self.running: Dict[int, _Running] = {}
        self.attempts = {job.chain_index: 0 for job in jobs}
        self.latest: Dict[int, bytes] = {}  # the last checkpoint of each chain
        self.delivered: Dict[int, int] = {}  # the last iteration handed to the callback, per chain
        self.error: Optional[BaseException] = None
        self.stopped = 0  # the signal of a stop that did not come from the driver's signals
        self.callback_failed = False
        for job in jobs:
            if job.resume and job.checkpoint and os.path.exists(job.checkpoint):
                with open(job.checkpoint, "rb") as f:
                    self.latest[job.chain_index] = f.read()
        here = ray.get_runtime_context().get_node_id()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.hub = ray.remote(num_cpus=0, max_restarts=0)(_Hub).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True)).remote()
        self.task = ray.remote(num_cpus=1, max_retries=0)(_chain_task)

    def run(self) -> List[ChainResult]:
        try:
            with ParentSignals() as signals:
                self._loop(signals)
        finally:
            for r in self.running.values():  # only if the loop itself failed
                self.ray.cancel(r.ref, force=True)
            self.ray.kill(self.hub)
        if self.error is not None:
            raise self.error
        signum = signals.signum or self.stopped
        if signum:
            raise TrainingInterrupted(*[job.checkpoint for job in self.jobs], signum=signum)
        return [self._result(job) for job in self.jobs]

    def _loop(self, signals: ParentSignals) -> None:
        deadline = None
        while self.pending or self.running:
            signum = signals.signum or self.stopped
            if deadline is None and (signum or self.error is not None):
                self.hub.request_stop.remote(signum or signal.SIGTERM)
                self.pending.clear()
                deadline = time.monotonic() + STOP_GRACE
            if deadline is not None and (signals.count > 1 or time.monotonic() > deadline):
                for r in self.running.values():
                    self.ray.cancel(r.ref, force=True)
            while self.pending and len(self.running) < self.limit:
                self._start(self.pending.pop(0))
            self._relay()
            refs = [r.ref for r in self.running.values()]
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=_POLL)
            if ready:
                self._relay()  # a task puts everything before it returns: all its messages are here now
                for chain, r in list(self.running.items()):
                    if r.ref in ready:
                        del self.running[chain]
                        self._ended(r, stopping=deadline is not None)

    def _start(self, job: ChainJob) -> None:
        chain = job.chain_index
        ref = self.task.remote(job, self.attempts[chain], self.hub, self.latest.get(chain))
        self.running[chain] = _Running(job, self.attempts[chain], ref)

    def _relay(self) -> None:
        for chain, attempt, item in self.ray.get(self.hub.take.remote()):
            if attempt != self.attempts[chain]:
                continue  # a late word from a worker given up for lost
            kind = item[0]
            if kind == "line":
                line = item[1]
                if line.get("iteration", 0) > self.delivered.get(chain, 0):  # a restarted chain repeats some
                    self.delivered[chain] = line["iteration"]
                    self._deliver(line)
            elif kind == "checkpoint":
                self.latest[chain] = item[1]
                path = self.by_index[chain].checkpoint
                if path:
                    write_atomic_file(path, item[1])
            elif kind in ("started", "ended") and self.watcher is not None:
                event = {"event": kind, "chain": chain, "attempt": attempt, "pid": item[1]}
                event.update({"node": item[2], "time": item[3]} if kind == "started" else {"time": item[2]})
                self.watcher(event)

    def _ended(self, r: _Running, stopping: bool) -> None:
        try:
            outcome = self.ray.get(r.ref)
        except self.ray.exceptions.TaskCancelledError:
            return  # cancelled by the stop: its last checkpoint stays
        except self.ray.exceptions.RayTaskError as err:  # raised outside the chain (e.g. unpickling the job)
            self.error = self.error or err.as_instanceof_cause()
            return
        except self.ray.exceptions.RayError as err:  # the worker or its node was lost
            self._lost(r, err, stopping)
            return
        if outcome[0] == "stopped":
            self.stopped = self.stopped or outcome[1]
        elif outcome[0] == "error" and self.error is None:
            self.error = outcome[1]
            self.error.__cause__ = RemoteTraceback(outcome[2])

    def _lost(self, r: _Running, err: BaseException, stopping: bool) -> None:
        """Start a lost chain again from its last checkpoint, or give up after MAX_RESTARTS."""
        chain = r.job.chain_index
        iteration = self._iteration_of(chain)
        reason = " ".join(str(err).split())[:160] or type(err).__name__
        if self.watcher is not None:
            self.watcher({"event": "lost", "chain": chain, "attempt": r.attempt, "error": reason,
                          "iteration": iteration})
        if stopping:
            return
        if self.attempts[chain] >= MAX_RESTARTS:
            self.error = self.error or TrainingLayerError(Errors.E044.format(
                chain=chain, times=self.attempts[chain] + 1, err=reason, iteration=iteration))
            return
        self.attempts[chain] += 1
        self._start(r.job)

    def _iteration_of(self, chain: int) -> int:
        data = self.latest.get(chain)
        return 0 if data is None else int(read_checkpoint_bytes(data, f"chain {chain}", "checkpoint")[1]["iteration"])


    def _result(self, job: ChainJob) -> ChainResult:
        arrays, meta = read_checkpoint_bytes(self.latest[job.chain_index], f"chain {job.chain_index}", "checkpoint")
        return ChainResult(job.chain_index, arrays, meta["trace"], MarginalCounts.from_json(meta["marginals"]),
                           meta["iteration"])


def run_chains_on_ray(jobs: List[ChainJob], workers: int, callback: Optional[TraceCallback],
                      address: Optional[str] = None) -> List[ChainResult]:
    """Run the chains as tasks of a Ray cluster; the result of `spacy_ag.runs.chain_pool.run_chains`.

    jobs (List[ChainJob]): One per chain; a job's checkpoint file is written on this machine (the driver).
    workers (int): Chains running at once (0: all of them, as the cluster's CPUs allow).
    callback (Optional[Callable]): Receives every trace line of every chain, on the driver.
    address (Optional[str]): The cluster (`ray.init`'s address; None: join the local one or start it).
    RETURNS (List[ChainResult]): One per job, in order.
    """
    ray, connected = connect_ray(address)
    try:
        return _RayChains(ray, jobs, workers, callback).run()
    finally:
        if connected:
            ray.shutdown()
