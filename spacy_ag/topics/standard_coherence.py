"""Topic coherence as the field reports it: u_mass, c_npmi and c_v, computed as gensim's
`CoherenceModel` computes them (docs/algorithms.md 5.4), so our figures sit beside published
ones and beside gensim's own on the same topics and reference texts.

What gensim does, and so what this module does (gensim 4.4; `tests/unit/test_standard_coherence.py`
checks the numbers against gensim itself when it is installed):

* **Counts.** u_mass counts documents that contain a word or a pair (boolean document). c_npmi
  and c_v count *windows*: every run of `window` consecutive tokens of a document (10 for c_npmi,
  110 for c_v), a document shorter than that being one window and an empty one an empty window;
  `N` is the number of windows. Tokens that are no topic word still take their place in a window.
  gensim slides a window by dropping the token that left and adding the one that came in, so a
  word that leaves the window's first position counts as absent from the window until it comes
  in again at the end, even if it also occurs inside; we reproduce that.
* **u_mass.** For topic words w1..wT in their order, the mean over i > j of
  log((D(wi, wj) / N + eps) / (D(wj) / N)), eps = 1e-12.
* **c_npmi.** The mean over ordered pairs i != j of NPMI(wi, wj) = log((P(wi, wj) + eps) /
  (P(wi) P(wj))) / -log(P(wi, wj) + eps).
* **c_v.** For each wi, the cosine between its vector (NPMI(wi, wj))_j and the topic's vector
  (sum_i NPMI(wi, wj))_j, the pair of a word with itself included; the mean over i.

A model's score is the mean over its topics. Topic words absent from the reference texts have
no probability; they are left out of their topic and listed in `missing_words` (gensim refuses
such topics).
"""
from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..errors import Errors

__all__ = ["EPSILON", "MEASURES", "WINDOWS", "topic_coherences"]

EPSILON = 1e-12
#: gensim's default window sizes; u_mass counts whole documents.
WINDOWS = {"u_mass": 0, "c_npmi": 10, "c_v": 110}
MEASURES = tuple(WINDOWS)


def _presence(ids: np.ndarray, window: int, n_cols: int) -> np.ndarray:
    """(windows, n_cols) bool: which of the columns' words each window holds, by gensim's rule.

    ids: (n,) the column of each token, -1 for a token that is no topic word.
    window 0 means the whole document is one window.
    """
    n = ids.shape[0]
    if window == 0 or n <= window:
        row = np.zeros((1, n_cols), bool)
        row[0, ids[ids >= 0]] = True
        return row
    n_windows = n - window + 1
    # the window at which each word was last added and last dropped; a word is present when its
    # last addition is no earlier than its last drop (gensim drops before it adds)
    added = np.full((n_windows, n_cols), -1, np.int64)
    dropped = np.full((n_windows, n_cols), -1, np.int64)
    first = ids[:window]
    added[0, first[first >= 0]] = 0
    k = np.arange(1, n_windows)
    came, left = ids[k + window - 1], ids[k - 1]
    added[k[came >= 0], came[came >= 0]] = k[came >= 0]
    dropped[k[left >= 0], left[left >= 0]] = k[left >= 0]
    np.maximum.accumulate(added, axis=0, out=added)
    np.maximum.accumulate(dropped, axis=0, out=dropped)
    return (added >= 0) & (added >= dropped)


def _counts(docs: Sequence[Sequence[str]], vocab: Dict[str, int], window: int) -> Tuple[np.ndarray, int]:
    """(co-occurrences (V, V), whose diagonal holds the occurrences; the number of windows N)."""
    V = len(vocab)
    co = np.zeros((V, V), np.int64)
    n_windows = 0
    for doc in docs:
        ids = np.array([vocab.get(w, -1) for w in doc], np.int64)
        n_windows += 1 if window == 0 or len(ids) <= window else len(ids) - window + 1
        cols = np.unique(ids[ids >= 0])
        if cols.shape[0] == 0:
            continue
        local = np.searchsorted(cols, ids)
        local[ids < 0] = -1
        present = _presence(local, window, cols.shape[0]).astype(np.int64)
        co[np.ix_(cols, cols)] += present.T @ present
    return co, n_windows


def _npmi(co: np.ndarray, occ_i: np.ndarray, occ_j: np.ndarray, n: int) -> np.ndarray:
    joint = co / n + EPSILON
    return np.log(joint / ((occ_i / n) * (occ_j / n))) / -np.log(joint)


def _topic_score(measure: str, ids: List[int], occ: np.ndarray, co: np.ndarray, n: int) -> float:
    if len(ids) < 2:
        return float("nan")
    idx = np.array(ids)
    if measure == "u_mass":
        values = [math.log((co[idx[i], idx[j]] / n + EPSILON) / (occ[idx[j]] / n))
                  for i in range(1, len(idx)) for j in range(i)]
        return float(np.mean(values))
    matrix = _npmi(co[np.ix_(idx, idx)], occ[idx][:, None], occ[idx][None, :], n)
    if measure == "c_npmi":
        return float(matrix[~np.eye(len(idx), dtype=bool)].mean())
    topic = matrix.sum(axis=0)
    cosines = matrix @ topic / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(topic))
    return float(cosines.mean())


def topic_coherences(topics: Sequence[Sequence[str]], docs: Sequence[Sequence[str]],
                     measures: Sequence[str] = MEASURES) -> Dict:
    """Coherence of each topic (its top words, best first) against tokenized reference texts.

    RETURNS (dict): per measure the mean over topics (`"u_mass"`, ...) and the per-topic scores
    (`"u_mass_per_topic"`, ...), plus `missing_words`, the topic words the texts never contain.
    """
    unknown = [m for m in measures if m not in WINDOWS]
    if unknown:
        raise ValueError(Errors.E420.format(unknown=unknown[0], measures=', '.join(MEASURES)))
    seen = {w for doc in docs for w in doc}
    missing = sorted({w for topic in topics for w in topic if w not in seen})
    vocab: Dict[str, int] = {}
    kept = []
    for topic in topics:
        words = [w for w in dict.fromkeys(topic) if w in seen]
        kept.append([vocab.setdefault(w, len(vocab)) for w in words])
    out: Dict = {"missing_words": missing, "n_topics": len(topics), "n_documents": len(docs)}
    by_window: Dict[int, Tuple[np.ndarray, int]] = {}
    for measure in measures:
        window = WINDOWS[measure]
        if window not in by_window:
            by_window[window] = _counts(docs, vocab, window)
        co, n = by_window[window]
        scores = [_topic_score(measure, ids, np.diag(co), co, n) for ids in kept]
        out[f"{measure}_per_topic"] = scores
        valid = [s for s in scores if not math.isnan(s)]
        out[measure] = float(np.mean(valid)) if valid else float("nan")
    return out
