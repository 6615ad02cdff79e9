"""Training a `TopicModel` by collapsed Gibbs sampling (`spacy_ag.core.topic_gibbs`).

Data path: documents -> word-type ids and spellings (`GibbsCorpus`) -> sweeps
over the counts -> the last sample handed to the model's variational state
(`load_sample`), so that top words, inference, held-out likelihood, saving
and later online updates are the online mode's own code. The hand-over keeps
the sampler's counts as the grammatons' expected counts f~ and g~ (each
word a topic holds becomes an entry with f~ = n_kw; the base rules count the
tables), which is the variational posterior that a batch E-step would give
for exactly that sample.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ..runs.online_learner import mix_seeds
from ..core.rng import make_rng
from ..core.topic_gibbs import (
    base_probabilities, collapsed_log_joint, entries_from_counts, gibbs_sweep, lexicon_tables, optimize_alpha,
    random_topics, sample_concentration, spelling_counts, table_counts,
)
from ..core.variational import rank_by_counts, refresh_weights
from ..errors import Errors, ModelFileError
from ..archive import read_checkpoint_file, write_checkpoint_file
from ..serialize import check_run
from ..settings import SamplerSettings

#: Fixed-point iterations of alpha each time it is refitted.
ALPHA_ITERATIONS = 20
#: The concentrations' prior, b ~ Gamma(shape, scale), and slice steps per sweep: the MCMC engine's.
B_PRIOR_SHAPE, B_PRIOR_SCALE = SamplerSettings.gamma_shape, SamplerSettings.gamma_scale
B_SLICE_ITERATIONS = 10


@dataclass
class GibbsCorpus:
    """Tokens as word-type ids, with every type's spelling in the grammar's terminal ids."""

    word: np.ndarray  # (N,) int32
    doc: np.ndarray  # (N,) int32
    doc_length: np.ndarray  # (D,) int64
    spell: np.ndarray  # terminal ids of all types, concatenated
    spell_ptr: np.ndarray  # (W + 1,)
    types: List[str]


@dataclass
class GibbsSample:
    """The sampler's state: topics of the tokens and the counts they imply."""

    z: np.ndarray
    ndk: np.ndarray  # (D, K) int32
    nwk: np.ndarray  # (W, K) int32
    nk: np.ndarray  # (K,) int64
    alpha: np.ndarray  # (K,)
    base: np.ndarray  # (W,) G0 of every type
    word_tables: np.ndarray  # (W,) the topics' tables of every word
    topic_tables: np.ndarray  # (K,)
    lexicon_tables: np.ndarray  # (W,) the shared lexicon's tables (with an adapted WORD)
    b: np.ndarray  # (K,) the topics' concentrations
    lexicon_b: float  # the lexicon's (0 without one)


def gibbs_corpus(model, docs: Sequence[Sequence[str]]) -> GibbsCorpus:
    """Word-type ids of the documents' tokens (a token with a character the grammar does not know
    is left out and counted in `model.dropped_tokens`)."""
    index: Dict[str, int] = {}
    types: List[str] = []
    spellings: List[List[int]] = []
    word, doc, lengths = [], [], []
    terms = model.compiled.term_index
    for d, tokens in enumerate(docs):
        kept = 0
        for token in tokens:
            w = index.get(token)
            if w is None:
                chars = model._chars(token)
                if not chars or any(c not in terms for c in chars):
                    model.dropped_tokens += 1
                    continue
                w = index[token] = len(types)
                types.append(token)
                spellings.append([terms[c] for c in chars])
            word.append(w)
            doc.append(d)
            kept += 1
        lengths.append(kept)
    spell_ptr = np.zeros(len(types) + 1, np.int64)
    np.cumsum([len(s) for s in spellings], out=spell_ptr[1:])
    spell = np.array([t for s in spellings for t in s], np.int32)
    return GibbsCorpus(np.array(word, np.int32), np.array(doc, np.int32), np.array(lengths, np.int64),
                       spell, spell_ptr, types)


def _base_priors(learner):
    """The Dirichlet priors of the base's CHARS and CHAR rules, from the grammar."""
    R, alpha = learner.R, learner.V.alpha
    chars = np.array([alpha[r] if r >= 0 else 0.0 for r in R.char_rule])
    return float(alpha[R.chars_more[0]]), float(alpha[R.chars_last[0]]), chars


#: Kind of a Gibbs checkpoint file (`write_checkpoint`).
CHECKPOINT_KIND = "topic_gibbs_checkpoint"


def run_gibbs(model, corpus: GibbsCorpus, sweeps: int, seed: int, alpha_every: int, sample_b: bool = True,
              callback: Optional[Callable[[Dict], None]] = None, checkpoint: Optional[Path] = None,
              checkpoint_every: int = 0, resume: bool = False, *, history_every: int = 0,
              history: Optional[List[Dict]] = None, history_size: int,
              run: Optional[Mapping[str, Any]] = None) -> GibbsSample:
    """`sweeps` sweeps from a random start; after each, the tables (and the shared lexicon's, when
    WORD is adapted) are redrawn, with `sample_b` the concentrations b of every topic and of the
    lexicon given them, then the base; every `alpha_every` sweeps (0: never) alpha is
    refitted. `callback` gets a trace line per sweep. Every `history_every` sweeps before the last
    (0: never), every topic's `history_size` top words are appended to `history` (`top_words_of`).
    Every `checkpoint_every` sweeps the sampler's state (and the history so far) is written to
    `checkpoint`, stamped with `run` (``section.key`` -> value); with `resume`, the run continues
    from that file, if it has the same `run`, and ends exactly as an uninterrupted run would."""
    learner = model.learner
    R, S = learner.R, learner.state
    K, W, D = model.n_topics, len(corpus.types), len(corpus.doc_length)
    b = S.ad_b[R.topic_adaptor].astype(np.float64)
    lexicon_b = float(S.ad_b[R.word_adaptor[0]]) if R.word_adaptor[0] >= 0 else 0.0
    history = [] if history is None else history
    if resume:
        done, z, alpha, word_tables, shared, rng, b, lexicon_b, recorded = read_checkpoint(checkpoint, corpus, K,
                                                                                            seed, run)
        history[:] = recorded
    else:
        done, rng = 0, make_rng(mix_seeds(seed, 0x6177))
        z = np.empty(len(corpus.word), np.int32)
        random_topics(z, K, rng)
        alpha = learner.alpha.astype(np.float64).copy()
        word_tables = shared = None
    ndk = np.zeros((D, K), np.int32)
    nwk = np.zeros((W, K), np.int32)
    np.add.at(ndk, (corpus.doc, z), 1)
    np.add.at(nwk, (corpus.word, z), 1)
    nk = nwk.sum(axis=0).astype(np.int64)
    if word_tables is None:
        word_tables = (nwk > 0).sum(axis=1).astype(np.float64)  # one table per count, to start
        shared = np.minimum(word_tables, 1.0)  # the lexicon's tables: one per word, to start
    priors = _base_priors(learner)
    topic_tables = np.zeros(K)
    spelled, base = np.empty(W), np.empty(W)

    def new_base():
        base_probabilities(corpus.spell, corpus.spell_ptr, shared if lexicon_b else word_tables, *priors, spelled)
        if lexicon_b:  # the lexicon's predictive, its own tables integrated out
            base[:] = (word_tables + lexicon_b * spelled) / (word_tables.sum() + lexicon_b)
        else:
            base[:] = spelled

    new_base()
    started = time.perf_counter()
    for sweep in range(done + 1, sweeps + 1):
        gibbs_sweep(corpus.word, corpus.doc, z, ndk, nwk, nk, alpha, b, base, rng)
        table_counts(nwk, b, base, rng, word_tables, topic_tables)
        if lexicon_b:
            lexicon_tables(word_tables, lexicon_b, spelled, rng, shared)
        if sample_b:
            for k in range(K):
                b[k] = sample_concentration(b[k], nk[k:k + 1], topic_tables[k:k + 1], B_PRIOR_SHAPE, B_PRIOR_SCALE,
                                            rng, B_SLICE_ITERATIONS)
            if lexicon_b:
                lexicon_b = sample_concentration(lexicon_b, np.array([word_tables.sum()]), np.array([shared.sum()]),
                                                 B_PRIOR_SHAPE, B_PRIOR_SCALE, rng, B_SLICE_ITERATIONS)
        new_base()
        if alpha_every and sweep % alpha_every == 0:
            optimize_alpha(ndk, corpus.doc_length, alpha, ALPHA_ITERATIONS)
        if callback is not None:
            tables = {"TOPIC": float(word_tables.sum())} | ({"WORD": float(shared.sum())} if lexicon_b else {})
            callback({"iteration": sweep, "log_posterior": collapsed_log_joint(ndk, nwk, nk, alpha, b, base),
                      "tables": tables, "alpha_sum": float(alpha.sum()),
                      "b_median": float(np.median(b)), "lexicon_b": lexicon_b,
                      "seconds": time.perf_counter() - started})
        if history_every and sweep % history_every == 0 and sweep < sweeps:
            history.append({"sweep": sweep, "documents_seen": D,
                            "topics": top_words_of(corpus, nwk, nk, b, base, history_size)})
        if checkpoint is not None and checkpoint_every and sweep % checkpoint_every == 0 and sweep < sweeps:
            write_checkpoint(checkpoint, sweep, seed, z, alpha, word_tables, shared, rng, b, lexicon_b, history,
                             run)
    return GibbsSample(z, ndk, nwk, nk, alpha, base, word_tables, topic_tables, shared, b, lexicon_b)


def top_words_of(corpus: GibbsCorpus, nwk, nk, b, base, n: int) -> List[List]:
    """Every topic's `n` most probable words under the sample, [(word, probability), ...] by the
    topic's predictive (n_kw + b_k G0(w)) / (n_k + b_k) (a = 0), ties in word order: the ranking
    that `spacy-ag topics --history` follows over the sweeps."""
    W = len(corpus.types)
    n = min(n, W)
    out = []
    for k in range(len(nk)):
        column = (nwk[:, k] + b[k] * base) / (nk[k] + b[k])
        best = np.argpartition(-column, n - 1)[:n] if 0 < n < W else np.arange(n)
        best = best[np.lexsort((best, -column[best]))]
        out.append([(corpus.types[w], float(column[w])) for w in best])
    return out


def write_checkpoint(path: Path, sweep: int, seed: int, z, alpha, word_tables, shared, rng, b, lexicon_b,
                     history: Sequence[Dict] = (), run: Optional[Mapping[str, Any]] = None) -> None:
    """The sampler's state after `sweep` sweeps, atomically: the counts follow from z, the base from
    the tables; the rankings recorded so far go into the header."""
    arrays = {"z": z, "alpha": alpha, "word_tables": word_tables, "lexicon_tables": shared, "rng": rng,
              "b": b, "lexicon_b": np.array([lexicon_b])}
    write_checkpoint_file(path, CHECKPOINT_KIND, arrays, dict(sweep=sweep, seed=seed, tokens=len(z),
                                                              history=list(history), run=dict(run or {})))


def read_checkpoint(path: Path, corpus: GibbsCorpus, n_topics: int, seed: int,
                    run: Optional[Mapping[str, Any]] = None):
    """(sweep, z, alpha, word_tables, lexicon_tables, rng, b, lexicon b, history) of a checkpoint of
    this corpus, seed and `run` (`check_run`)."""
    arrays, meta = read_checkpoint_file(path, CHECKPOINT_KIND)
    z = arrays.get("z")
    missing = any(k not in arrays for k in ("alpha", "word_tables", "lexicon_tables", "rng", "b", "lexicon_b"))
    if (meta.get("seed") != seed or missing or z is None or len(z) != len(corpus.word)
            or len(arrays["b"]) != n_topics or len(arrays["alpha"]) != n_topics or len(z) and
            (int(z.min()) < 0 or int(z.max()) >= n_topics)):
        raise ModelFileError(Errors.E073.format(path=path))
    check_run(path, meta.get("run"), run)
    try:  # JSON gives the (word, probability) pairs back as lists
        history = [{**snap, "topics": [[(str(w), float(p)) for w, p in topic] for topic in snap["topics"]]}
                   for snap in meta.get("history", [])]
    except (KeyError, TypeError, ValueError):
        raise ModelFileError(Errors.E073.format(path=path)) from None
    return (int(meta["sweep"]), z.astype(np.int32), arrays["alpha"].astype(np.float64),
            arrays["word_tables"].astype(np.float64), arrays["lexicon_tables"].astype(np.float64),
            arrays["rng"].astype(np.uint64), arrays["b"].astype(np.float64), float(arrays["lexicon_b"][0]),
            history)


def load_sample(model, corpus: GibbsCorpus, sample: GibbsSample) -> None:
    """Make the sample the model's state: entries with f~ = n_kw (and the lexicon's), rule counts g~
    from the tokens and the tables, the fitted alpha as the documents' prior; then the weights of G'.

    An entry's own derivation already counts once in the rule counts (`create_entry`), so g~ gets
    the tables beyond one per entry."""
    learner = model.learner
    G, R = learner.G, learner.R
    learner._workspace(int(np.diff(corpus.spell_ptr).max()) if len(corpus.types) else 1)
    learner.drive(lambda pos, need: entries_from_counts(G, learner.state, learner.V, R, corpus.spell,
                                                        corpus.spell_ptr, sample.nwk, sample.word_tables, pos,
                                                        learner.stack, need), len(corpus.types))
    V = learner.V
    held = sample.nwk > 0
    if R.word_adaptor[0] >= 0:  # the base spells the lexicon's tables; the lexicon has an entry per word
        spelled_tables = np.maximum(sample.lexicon_tables - (sample.word_tables > 0), 0)
    else:  # the base spells the topics' tables; a topic has an entry per word it holds
        spelled_tables = sample.word_tables - held.sum(axis=1)
    more, last, chars = spelling_counts(corpus.spell, corpus.spell_ptr, spelled_tables.astype(np.float64),
                                        len(R.char_rule))
    V.gt[R.sent_doc[0]] = len(corpus.word)
    V.gt[R.doc_topic] = sample.nk
    V.gt[R.topic_word] = sample.topic_tables - held.sum(axis=0)
    V.gt[R.word_chars[0]] = spelled_tables.sum()
    V.gt[R.chars_more[0]] = more
    V.gt[R.chars_last[0]] = last
    known = R.char_rule >= 0
    V.gt[R.char_rule[known]] = chars[known]
    V.alpha[R.doc_topic] = sample.alpha
    learner.state.ad_b[R.topic_adaptor] = sample.b
    if R.word_adaptor[0] >= 0:
        learner.state.ad_b[R.word_adaptor[0]] = sample.lexicon_b
    rank_by_counts(G, learner.state, V)
    learner.seen = len(corpus.doc_length)
    refresh_weights(G, learner.state, V, learner.correction())
