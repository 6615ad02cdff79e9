"""`TopicModel`: the infinite-vocabulary topic model (InfVocLDA) as an adaptor grammar.

Data path: documents (lists of word tokens) -> the generated topic grammar
(`topic_grammar`) -> the shared grammaton state and variational statistics.
A corpus in memory is learned by collapsed Gibbs sweeps (`spacy_ag.topics.gibbs`,
the default) whose last sample becomes that state; a stream, and every
document after that, by minibatches through `draw_documents` (in parallel)
and `absorb_document_draws` (in order) and the online updates of
`OnlineLearner` -> topics whose vocabularies grow with the stream.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ..core.compiled import CompiledGrammar
from ..runs.online_learner import OnlineLearner, mix_seeds
from ..core.state import yield_length, yield_terms
from ..core.topic_draws import (
    TopicRules, absorb_document_draws, document_word_weights, draw_documents, infer_documents,
)
from ..core.topic_gibbs import infer_documents_gibbs
from ..core.variational import stick_parameters
from ..corpus import chunked
from ..errors import Errors
from ..grammar import parse_grammar_text, write_pycfg
from ..settings import (
    TOPIC_INFERENCE, TOPIC_ONLINE_DEFAULTS, OnlineSettings, SettingError, TopicModelSettings, check,
    TrainingSettings, normalized, topic_online_settings,
)
from ..archive import reproducible
from ..serialize import check_run, flat_settings, state_from_arrays
from ..text_units import LEGACY_UNITS, check_units, is_hard_boundary, text_units
from .topic_grammar import topic_grammar
from .spelling import SpelledTypes

PathLike = Union[str, os.PathLike]
Report = Callable[[Dict], None]

#: The topic model's online settings (defined in `spacy_ag.settings`, with the reasons).
TOPIC_DEFAULTS = TOPIC_ONLINE_DEFAULTS

#: The defaults of every keyword of `TopicModel`, written once in `TopicModelSettings`.
_DEFAULT = TopicModelSettings
_RUN = TrainingSettings  # the seed and checkpoints of a run
GIBBS_SWEEPS, GIBBS_ALPHA_EVERY, GIBBS_SAMPLE_B = _DEFAULT.sweeps, _DEFAULT.alpha_every, _DEFAULT.sample_b

#: Seed of the random streams of `infer` in a model trained by Gibbs sampling.
INFER_SEED = 0x1AFE

#: b = "auto": this fraction of the expected number of tokens per topic (tokens / K).
AUTO_B_PER_TOKEN = 0.5


default_topic_settings = topic_online_settings


class TopicLearner(OnlineLearner):
    """The online learner with the topic grammar's E-step (`draw_documents`, `absorb_document_draws`)."""

    def __init__(self, compiled: CompiledGrammar, settings: OnlineSettings, seed: int = 0, **kwargs):
        super().__init__(compiled, settings, seed, **kwargs)
        self.R = topic_rules(compiled)
        # the document prior is LDA's alpha: a Newton step would treat DOC -> TOPIC_i as one
        # corpus-level rule and inflate it to corpus counts
        self.alpha_fixed[compiled.nt_index["DOC"]] = True

    @property
    def alpha(self) -> np.ndarray:
        """The Dirichlet prior of every document's topic proportions."""
        return self.V.alpha[self.R.doc_topic]

    def step_documents(self, chars, tok_ptr, doc_ptr, docs, corpus_size: Optional[int], iterations: int) -> Dict:
        started = time.perf_counter()
        with self._threads(True):
            eps, scale = self.begin_minibatch(len(docs), corpus_size)
            seeds = np.array([mix_seeds(self.seed, self.minibatches, i) for i in range(len(docs))], dtype=np.uint64)
            samples = self.settings.samples
            lengths = doc_ptr[docs + 1] - doc_ptr[docs]
            tok_start = np.zeros(len(docs) + 1, np.int64)
            np.cumsum(lengths, out=tok_start[1:])
            topics = np.empty(int(tok_start[-1]) * samples, np.int32)
            entries = np.empty(len(topics), np.int64)
            logliks = np.empty(len(docs))
            draw_documents(self.G, self.state, self.V, self.R, chars, tok_ptr, doc_ptr, docs, seeds, self.alpha,
                           iterations, samples, tok_start, topics, entries, logliks)
            result = np.zeros(2)
            self.drive(lambda pos, need: absorb_document_draws(
                self.G, self.state, self.V, self.R, chars, tok_ptr, doc_ptr, docs, samples, tok_start, topics,
                entries, logliks, pos, self.stack, result, need), len(docs))
            self.inside_calls += int(result[1])
            self.update_weights(eps, scale)
            line = self.end_minibatch(eps, started, float(result[0]))
        line["documents_seen"] = self.seen
        return line


def topic_rules(compiled: CompiledGrammar) -> TopicRules:
    """Rule and symbol ids of the generated grammar, for the topic kernels."""
    g, nt = compiled.grammar, compiled.nt_index
    index = {(r.parent, r.children): i for i, r in enumerate(g.rules)}
    K = sum(1 for s in compiled.nonterminals if s.startswith("TOPIC_"))
    topics = [f"TOPIC_{i}" for i in range(K)]
    topic_of = {s: i for i, s in enumerate(topics)}
    adaptor_of = {s: i for i, s in enumerate(compiled.adapted)}
    char_rule = np.full(len(compiled.terminals), -1, np.int64)
    for t, term in enumerate(compiled.terminals):
        char_rule[t] = index.get(("CHAR", (term,)), -1)
    return TopicRules(
        doc_topic=np.array([index[("DOC", (s,))] for s in topics], np.int64),
        topic_word=np.array([index[(s, ("WORD",))] for s in topics], np.int64),
        topic_nt=np.array([nt[s] for s in topics], np.int64),
        topic_adaptor=np.array([adaptor_of[s] for s in topics], np.int64),
        adaptor_topic=np.array([topic_of.get(s, -1) for s in compiled.adapted], np.int64),
        sent_doc=np.array([index[("SENT", ("DOC",))]], np.int64),
        word_chars=np.array([index[("WORD", ("CHARS",))]], np.int64),
        chars_more=np.array([index[("CHARS", ("CHAR", "CHARS"))]], np.int64),
        chars_last=np.array([index[("CHARS", ("CHAR",))]], np.int64),
        char_rule=char_rule,
        nts=np.array([nt["WORD"], nt["CHARS"], nt["CHAR"]], np.int64),
        word_adaptor=np.array([compiled.adapted.index("WORD") if "WORD" in compiled.adapted else -1], np.int64),
    )


class TopicModel:
    """Topics over an unbounded vocabulary, learned from a corpus in memory or from a stream.

    >>> tm = TopicModel(n_topics=5)
    >>> tm.fit(docs)                       # docs: lists of word tokens; collapsed Gibbs sweeps
    >>> tm.partial_fit(stream)             # more documents, online (new words included)
    >>> tm.top_words(0, 10)                # [(word, probability), ...]
    >>> tm.infer([["new", "tokens"]])      # topic proportions of new documents

    The defaults are `TopicModelSettings`' (the shipped topic configs'): `fit`
    makes `sweeps` collapsed Gibbs sweeps with a shared lexicon
    (`word_adapted`); ``inference="online"`` makes `fit` online passes
    instead. `partial_fit` is online whatever `inference` says: an untrained
    model that starts with it becomes an online model.

    Words are spelled from characters: extended grapheme clusters
    (`units="graphemes"`, the default) or code points (`units="codepoints"`),
    see `spacy_ag.text_units`.
    """

    def __init__(self, n_topics: int = _DEFAULT.n_topics, *, alpha: float = _DEFAULT.alpha, a: float = _DEFAULT.a,
                 b: Union[float, str] = _DEFAULT.b, online: Optional[OnlineSettings] = None,
                 local_iterations: int = _DEFAULT.local_iterations, word_adapted: bool = _DEFAULT.word_adapted,
                 history_size: int = _DEFAULT.history_size, units: str = _DEFAULT.units, inference: str = _DEFAULT.inference,
                 sweeps: int = GIBBS_SWEEPS, alpha_every: int = GIBBS_ALPHA_EVERY, sample_b: bool = GIBBS_SAMPLE_B,
                 history_every: int = _DEFAULT.history_every):
        if inference not in TOPIC_INFERENCE:
            raise ValueError(Errors.E550.format(modes=', '.join(TOPIC_INFERENCE), inference=inference))
        if inference == "gibbs" and a != 0:
            raise ValueError(Errors.E551.format(a=a))
        self.n_topics = n_topics
        self.inference, self.sweeps, self.alpha_every = inference, int(sweeps), int(alpha_every)
        self.sample_b = bool(sample_b)
        self.history_every = int(history_every)
        self.units = check_units(units)
        self.alpha = alpha
        self.a, self.b = a, b
        self.online = normalized(online or default_topic_settings(), "online")
        self.local_iterations = local_iterations
        self.word_adapted = word_adapted
        self.history_size = history_size
        self.compiled: Optional[CompiledGrammar] = None
        self.learner: Optional[TopicLearner] = None
        self.trace: List[Dict] = []
        #: top words of every topic after each refinement (online) or every `history_every` sweeps
        #: (Gibbs): the ranking over training (Figure 4)
        self.history: List[Dict] = []
        self.dropped_tokens = 0
        self._untraced_seconds = 0.0  # training time since the last traced line (`step`)

    # ------------------------------------------------------------------ grammar
    def prepare(self, alphabet: Iterable[str], tokens: int = 0) -> None:
        """Generate and compile the grammar for these characters (once).

        `tokens` (the expected number of word tokens in the corpus) sets b when
        b = "auto": half the tokens a topic can expect, tokens / (2K), so that a
        topic's concentration grows with its data as the Pitman-Yor
        predictive asks of a new word; at least 1.
        """
        if self.compiled is not None:
            return
        if self.b == "auto":
            self.b = max(1.0, AUTO_B_PER_TOKEN * tokens / self.n_topics)
        grammar = topic_grammar(self.n_topics, alphabet, alpha=self.alpha, a=self.a, b=self.b,
                                truncation=self.online.default_truncation, word_adapted=self.word_adapted)
        self._set_compiled(CompiledGrammar(grammar))

    def _set_compiled(self, compiled: CompiledGrammar, **learner_state) -> None:
        self.compiled = compiled
        self.learner = TopicLearner(compiled, self.online, learner_state.pop("seed", 0), **learner_state)

    def grammar_text(self) -> str:
        self._require()
        return write_pycfg(self.compiled.grammar, include_options=True)

    def _require(self):
        if self.compiled is None:
            raise RuntimeError(Errors.E552)

    # ------------------------------------------------------------------ packing
    def _chars(self, token: str) -> List[str]:
        """The characters (text units) a token is spelled with (a whitespace one is never known)."""
        return text_units(token, self.units)

    def alphabet(self, docs: Iterable[Sequence[str]]) -> set:
        """The characters of the documents' tokens (whitespace and control characters left out)."""
        types = set().union(*(set(d) for d in docs))  # spell each word type once, not each token
        units = {c for token in types for c in self._chars(token)}
        return {c for c in units if not is_hard_boundary(c)}

    #: Word types whose spellings `_pack` keeps between minibatches (then it starts afresh).
    SPELLED_CACHE_TYPES = 1 << 20

    def _spelled_types(self) -> SpelledTypes:
        """The spellings of the word types packed so far, for this grammar."""
        cache = getattr(self, "_spelled", None)
        if cache is None or cache[0] is not self.compiled or len(cache[1]) > self.SPELLED_CACHE_TYPES:
            cache = self._spelled = (self.compiled, SpelledTypes(self.compiled.term_index, self._chars))
        return cache[1]

    def _pack(self, docs: Sequence[Sequence[str]]):
        """Flat character ids; tokens with a character the grammar does not know are dropped."""
        chars, tok_ptr, doc_ptr, dropped = self._spelled_types().pack(docs)
        self.dropped_tokens += dropped
        return chars, tok_ptr, doc_ptr

    # ------------------------------------------------------------------ training
    def fit(self, docs: Sequence[Sequence[str]], *, passes: int = _DEFAULT.passes, seed: int = _RUN.seed,
            callback: Optional[Report] = None) -> "TopicModel":
        """`sweeps` collapsed Gibbs sweeps over an in-memory corpus, whose last sample becomes the
        model (`spacy_ag.topics.gibbs`; `passes` is not used); with inference="online", `passes`
        online passes instead, reshuffled every pass. `partial_fit` then goes on online."""
        if self.inference == "gibbs":
            return self.fit_gibbs(docs, seed=seed, callback=callback)
        docs = [list(d) for d in docs]
        self.prepare(self.alphabet(docs), sum(len(d) for d in docs))
        for p in range(passes):
            order = self.pass_order(len(docs), seed, p)
            self.partial_fit((docs[i] for i in order), seed=seed + p, corpus_size=len(docs), callback=callback)
        return self

    def fit_gibbs(self, docs: Sequence[Sequence[str]], *, seed: int = _RUN.seed, callback: Optional[Report] = None,
                  checkpoint: Optional[PathLike] = None, checkpoint_every: int = _RUN.checkpoint_every,
                  resume: bool = False, run: Optional[Mapping[str, Any]] = None) -> "TopicModel":
        """`sweeps` collapsed Gibbs sweeps over an in-memory corpus (`spacy_ag.topics.gibbs`); the last
        sample becomes the model. Every `checkpoint_every` sweeps the sampler's state goes to
        `checkpoint`, and `resume` continues from there to the same result. The checkpoint records
        `run` (``section.key`` -> value; default: the model's settings and the seed) and continues
        only a run that gives the same (`spacy_ag.serialize.check_run`)."""
        from .gibbs import gibbs_corpus, load_sample, run_gibbs

        docs = [list(d) for d in docs]
        self.prepare(self.alphabet(docs), sum(len(d) for d in docs))
        if self.learner.minibatches or self.learner.seen:
            raise RuntimeError(Errors.E553)
        self.learner.seed = seed
        corpus = gibbs_corpus(self, docs)
        history: List[Dict] = []
        sample = run_gibbs(self, corpus, self.sweeps, seed, self.alpha_every, self.sample_b, callback, checkpoint,
                           checkpoint_every, resume, history_every=self.history_every, history=history,
                           history_size=self.history_size, run=self._checkpoint_run(run, seed))
        load_sample(self, corpus, sample)
        self.trace.append({"sweeps": self.sweeps, "documents_seen": len(docs), **self.learner.summary()})
        self.history = history + [{"sweep": self.sweeps, "documents_seen": len(docs),
                                   "topics": [self.top_words(i, self.history_size) for i in range(self.n_topics)]}]
        return self

    def partial_fit(self, docs: Iterable[Sequence[str]], *, seed: int = _RUN.seed, corpus_size: Optional[int] = None,
                    callback: Optional[Report] = None) -> "TopicModel":
        """One online pass over documents read lazily, one minibatch at a time (online whatever
        `inference` says: an untrained model becomes an online model).

        New words of the stream enter the topics as they are drawn. D
        (`corpus_size`) defaults to the `corpus_size` setting, else the
        documents seen so far. The first minibatch fixes the alphabet of an
        untrained model, and with b = "auto" its b from D times the first
        minibatch's mean document length (call `prepare` to give both up front).
        """
        for batch in self.minibatches(docs):
            self.step(batch, seed=seed, corpus_size=corpus_size, callback=callback)
        return self

    def minibatches(self, docs: Iterable[Sequence[str]]) -> Iterable[List[Sequence[str]]]:
        """`docs` in minibatches of `online.batch_size` (the last one may be shorter)."""
        return chunked(docs, self.online.batch_size)

    def pass_order(self, n_docs: int, seed: int, pass_index: int) -> np.ndarray:
        """The order in which `fit` visits the documents in pass `pass_index`."""
        return np.random.default_rng(mix_seeds(seed, pass_index) % (2 ** 63)).permutation(n_docs)

    def update_documents(self, docs: Sequence[Sequence[str]], *, seed: int = _RUN.seed,
                         corpus_size: Optional[int] = None) -> float:
        """One online minibatch made of `docs` (what a spaCy `update` does); returns the documents'
        log likelihood under G' before the step."""
        return self.step([list(d) for d in docs], seed=seed, corpus_size=corpus_size)["batch_loglik"]

    def step(self, batch: Sequence[Sequence[str]], *, seed: int = _RUN.seed, corpus_size: Optional[int] = None,
             callback: Optional[Report] = None) -> Dict:
        """One online minibatch; returns its trace line (`callback` gets the lines of refinements)."""
        if self.compiled is None or not (self.learner.minibatches or self.learner.seen):
            self.inference = "online"  # trained online from the start: inferred by the online fixed point
        if self.compiled is None:
            per_doc = sum(len(d) for d in batch) / max(1, len(batch))
            self.prepare(self.alphabet(batch),
                         int(per_doc * (corpus_size or self.online.corpus_size or len(batch))))
        self.learner.seed = seed
        chars, tok_ptr, doc_ptr = self._pack(batch)
        self.learner._workspace(int(np.diff(tok_ptr).max()) if len(tok_ptr) > 1 else 1)
        docs = np.arange(len(batch), dtype=np.int64)
        line = self.learner.step_documents(chars, tok_ptr, doc_ptr, docs, corpus_size, self.local_iterations)
        # a traced line's "seconds" is the training time since the previous traced line
        self._untraced_seconds += line["seconds"]
        if "pruned" in line:
            line["seconds"], self._untraced_seconds = self._untraced_seconds, 0.0
            line.update(self.learner.summary())
            self.history.append({"minibatch": line["minibatch"], "documents_seen": line["documents_seen"],
                                 "topics": [self.top_words(i, self.history_size) for i in range(self.n_topics)]})
            self.trace.append(line)
            if callback is not None:
                callback(line)
        return line

    # ------------------------------------------------------------------ topics
    def top_words(self, topic: int, n: Optional[int] = 10) -> List[Tuple[str, float]]:
        """The topic's words by expected probability E_q[pi] (stick-breaking means, 1.3); n=None: all."""
        self._require()
        S, V = self.learner.state, self.learner.V
        ad = int(self.learner.R.topic_adaptor[topic])
        entries, nu1, nu2 = stick_parameters(S, V, ad, self.learner.correction())
        mean_v = nu1 / (nu1 + nu2)
        rest = np.concatenate([[1.0], np.cumprod(1.0 - mean_v)[:-1]]) if len(entries) else np.empty(0)
        prob = mean_v * rest
        order = np.argsort(-prob, kind="stable")[:n]
        out = []
        for p in order:
            k = int(entries[p])
            terms = np.empty(yield_length(S, S.tab_yield[k]) + 1, np.int32)
            length = yield_terms(S, S.tab_yield[k], terms)
            out.append(("".join(self.compiled.terminals[t] for t in terms[:length]), float(prob[p])))
        return out

    def get_topics(self) -> Tuple[np.ndarray, List[str]]:
        """The topic-word matrix, as gensim's and tomotopy's ``get_topics`` give it, over the words
        the topics have cached: RETURNS (matrix, vocabulary), matrix[i, w] = E_q[pi] of word
        vocabulary[w] in topic i (a row sums to less than 1: the rest is the topic's mass on words
        spelled afresh from characters, which is what lets new words in). Vocabulary order: by
        total probability over the topics, then alphabetical."""
        self._require()
        rows = [dict(self.top_words(i, n=None)) for i in range(self.n_topics)]
        totals: Dict[str, float] = {}
        for row in rows:
            for word, p in row.items():
                totals[word] = totals.get(word, 0.0) + p
        vocabulary = sorted(totals, key=lambda w: (-totals[w], w))
        index = {w: j for j, w in enumerate(vocabulary)}
        matrix = np.zeros((self.n_topics, len(vocabulary)))
        for i, row in enumerate(rows):
            for word, p in row.items():
                matrix[i, index[word]] += p
        return matrix, vocabulary

    def topics(self, n: int = 10) -> List[List[str]]:
        return [[w for w, _ in self.top_words(i, n)] for i in range(self.n_topics)]

    def vocabulary_size(self) -> Dict[int, int]:
        return {i: int(v) for i, v in enumerate(self.learner.grammaton_sizes().values())}

    # ------------------------------------------------------------------ new documents
    def infer(self, docs: Sequence[Sequence[str]], *, return_tokens: bool = False):
        """Topic proportions E_q[theta] of documents (rows sum to 1), with the topics fixed.

        With `return_tokens`, also each document's per-token topic
        distributions (None for a token with an unknown character).
        """
        self._require()
        docs = [list(d) for d in docs]
        theta, phis, _ = self._document_topics(*self._pack(docs))
        if not return_tokens:
            return theta
        per_doc, t = [], 0
        for doc in docs:
            rows = []
            for token in doc:
                if self.can_spell(token):
                    rows.append(phis[t])
                    t += 1
                else:
                    rows.append(None)
            per_doc.append(rows)
        return theta, per_doc

    def _document_topics(self, chars, tok_ptr, doc_ptr):
        """E[theta] (D, K) of packed documents with the topics fixed, each token's topic distribution
        (tokens, K) and each document's log likelihood: by the local fixed point of the online
        E-step, or for a model trained by Gibbs sampling by `local_iterations` Gibbs sweeps per
        document (half of them burn-in, each document its own random stream), as tomotopy and
        Mallet infer (a document's random stream follows from its text and INFER_SEED alone, so a
        saved and loaded model infers the same)."""
        L = self.learner
        D, K = len(doc_ptr) - 1, self.n_topics
        thetas = np.zeros((D, K))
        phis = np.zeros((len(tok_ptr) - 1, K))
        logliks = np.zeros(D)
        if self.inference == "gibbs":
            infer_documents_gibbs(L.G, L.state, L.V, L.R, chars, tok_ptr, doc_ptr, L.alpha, self.local_iterations,
                                  INFER_SEED, thetas, phis, logliks)
            return thetas, phis, logliks
        infer_documents(L.G, L.state, L.V, L.R, chars, tok_ptr, doc_ptr, L.alpha, self.local_iterations, thetas,
                        phis, logliks)
        return thetas / thetas.sum(axis=1, keepdims=True), phis, logliks

    def can_spell(self, word: str) -> bool:
        """Whether every character of `word` is one the grammar knows (else no topic gives it mass)."""
        self._require()
        chars = self._chars(word)
        return bool(chars) and all(c in self.compiled.term_index for c in chars)

    def word_probabilities(self, words: Sequence[str]) -> np.ndarray:
        """P_i(w) of each word under each topic, cached words and the character base together
        (the G' weights of 4.3, as the E-step uses them): RETURNS (n_topics, len(words)); a word
        with a character the grammar does not know has probability 0."""
        self._require()
        out = np.zeros((self.n_topics, len(words)))
        known = [j for j, w in enumerate(words) if self.can_spell(w)]
        if known:
            chars, tok_ptr, _ = self._pack([[words[j] for j in known]])
            L = self.learner
            logp, _ = document_word_weights(L.G, L.state, L.V, L.R, chars, tok_ptr, 0, len(known))
            out[:, known] = np.exp(logp).T
        return out

    def heldout_loglik(self, docs: Sequence[Sequence[str]]) -> Dict[str, float]:
        """log likelihood of held-out documents, sum over tokens of log sum_i E[theta_i] P_i(w),
        with each document's proportions fitted with the topics fixed (tokens with unknown
        characters are skipped and counted)."""
        self._require()
        docs = [list(d) for d in docs]
        before = self.dropped_tokens
        chars, tok_ptr, doc_ptr = self._pack(docs)
        _, _, logliks = self._document_topics(chars, tok_ptr, doc_ptr)
        tokens = len(tok_ptr) - 1
        return {"loglik": float(logliks.sum()), "tokens": tokens,
                "per_word": float(logliks.sum() / tokens) if tokens else 0.0,
                "skipped_tokens": self.dropped_tokens - before}

    # ------------------------------------------------------------------ saving
    ARCHIVE_KIND = "topic_model"

    def _meta(self) -> Dict:
        return {"n_topics": self.n_topics, "alpha": self.alpha, "a": self.a, "b": self.b,
                "online": self.online.to_dict(), "local_iterations": self.local_iterations,
                "word_adapted": self.word_adapted, "history_size": self.history_size, "history": self.history,
                "units": self.units, "inference": self.inference, "sweeps": self.sweeps,
                "alpha_every": self.alpha_every, "sample_b": self.sample_b, "history_every": self.history_every,
                "progress": self.learner.progress(), "trace_tail": reproducible(self.trace[-1:])}

    def _archive_parts(self):
        from ..runs.online_runner import model_arrays

        self._require()
        return (self.ARCHIVE_KIND, self.grammar_text(), model_arrays(self.learner.state, self.learner.V),
                self._meta())

    def _checkpoint_run(self, run: Optional[Mapping[str, Any]], seed: int) -> Dict[str, Any]:
        """`run` if given, else the settings that decide what training computes from the documents
        (sweeps and passes left out: a run may be continued further) and the seed."""
        if run is not None:
            return dict(run)
        settings = {k: v for k, v in self._meta().items()
                    if k not in ("sweeps", "history", "history_every", "history_size", "progress", "trace_tail")}
        return flat_settings({"topics": settings, "training": {"seed": seed}},
                             leave_out=frozenset({"topics.online"}))

    def save_checkpoint(self, path: PathLike, run: Mapping[str, Any]) -> None:
        """`save`, the archive's header also recording `run` (``section.key`` -> value), which
        `load_checkpoint` requires."""
        from ..archive import write_archive

        kind, grammar_text, arrays, meta = self._archive_parts()
        write_archive(path, kind, grammar_text, arrays, {**meta, "run": dict(run)})

    @classmethod
    def load_checkpoint(cls, path: PathLike, run: Mapping[str, Any]) -> "TopicModel":
        """The model `save_checkpoint` wrote to `path`, if it recorded the same `run`: a checkpoint
        left by another run (another seed, setting or corpus) is refused (`check_run`)."""
        from ..archive import read_archive

        archive = read_archive(path, cls.ARCHIVE_KIND)
        check_run(path, archive.header.get("run"), run)
        return cls._from_archive(archive, str(path))

    def save(self, path: PathLike) -> None:
        """Write the model archive (`spacy_ag.archive`): the generated grammar, the state and a header."""
        from ..archive import write_archive

        write_archive(path, *self._archive_parts())

    def to_bytes(self) -> bytes:
        from ..archive import archive_bytes

        return archive_bytes(*self._archive_parts())

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<topic model bytes>") -> "TopicModel":
        from ..archive import read_archive_bytes
        from ..model_headers import check_topic_model_header

        return cls._from_archive(read_archive_bytes(data, source, cls.ARCHIVE_KIND, check_topic_model_header), source)

    @classmethod
    def load(cls, path: PathLike) -> "TopicModel":
        """A saved topic model, ready to use and to go on learning.

        path (PathLike): A topic model directory (the archive `save` writes:
            OUTPUT/model of ``spacy-ag train`` with a topic config, or
            ``<pipeline>/ag_topics/model`` inside a pipeline directory).
        RETURNS (TopicModel): The model with its settings, topics, learner
            state and history as saved, so `infer` and `top_words` give what
            they gave before saving, and `partial_fit` continues online from
            there (its document count and step sizes go on from the saved ones),
            whether the model was trained online or by Gibbs sampling;
            ``spacy-ag update-topics`` does that from the command line.
            Every array is checked against the grammar first: a damaged or
            foreign directory raises `ModelFileError` (one coded line).
        """
        from ..archive import read_archive
        from ..model_headers import check_topic_model_header

        return cls._from_archive(read_archive(path, cls.ARCHIVE_KIND, check_topic_model_header), str(path))

    @classmethod
    def _from_archive(cls, archive, source: str) -> "TopicModel":
        from ..errors import ModelFileError
        from ..runs.online_runner import variational_from_arrays

        meta, arrays = archive.header, archive.arrays
        try:
            topics = check(TopicModelSettings, {k: meta[k] for k in ("n_topics", "alpha", "a", "b",
                                                                    "local_iterations")}, "topics")
            model = cls(topics.n_topics, alpha=topics.alpha, a=topics.a, b=topics.b,
                        online=check(OnlineSettings, meta["online"], "online"),
                        local_iterations=topics.local_iterations,
                        word_adapted=meta["word_adapted"], history_size=meta["history_size"],
                        units=meta.get("units", LEGACY_UNITS),  # older archives: code points
                        inference=meta.get("inference", "online"), sweeps=meta.get("sweeps", GIBBS_SWEEPS),
                        alpha_every=meta.get("alpha_every", GIBBS_ALPHA_EVERY),
                        sample_b=meta.get("sample_b", GIBBS_SAMPLE_B),
                        history_every=meta.get("history_every", _DEFAULT.history_every))
            progress = meta["progress"]
        except SettingError as err:
            raise ModelFileError(Errors.E065.format(path=source, err=err)) from None
        except (KeyError, TypeError, ValueError) as err:  # ValueError: the constructor's checks
            raise ModelFileError(Errors.E065.format(path=source, err=repr(err))) from None
        grammar = parse_grammar_text(archive.grammar_text, fmt="pycfg", source=f"{source}/grammar.lt", start="SENT")
        state = state_from_arrays(arrays, source)
        variational = variational_from_arrays(arrays, source)
        compiled = CompiledGrammar(grammar)
        found = sum(1 for s in compiled.nonterminals if s.startswith("TOPIC_"))
        if found != model.n_topics:  # the kernels size their arrays by one and index by the other
            raise ModelFileError(Errors.E195.format(path=source, key="n_topics", value=model.n_topics,
                                                    found=f"{found} topics"))
        from ..core.state_checks import arrays_source, check_state  # every array, before any kernel sees it

        check_state(compiled, state, variational, arrays_source(archive, source), require_variational=True)
        model._set_compiled(compiled, state=state, variational=variational, progress=progress)
        model.history = meta.get("history", [])
        model.trace = meta.get("trace_tail", [])
        return model
