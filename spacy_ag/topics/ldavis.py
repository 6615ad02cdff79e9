"""The inputs of pyLDAvis for a topic model, so its topics can be explored in the tool topic
modellers already use (``pyLDAvis.prepare(**data)``).

pyLDAvis wants a topic-term matrix over a fixed vocabulary whose rows sum to 1. Our topics have an
unbounded vocabulary: each topic also spells words afresh from characters. So the vocabulary is
the words of the documents given, and row i is P_i(w) under the topics (cached words and
character base together, `word_probabilities`) renormalised over that vocabulary. The other inputs
are the documents' fitted proportions E_q[theta], their lengths and the word frequencies, counted
over the same tokens.
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, List, Sequence


__all__ = ["pyldavis_data"]


def pyldavis_data(model, docs: Sequence[Sequence[str]]) -> Dict[str, object]:
    """The keyword arguments of ``pyLDAvis.prepare`` for `model` (a fitted TopicModel) on `docs`.

    RETURNS (dict): topic_term_dists (K x V, rows sum to 1), doc_topic_dists (D x K), doc_lengths
        (D), vocab (V words, most frequent first), term_frequency (V), all as lists.
    Tokens the model cannot spell (a character it never saw) are left out of every count.
    """
    docs = [[w for w in doc if model.can_spell(w)] for doc in docs]
    frequency = Counter(w for doc in docs for w in doc)
    vocab: List[str] = sorted(frequency, key=lambda w: (-frequency[w], w))
    if not vocab:
        raise ValueError("no document has a word the topic model can spell; pyLDAvis needs at least one")
    probs = model.word_probabilities(vocab)
    topic_term = probs / probs.sum(axis=1, keepdims=True)
    return {
        "topic_term_dists": topic_term.tolist(),
        "doc_topic_dists": model.infer(docs).tolist(),
        "doc_lengths": [len(doc) for doc in docs],
        "vocab": vocab,
        "term_frequency": [frequency[w] for w in vocab],
    }
