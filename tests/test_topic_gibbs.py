"""The topic model's collapsed Gibbs mode (`TopicModel(inference="gibbs")`, spacy_ag.core.topic_gibbs).

The sampler's conditional is checked against ratios of the collapsed joint
computed by brute force, the Antoniak table draws against their exact mean,
Minka's fixed point against a known asymmetric alpha, and the whole mode
against the known topics of the synthetic corpora of test_topics.py.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from spacy_ag.core.rng import make_rng
from spacy_ag.core.topic_gibbs import (
    base_probabilities, gibbs_sweep, optimize_alpha, table_counts, topic_weights,
)
from spacy_ag.topics import TopicModel
from test_topics import K, PER_TOPIC, corpus, match_topics, vocab  # noqa: F401 (fixtures)


def collapsed_log_joint(word, doc, z, K, D, W, alpha, b, base):
    """log p(z, w) with theta and the topics' DP(b, G0) integrated out (a = 0), by brute force."""
    ndk = np.zeros((D, K))
    nwk = np.zeros((W, K))
    for w, d, k in zip(word, doc, z):
        ndk[d, k] += 1
        nwk[w, k] += 1
    lg = math.lgamma
    out = 0.0
    for d in range(D):
        out += lg(alpha.sum()) - lg(ndk[d].sum() + alpha.sum())
        out += sum(lg(ndk[d, k] + alpha[k]) - lg(alpha[k]) for k in range(K))
    for k in range(K):
        out += lg(b) - lg(nwk[:, k].sum() + b)
        out += sum(lg(nwk[w, k] + b * base[w]) - lg(b * base[w]) for w in range(W))
    return out


def test_conditional_is_the_ratio_of_collapsed_joints():
    rng = np.random.default_rng(3)
    K_, D, W = 3, 4, 5
    word = rng.integers(0, W, 30).astype(np.int32)
    doc = np.sort(rng.integers(0, D, 30)).astype(np.int32)
    z = rng.integers(0, K_, 30).astype(np.int32)
    alpha = np.array([0.3, 0.1, 0.7])
    b = 2.5
    base = rng.dirichlet(np.ones(W)) * 0.8  # a base with mass left for unseen words
    for t in (0, 11, 29):
        ndk = np.zeros((D, K_), np.int32)
        nwk = np.zeros((W, K_), np.int32)
        for s in range(30):
            if s != t:
                ndk[doc[s], z[s]] += 1
                nwk[word[s], z[s]] += 1
        nk = nwk.sum(axis=0).astype(np.int64)
        cumulative = np.empty(K_)
        topic_weights(ndk, nwk, nk, alpha, b, base, doc[t], word[t], cumulative)
        weights = np.diff(np.concatenate([[0.0], cumulative]))
        joints = []
        for k in range(K_):
            zk = z.copy()
            zk[t] = k
            joints.append(collapsed_log_joint(word, doc, zk, K_, D, W, alpha, b, base))
        assert np.allclose(np.log(weights / weights[0]), np.array(joints) - joints[0], atol=1e-10)


def test_sweep_keeps_counts_and_is_seeded():
    rng = np.random.default_rng(0)
    K_, D, W, N = 4, 6, 9, 200
    word = rng.integers(0, W, N).astype(np.int32)
    doc = np.sort(rng.integers(0, D, N)).astype(np.int32)
    base = np.full(W, 0.05)
    alpha = np.full(K_, 0.2)

    def run(seed):
        z = (np.arange(N) % K_).astype(np.int32)
        ndk = np.zeros((D, K_), np.int32)
        nwk = np.zeros((W, K_), np.int32)
        np.add.at(ndk, (doc, z), 1)
        np.add.at(nwk, (word, z), 1)
        nk = nwk.sum(axis=0).astype(np.int64)
        state = make_rng(seed)
        for _ in range(5):
            gibbs_sweep(word, doc, z, ndk, nwk, nk, alpha, 1.5, base, state)
        check_ndk = np.zeros_like(ndk)
        check_nwk = np.zeros_like(nwk)
        np.add.at(check_ndk, (doc, z), 1)
        np.add.at(check_nwk, (word, z), 1)
        assert (ndk == check_ndk).all() and (nwk == check_nwk).all() and (nk == nwk.sum(axis=0)).all()
        return z

    first = run(7)
    assert (first == run(7)).all()
    assert (first != (np.arange(N) % K_)).any()
    assert (first != run(8)).any()


def test_table_counts_have_the_antoniak_mean():
    count, bg = 12, 2.0
    nwk = np.full((1, 20000), count, np.int32)  # 20,000 independent restaurants of 12 customers
    base = np.array([bg / 4.0])
    word_tables, topic_tables = np.zeros(1), np.zeros(20000)
    table_counts(nwk, 4.0, base, make_rng(5), word_tables, topic_tables)
    exact_mean = sum(bg / (bg + i) for i in range(count))
    exact_var = sum(bg / (bg + i) * (1 - bg / (bg + i)) for i in range(count))
    assert topic_tables.min() >= 1 and topic_tables.max() <= count
    assert abs(topic_tables.mean() - exact_mean) < 4 * math.sqrt(exact_var / 20000)
    assert word_tables[0] == topic_tables.sum()


def test_base_is_the_spelling_model_at_its_posterior_mean():
    # two types, "ab" (terminals 0, 1) and "b" (1); 3 tables of the first, 1 of the second
    spell = np.array([0, 1, 1], np.int32)
    spell_ptr = np.array([0, 2, 3], np.int64)
    out = np.empty(2)
    base_probabilities(spell, spell_ptr, np.array([3.0, 1.0]), 1.0, 1.0, np.ones(3), out)
    more, last = 3.0, 4.0  # CHARS -> CHAR CHARS once per "ab" table; CHARS -> CHAR once per table
    p_more, p_last = (1 + more) / (2 + more + last), (1 + last) / (2 + more + last)
    p_char = np.array([1 + 3, 1 + 4, 1 + 0]) / (3 + 7)
    assert out[0] == pytest.approx(p_more * p_last * p_char[0] * p_char[1], rel=1e-12)
    assert out[1] == pytest.approx(p_last * p_char[1], rel=1e-12)


def test_minka_recovers_an_asymmetric_alpha():
    rng = np.random.default_rng(1)
    true = np.array([0.05, 0.2, 0.6, 1.5])
    lengths = rng.integers(30, 80, 3000)
    ndk = np.array([rng.multinomial(n, rng.dirichlet(true)) for n in lengths], np.int32)
    alpha = np.full(4, 0.5)
    optimize_alpha(ndk, lengths.astype(np.int64), alpha, 300)
    assert np.allclose(alpha, true, rtol=0.15), alpha


@pytest.fixture(scope="module")
def gibbs_model(corpus):
    return TopicModel(K, inference="gibbs", sweeps=40).fit(corpus, seed=3)


def test_gibbs_recovers_known_topics(gibbs_model, vocab):
    _, overlaps = match_topics(gibbs_model, vocab)
    assert min(overlaps) >= 7, (overlaps, gibbs_model.topics(PER_TOPIC), vocab)
    # the sample became the variational state: every cached word is an entry with its count
    sizes = gibbs_model.vocabulary_size()
    assert sum(sizes.values()) >= K * PER_TOPIC and gibbs_model.learner.seen == 200
    # the documents' prior was refitted (asymmetric in general, never the grammar's 0.1 everywhere)
    assert not np.allclose(gibbs_model.learner.alpha, 0.1)


def test_gibbs_is_seeded_and_round_trips(gibbs_model, corpus, tmp_path):
    again = TopicModel(K, inference="gibbs", sweeps=40).fit(corpus, seed=3)
    assert np.array_equal(again.get_topics()[0], gibbs_model.get_topics()[0])
    other = TopicModel(K, inference="gibbs", sweeps=40).fit(corpus, seed=4)
    assert not np.array_equal(other.get_topics()[0], gibbs_model.get_topics()[0])
    gibbs_model.save(tmp_path / "model")
    loaded = TopicModel.load(tmp_path / "model")
    assert loaded.inference == "gibbs" and loaded.sweeps == 40
    assert loaded.topics(10) == gibbs_model.topics(10)
    assert np.allclose(loaded.infer(corpus[:5]), gibbs_model.infer(corpus[:5]))


def test_online_updates_continue_a_gibbs_model(corpus, vocab):
    model = TopicModel(K, inference="gibbs", sweeps=20).fit(corpus, seed=0)
    new_word = "lkjihg"  # never seen (the corpus' words have 3-5 characters), spelled from known ones
    assert model.word_probabilities([new_word]).max() > 0
    assert new_word not in {w for i in range(K) for w, _ in model.top_words(i, None)}
    model.partial_fit([doc + [new_word] * 5 for doc in corpus[:50]], seed=1, corpus_size=len(corpus))
    assert model.learner.minibatches > 0
    assert new_word in {w for i in range(K) for w, _ in model.top_words(i, None)}
    assert min(match_topics(model, vocab)[1]) >= 7
    with pytest.raises(RuntimeError, match="untrained"):
        model.fit(corpus)


def test_gibbs_needs_dirichlet_process_topics():
    with pytest.raises(ValueError, match="a = 0"):
        TopicModel(K, inference="gibbs", a=0.3)
    with pytest.raises(ValueError, match="inference must be"):
        TopicModel(K, inference="em")
