"""Running chains: iterations, kept samples, checkpoints, parallel chains.

A chain's checkpoint is one file (state arrays + JSON progress) replaced
atomically every `checkpoint_every` iterations and on Ctrl-C. The state
carries its random generator, so a resumed chain continues exactly where the
interrupted one stopped: the result equals that of an uninterrupted run.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .core.chain import Chain
from .core.compiled import CompiledGrammar
from .evaluation import segmentation_scores
from .settings import SamplerSettings, TrainingSettings
from .serialize import meta_header, read_npz, state_arrays, state_from_arrays, write_npz_atomic

TraceCallback = Callable[[Dict], None]


class MarginalCounts:
    """How often each segmentation of each sentence was sampled (3.15)."""

    def __init__(self, n_sentences: int):
        self.counts: List[Dict[bytes, int]] = [dict() for _ in range(n_sentences)]
        self.n_samples = 0

    def add(self, keys: Sequence[bytes]) -> None:
        for table, key in zip(self.counts, keys):
            table[key] = table.get(key, 0) + 1
        self.n_samples += 1

    def merge(self, other: "MarginalCounts") -> None:
        for table, more in zip(self.counts, other.counts):
            for key, n in more.items():
                table[key] = table.get(key, 0) + n
        self.n_samples += other.n_samples

    def best(self) -> List[bytes]:
        """The most frequent segmentation per sentence; ties go to the first seen."""
        return [max(t.items(), key=lambda kv: kv[1])[0] if t else b"" for t in self.counts]

    def to_json(self) -> Dict:
        return {"n_samples": self.n_samples,
                "counts": [[[k.hex(), n] for k, n in t.items()] for t in self.counts]}

    @classmethod
    def from_json(cls, data: Dict) -> "MarginalCounts":
        out = cls(len(data["counts"]))
        out.n_samples = data["n_samples"]
        out.counts = [{bytes.fromhex(k): n for k, n in t} for t in data["counts"]]
        return out


def words_from_key(text: Sequence[str], key: bytes) -> List[str]:
    """Cut a sentence at the boundary marks of a segmentation key."""
    marks = np.frombuffer(key, dtype=np.uint8)
    words, start = [], 0
    for p in range(1, len(text) + 1):
        if p == len(text) or marks[p]:
            words.append("".join(text[start:p]))
            start = p
    return words


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
    seg_sym: int
    fingerprint: str
    checkpoint: Optional[str] = None
    resume: bool = False
    gold: Optional[List[List[str]]] = None
    sentences: Optional[List[Sequence[str]]] = None


@dataclass
class ChainResult:
    chain_index: int
    state_arrays: Dict[str, np.ndarray]
    trace: List[Dict]
    marginals: MarginalCounts
    iteration: int


class TrainingInterrupted(KeyboardInterrupt):
    pass


class _StopRequest:
    """Turns the first Ctrl-C into a request honoured between iterations.

    A signal landing inside a sweep would otherwise leave a half-done
    iteration in the checkpoint; a second Ctrl-C stops at once.
    """

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False


def _load_checkpoint(job: ChainJob):
    arrays, meta = read_npz(Path(job.checkpoint), "checkpoint")
    if meta["fingerprint"] != job.fingerprint:
        raise ValueError(f"{job.checkpoint}: checkpoint of another corpus or grammar; remove it or "
                         "train without --resume")
    state = state_from_arrays(arrays, job.checkpoint)
    return state, meta["iteration"], meta["trace"], MarginalCounts.from_json(meta["marginals"])


def _save_checkpoint(job: ChainJob, chain: Chain, trace, marginals) -> None:
    meta = meta_header("checkpoint", iteration=chain.iteration, chain=job.chain_index,
                       fingerprint=job.fingerprint, trace=trace, marginals=marginals.to_json(),
                       sampler=job.sampler.to_dict(), training=asdict(job.training))
    write_npz_atomic(Path(job.checkpoint), state_arrays(chain.state), meta)


def score_keys(keys, sentences, gold) -> Dict[str, float]:
    """Token, boundary and lexicon F of one sample against gold words."""
    pred = [words_from_key(s, k) for s, k in zip(sentences, keys)]
    scores = segmentation_scores(pred, gold)
    return {"token_f": scores["token_f"], "boundary_f": scores["boundary_f"], "lexicon_f": scores["type_f"]}


def run_chain(job: ChainJob, report: Optional[Callable[[Dict], None]] = None) -> ChainResult:
    """Run (or resume) one chain to the end, keeping samples and checkpointing."""
    t = job.training
    seed = t.seed + job.chain_index
    state, start, trace, marginals = None, 0, [], MarginalCounts(len(job.sent_ptr) - 1)
    if job.resume and job.checkpoint and Path(job.checkpoint).exists():
        state, start, trace, marginals = _load_checkpoint(job)
    chain = Chain(job.compiled, job.words, job.sent_ptr, job.sampler, seed, state=state, iteration=start)
    if state is None:
        chain.initialize()
    try:
        with _StopRequest() as stop:
            _iterate(job, chain, trace, marginals, report, stop)
    except KeyboardInterrupt:
        if job.checkpoint:
            _save_checkpoint(job, chain, trace, marginals)
        raise TrainingInterrupted(job.checkpoint) from None
    if job.checkpoint:
        _save_checkpoint(job, chain, trace, marginals)
    return ChainResult(job.chain_index, state_arrays(chain.state), trace, marginals, chain.iteration)


def _iterate(job: ChainJob, chain: Chain, trace, marginals, report, stop: _StopRequest) -> None:
    t = job.training
    while chain.iteration < t.iterations:
        line = chain.step()
        line["chain"] = job.chain_index
        it = chain.iteration
        keep = t.keeps_sample(it)
        evaluate = job.gold is not None and t.evaluates(it)
        if keep or evaluate:
            keys = chain.segmentation_keys(job.seg_sym)
            if keep:
                marginals.add(keys)
            if evaluate:
                line.update(score_keys(keys, job.sentences, job.gold))
        trace.append(line)
        if report is not None:
            report(line)
        if job.checkpoint and t.checkpoint_every and it % t.checkpoint_every == 0:
            _save_checkpoint(job, chain, trace, marginals)
        if stop.requested:
            raise KeyboardInterrupt


_QUEUE = None


def _init_worker(queue):
    global _QUEUE
    _QUEUE = queue


def _run_in_worker(job: ChainJob) -> ChainResult:
    return run_chain(job, report=_QUEUE.put if _QUEUE is not None else None)


def _warm_up(job: ChainJob) -> None:
    """Compile the kernels once, here, so forked workers do not each compile them."""
    n = min(2, len(job.sent_ptr) - 1)
    sent_ptr = job.sent_ptr[: n + 1]
    words = job.words[: int(sent_ptr[-1])]
    chain = Chain(job.compiled, words, sent_ptr, job.sampler, 0)
    chain.initialize()
    chain.step()
    chain.segmentation_keys(job.seg_sym)


def run_chains(jobs: List[ChainJob], workers: int, callback: Optional[TraceCallback]) -> List[ChainResult]:
    """Run chains in parallel processes (or in this one), reporting trace lines as they come."""
    if workers <= 1 or len(jobs) == 1:
        return [run_chain(job, report=callback) for job in jobs]
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    _warm_up(jobs[0])
    ctx = multiprocessing.get_context(method)
    queue = ctx.Queue()
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(queue,)) as pool:
        futures = [pool.submit(_run_in_worker, job) for job in jobs]
        while not all(f.done() for f in futures):
            try:
                line = queue.get(timeout=0.2)
            except Exception:
                continue
            if callback is not None:
                callback(line)
        while not queue.empty():
            line = queue.get()
            if callback is not None:
                callback(line)
        return [f.result() for f in futures]


def default_workers(chains: int) -> int:
    return max(1, min(chains, os.cpu_count() or 1))
