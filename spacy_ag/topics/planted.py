"""How well learned topics recover planted ones (topics of generated documents, `spacy_ag.synthetic`).

Generated documents come with the topics they were drawn from, so a topic
model can be scored against the truth instead of by coherence alone. Two
standard views, both computed here:

* **the documents**: each document is assigned its most probable learned
  topic and compared with its planted dominant topic, as a clustering:
  normalized mutual information (NMI, Strehl & Ghosh 2002, with the
  arithmetic mean of the two entropies as the normalizer, scikit-learn's
  default) and purity (Manning, Raghavan & Schütze 2008, 16.3: each learned
  topic counts the documents of its majority planted topic). NMI is 0 for
  assignments independent of the truth and 1 for a relabelling of it;
  purity's chance level is the share of the largest planted topic
  (``purity_chance``), what one learned topic for every document scores;
* **the words**: each learned topic is matched to the planted topic that
  holds most of its top ``n`` words, and precision@n is the share of its top
  words that belong to that planted topic's vocabulary, averaged over the
  learned topics; ``planted_topics_found`` counts the distinct planted
  topics matched (all of them when every planted topic was recovered).
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

from ..errors import Errors

__all__ = ["match_topics", "normalized_mutual_information", "planted_topic_scores", "purity", "top_word_precision"]


def _contingency(predicted: Sequence[int], planted: Sequence[int]) -> np.ndarray:
    if len(predicted) != len(planted):
        raise ValueError(Errors.E416.format(n_predicted=len(predicted), n_planted=len(planted)))
    if not len(planted):
        raise ValueError(Errors.E417)
    pred = np.asarray(predicted, dtype=np.int64)
    gold = np.asarray(planted, dtype=np.int64)
    if pred.min() < 0 or gold.min() < 0:
        raise ValueError(Errors.E418)
    table = np.zeros((int(pred.max()) + 1, int(gold.max()) + 1))
    np.add.at(table, (pred, gold), 1)
    return table


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def normalized_mutual_information(predicted: Sequence[int], planted: Sequence[int]) -> float:
    """NMI of two labellings of the same documents, I(P; G) / ((H(P) + H(G)) / 2).

    Two labellings that each put every document in one class share no
    information and have no entropy: their NMI is 1 when they agree (one
    class each, trivially the same partition), as scikit-learn defines it.
    """
    table = _contingency(predicted, planted)
    n = table.sum()
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    h_pred, h_gold = _entropy(rows), _entropy(cols)
    if h_pred == 0.0 and h_gold == 0.0:
        return 1.0
    nz = table > 0
    outer = np.outer(rows, cols)[nz]
    mutual = float((table[nz] / n * np.log(table[nz] * n / outer)).sum())
    return max(0.0, min(1.0, mutual / ((h_pred + h_gold) / 2)))


def purity(predicted: Sequence[int], planted: Sequence[int]) -> float:
    """Share of documents whose learned topic's majority planted topic is their own."""
    table = _contingency(predicted, planted)
    return float(table.max(axis=1).sum() / table.sum())


def match_topics(top_words: Sequence[Sequence[str]], vocabularies: Sequence[Sequence[str]]) -> List[int]:
    """For each learned topic (its top words), the planted topic holding most of them (ties: the lower index)."""
    owner: Dict[str, int] = {}
    for k, vocabulary in enumerate(vocabularies):
        for word in vocabulary:
            owner.setdefault(word, k)
    matches = []
    for words in top_words:
        counts = np.bincount([owner[w] for w in words if w in owner], minlength=len(vocabularies))
        matches.append(int(counts.argmax()))
    return matches


def top_word_precision(top_words: Sequence[Sequence[str]], vocabularies: Sequence[Sequence[str]]) -> List[float]:
    """Per learned topic: the share of its top words in the vocabulary of its matched planted topic."""
    sets = [set(v) for v in vocabularies]
    return [sum(w in sets[k] for w in words) / len(words) if words else 0.0
            for words, k in zip(top_words, match_topics(top_words, vocabularies))]


def planted_topic_scores(predicted: Sequence[int], planted: Sequence[int], top_words: Sequence[Sequence[str]],
                         vocabularies: Sequence[Sequence[str]]) -> Dict[str, object]:
    """Every score of the module doc, with the counts they rest on.

    predicted: each document's most probable learned topic; planted: its
    planted dominant topic; top_words: each learned topic's top words, most
    probable first; vocabularies: each planted topic's words.
    """
    table = _contingency(predicted, planted)
    precisions = top_word_precision(top_words, vocabularies)
    matches = match_topics(top_words, vocabularies)
    return {
        "nmi": normalized_mutual_information(predicted, planted),
        "purity": purity(predicted, planted),
        "purity_chance": float(table.sum(axis=0).max() / table.sum()),
        "top_word_precision": float(np.mean(precisions)) if precisions else 0.0,
        "top_word_precision_per_topic": precisions,
        "matched_planted_topic": matches,
        "planted_topics_found": len(set(matches)),
        "n_planted_topics": len(vocabularies),
        "n_topics": len(top_words),
        "n_documents": int(table.sum()),
        "top_n": max((len(w) for w in top_words), default=0),
    }
