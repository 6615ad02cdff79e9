"""Topic coherence (docs/algorithms.md 5.4): average pairwise PMI and NPMI of a topic's top words.

[ZBC14] score topics by the PMI of their top `T = 10` words (after Newman et
al. 2009), with probabilities estimated from co-occurrences in a reference
corpus. The paper leaves the counting undefined; this module fixes it
(docs/algorithms.md 5.4, **INFERRED** defaults) and reports every choice with the
score, because PMI values are only comparable under the same definition and
the same reference corpus.

Windows
    Each reference document (a list of tokens) is cut into sliding windows of
    ``window`` consecutive tokens (default 10), one window starting at every
    position that leaves a full window: a document of ``n`` tokens has
    ``n - window + 1`` windows ``tokens[i:i + window]`` when
    ``n >= window``; a shorter document is one window (the whole document);
    an empty document has none. Windows never cross document boundaries.
    ``#windows`` is the total over the corpus. (Long documents weigh in
    proportion to their length; a short document still counts once, so short
    documents are not dropped.)

Counts
    ``count(w)`` is the number of windows containing ``w`` at least once and
    ``count(w, w')`` the number of windows containing both (boolean
    document-window counting: a word repeated inside one window counts once).

Probabilities and scores
    ``P(w) = count(w) / #windows``,
    ``P(w, w') = (count(w, w') + 1) / #windows`` (add-one on the pair only, so
    that a pair that never co-occurs has a finite PMI),
    ``PMI(w, w') = log P(w, w') - log P(w) - log P(w')`` (natural log),
    ``NPMI(w, w') = PMI(w, w') / -log P(w, w')``.
    The coherence of a topic is the mean over its ``T(T-1)/2`` unordered pairs
    of distinct positions ``j < k`` (both scores are symmetric in the pair);
    the reported ``pmi``/``npmi`` are the means over topics.

Edge cases (documented, not in the paper)
    * A top word that never occurs in the reference corpus has ``P(w) = 0``
      and an infinite PMI; such pairs are skipped (``missing="skip"``, the
      default) and counted in ``skipped_pairs``/``missing_words``, or scored
      0 (the value of independent words) with ``missing="zero"``. A topic with
      no scorable pair gets ``None`` and is left out of the means
      (``n_topics_scored`` says how many were used).
    * With the add-one smoothing ``P(w, w')`` can reach or pass 1 in a tiny
      corpus (the pair is in every window); ``-log P(w, w') <= 0`` then and
      NPMI is defined as 1 (perfect co-occurrence).
    * A topic listing the same word twice scores that pair with
      ``count(w, w) = count(w)``.

Only the words of interest (the union of all topics' top words) are counted,
so memory is ``O(V_interest^2)`` whatever the size of the reference corpus
(plus temporary arrays for at most a million windows at a time); counting is
vectorised with numpy: all of de-news (527k tokens, 439k windows) against 200
words takes about half a second.
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np

from ..errors import Errors

DEFAULT_WINDOW = 10
DEFAULT_TOP = 10

T = TypeVar("T")
Docs = Iterable[Sequence[str]]


def read_documents(path: Union[str, Path], limit: int = 0) -> List[List[str]]:
    """Documents of a one-document-per-line file (tokens separated by whitespace).

    Blank lines are skipped (a blank line is no document); ``limit`` keeps the
    first ``limit`` documents (0 = all).
    """
    docs: List[List[str]] = []
    with open(path, encoding="utf8") as f:
        for line in f:
            tokens = line.split()
            if tokens:
                docs.append(tokens)
                if limit and len(docs) >= limit:
                    break
    return docs


def split_heldout(docs: Sequence[T], fraction: float, seed: int) -> Tuple[List[T], List[T]]:
    """Deterministic (train, heldout) split of ``docs``.

    A seeded random ``round(fraction * len(docs))`` documents are held out
    (at least one when ``0 < fraction`` and there are two or more documents,
    and never all of them); both parts keep the original document order, so
    the same (docs, fraction, seed) always gives the same split, independently
    of ``PYTHONHASHSEED`` and numpy's global state. Held-out documents serve as
    the default coherence reference corpus and for held-out likelihood, so no
    score is computed on the documents a model was trained on.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(Errors.E410.format(fraction=fraction))
    n = len(docs)
    n_held = int(round(fraction * n))
    if fraction > 0 and n >= 2:
        n_held = min(max(n_held, 1), n - 1)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    held = set(order[:n_held])
    train = [d for i, d in enumerate(docs) if i not in held]
    heldout = [d for i, d in enumerate(docs) if i in held]
    return train, heldout


class CooccurrenceCounts:
    """Window counts ``count(w)`` and ``count(w, w')`` of a reference corpus for a fixed word list.

    ``docs``: iterable of token lists; ``vocab``: the words of interest (order
    kept, duplicates removed); ``window``: window size (see the module
    docstring for the exact window definition). Words outside ``vocab`` are
    ignored while counting, so the pair table is ``len(vocab)^2`` integers.

    Attributes: ``words`` (list), ``index`` (word -> row), ``n_windows``,
    ``n_docs``, ``n_tokens``, ``word_counts`` (int64, per word) and
    ``pair_counts`` (int64, symmetric; the diagonal equals ``word_counts``).
    """

    def __init__(self, docs: Docs, vocab: Iterable[str], window: int = DEFAULT_WINDOW,
                 chunk_windows: int = 0):
        if window < 1:
            raise ValueError(Errors.E411.format(window=window))
        self.window = int(window)
        self.words: List[str] = list(dict.fromkeys(vocab))
        self.index: Dict[str, int] = {w: i for i, w in enumerate(self.words)}
        V = len(self.words)
        self.word_counts = np.zeros(V, dtype=np.int64)
        self.pair_counts = np.zeros((V, V), dtype=np.int64)
        self.n_windows = 0
        self.n_docs = 0
        self.n_tokens = 0
        # tokens of interest as ids (-1 elsewhere), all documents end to end
        index = self.index
        ids: List[int] = []
        starts: List[int] = []  # window start offsets into `ids`
        ends: List[int] = []  # end (exclusive) of each window's document
        for doc in docs:
            n = len(doc)
            if n == 0:
                continue
            off = len(ids)
            ids.extend(index.get(t, -1) for t in doc)
            n_win = n - window + 1 if n >= window else 1
            starts.extend(range(off, off + n_win))
            ends.extend([off + n] * n_win)
            self.n_docs += 1
            self.n_tokens += n
        self.n_windows = len(starts)
        if V == 0 or self.n_windows == 0:
            return
        tok = np.asarray(ids, dtype=np.int64)
        st = np.asarray(starts, dtype=np.int64)
        en = np.asarray(ends, dtype=np.int64)
        chunk = chunk_windows or 1_000_000  # bounds the temporary hit arrays
        for a in range(0, self.n_windows, chunk):
            self._count_chunk(tok, st[a:a + chunk], en[a:a + chunk], V)
        self.pair_counts += self.pair_counts.T.copy()  # filled for word < word' only
        self.pair_counts[np.diag_indices(V)] = self.word_counts

    def _count_chunk(self, tok: np.ndarray, st: np.ndarray, en: np.ndarray, V: int) -> None:
        """Add the counts of the windows starting at ``st`` (document ends ``en``).

        Every (window, word) hit is encoded as ``window * V + word``;
        sorting orders the hits by window, then by word, and repeats inside a
        window are dropped. The pairs of a window are then the hits ``d``
        apart in that order with the same window (``d < window``), added with
        one ``bincount`` per ``d``: linear in the number of hits.
        """
        W = st.shape[0]
        rows = np.arange(W, dtype=np.int64)
        keys = []
        for s in range(self.window):
            pos = st + s
            ok = pos < en
            if not ok.any():
                break
            word = tok[pos[ok]]
            hit = word >= 0
            keys.append(rows[ok][hit] * V + word[hit])
        keys = np.sort(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
        if keys.size:
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
        win, word = np.divmod(keys, V)
        self.word_counts += np.bincount(word, minlength=V)
        flat = self.pair_counts.reshape(-1)
        for d in range(1, self.window):
            same = win[:-d] == win[d:]
            if not same.any():
                break
            flat += np.bincount(word[:-d][same] * V + word[d:][same], minlength=V * V)

    def count(self, w: str) -> int:
        """Number of windows containing ``w`` (0 for a word not of interest or absent)."""
        i = self.index.get(w)
        return 0 if i is None else int(self.word_counts[i])

    def pair_count(self, w: str, w2: str) -> int:
        """Number of windows containing both ``w`` and ``w2`` (``count(w)`` when they are equal)."""
        i, j = self.index.get(w), self.index.get(w2)
        return 0 if i is None or j is None else int(self.pair_counts[i, j])

    def pair_scores(self, w: str, w2: str) -> Optional[Tuple[float, float]]:
        """(PMI, NPMI) of a pair, or None when either word never occurs in the reference."""
        c1, c2 = self.count(w), self.count(w2)
        if c1 == 0 or c2 == 0:
            return None
        N = float(self.n_windows)
        log_joint = math.log((self.pair_count(w, w2) + 1) / N)
        pmi = log_joint - math.log(c1 / N) - math.log(c2 / N)
        npmi = 1.0 if log_joint >= 0.0 else pmi / -log_joint
        return pmi, npmi

    def topic_coherence(self, words: Sequence[str], missing: str = "skip") -> Dict:
        """Mean PMI and NPMI over the pairs ``j < k`` of one topic's word list."""
        if missing not in ("skip", "zero"):
            raise ValueError(Errors.E412.format(missing=missing))
        pmis: List[float] = []
        npmis: List[float] = []
        skipped = 0
        for j in range(len(words)):
            for k in range(j + 1, len(words)):
                sc = self.pair_scores(words[j], words[k])
                if sc is None:
                    skipped += 1
                    if missing == "zero":
                        pmis.append(0.0)
                        npmis.append(0.0)
                    continue
                pmis.append(sc[0])
                npmis.append(sc[1])
        return {
            "words": list(words),
            "pmi": float(np.mean(pmis)) if pmis else None,
            "npmi": float(np.mean(npmis)) if npmis else None,
            "n_pairs": len(pmis),
            "skipped_pairs": skipped if missing == "skip" else 0,
            "zero_pairs": skipped if missing == "zero" else 0,
            "missing_words": sorted({w for w in words if self.count(w) == 0}),
        }

    def coherence(self, topics: Sequence[Sequence[str]], missing: str = "skip",
                  reference: str = "") -> Dict:
        """Coherence of several topics (means over the topics that have a scorable pair)."""
        per_topic = [self.topic_coherence(t, missing=missing) for t in topics]
        scored = [t for t in per_topic if t["pmi"] is not None]
        return {
            "pmi": float(np.mean([t["pmi"] for t in scored])) if scored else None,
            "npmi": float(np.mean([t["npmi"] for t in scored])) if scored else None,
            "per_topic": per_topic,
            "n_topics": len(per_topic),
            "n_topics_scored": len(scored),
            "top_n": max((len(t) for t in topics), default=0),
            "window": self.window,
            "n_windows": self.n_windows,
            "n_docs": self.n_docs,
            "n_tokens": self.n_tokens,
            "missing": missing,
            "skipped_pairs": sum(t["skipped_pairs"] for t in per_topic),
            "missing_words": sorted({w for t in per_topic for w in t["missing_words"]}),
            "reference": reference,
            "definition": DEFINITION,
        }


def score_text(value: Optional[float]) -> str:
    """A score with 4 decimals, or n/a when it cannot be computed (None, or NaN from gensim's measures)."""
    return "n/a" if value is None or value != value else f"{value:.4f}"


#: What to do when no topic has two top words (`why_not_scored`): no reference corpus can help.
ONE_WORD_TODO = "coherence needs topics of at least two distinct words, so documents with more than one word type"


def why_not_scored(scores: Mapping[str, Any]) -> str:
    """Why `coherence` gave no PMI (its ``pmi`` is None: no topic has a pair of top words that both occur
    in the reference), for the line that reports it as n/a; with ``scores["top_n"] < 2`` the fix is
    `ONE_WORD_TODO`, else another reference corpus."""
    if scores["top_n"] < 2:
        return ("no topic has two top words to pair (the training documents have a single distinct word), and "
                "coherence scores pairs of top words")
    missing = scores["missing_words"]
    n = scores["n_docs"]
    return (f"no pair of top words has both words in the {n} reference document{'s' if n != 1 else ''}"
            + (f" ({len(missing)} top words never occur there: {', '.join(missing[:5])}"
               + (", ..." if len(missing) > 5 else "") + ")" if missing else ""))


DEFINITION = (
    "docs/algorithms.md 5.4: per topic the mean over pairs j<k of its top words of "
    "PMI = log[P(w,w')/(P(w)P(w'))] (natural log) and NPMI = PMI / -log P(w,w'); "
    "mean over topics. Sliding windows of `window` tokens inside each reference "
    "document (n-window+1 windows, or one window for a shorter document); "
    "P(w) = #windows containing w / #windows, P(w,w') = (#windows containing both + 1) / #windows. "
    "Pairs with a word absent from the reference are skipped ('skip') or scored 0 ('zero')."
)


def coherence(topics: Sequence[Sequence[str]], reference_docs: Union[str, Path, Docs, CooccurrenceCounts],
              window: int = DEFAULT_WINDOW, reference: Optional[str] = None,
              missing: str = "skip") -> Dict:
    """Coherence of ``topics`` (lists of top words, usually 10 each) against a reference corpus.

    ``reference_docs`` is a path (one document per line, whitespace tokens),
    an iterable of token lists, or a ready ``CooccurrenceCounts`` (its window
    is used; it must contain every topic word that should be scored).
    Returns ``pmi`` and ``npmi`` (means over topics), ``per_topic`` (words,
    pmi, npmi, pairs), ``window``, ``n_windows``, ``reference`` (the path, or
    ``reference`` when given, else a count of in-memory documents) and the
    definition, so the score always travels with how it was computed.
    """
    if isinstance(reference_docs, CooccurrenceCounts):
        counts = reference_docs
        ref = reference or "precomputed co-occurrence counts"
    else:
        vocab = [w for t in topics for w in t]
        if isinstance(reference_docs, (str, Path)):
            ref = reference or f"file {reference_docs}"
            docs: Docs = read_documents(reference_docs)
        else:
            docs = reference_docs
            ref = reference or ""
        counts = CooccurrenceCounts(docs, vocab, window=window)
        if not ref:
            ref = f"{counts.n_docs} in-memory documents ({counts.n_tokens} tokens)"
    return counts.coherence(topics, missing=missing, reference=ref)
