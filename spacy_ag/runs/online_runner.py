"""Variational training (modes `vb` and `online`): passes over a corpus or a stream, with checkpoints.

The loop hands minibatches to `OnlineLearner.step` (a stream's) or, several
at a time up to the next that reports, refines or checkpoints, to
`OnlineLearner.steps` (an in-memory corpus's); it reports trace lines,
writes an atomic checkpoint every `checkpoint_every` minibatches and on
Ctrl-C (honoured between those calls), and resumes from it exactly: the
shuffling of every pass and the random stream of every sentence derive from
the seed, the pass and the position, so a resumed run equals an
uninterrupted one. A stream read from a file resumes the same way: the
checkpoint holds the pass and the number of items of that pass consumed, and
the resumed run reads the file again through the same seeded shuffle,
skipping those items (no parsing).
"""
from __future__ import annotations

import contextlib
import random
from dataclasses import replace
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..core.grammatons import Variational
from .online_learner import OnlineLearner, OnlineSettings
from ..archive import read_checkpoint_file, write_checkpoint_file
from ..errors import Errors, ModelFileError
from ..serialize import check_run, state_arrays, state_from_arrays
from ..settings import TrainingSettings
from ..core.state import TAB_HWM
from .signals import StopRequest, TrainingInterrupted

Report = Callable[[Dict], None]
PER_TABLE = ("ft", "lw", "rank", "f_batch")
#: Trace lines a streamed run keeps in memory (its callback, e.g. trace.jsonl, gets every line):
#: a stream of any length trains in the same memory.
STREAM_TRACE_KEPT = 1000
#: Minibatches of an in-memory corpus run in one call at most: a Ctrl-C is honoured between calls
#: (50 minibatches of 5 utterances: about 25 ms).
STEPS_PER_CALL = 50


def variational_arrays(V: Variational, n_tables: int) -> Dict[str, np.ndarray]:
    """The statistics as `vb_*` arrays, per-table arrays cut like the state's table pool."""
    n = max(1, int(n_tables))
    return {f"vb_{name}": np.ascontiguousarray(getattr(V, name)[:n] if name in PER_TABLE else getattr(V, name))
            for name in Variational._fields}


def variational_from_arrays(arrays: Dict[str, np.ndarray], source: str) -> Optional[Variational]:
    names = [f"vb_{name}" for name in Variational._fields]
    present = [n in arrays for n in names]
    if not any(present):
        return None
    if not all(present):
        raise ModelFileError(Errors.E496.format(source=source))
    return Variational(*(np.array(arrays[n]) for n in names))


def model_arrays(state, V: Optional[Variational]) -> Dict[str, np.ndarray]:
    """What a saved model or checkpoint holds: the state, plus the variational statistics if any."""
    arrays = state_arrays(state)
    if V is not None:
        arrays.update(variational_arrays(V, state.counters[TAB_HWM]))
    return arrays


def mode_settings(mode: str, settings: OnlineSettings, n_sentences: int) -> OnlineSettings:
    """Batch VB is online with one minibatch of the whole corpus and step size 1 (4.12)."""
    if mode == "vb":
        return replace(settings, batch_size=max(1, n_sentences), kappa=0.0, refine_every=1)
    return settings


class VariationalRun:
    """One training run: a learner, its corpus or stream, progress, checkpoints, and where its E-steps run."""

    def __init__(self, learner: OnlineLearner, *, passes: int, report: Optional[Report] = None,
                 checkpoint: Optional[str] = None, checkpoint_every: int = 0, fingerprint: str = "",
                 evaluate: Optional[Callable[[], Dict]] = None, eval_every: int = 0, trace_kept: int = 0,
                 run: Optional[Mapping[str, Any]] = None, training: Optional[TrainingSettings] = None):
        self.learner = learner
        self.passes = passes
        self.report = report
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.fingerprint = fingerprint
        self.run = dict(run or {})  # what decides the run (`spacy_ag.serialize.check_run`)
        self.training = training  # where the E-steps run (`remote_estep`); None: in this process
        self.evaluate = evaluate
        self.eval_every = eval_every
        self.trace: List[Dict] = []
        self.trace_kept = trace_kept  # 0: every line; else about the last this many (a stream's)
        self.epoch = 0
        self.position = 0
        #: seconds of the calls since the last trace line, so that a line's "seconds" is the
        #: training time since the previous line (what `spacy-ag plot` sums)
        self.untraced_seconds = 0.0

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> None:
        meta = dict(mode="variational", fingerprint=self.fingerprint, run=self.run,
                    progress=self.learner.progress(), epoch=self.epoch, position=self.position,
                    trace=self.trace[-50:], settings=self.learner.settings.to_dict())
        write_checkpoint_file(self.checkpoint, "checkpoint", model_arrays(self.learner.state, self.learner.V), meta)

    @staticmethod
    def load_checkpoint(path: str, fingerprint: str, compiled=None, run: Optional[Mapping[str, Any]] = None):
        arrays, meta = read_checkpoint_file(path, "checkpoint")
        if meta.get("mode") != "variational":
            raise ModelFileError(Errors.E497.format(path=path))
        if meta["fingerprint"] != fingerprint:
            raise ValueError(Errors.E498.format(path=path))
        check_run(path, meta.get("run"), run)
        state = state_from_arrays(arrays, path)
        variational = variational_from_arrays(arrays, path)
        from ..core.state_checks import check_state  # every array, before any kernel sees it

        check_state(compiled, state, variational, path, require_variational=True)
        return state, variational, meta

    def restore(self, meta: Dict) -> None:
        self.epoch, self.position = int(meta["epoch"]), int(meta["position"])
        self.trace = list(meta.get("trace", []))

    # ------------------------------------------------------------------ loop
    def _line(self, line: Dict, final_of_pass: bool) -> None:
        learner = self.learner
        line.update(learner.summary())
        line["pass"] = self.epoch if final_of_pass else self.epoch + 1
        due = self.eval_every and learner.minibatches % self.eval_every == 0
        if self.evaluate is not None and (due or final_of_pass):
            line.update(self.evaluate())
        self.trace.append(line)
        if self.trace_kept and len(self.trace) > 2 * self.trace_kept:
            del self.trace[:-self.trace_kept]
        if self.report is not None:
            self.report(line)

    def _after_step(self, line: Dict, end: bool, stop) -> None:
        """What follows a minibatch: its trace line if due, the checkpoint if due, then a
        pending Ctrl-C. `epoch` and `position` already count the minibatch (and at the end of a
        pass name the next one), so an interrupt in the report resumes cleanly."""
        learner = self.learner
        self.untraced_seconds += line.get("seconds", 0.0)
        if "pruned" in line or end or (self.eval_every and learner.minibatches % self.eval_every == 0):
            line["seconds"] = self.untraced_seconds
            self.untraced_seconds = 0.0
            self._line(line, end)
        if self.checkpoint and ((self.checkpoint_every and learner.minibatches % self.checkpoint_every == 0)
                                or end):
            self.save_checkpoint()
        if stop.requested:
            raise KeyboardInterrupt

    def _interrupted(self) -> TrainingInterrupted:
        """Ctrl-C or SIGTERM: the checkpoint of the minibatches finished so far, then the stop."""
        if self.checkpoint:
            self.save_checkpoint()
        return TrainingInterrupted(self.checkpoint)

    def _minibatches_until_due(self) -> int:
        """How many minibatches may run in one call (`OnlineLearner.steps`): up to the next one that
        refines, reports or checkpoints, and at most `STEPS_PER_CALL`, as a stop waits for the call."""
        learner = self.learner
        count = STEPS_PER_CALL
        for every in (learner.settings.refine_every, self.eval_every, self.checkpoint and self.checkpoint_every):
            if every:
                count = min(count, every - learner.minibatches % every)
        return count

    def run_corpus(self, words: np.ndarray, sent_ptr: np.ndarray, corpus_size: int) -> None:
        """Passes over an in-memory corpus, reshuffled at every pass; the minibatches between two
        that report, refine or checkpoint run in one call."""
        learner, B = self.learner, self.learner.settings.batch_size
        n = len(sent_ptr) - 1
        with remote_estep(learner, self.training):
            try:
                with StopRequest() as stop:
                    while self.epoch < self.passes:
                        order = learner.shuffled(n, self.epoch)
                        while self.position < n:
                            stop_at = min(n, self.position + B * self._minibatches_until_due())
                            batches = [order[p:p + B] for p in range(self.position, stop_at, B)]
                            line = learner.steps(words, sent_ptr, batches, corpus_size)
                            self.position = stop_at
                            end = self.position >= n
                            if end:
                                self.epoch += 1
                                self.position = 0
                            self._after_step(line, end, stop)
                            if end:
                                break
            except KeyboardInterrupt:
                raise self._interrupted() from None

    def run_stream(self, batches: Iterable[Tuple[int, np.ndarray, np.ndarray]], corpus_size: int) -> None:
        """One pass over minibatches that arrive one at a time (bounded memory).

        `batches` yields (items of the stream consumed, words, sent_ptr). `position` counts the
        items consumed in this pass: a stream that can be replayed (a file, with the same seeded
        shuffle) resumes from a checkpoint by skipping that many items. Checkpoints (with a
        `checkpoint` path) are written every `checkpoint_every` minibatches, at the end of the
        pass and on Ctrl-C, which is honoured between minibatches.
        """
        learner = self.learner
        with remote_estep(learner, self.training):
            try:
                with StopRequest() as stop:
                    for consumed, words, sent_ptr in batches:
                        batch = np.arange(len(sent_ptr) - 1, dtype=np.int64)
                        line = learner.step(words, sent_ptr, batch, corpus_size) if len(batch) else None
                        self.position += consumed  # after the step: an interrupt inside it redoes the minibatch
                        if line is not None:
                            self._after_step(line, False, stop)
                    self.epoch += 1
                    self.position = 0
                    self._after_step({"minibatch": learner.minibatches}, True, stop)
            except KeyboardInterrupt:
                raise self._interrupted() from None


@contextlib.contextmanager
def remote_estep(learner: OnlineLearner, training: Optional[TrainingSettings]) -> Iterator[None]:
    """With ``training.backend == "ray"``, the learner's E-steps run on Ray workers inside the block
    (`spacy_ag.runs.ray_estep`); they stop, with the cluster if the block started it, when it ends."""
    if training is None or training.backend != "ray":
        yield
        return
    from .ray_estep import RayEStep

    workers = RayEStep(learner.compiled, learner.settings.samples, training.ray_address, training.workers)
    learner.remote_estep = workers
    try:
        yield
    finally:
        learner.remote_estep = None
        workers.close()


def shuffled_stream(sentences: Iterable[Sequence[str]], buffer: int, seed: int) -> Iterator[Sequence[str]]:
    """Sentences in a locally shuffled order: a reservoir of `buffer` sentences (bounded memory)."""
    rng = random.Random(seed)
    pool: List[Sequence[str]] = []
    for s in sentences:
        pool.append(s)
        if len(pool) >= buffer:
            i = rng.randrange(len(pool))
            pool[i], pool[-1] = pool[-1], pool[i]
            yield pool.pop()
    rng.shuffle(pool)
    yield from pool
