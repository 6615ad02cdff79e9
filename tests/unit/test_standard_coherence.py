"""u_mass, c_npmi and c_v as gensim computes them (spacy_ag.topics.standard_coherence): by hand on
tiny texts, and against gensim's CoherenceModel itself on made-up texts (the `eval` extra)."""
import math
import random

import numpy as np
import pytest

from spacy_ag.topics.standard_coherence import EPSILON, _presence, topic_coherences


def test_sliding_windows_follow_gensims_rule():
    # tokens a b a c (columns 0 1 0 2), windows of 3: [a b a] then [b a c]. gensim drops the token
    # that left (a) and adds the one that came in (c), so the second window lacks a although it
    # holds one; a word that comes in again counts again.
    ids = np.array([0, 1, 0, 2])
    assert _presence(ids, 3, 3).tolist() == [[True, True, False], [False, True, True]]
    ids = np.array([0, 1, 0, 2, 0])
    assert _presence(ids, 3, 3).tolist() == [[True, True, False], [False, True, True], [True, False, True]]
    # shorter than a window, or whole documents: one window of everything; -1 is no topic word
    assert _presence(np.array([2, -1, 0]), 10, 3).tolist() == [[True, False, True]]
    assert _presence(np.array([1, 1, -1, 1, 0, 2]), 0, 3).tolist() == [[True, True, True]]


def test_u_mass_and_npmi_by_hand():
    docs = [["a", "b"], ["a", "c"], ["a", "b", "c"], ["d"], []]
    scores = topic_coherences([["a", "b", "c"]], docs)
    n = 5  # documents, the empty one included
    D = {"a": 3, "b": 2, "c": 2, ("b", "a"): 2, ("c", "a"): 2, ("c", "b"): 1}
    u_mass = np.mean([math.log((D[(x, y)] / n + EPSILON) / (D[y] / n)) for x, y in [("b", "a"), ("c", "a"), ("c", "b")]])
    assert scores["u_mass"] == pytest.approx(u_mass, abs=1e-12)

    def npmi(x, y):
        joint = D[(x, y)] / n + EPSILON
        return math.log(joint / (D[x] / n * D[y] / n)) / -math.log(joint)

    # documents are shorter than the windows, so each is one window, as for u_mass
    expected = np.mean([npmi(x, y) for x, y in [("b", "a"), ("c", "a"), ("c", "b")]])
    assert scores["c_npmi"] == pytest.approx(expected, abs=1e-12)
    assert scores["missing_words"] == []
    partly_unseen = topic_coherences([["a", "zz", "b"]], docs)
    assert partly_unseen["missing_words"] == ["zz"]
    assert partly_unseen["u_mass"] == pytest.approx(math.log((2 / n + EPSILON) / (3 / n)), abs=1e-12)


def made_up_texts(seed):
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(40)]
    docs = []
    for _ in range(120):
        n = rng.choice([0, 3, 9, 15, 40, 130, 200])
        theme = rng.sample(vocab, 8)
        docs.append([rng.choice(theme) if rng.random() < 0.7 else rng.choice(vocab) for _ in range(n)])
    return docs, [rng.sample(vocab, 10) for _ in range(6)]


@pytest.mark.parametrize("seed", [4, 5])
def test_agrees_with_gensim(seed):
    gensim = pytest.importorskip("gensim", reason="gensim is in the eval extra: pip install 'spacy-ag[eval]'")
    from gensim.models.coherencemodel import CoherenceModel

    docs, topics = made_up_texts(seed)
    ours = topic_coherences(topics, docs)
    dictionary = gensim.corpora.Dictionary(docs)
    for measure in ("u_mass", "c_npmi", "c_v"):
        model = CoherenceModel(topics=topics, texts=docs, dictionary=dictionary, coherence=measure, processes=1,
                               corpus=[dictionary.doc2bow(d) for d in docs] if measure == "u_mass" else None)
        assert ours[f"{measure}_per_topic"] == pytest.approx(model.get_coherence_per_topic(), abs=1e-12), measure
        assert ours[measure] == pytest.approx(model.get_coherence(), abs=1e-12)
