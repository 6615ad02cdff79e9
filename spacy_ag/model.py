"""`AdaptorGrammar`: the one model class the CLI and the spaCy components wrap.

Data path: grammar file -> `Grammar` -> `CompiledGrammar` arrays -> chains of
compiled kernels -> a trained state, which parses and segments new text.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .runs.mcmc_chain import UnparseableSentence, pack_corpus
from .core.chart import chart_width, new_viterbi_chart
from .core.compiled import CompiledGrammar
from .core.grammatons import Variational, new_variational
from .runs.online_learner import OnlineLearner
from .core.state import OPEN, TAB_HWM, State
from .core.word_lattice import (
    UNIT_SPACE, UNIT_WORD, lattice_plan, lattice_state, lattice_weights, longest_chunk, segment_lattice_batch,
    segment_lattice_units,
)
from .core.viterbi import (
    ITEM_TABLE, ITEM_TERM, log_rho, log_table_weights, segment_batch, viterbi_chart, viterbi_items,
)
from .corpus import Corpus, chunked, read_corpus
from .evaluation import segmentation_scores
from .grammar import (
    Grammar, category_names, check_categories, expand_corpus_class, has_corpus_class, parse_grammar_text,
    read_grammar, with_max_span, write_pycfg,
)
from .grammar.checks import uncovered_error
from .archive import archive_bytes, reproducible, read_archive, read_archive_bytes, write_archive
from .model_headers import check_grammar_model_header
from .errors import Errors, ModelFileError, TextError
from .serialize import flat_settings, state_from_arrays
from .settings import (
    AUTO_MAX_SPAN, AUTO_UNITS, GrammarSettings, InferenceSettings, OnlineSettings, SamplerSettings, SettingError,
    TrainingSettings, check, normalized, resolve_units,
)
from .runs.chain_pool import TraceCallback, corpus_fingerprint
from .runs.marginal_decoding import MarginalCounts, words_from_key
from .runs.mcmc_runner import run_mcmc
from .runs.memory_budget import available_bytes, kernel_threads, training_bytes
from .runs.online_runner import (
    STREAM_TRACE_KEPT, VariationalRun, mode_settings, model_arrays, shuffled_stream, variational_from_arrays,
)
from .text_units import (
    LEGACY_UNITS, check_text, check_units, is_control, is_hard_boundary, terminals, text_units,
)
from .tree import Tree

INFERENCE_MODES = ("mcmc", "vb", "online")
#: The defaults of `AdaptorGrammar.fit`'s keywords: [training]'s, written once in `TrainingSettings`.
_RUN = TrainingSettings
_GRAMMAR = GrammarSettings
_INFERENCE = InferenceSettings
ARCHIVE_KIND = "model"
#: The longest unbroken run of text parsed by a grammar whose chart cannot be banded (an adapted
#: nonterminal without max_span), and the most memory any run's charts may take. A full chart takes
#: time cubic and memory quadratic in the run's length (unigram grammar: 1,000 terminals take about
#: 3 s, 2,000 about 50 s); a banded one is linear in both. A run past either limit is refused with
#: one line before any work, instead of running for minutes or failing to allocate.
MAX_RUN_TERMINALS = 1000
MAX_CHART_BYTES = 2 * 2 ** 30
PathLike = Union[str, os.PathLike]


class AdaptorGrammar:
    """An adaptor grammar trained by MCMC, batch VB or online VB, able to parse and segment new text.

    >>> ag = AdaptorGrammar("configs/grammars/unigram.lt")
    >>> ag.fit(["bakiromupeN3gOt", ...], iterations=200)
    >>> ag.segment(["zEf&pNOp"])

    With `inference="online"` (or `"vb"`) the same grammar is trained by the
    hybrid variational algorithm; `partial_fit` continues on new text, and a
    model trained by MCMC continues variationally from its tables.

    Every adapted nonterminal has a longest yield, `@ NT max_span=N` in the
    grammar or else `max_span`, fixed when training starts and saved with the
    grammar; it makes parsing linear in the length of a text.

    In `mode="chars"` a terminal is an extended grapheme cluster
    (`units="graphemes"`), a code point (`units="codepoints"`) or a grapheme
    with every run of digits and Latin letters as one terminal
    (`units="alnum-runs"`), see `spacy_ag.text_units`; the default,
    `units="auto"`, takes the units of `lang` (a spaCy language code: alnum-runs
    for zh, ja and th, as `spacy-ag init-config --lang` writes; graphemes for
    any other language and without one). The units are saved with the model.

    The defaults of `fit` are the [training] defaults (`TrainingSettings`).
    """

    def __init__(self, grammar: Union[Grammar, PathLike], *, segment_category: str = _GRAMMAR.segment_category,
                 mode: str = _GRAMMAR.mode, split_at: Optional[Iterable[str]] = None,
                 sampler: Optional[SamplerSettings] = None, inference: str = _INFERENCE.mode,
                 online: Optional[OnlineSettings] = None, units: str = AUTO_UNITS,
                 max_span: int = AUTO_MAX_SPAN, lang: Optional[str] = None, **grammar_options):
        if not isinstance(grammar, Grammar):
            grammar = read_grammar(grammar, **grammar_options)
        if max_span < 1:
            raise ValueError(Errors.E534.format(max_span=max_span))
        self.max_span = int(max_span)
        self.grammar = grammar
        self.segment_category = segment_category
        self.mode = mode
        self.units = check_units(resolve_units(units, lang))
        self.split_at = frozenset(split_at) if split_at else None
        # checked and normalised (4 -> 4.0 for a float setting), so a saved model reads back to the same bytes
        self.sampler = normalized(sampler or SamplerSettings(), "sampler")
        if inference not in INFERENCE_MODES:
            raise ValueError(Errors.E535.format(inference=inference, modes=', '.join(INFERENCE_MODES)))
        self.inference = inference
        self.online = normalized(online or OnlineSettings(), "online")
        self.compiled: Optional[CompiledGrammar] = None
        self.state: Optional[State] = None
        #: variational statistics when the state was last trained by vb or online (else None)
        self.variational: Optional[Variational] = None
        self.progress: Dict = {}
        self.trace: List[Dict] = []
        self.training_corpus: Optional[Corpus] = None
        self.marginals: Optional[MarginalCounts] = None
        if not has_corpus_class(grammar):
            self.compiled = CompiledGrammar(grammar)

    @property
    def segment_category(self) -> str:
        """The segmentation category: one nonterminal, or several joined by commas ("Word,FuncWord1")."""
        return self._segment_category

    @segment_category.setter
    def segment_category(self, spec) -> None:
        self._segment_category = ",".join(check_categories(self.grammar, spec))

    @property
    def segment_categories(self) -> Tuple[str, ...]:
        return category_names(self.segment_category)

    def _segment_mask(self, category: Optional[str] = None) -> np.ndarray:
        """The symbols whose outermost nodes are words: `category` (names, commas allowed) or the model's."""
        names = check_categories(self.grammar, category) if category else self.segment_categories
        return self.compiled.symbol_mask(names)

    # ------------------------------------------------------------------ training
    def read_corpus(self, corpus: Union[Corpus, PathLike, Sequence[str]]) -> Corpus:
        if isinstance(corpus, Corpus):
            return corpus
        if isinstance(corpus, (str, os.PathLike)) and not isinstance(corpus, str) or (
                isinstance(corpus, str) and "\n" not in corpus and Path(corpus).exists()):
            return read_corpus(corpus, mode=self.mode, split_at=self.split_at, units=self.units)
        if isinstance(corpus, str):
            raise FileNotFoundError(Errors.E536.format(corpus=corpus))
        return read_corpus(list(corpus), mode=self.mode, split_at=self.split_at, source="<texts>",
                           units=self.units)

    def _prepare(self, corpus: Corpus) -> CompiledGrammar:
        if self.mode == "chars" and corpus.units not in (None, self.units):
            raise TextError(Errors.E113.format(source=corpus.path or "<corpus>", found=corpus.units,
                                                expected=self.units))
        if self.compiled is None:
            self.grammar = expand_corpus_class(self.grammar, corpus.alphabet())
            self.compiled = CompiledGrammar(self.grammar)
        self._fix_spans()
        known = self.compiled.term_index
        missing = {t: corpus.first_line_of(t) for t in corpus.alphabet() if t not in known}
        if missing:
            raise uncovered_error(self.grammar, missing, corpus.path or "<corpus>", self.mode)
        if not len(corpus):
            raise ValueError(Errors.E537.format(source=corpus.path or 'corpus'))
        return self.compiled

    def fit(self, corpus: Union[Corpus, PathLike, Sequence[str]], *, iterations: int = _RUN.iterations,
            chains: int = _RUN.chains, seed: int = _RUN.seed, burn_in: Optional[int] = _RUN.burn_in,
            sample_every: int = _RUN.sample_every, callback: Optional[TraceCallback] = None,
            checkpoint_dir: Optional[PathLike] = None, checkpoint_every: int = _RUN.checkpoint_every,
            resume: bool = False, workers: int = _RUN.workers, gold: Optional[Sequence[Sequence[str]]] = None,
            eval_every: int = _RUN.eval_every, eval_at: Sequence[int] = _RUN.eval_at,
            backend: Optional[str] = None, ray_address: Optional[str] = None,
            run: Optional[Mapping[str, Any]] = None) -> "AdaptorGrammar":
        """Train by MCMC; keep samples for maximum-marginal decoding (3.15).

        `gold`, one word list per corpus sentence, adds `token_f` to the trace
        every `eval_every` iterations and at the iterations `eval_at`. With
        `checkpoint_dir`, every chain writes a checkpoint there; `resume=True`
        continues from them. `backend` and `ray_address` are the [training]
        settings of that name (None: their defaults): ``backend="ray"`` runs
        the chains as tasks of a Ray cluster (`spacy_ag.runs.ray_chains`), or, for
        online and vb inference, the E-step of every minibatch on `workers`
        Ray workers (`spacy_ag.runs.ray_estep`; 0: one per CPU of the cluster),
        with the same result. `run` (``section.key`` -> value) is what the
        checkpoints record as their run, and a resumed run must give the
        same (`spacy_ag.serialize.check_run`); ``spacy-ag train`` gives the
        whole run's fingerprint, the default is `checkpoint_run`'s.
        """
        corpus = self.read_corpus(corpus)
        training = self._training_settings(backend, ray_address, workers, iterations=iterations, chains=chains,
                                           seed=seed, burn_in=burn_in, sample_every=sample_every,
                                           checkpoint_every=checkpoint_every, eval_every=eval_every,
                                           eval_at=tuple(eval_at))
        if self.inference != "mcmc":
            return self._fit_variational(corpus, seed=seed, callback=callback, checkpoint_dir=checkpoint_dir,
                                         checkpoint_every=checkpoint_every, resume=resume, gold=gold,
                                         eval_every=eval_every, training=training, run=run)
        compiled = self._prepare(corpus)
        words, sent_ptr = self._pack(corpus.sentences, corpus.path, training=True)
        samples = self.online.samples if self.sampler.init == "online" else 0
        self._require_training_room(corpus, samples, charts=chains * (1 + bool(samples) * kernel_threads()))
        fingerprint = corpus_fingerprint(words, sent_ptr, write_pycfg(self.grammar))
        run = self.checkpoint_run(run, seed, self.online if self.sampler.init == "online" else None)
        try:
            pooled = run_mcmc(compiled, words, sent_ptr, self.sampler, training, self._segment_mask(), fingerprint,
                              checkpoint_dir=checkpoint_dir, resume=resume, gold=gold, sentences=corpus.sentences,
                              online=self.online, run=run, callback=callback)
        except UnparseableSentence as err:
            raise ValueError(Errors.E543.format(source=corpus.path or "corpus",
                                                lines=corpus.lines[err.index])) from None
        self.state, self.variational = pooled.state, None
        self.trace, self.marginals = pooled.trace, pooled.marginals
        self.training_corpus = corpus
        return self

    def checkpoint_run(self, run: Optional[Mapping[str, Any]], seed: int,
                       online: Optional[OnlineSettings]) -> Dict[str, Any]:
        """What this model's checkpoints record as their run: `run` if given, else the settings the
        model knows that decide what a run computes from the grammar and corpus (the corpus and
        grammar are checked on their own): the seed, the inference mode, the sampler's settings
        and `online`'s. Iterations and passes are left out, so that a run may be continued
        further."""
        if run is not None:
            return dict(run)
        sections: Dict[str, Dict[str, Any]] = {"training": {"seed": seed, "inference": self.inference}}
        if self.inference == "mcmc":
            sections["sampler"] = self.sampler.to_dict()
        if online is not None:
            sections["online"] = online.to_dict()
        return flat_settings(sections, leave_out=frozenset({"online.passes", "online.workers"}))

    @staticmethod
    def _training_settings(backend: Optional[str], ray_address: Optional[str], workers: int,
                           **run) -> TrainingSettings:
        """[training] of a run, `backend` and `ray_address` checked (None: their defaults)."""
        given = {"backend": backend, "ray_address": ray_address}
        return TrainingSettings(workers=workers, **run,
                                **check(TrainingSettings, {k: v for k, v in given.items() if v is not None},
                                        "training", partial=True))

    # ------------------------------------------------------------------ variational training
    def _learner(self, settings: OnlineSettings, seed: int) -> OnlineLearner:
        """A learner continuing the current state: the one of the last step (so a spaCy `update`
        per minibatch does not rebuild it), or a new one on the variational state, on an MCMC
        state converted to grammatons, or on an empty state."""
        live = getattr(self, "_live_learner", None)
        if (live is not None and live.state is self.state and live.V is self.variational
                and live.settings == settings):
            live.seed = int(seed)
            return live
        if self.variational is not None:
            return OnlineLearner(self.compiled, settings, seed, state=self.state, variational=self.variational,
                                 progress=self.progress)
        if self.state is not None:
            return OnlineLearner.from_mcmc(self.compiled, settings, self.state, seed)
        return OnlineLearner(self.compiled, settings, seed)

    def _keep(self, learner: OnlineLearner) -> None:
        self.state, self.variational, self.progress = learner.state, learner.V, learner.progress()
        self._live_learner = learner
        self._weights_cache = None  # the learner updates its arrays in place

    def _fit_variational(self, corpus: Corpus, *, seed: int, callback, checkpoint_dir, checkpoint_every: int,
                         resume: bool, gold, eval_every: int, training: TrainingSettings,
                         run: Optional[Mapping[str, Any]] = None) -> "AdaptorGrammar":
        compiled = self._prepare(corpus)
        words, sent_ptr = self._pack(corpus.sentences, corpus.path, training=True)
        settings = mode_settings(self.inference, self.online, len(corpus))
        self._require_training_room(corpus, settings.samples, charts=kernel_threads())
        fingerprint = corpus_fingerprint(words, sent_ptr, write_pycfg(self.grammar) + self.inference)
        ckpt = str(Path(checkpoint_dir) / "online.npz") if checkpoint_dir else None
        identity = self.checkpoint_run(run, seed, settings)
        meta = None
        if resume and ckpt and Path(ckpt).exists():
            state, V, meta = VariationalRun.load_checkpoint(ckpt, fingerprint, compiled, identity)
            learner = OnlineLearner(compiled, settings, seed, state=state, variational=V, progress=meta["progress"])
        else:
            learner = self._learner(settings, seed)
        seg_mask = self._segment_mask()
        evaluate = None
        if gold:
            def evaluate():
                self._keep(learner)
                pred = self._segment_packed(words, sent_ptr, corpus.sentences, seg_mask)
                scores = segmentation_scores(pred, gold)
                return {"token_f": scores["token_f"], "boundary_f": scores["boundary_f"],
                        "lexicon_f": scores["type_f"]}
        run = VariationalRun(learner, passes=settings.passes, report=callback, checkpoint=ckpt,
                             checkpoint_every=checkpoint_every, fingerprint=fingerprint, evaluate=evaluate,
                             eval_every=eval_every, run=identity, training=training)
        if meta is not None:
            run.restore(meta)
        try:
            run.run_corpus(words, sent_ptr, settings.corpus_size or len(corpus))
        except UnparseableSentence as err:
            raise ValueError(Errors.E543.format(source=corpus.path or "corpus",
                                                lines=corpus.lines[err.index])) from None
        finally:
            self._keep(learner)
        self.trace = run.trace
        self.training_corpus = corpus
        self.marginals = None
        return self

    def partial_fit(self, texts: Iterable, *, corpus_size: Optional[int] = None, seed: int = _RUN.seed,
                    callback=None, shuffle_buffer: int = 0, pass_index: int = 0,
                    checkpoint: Optional[PathLike] = None, checkpoint_every: int = _RUN.checkpoint_every,
                    fingerprint: str = "", start: int = 0, backend: Optional[str] = None,
                    ray_address: Optional[str] = None, workers: int = _RUN.workers,
                    run: Optional[Mapping[str, Any]] = None) -> "AdaptorGrammar":
        """One online pass over `texts` (any iterable, read lazily in minibatches).

        Memory stays bounded by the truncation: only one minibatch of text is
        held at a time (`shuffle_buffer` > 0 shuffles within a window of that
        many chunks). Terminals the grammar does not know are hard boundaries.
        `corpus_size` is D of Eqs. 9-10 (default: the `corpus_size` setting,
        else the number of sentences seen so far). The first call on an
        untrained model with a `[:corpus:]` grammar fixes the alphabet from
        the first minibatch.

        For a stream that can be replayed (`fit_stream`): `checkpoint` is a
        file written every `checkpoint_every` minibatches, at the end of the
        pass and on Ctrl-C, stamped with `fingerprint` and `run`; `start` skips that
        many chunks of the (shuffled) stream, the ones a checkpoint says
        this pass had consumed. `backend`, `ray_address` and `workers` are
        `fit`'s: ``backend="ray"`` draws the E-step on Ray workers.
        """
        training = self._training_settings(backend, ray_address, workers)
        settings = self.online
        chunks = (chunk for text in texts for chunk in self._chunks(text))
        if shuffle_buffer:
            chunks = shuffled_stream(chunks, shuffle_buffer, seed)
        if start:
            chunks = itertools.islice(chunks, start, None)

        self._fix_spans()
        stream = ((len(batch), *self._pack_batch(batch)) for batch in chunked(chunks, settings.batch_size))
        first = next(stream, None)  # packing it compiles a [:corpus:] grammar
        if first is None and not start:
            return self
        learner = self._learner(settings, seed)
        run = VariationalRun(learner, passes=1, report=callback, trace_kept=STREAM_TRACE_KEPT,
                             checkpoint=None if checkpoint is None else str(checkpoint),
                             checkpoint_every=checkpoint_every, fingerprint=fingerprint, run=run, training=training)
        run.epoch, run.position = pass_index, start  # trace lines say which pass over a stream this is
        try:
            run.run_stream(itertools.chain([first] if first is not None else [], stream),
                           corpus_size or settings.corpus_size or 0)
        finally:
            self._keep(learner)
            self.trace = ((self.trace or []) + run.trace)[-STREAM_TRACE_KEPT:]
        return self

    def fit_stream(self, texts: Callable[[], Iterable], *, passes: int = OnlineSettings.passes,
                   corpus_size: Optional[int] = None, seed: int = _RUN.seed, callback=None,
                   shuffle_buffer: int = _INFERENCE.shuffle_buffer, checkpoint_dir: Optional[PathLike] = None,
                   checkpoint_every: int = _RUN.checkpoint_every, resume: bool = False,
                   fingerprint: str = "", backend: Optional[str] = None, ray_address: Optional[str] = None,
                   workers: int = _RUN.workers, run: Optional[Mapping[str, Any]] = None) -> "AdaptorGrammar":
        """`passes` online passes over a stream that can be read again, such as a file.

        `texts()` returns a fresh iterable of the texts at each call (read
        lazily: memory does not grow with the stream). Pass p shuffles with
        seed ``seed + p`` and continues the minibatch count, so the random
        stream of every minibatch is fixed by the seed and its index. With
        `checkpoint_dir`, ``online.npz`` there holds the pass and the chunks
        of it consumed; ``resume=True`` continues from it (after checking
        `fingerprint`, which should name the grammar, the text and the
        settings, and `run`, as `fit`'s) to exactly the result of an uninterrupted run. A grammar
        with `[:corpus:]` that is not compiled yet takes its alphabet from a
        first reading of the stream. Ctrl-C raises `TrainingInterrupted`
        after the checkpoint. `backend`, `ray_address` and `workers` are
        `fit`'s: ``backend="ray"`` draws the E-step on Ray workers.
        """
        if self.compiled is None:
            self.prepare_alphabet(t for text in texts() for t in self._terminals(text))
        self._fix_spans()
        ckpt = Path(checkpoint_dir) / "online.npz" if checkpoint_dir else None
        first_pass, start = 0, 0
        run = self.checkpoint_run(run, seed, self.online)
        if resume and ckpt is not None and ckpt.exists():
            state, variational, meta = VariationalRun.load_checkpoint(str(ckpt), fingerprint, self.compiled, run)
            self.state, self.variational, self.progress = state, variational, meta["progress"]
            self._live_learner = None
            self.trace = list(meta.get("trace", []))
            first_pass, start = int(meta["epoch"]), int(meta["position"])
        for p in range(first_pass, passes):
            self.partial_fit(texts(), corpus_size=corpus_size, seed=seed + p, callback=callback,
                             shuffle_buffer=shuffle_buffer, pass_index=p, checkpoint=ckpt,
                             checkpoint_every=checkpoint_every, fingerprint=fingerprint,
                             start=start if p == first_pass else 0, backend=backend, ray_address=ray_address,
                             workers=workers, run=run)
        if self.inference == "mcmc":
            self.inference = "online"
        self.training_corpus, self.marginals = None, None
        return self

    def online_step(self, texts: Iterable, *, corpus_size: Optional[int] = None, seed: int = _RUN.seed) -> float:
        """One online minibatch made of all `texts` (what a spaCy `update` does); returns the
        negative log likelihood of the batch under G' before the step (4.15's per-sentence
        best sampled tree, summed), the loss spaCy reports."""
        chunks = [c for t in texts for c in self._chunks(t)]
        if not chunks:
            return 0.0
        self._fix_spans()
        words, ptr = self._pack_batch(chunks)
        learner = self._learner(self.online, seed)
        try:
            line = learner.step(words, ptr, np.arange(len(ptr) - 1, dtype=np.int64),
                                corpus_size or self.online.corpus_size or None)
        finally:
            self._keep(learner)
        if self.inference == "mcmc":
            self.inference = "online"
        return -line.get("batch_loglik", 0.0)

    def _chunks(self, text) -> List[Sequence[str]]:
        """The parseable runs of a text: whitespace, control characters, `split_at` and unknown
        terminals cut it."""
        terms = self._terminals(text)
        known = self.compiled.term_index if self.compiled is not None else None
        if known is not None and self._plain_units().issuperset(terms):  # the common case, at C speed
            return [terms] if terms else []
        out, current = [], []
        for t in terms:
            if (known is not None and t not in known) or (self.split_at and t in self.split_at) or is_control(t):
                if current:
                    out.append(current)
                current = []
            else:
                current.append(t)
        if current:
            out.append(current)
        return out

    def _plain_units(self) -> set:
        """The terminals that never cut a text: known to the grammar, not in `split_at`, no control."""
        cached = getattr(self, "_plain_cache", None)
        if cached is None or cached[0] is not self.compiled or cached[1] != self.split_at:
            plain = {t for t in self.compiled.term_index
                     if not (self.split_at and t in self.split_at) and not is_control(t)}
            cached = self._plain_cache = (self.compiled, self.split_at, plain)
        return cached[2]

    def _fix_spans(self) -> None:
        """Before the first training, give adapted nonterminals without a span `max_span`. A
        trained model keeps the spans it was trained with (none for models saved before spans)."""
        if self.state is not None:
            return
        grammar = with_max_span(self.grammar, self.max_span)
        if grammar is not self.grammar:
            self.grammar = grammar
            if self.compiled is not None:
                self.compiled = CompiledGrammar(grammar)

    def prepare_alphabet(self, alphabet: Iterable[str]) -> None:
        """Expand a `[:corpus:]` grammar to these terminals before streaming (no-op once compiled)."""
        if self.compiled is None:
            letters = sorted({t for t in alphabet if not is_hard_boundary(t)})
            self.grammar = expand_corpus_class(self.grammar, letters)
            self.compiled = CompiledGrammar(self.grammar)

    def _pack(self, chunks: Sequence[Sequence[str]], source: Optional[PathLike] = None, training: bool = False):
        """Terminal ids and offsets of `chunks`, refusing before any work a chunk whose charts
        would not fit in `MAX_CHART_BYTES` (training fills long charts in blocks: its own check is
        `_require_training_room`)."""
        longest = max((len(c) for c in chunks), default=0)
        self._require_chart_room(longest, source, whole=not training)
        return pack_corpus(self.compiled, chunks)

    def _require_training_room(self, corpus: Corpus, samples: int, charts: int) -> None:
        """Refuse in one line, before any work, a corpus whose longest line would take more memory
        to train on than this process can still allocate (`runs/memory_budget.py`)."""
        if not len(corpus):
            return
        longest = max(range(len(corpus)), key=lambda i: len(corpus.sentences[i]))
        n = len(corpus.sentences[longest])
        need = training_bytes(self.compiled, n, samples, charts)
        free = available_bytes()
        if free is not None and need > free:
            raise TextError(Errors.E122.format(source=corpus.path or "<texts>", line=corpus.lines[longest], n=n,
                                               need=need / 2 ** 30, free=free / 2 ** 30))

    def _require_chart_room(self, n: int, source: Optional[PathLike] = None, whole: bool = True) -> None:
        G = self.compiled.arrays
        if G.band == 0 and n > MAX_RUN_TERMINALS:
            raise TextError(Errors.E120.format(source=source or "<texts>", n=n, limit=MAX_RUN_TERMINALS))
        need = (n + 1) * (chart_width(G, n) + 2) * (8 * G.n_sym + 12)
        if whole and need > MAX_CHART_BYTES:
            raise TextError(Errors.E121.format(source=source or "<texts>", n=n, need=need / 2 ** 30,
                                               gib=MAX_CHART_BYTES / 2 ** 30))

    def _pack_batch(self, batch: List[Sequence[str]]):
        if self.compiled is None:  # a [:corpus:] grammar meets its alphabet: this minibatch's
            self.prepare_alphabet(t for chunk in batch for t in chunk)
        # chunks cut before the grammar was compiled may hold terminals it does not know
        plain = self._plain_units()
        batch = [c for chunk in batch for c in ((chunk,) if plain.issuperset(chunk) else self._chunks(list(chunk)))]
        return self._pack(batch)

    def heldout_loglik(self, texts: Iterable) -> Dict[str, float]:
        """Held-out log likelihood (docs/algorithms.md 4.15): per text, the best log weight under the
        final G' among the trees drawn from it, summed. For an MCMC state G' is that of 3.3
        (table weights and collapsed rule probabilities), so all modes compare."""
        self._require_state()
        chunks = [c for t in texts for c in self._chunks(t)]
        words, ptr = self._pack(chunks)
        V = self.variational
        if V is None:
            G = self.compiled.arrays
            lrho, ltab = self._weights()
            V = new_variational(G.rule_alpha, G.adaptor_nt.shape[0], ltab.shape[0])
            V = V._replace(lrho=lrho.copy(), rho=np.exp(lrho), lw=ltab.copy())
        learner = OnlineLearner(self.compiled, self.online, 0, state=self.state, variational=V,
                                progress=self.progress)
        total, unparseable = learner.heldout(words, ptr)
        return {"heldout_loglik": total, "heldout_sentences": len(chunks) - unparseable,
                "heldout_unparseable": unparseable, "heldout_terminals": int(ptr[-1])}

    def training_segmentation(self) -> List[List[str]]:
        """Segmentation of the training corpus, one word list per utterance: maximum marginal
        over the kept samples (MCMC), or the most probable parse under the final G' (vb, online)."""
        if self.training_corpus is None:
            raise RuntimeError(Errors.E538)
        corpus = self.training_corpus
        if self.variational is not None:
            words, ptr = self._pack(corpus.sentences, corpus.path)
            return corpus.reassemble(self._segment_packed(words, ptr, corpus.sentences, self._segment_mask()))
        if self.marginals is None:
            raise RuntimeError(Errors.E538)
        keys = self.marginals.best()
        return corpus.reassemble([words_from_key(s, k) for s, k in zip(corpus.sentences, keys)])

    # ------------------------------------------------------------------ new text
    def _require_state(self):
        if self.state is None or self.compiled is None:
            raise RuntimeError(Errors.E540)

    def _weights(self):
        """log weights of G' (rules, tables); cached, since parsing never changes the state."""
        cached = getattr(self, "_weights_cache", None)
        if cached is not None and cached[0] is self.state and cached[1] is self.variational:
            return cached[2]
        S = self.state
        if self.variational is not None:
            lrho = self.variational.lrho.copy()
            ltab = np.where(S.tab_state == OPEN, self.variational.lw[:S.tab_state.shape[0]], -np.inf)
        else:
            lrho = np.zeros(self.compiled.arrays.rule_parent.shape[0])
            log_rho(self.compiled.arrays, S, lrho, self.sampler.collapsed)
            ltab = np.empty(S.tab_state.shape[0])
            log_table_weights(S, ltab)
        self._weights_cache = (self.state, self.variational, (lrho, ltab))
        return lrho, ltab

    def _decode(self, words, ptr, seg_mask, marks, scores) -> None:
        """Most probable segmentation of packed texts into marks and scores: the word lattice
        (core.word_lattice) when the grammar is a chain of adapted levels, else the general chart.
        Both give the same marks and scores; `decoded_texts` counts the texts each one decoded."""
        lrho, ltab = self._weights()
        lattice = self._lattice(seg_mask, lrho, ltab)
        counts = self.__dict__.setdefault("decoded_texts", {"lattice": 0, "chart": 0})
        if lattice is not None:
            view, plan, klw, yield_best, root_child = lattice
            segment_lattice_batch(view, self.compiled.arrays.n_term, words, ptr, lrho, ltab, plan, klw, yield_best,
                                  root_child, seg_mask, marks, scores)
            counts["lattice"] += len(ptr) - 1
        else:
            segment_batch(self.compiled.arrays, self.state, words, ptr, lrho, ltab, seg_mask, marks, scores)
            counts["chart"] += len(ptr) - 1

    def _lattice(self, seg_mask, lrho, ltab):
        """(state view, plan, klw, yield_best, root_child) of the word lattice for this segmentation category, or None
        when the grammar is not a chain; cached with the weights, since decoding never changes the state."""
        cache = getattr(self, "_lattice_cache", None)
        if cache is None or cache[0] is not lrho or cache[1] is not ltab:
            cache = self._lattice_cache = (lrho, ltab, {})
        key = seg_mask.tobytes()
        if key not in cache[2]:
            plan = lattice_plan(self.compiled.arrays, seg_mask)
            if plan is None:
                cache[2][key] = None
            else:
                klw = np.empty(self.compiled.arrays.n_term + 1)
                yield_best = np.empty((self.state.trie_head.shape[0], plan[0]))
                root_child = np.empty(self.compiled.arrays.n_term + 1, np.int32)
                lattice_weights(self.compiled.arrays, self.state, lrho, ltab, plan, klw, yield_best, root_child)
                cache[2][key] = (lattice_state(self.state), plan, klw, yield_best, root_child)
        return cache[2][key]

    def _segment_packed(self, words, ptr, sentences, seg_mask) -> List[List[str]]:
        marks = np.zeros(len(words) + len(sentences), np.uint8)
        scores = np.zeros(len(sentences))
        if len(sentences):
            self._decode(words, ptr, seg_mask, marks, scores)
        out = []
        for d, sentence in enumerate(sentences):
            if scores[d] == -np.inf:
                out.append(["".join(sentence)])
            else:
                out.append(words_from_key(sentence, marks[ptr[d] + d: ptr[d + 1] + d + 1].tobytes()))
        return out

    def _terminals(self, text) -> List[str]:
        """The terminals of a text: its tokens, or its units without whitespace (control
        characters included: callers treat them as hard boundaries)."""
        if isinstance(text, str):
            return check_text(text).split() if self.mode == "tokens" else terminals(text, self.units)
        return list(text)

    def _unit_codes(self) -> Dict[str, int]:
        """Unit -> terminal id, UNIT_WORD (a hard boundary that is a word of its own: a control
        character, a `split_at` character, a symbol never seen in training) or UNIT_SPACE; filled
        as units are met, for this grammar and `split_at`."""
        cache = getattr(self, "_unit_code_cache", None)
        if cache is None or cache[0] is not self.compiled or cache[1] != self.split_at:
            cache = self._unit_code_cache = (self.compiled, self.split_at, {})
        return cache[2]

    def _unit_code(self, unit: str) -> int:
        codes = self._unit_codes()
        index = self.compiled.term_index
        if unit.isspace():
            code = UNIT_SPACE
        elif is_hard_boundary(unit) or unit not in index or (self.split_at and unit in self.split_at):
            code = UNIT_WORD
        else:
            code = index[unit]
        codes[unit] = code
        return code

    def segment_offsets(self, texts: Sequence[str], category: Optional[str] = None) -> Optional[List[List[int]]]:
        """`segment` as character offsets: for each text, its words as a flat list start0, end0,
        start1, end1, ... (text[start:end] is the word); None when the grammar is not decoded on
        a word lattice (core.word_lattice) or the model reads tokens, and then `segment` is the way."""
        self._require_state()
        if self.mode != "chars" or not all(isinstance(t, str) for t in texts):
            return None
        masks = self.__dict__.setdefault("_segment_masks", {})
        mask_key = (self.compiled, category, self.segment_categories)
        seg_mask = masks.get(mask_key)
        if seg_mask is None:
            seg_mask = masks[mask_key] = self._segment_mask(category)
        lrho, ltab = self._weights()
        lattice = self._lattice(seg_mask, lrho, ltab)
        if lattice is None:
            return None
        codes_of = self._unit_codes()
        unit_lists, flat, text_ptr = [], [], [0]
        for text in texts:
            units = text_units(text, self.units)
            codes = list(map(codes_of.get, units))
            if None in codes:
                codes = [self._unit_code(u) if c is None else c for u, c in zip(units, codes)]
            flat.extend(codes)
            text_ptr.append(len(flat))
            unit_lists.append(None if len(units) == len(text) else units)
        codes = np.array(flat, np.int32)
        longest = longest_chunk(codes)
        # the check grows with the length: a length no longer than one that passed under the same limits passes
        limits = (self.compiled, MAX_CHART_BYTES, MAX_RUN_TERMINALS)
        passed = self.__dict__.get("_chart_room_passed")
        if passed is None or passed[:3] != limits or longest > passed[3]:
            self._require_chart_room(longest)
            self._chart_room_passed = limits + (max(longest, passed[3]) if passed and passed[:3] == limits
                                                else longest,)
        spans = np.empty(2 * len(flat) + 2, np.int64)
        span_ptr = np.empty(len(texts) + 1, np.int64)
        view, plan, klw, yield_best, root_child = lattice
        n_chunks = segment_lattice_units(view, self.compiled.arrays.n_term, codes, np.array(text_ptr, np.int64),
                                         lrho, ltab, plan, klw, yield_best, root_child, seg_mask, spans, span_ptr)
        self.__dict__.setdefault("decoded_texts", {"lattice": 0, "chart": 0})["lattice"] += n_chunks
        spans, span_ptr = spans.tolist(), span_ptr.tolist()
        out = []
        for d, units in enumerate(unit_lists):
            words = spans[2 * span_ptr[d]:2 * span_ptr[d + 1]]
            if units is not None:  # unit positions -> character offsets
                at = list(itertools.accumulate(map(len, units), initial=0))
                words = [at[p] for p in words]
            out.append(words)
        return out

    def segment(self, texts: Iterable, category: Optional[str] = None) -> List[List[str]]:
        """Most probable segmentation of each text under the trained state.

        Whitespace, control characters, the `split_at` characters and symbols
        never seen in training are hard boundaries, and all but whitespace are
        words of their own, so any text segments without error and the words
        spell it (without its whitespace). No word boundary falls inside a
        text unit (`units`). A lone surrogate raises `TextError` [E110].
        """
        texts = texts if isinstance(texts, list) else list(texts)
        offsets = self.segment_offsets(texts, category)
        if offsets is not None:
            return [[t[o[k]:o[k + 1]] for k in range(0, len(o), 2)] for t, o in zip(texts, offsets)]
        compiled = self.compiled
        seg_mask = self._segment_mask(category)
        texts = [text_units(t, self.units) if isinstance(t, str) and self.mode == "chars" else self._terminals(t)
                 for t in texts]
        chunks, plan = [], []
        for terms in texts:
            pieces, current = [], []
            for t in terms:
                hard = (is_hard_boundary(t) or t not in compiled.term_index
                        or (self.split_at and t in self.split_at))
                if hard:
                    if current:
                        pieces.append(("parse", len(chunks)))
                        chunks.append(current)
                        current = []
                    if not t.isspace():
                        pieces.append(("word", t))
                else:
                    current.append(t)
            if current:
                pieces.append(("parse", len(chunks)))
                chunks.append(current)
            plan.append(pieces)
        words, ptr = self._pack(chunks)
        marks = np.zeros(len(words) + len(chunks), np.uint8)
        scores = np.zeros(len(chunks))
        if chunks:
            self._decode(words, ptr, seg_mask, marks, scores)
        out = []
        for pieces in plan:
            result = []
            for kind, value in pieces:
                if kind == "word":
                    result.append(value)
                    continue
                d = value
                sentence = chunks[d]
                if scores[d] == -np.inf:  # no parse: keep the chunk whole
                    result.append("".join(sentence))
                    continue
                key = marks[ptr[d] + d: ptr[d + 1] + d + 1].tobytes()
                result.extend(words_from_key(sentence, key))
            out.append(result)
        return out

    def parse(self, texts: Iterable) -> List[Optional[Tree]]:
        """The most probable tree of each text (None if the grammar cannot parse it)."""
        self._require_state()
        G, S = self.compiled.arrays, self.state
        lrho, ltab = self._weights()
        out: List[Optional[Tree]] = []
        for text in texts:
            terms = self._terminals(text)
            ids = self.compiled.encode(terms)
            n = len(ids)
            if n == 0 or (ids < 0).any():
                out.append(None)
                continue
            self._require_chart_room(n)
            vchart, ynode = new_viterbi_chart(G, n)
            if viterbi_chart(G, S, ids, n, lrho, ltab, vchart, ynode) == -np.inf:
                out.append(None)
                continue
            size = 8 * n * (G.n_sym + 2) + 8
            items = np.empty((size, 6), np.int64)
            tasks = np.empty((size, 4), np.int64)
            n_items = viterbi_items(G, S, ids, n, lrho, ltab, vchart, ynode, items, tasks)
            out.append(self._tree_from_items(items[:n_items]))
        return out

    def _tree_from_items(self, items: np.ndarray) -> Tree:
        names = self.compiled.symbol_names
        terminals = self.compiled.terminals
        adapted = set(self.compiled.adapted)
        nodes: List[Tree] = []
        for kind, sym, what, i, j, parent in items.tolist():
            if kind == ITEM_TERM:
                node = terminals[what]
            elif kind == ITEM_TABLE:
                node = self.table_tree(what, start=i)
            else:
                node = Tree(names[sym], [], i, j, adapted=names[sym] in adapted)
            nodes.append(node)
            if parent >= 0:
                nodes[parent].children.append(node)
        return nodes[0]

    def table_tree(self, table: int, start: int = 0) -> Tree:
        """The label of a table (a cached subtree) as a Tree, positioned at `start`."""
        S = self.state
        tree = self._pool_tree(int(S.tab_label[table]), start)
        tree.cached = True
        tree.customers = self.table_uses(table)
        return tree

    def table_uses(self, table: int) -> Union[int, float]:
        """How often the training corpus used a table: its customers (MCMC), or its expected uses
        (vb, online: decayed sentence counts plus uses in other entries), as `cache` counts them."""
        S = self.state
        if self.variational is not None:
            return float(self.variational.ft[table] + S.tab_count[table])
        return int(S.tab_count[table])

    def _pool_tree(self, node: int, start: int) -> Tree:
        S, names, terminals = self.state, self.compiled.symbol_names, self.compiled.terminals
        adapted = set(self.compiled.adapted)
        tree = Tree(names[S.node_sym[node]], [], start, start, adapted=names[S.node_sym[node]] in adapted)
        pos = start
        child = int(S.node_child[node])
        while child >= 0:
            kind = S.node_kind[child]
            if kind == 0:  # TERM
                tree.children.append(terminals[S.node_sym[child]])
                pos += 1
            else:
                sub = self.table_tree(int(S.node_table[child]), pos) if kind == 2 else self._pool_tree(child, pos)
                tree.children.append(sub)
                pos = sub.end
            child = int(S.node_sib[child])
        tree.end = pos
        return tree

    def cache(self, category: Optional[str] = None, top: Optional[int] = None) -> List[Dict]:
        """Cached subtrees of an adapted nonterminal, most customers first (the learned units)."""
        self._require_state()
        S, names = self.state, self.compiled.adapted
        category = category or self.segment_categories[0]
        if category not in names:
            raise ValueError(Errors.E541.format(category=category, adapted=', '.join(names)))
        ad = names.index(category)
        n_tab = int(S.counters[TAB_HWM])
        open_ = np.nonzero((S.tab_state[:n_tab] == OPEN) & (S.tab_adaptor[:n_tab] == ad))[0]
        if self.variational is not None:  # expected uses: decayed sentence counts plus uses in entries
            uses = self.variational.ft[open_] + S.tab_count[open_]
        else:
            uses = S.tab_count[open_].astype(np.float64)
        order = np.argsort(-uses, kind="stable")
        if top:
            order = order[:top]
        out = []
        for i in order:
            k = int(open_[i])
            entry = {"yield": "".join(self.table_tree(k).leaves()), "customers": float(uses[i])
                     if self.variational is not None else int(uses[i])}
            if self.variational is not None:
                entry["log_weight"] = float(self.variational.lw[k])
            out.append(entry)
        return out

    # ------------------------------------------------------------------ saving
    def save(self, path: PathLike) -> None:
        """Write the model archive (`spacy_ag.archive`): the expanded grammar, the state and a header."""
        self._require_state()
        write_archive(path, ARCHIVE_KIND, self._grammar_text(), self._arrays(), self._meta())

    def to_bytes(self) -> bytes:
        """The model archive as bytes, equal bytes for equal models. No pickle."""
        self._require_state()
        return archive_bytes(ARCHIVE_KIND, self._grammar_text(), self._arrays(), self._meta())

    def _grammar_text(self) -> str:
        return write_pycfg(self.grammar, include_options=True)

    def _arrays(self) -> Dict[str, np.ndarray]:
        return model_arrays(self.state, self.variational)

    def _meta(self) -> Dict:
        return {"segment_category": self.segment_category, "mode": self.mode, "units": self.units,
                "split_at": sorted(self.split_at) if self.split_at else None, "start": self.grammar.start,
                "sampler": asdict(self.sampler), "inference": self.inference, "online": self.online.to_dict(),
                "progress": self.progress, "trace_tail": reproducible(self.trace[-1:])}

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>") -> "AdaptorGrammar":
        """Inverse of `to_bytes`; `source` names the data in error messages."""
        return cls._from_archive(read_archive_bytes(data, source, ARCHIVE_KIND, check_grammar_model_header), source)

    @classmethod
    def load(cls, path: PathLike) -> "AdaptorGrammar":
        """The model saved by `save` in the directory `path`."""
        return cls._from_archive(read_archive(path, ARCHIVE_KIND, check_grammar_model_header), str(path))

    @classmethod
    def _from_archive(cls, archive, source: str) -> "AdaptorGrammar":
        meta, arrays = archive.header, archive.arrays
        try:
            start, category, mode = meta["start"], meta["segment_category"], meta["mode"]
            sampler = check(SamplerSettings, meta["sampler"], "sampler")
            online = check(OnlineSettings, meta.get("online", {}), "online")
        except (KeyError, TypeError) as err:
            raise ModelFileError(Errors.E065.format(path=source, err=repr(err))) from None
        except SettingError as err:
            raise ModelFileError(Errors.E065.format(path=source, err=err)) from None
        grammar_source = f"{source}/grammar.lt"
        grammar = parse_grammar_text(archive.grammar_text, fmt="pycfg", source=grammar_source, start=start)
        model = cls(grammar, segment_category=category, mode=mode, split_at=meta.get("split_at"),
                    sampler=sampler, inference=meta.get("inference", "mcmc"), online=online,
                    units=meta.get("units", LEGACY_UNITS))  # older archives: trained on code points
        state = state_from_arrays(arrays, source)
        variational = variational_from_arrays(arrays, source)
        from .core.state_checks import arrays_source, check_state  # every array, before any kernel sees it

        check_state(model.compiled, state, variational, arrays_source(archive, source))
        G = model.compiled.arrays
        if state.f.shape[0] != G.rule_parent.shape[0] or state.ad_a.shape[0] != G.adaptor_nt.shape[0]:
            raise ModelFileError(Errors.E075.format(source=source, grammar_source=grammar_source))
        model.state = state
        model.variational = variational
        model.progress = meta.get("progress", {})
        model.trace = meta.get("trace_tail", [])
        return model
