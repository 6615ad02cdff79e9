"""Running chains: iterations, kept samples, checkpoints, parallel chains.

A chain's checkpoint is one file (state arrays + JSON progress) replaced
atomically every `checkpoint_every` iterations and on Ctrl-C or SIGTERM. The
state carries its random generator, so a resumed chain continues exactly where
the interrupted one stopped: the result equals that of an uninterrupted run.

Parallel chains run in worker processes (`_ChainPool`). SIGINT or SIGTERM sent
to the parent alone stops every worker at its next iteration boundary, after
its checkpoint; the parent waits for them (killing stragglers after
`STOP_GRACE` seconds) and raises `TrainingInterrupted` with the signal. A
worker whose parent died stops the same way and exits.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .mcmc_chain import Chain
from ..core.compiled import CompiledGrammar
from ..errors import Errors
from ..evaluation import segmentation_scores
from ..settings import OnlineSettings, SamplerSettings, TrainingSettings
from ..archive import read_checkpoint_file, write_checkpoint_file
from ..serialize import check_run, state_arrays, state_from_arrays
from .marginal_decoding import MarginalCounts, words_from_key
from .signals import ParentSignals, StopRequest, TrainingInterrupted
from .warm_start import warm_start

TraceCallback = Callable[[Dict], None]


def corpus_fingerprint(words: np.ndarray, sent_ptr: np.ndarray, grammar_text: str) -> str:
    h = hashlib.sha256()
    h.update(words.tobytes())
    h.update(sent_ptr.tobytes())
    h.update(grammar_text.encode("utf8"))
    return h.hexdigest()


@dataclass
class ChainJob:
    compiled: CompiledGrammar
    words: np.ndarray
    sent_ptr: np.ndarray
    sampler: SamplerSettings
    training: TrainingSettings
    chain_index: int
    seg_mask: np.ndarray  # segmentation category: 1 per symbol of its set
    fingerprint: str
    checkpoint: Optional[str] = None
    resume: bool = False
    gold: Optional[List[List[str]]] = None
    sentences: Optional[List[Sequence[str]]] = None
    online: Optional[OnlineSettings] = None  # the pass of sampler.init = "online"
    #: ``section.key`` -> value of what decides the run (`spacy_ag.serialize.check_run`): recorded in
    #: the checkpoint, which continues only a run that gives the same
    run: Optional[Dict[str, Any]] = None


@dataclass
class ChainResult:
    chain_index: int
    state_arrays: Dict[str, np.ndarray]
    trace: List[Dict]
    marginals: MarginalCounts
    iteration: int


def _load_checkpoint(job: ChainJob):
    arrays, meta = read_checkpoint_file(job.checkpoint, "checkpoint")
    if meta["fingerprint"] != job.fingerprint:
        raise ValueError(Errors.E498.format(path=job.checkpoint))
    check_run(job.checkpoint, meta.get("run"), job.run)
    state = state_from_arrays(arrays, job.checkpoint)
    from ..core.state_checks import check_state  # every array, before any kernel sees it

    check_state(job.compiled, state, None, job.checkpoint)
    return state, meta["iteration"], meta["trace"], MarginalCounts.from_json(meta["marginals"])


def _save_checkpoint(job: ChainJob, chain: Chain, trace, marginals) -> None:
    _write_chain_file(Path(job.checkpoint), job, state_arrays(chain.state), chain.iteration, trace, marginals)


def _write_chain_file(path: Path, job: ChainJob, arrays: Dict[str, np.ndarray], iteration: int, trace,
                      marginals: MarginalCounts) -> None:
    """A checkpoint (also the result file a worker of parallel chains leaves for its parent)."""
    meta = dict(iteration=iteration, chain=job.chain_index, fingerprint=job.fingerprint, run=job.run or {},
                trace=trace, marginals=marginals.to_json(), sampler=job.sampler.to_dict(),
                training=asdict(job.training))
    write_checkpoint_file(path, "checkpoint", arrays, meta)


def score_keys(keys, sentences, gold) -> Dict[str, float]:
    """Token, boundary and lexicon F of one sample against gold words."""
    pred = [words_from_key(s, k) for s, k in zip(sentences, keys)]
    scores = segmentation_scores(pred, gold)
    return {"token_f": scores["token_f"], "boundary_f": scores["boundary_f"], "lexicon_f": scores["type_f"]}


def run_chain(job: ChainJob, report: Optional[Callable[[Dict], None]] = None,
              stop: Optional[StopRequest] = None, saved: Optional[Callable[[str], None]] = None) -> ChainResult:
    """Run (or resume) one chain to the end, keeping samples and checkpointing.

    SIGINT and SIGTERM stop it at the next iteration boundary, after a checkpoint
    (`TrainingInterrupted`); a worker passes its own `stop`, entered before the
    chain was set up. `saved` is called with the checkpoint's path each time one
    was written (a Ray worker sends it to the driver).
    """
    t = job.training
    seed = t.seed + job.chain_index
    state, start, trace, marginals = None, 0, [], MarginalCounts(len(job.sent_ptr) - 1)
    if job.resume and job.checkpoint and Path(job.checkpoint).exists():
        state, start, trace, marginals = _load_checkpoint(job)
    chain = Chain(job.compiled, job.words, job.sent_ptr, job.sampler, seed, state=state, iteration=start)
    if state is None and job.sampler.init == "online":
        warm_start(chain, job.online or OnlineSettings())
    elif state is None:
        chain.initialize()
    stop = StopRequest() if stop is None else stop
    whole = [True]  # False while an iteration is half done: such a state is never checkpointed

    def save() -> None:
        _save_checkpoint(job, chain, trace, marginals)
        if saved is not None:
            saved(job.checkpoint)

    try:
        with stop:
            _iterate(job, chain, trace, marginals, report, stop, whole, save)
    except KeyboardInterrupt:
        if job.checkpoint and whole[0]:
            save()
        raise TrainingInterrupted(job.checkpoint, signum=stop.signum or None) from None
    if job.checkpoint:
        save()
    return ChainResult(job.chain_index, state_arrays(chain.state), trace, marginals, chain.iteration)


def _iterate(job: ChainJob, chain: Chain, trace, marginals, report, stop: StopRequest, whole, save) -> None:
    """The iterations; `whole[0]` is False from the start of an iteration until its sample,
    score and trace line are recorded (a second Ctrl-C can land anywhere)."""
    t = job.training
    while chain.iteration < t.iterations:
        whole[0] = False
        line = chain.step()
        line["chain"] = job.chain_index
        it = chain.iteration
        keep = t.keeps_sample(it)
        evaluate = job.gold is not None and t.evaluates(it)
        if keep or evaluate:
            keys = chain.segmentation_keys(job.seg_mask)
            if keep:
                marginals.add(keys)
            if evaluate:
                line.update(score_keys(keys, job.sentences, job.gold))
        trace.append(line)
        whole[0] = True
        if report is not None:
            report(line)
        if job.checkpoint and t.checkpoint_every and it % t.checkpoint_every == 0:
            save()
        if stop.requested:
            raise KeyboardInterrupt


#: Seconds that stopping workers of parallel chains get to reach their next iteration boundary
#: and write their checkpoint before they are killed (their previous checkpoint stays, so a
#: resumed run still equals an uninterrupted one); also how long a worker whose parent died
#: may live on.
STOP_GRACE = 30.0
_POLL = 0.2  # seconds between the parent's looks at signals and deadlines
_PARENT_POLL = 0.5  # seconds between a worker's looks at its parent


class RemoteTraceback(Exception):
    """The traceback of an error raised in a worker (the __cause__ of the error re-raised here)."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0])


def picklable_error(err: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:
        return RuntimeError(Errors.E512.format(kind=type(err).__name__, err=err))


def _read_result(job: ChainJob, path: str) -> ChainResult:
    arrays, meta = read_checkpoint_file(path, "checkpoint")
    return ChainResult(job.chain_index, arrays, meta["trace"], MarginalCounts.from_json(meta["marginals"]),
                       meta["iteration"])


def _watch_parent(parent_pid: int, stop: StopRequest) -> None:
    """In a worker: once the parent is gone, stop at the next iteration boundary; exit STOP_GRACE seconds later."""

    def watch():
        while os.getppid() == parent_pid and not stop.orphaned:
            time.sleep(_PARENT_POLL)
        stop.orphaned = True
        time.sleep(STOP_GRACE)
        os._exit(1)

    threading.Thread(target=watch, name="spacy-ag parent watch", daemon=True).start()


def _chain_process(job: ChainJob, conn, shared, parent_pid: int, result_path: Optional[str], inherited) -> None:
    """A worker of parallel chains: one chain; its trace lines, then one last message, to the parent.

    The last message is ("done", file with the result), ("stopped", signal) or
    ("error", exception, traceback): all small, as are trace lines. The result
    file is the chain's final checkpoint, or `result_path` for a chain without one.
    """
    for other in inherited:  # the parent's ends of the workers' pipes, copied by fork: closed, a dead
        other.close()        # parent means a broken pipe here rather than a write blocked forever
    stop = StopRequest(shared)
    with stop:
        if hasattr(signal, "pthread_sigmask"):  # blocked by the parent until our handlers were in place
            signal.pthread_sigmask(signal.SIG_UNBLOCK, StopRequest.SIGNALS)
        _watch_parent(parent_pid, stop)

        def send(message) -> None:
            if not stop.orphaned:
                try:
                    conn.send(message)
                except OSError:  # the parent is gone: stop at the next iteration boundary
                    stop.orphaned = True

        try:
            result = run_chain(job, report=send, stop=stop)
        except TrainingInterrupted as err:
            send(("stopped", err.signum))
        except KeyboardInterrupt:  # a second signal before the chain was set up
            send(("stopped", stop.signum or signal.SIGINT))
        except BaseException as err:
            send(("error", picklable_error(err), traceback.format_exc()))
        else:
            path = job.checkpoint
            if path is None and result_path is not None and not stop.orphaned:
                path = result_path
                _write_chain_file(Path(path), job, result.state_arrays, result.iteration, result.trace,
                                  result.marginals)
            send(("done", path))
        if stop.orphaned and result_path is not None:  # nobody will read it
            shutil.rmtree(os.path.dirname(result_path), ignore_errors=True)
    conn.close()


@dataclass
class _Worker:
    job: ChainJob
    process: multiprocessing.process.BaseProcess
    conn: Optional[multiprocessing.connection.Connection]
    last: Optional[Tuple] = None  # its last message
    killed: bool = False


class ChainDriver:
    """What every driver of parallel chains (`_ChainPool`, `spacy_ag.runs.ray_chains`) does with the
    callback: a Ctrl-C inside it stops every chain, with checkpoints; another error stops the run
    and is raised at its end, and the callback is not called again."""

    callback: Optional[TraceCallback]
    error: Optional[BaseException]
    stopped: int  # the signal of a stop that did not come from the driver's own signals
    callback_failed: bool

    def _deliver(self, line: Dict) -> None:
        if self.callback is None or self.callback_failed:
            return
        try:
            self.callback(line)
        except KeyboardInterrupt as err:
            self.stopped = self.stopped or int(getattr(err, "signum", None) or signal.SIGINT)
        except Exception as err:
            self.callback_failed = True
            self.error = self.error or err


class _ChainPool(ChainDriver):
    """Parallel chains, one worker process per chain and at most `workers` at a time.

    Every worker has a pipe of its own to the parent and sends only small
    messages (`_chain_process`); the parent drains every pipe while it waits, so
    a worker never blocks on a write, and no lock is shared between processes.
    A signal to the parent (or a worker's error, or the callback's) sets the
    shared stop request: every worker stops at its next iteration boundary,
    after its checkpoint. Workers still alive STOP_GRACE seconds later, or at a
    second signal, are killed. `run` returns or raises only when no worker is left.
    """

    def __init__(self, jobs: List[ChainJob], workers: int, callback: Optional[TraceCallback], ctx):
        self.jobs, self.workers, self.callback, self.ctx = jobs, workers, callback, ctx
        self.pending = list(jobs)
        self.running: List[_Worker] = []
        self.results: Dict[int, str] = {}
        self.shared = ctx.RawValue("i", 0)  # the stop request: a signal number, 0 for none
        self.fork = ctx.get_start_method() == "fork"
        self.error: Optional[BaseException] = None
        self.stopped = 0  # the signal of a stop that did not come from our own signals
        self.callback_failed = False
        self.scratch: Optional[str] = None

    def run(self) -> List[ChainResult]:
        with ParentSignals() as signals:
            try:
                if any(job.checkpoint is None for job in self.jobs):
                    self.scratch = tempfile.mkdtemp(prefix="spacy-ag-chains-")
                _warm_up(self.jobs[0])
                self._loop(signals)
                if self.error is not None:
                    raise self.error
                signum = signals.signum or self.stopped
                if signum:
                    raise TrainingInterrupted(*[job.checkpoint for job in self.jobs], signum=signum)
                return [_read_result(job, self.results[job.chain_index]) for job in self.jobs]
            finally:
                for w in self.running:  # only if the loop itself failed
                    self._kill(w)
                    w.process.join(5)
                if self.scratch is not None:
                    shutil.rmtree(self.scratch, ignore_errors=True)

    def _loop(self, signals: ParentSignals) -> None:
        deadline = None
        while self.pending or self.running:
            signum = signals.signum or self.stopped
            if deadline is None and (signum or self.error is not None):
                self.shared.value = signum or signal.SIGTERM
                self.pending.clear()
                deadline = time.monotonic() + STOP_GRACE
            if deadline is not None and (signals.count > 1 or time.monotonic() > deadline):
                for w in self.running:
                    self._kill(w)
            while self.pending and len(self.running) < self.workers:
                self._start(self.pending.pop(0))
            self._wait()

    def _start(self, job: ChainJob) -> None:
        reader, writer = self.ctx.Pipe(duplex=False)
        result = os.path.join(self.scratch, f"chain-{job.chain_index}.npz") if job.checkpoint is None else None
        inherited = [w.conn for w in self.running if w.conn is not None] + [reader] if self.fork else []
        process = self.ctx.Process(target=_chain_process, name=f"spacy-ag chain {job.chain_index}", daemon=True,
                                   args=(job, writer, self.shared, os.getpid(), result, inherited))
        blocked = hasattr(signal, "pthread_sigmask")
        if blocked:  # the worker unblocks them once its own handlers are in place
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, StopRequest.SIGNALS)
        try:
            process.start()
        finally:
            if blocked:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
            writer.close()
        self.running.append(_Worker(job, process, reader))

    def _kill(self, w: _Worker) -> None:
        if not w.killed and w.process.exitcode is None:
            w.killed = True
            w.process.kill()

    def _wait(self) -> None:
        waiting = [w.conn for w in self.running if w.conn is not None] + [w.process.sentinel for w in self.running]
        ready = set(multiprocessing.connection.wait(waiting, timeout=_POLL)) if waiting else set()
        for w in list(self.running):
            ended = w.process.sentinel in ready
            if w.conn is not None and (ended or w.conn in ready):
                self._drain(w)
            if ended:
                w.process.join()
                self.running.remove(w)
                if w.conn is not None:
                    w.conn.close()
                if w.last is None and not w.killed and self.error is None:
                    code = w.process.exitcode
                    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
                    self.error = RuntimeError(Errors.E513.format(chain_index=w.job.chain_index, how=how))

    def _drain(self, w: _Worker) -> None:
        """Every message the worker has sent; at the end of its pipe, close it."""
        while w.conn.poll(0):
            try:
                message = w.conn.recv()
            except Exception:  # EOFError at the end, or the rest of a message cut off by a kill
                w.conn.close()
                w.conn = None
                return
            if isinstance(message, dict):
                self._deliver(message)
                continue
            w.last = message
            if message[0] == "done":
                self.results[w.job.chain_index] = message[1]
            elif message[0] == "stopped":
                self.stopped = self.stopped or message[1]
            elif self.error is None:
                self.error = message[1]
                self.error.__cause__ = RemoteTraceback(message[2])



def _warm_up(job: ChainJob) -> None:
    """Compile the kernels once, here, so forked workers do not each compile them."""
    n = min(2, len(job.sent_ptr) - 1)
    sent_ptr = job.sent_ptr[: n + 1]
    words = job.words[: int(sent_ptr[-1])]
    chain = Chain(job.compiled, words, sent_ptr, job.sampler, 0)
    chain.initialize()
    chain.step()
    chain.segmentation_keys(job.seg_mask)


def run_chains(jobs: List[ChainJob], workers: int, callback: Optional[TraceCallback]) -> List[ChainResult]:
    """Run chains in parallel processes (or in this one), reporting trace lines as they come."""
    if workers <= 1 or len(jobs) == 1:
        return [run_chain(job, report=callback) for job in jobs]
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return _ChainPool(jobs, workers, callback, multiprocessing.get_context(method)).run()


def default_workers(chains: int) -> int:
    return max(1, min(chains, os.cpu_count() or 1))
