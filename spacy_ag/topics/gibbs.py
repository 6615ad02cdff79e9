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
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from ..core.online import _mix
from ..core.rng import make_rng
from ..core.topic_gibbs import (
    base_probabilities, entries_from_counts, gibbs_sweep, optimize_alpha, random_topics, spelling_counts,
    table_counts,
)
from ..core.variational import rank_by_counts, refresh_weights

#: Fixed-point iterations of alpha each time it is refitted.
ALPHA_ITERATIONS = 20


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
    word_tables: np.ndarray  # (W,)
    topic_tables: np.ndarray  # (K,)


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


def run_gibbs(model, corpus: GibbsCorpus, sweeps: int, seed: int, alpha_every: int,
              callback: Optional[Callable[[Dict], None]] = None) -> GibbsSample:
    """`sweeps` sweeps from a random start; after each, the tables and the base are redrawn, and every
    `alpha_every` sweeps (0: never) alpha is refitted. `callback` gets a line per sweep."""
    learner = model.learner
    K, W, D = model.n_topics, len(corpus.types), len(corpus.doc_length)
    b = float(learner.state.ad_b[learner.R.topic_adaptor[0]])
    rng = make_rng(_mix(seed, 0x6177))
    z = np.empty(len(corpus.word), np.int32)
    random_topics(z, K, rng)
    ndk = np.zeros((D, K), np.int32)
    nwk = np.zeros((W, K), np.int32)
    np.add.at(ndk, (corpus.doc, z), 1)
    np.add.at(nwk, (corpus.word, z), 1)
    nk = nwk.sum(axis=0).astype(np.int64)
    alpha = learner.alpha.astype(np.float64).copy()
    prior_more, prior_last, prior_chars = _base_priors(learner)
    word_tables = (nwk > 0).sum(axis=1).astype(np.float64)  # one table per count, to start the base
    topic_tables = np.zeros(K)
    base = np.empty(W)
    base_probabilities(corpus.spell, corpus.spell_ptr, word_tables, prior_more, prior_last, prior_chars, base)
    started = time.perf_counter()
    for sweep in range(1, sweeps + 1):
        gibbs_sweep(corpus.word, corpus.doc, z, ndk, nwk, nk, alpha, b, base, rng)
        table_counts(nwk, b, base, rng, word_tables, topic_tables)
        base_probabilities(corpus.spell, corpus.spell_ptr, word_tables, prior_more, prior_last, prior_chars, base)
        if alpha_every and sweep % alpha_every == 0:
            optimize_alpha(ndk, corpus.doc_length, alpha, ALPHA_ITERATIONS)
        if callback is not None:
            callback({"sweep": sweep, "seconds": time.perf_counter() - started, "alpha_sum": float(alpha.sum()),
                      "tables": float(word_tables.sum())})
    return GibbsSample(z, ndk, nwk, nk, alpha, base, word_tables, topic_tables)


def load_sample(model, corpus: GibbsCorpus, sample: GibbsSample) -> None:
    """Make the sample the model's state: entries with f~ = n_kw, rule counts g~ from the tokens and
    the tables, the fitted alpha as the documents' prior; then the weights of G'."""
    learner = model.learner
    G, R = learner.G, learner.R
    learner._workspace(int(np.diff(corpus.spell_ptr).max()) if len(corpus.types) else 1)
    learner.drive(lambda pos, need: entries_from_counts(G, learner.state, learner.V, R, corpus.spell,
                                                        corpus.spell_ptr, sample.nwk, pos, learner.stack, need),
                  len(corpus.types))
    V = learner.V
    more, last, chars = spelling_counts(corpus.spell, corpus.spell_ptr, sample.word_tables, len(R.char_rule))
    V.gt[R.sent_doc[0]] = len(corpus.word)
    V.gt[R.doc_topic] = sample.nk
    V.gt[R.topic_word] = sample.topic_tables
    V.gt[R.word_chars[0]] = sample.word_tables.sum()
    V.gt[R.chars_more[0]] = more
    V.gt[R.chars_last[0]] = last
    known = R.char_rule >= 0
    V.gt[R.char_rule[known]] = chars[known]
    V.alpha[R.doc_topic] = sample.alpha
    rank_by_counts(G, learner.state, V)
    learner.seen = len(corpus.doc_length)
    refresh_weights(G, learner.state, V, learner.correction())
