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
    base_probabilities, collapsed_log_joint, gibbs_sweep, optimize_alpha, sample_concentration, table_counts,
    topic_weights,
)
from spacy_ag.errors import ModelFileError
from spacy_ag.topics import TopicModel
from test_topics import TOPIC_CONFIG, K, PER_TOPIC, corpus, match_topics, run, vocab  # noqa: F401 (fixtures)


def brute_force_log_joint(word, doc, z, K, D, W, alpha, b, base):
    """log p(z, w) with theta and the topics' DP(b_k, G0) integrated out (a = 0), by brute force."""
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
        out += lg(b[k]) - lg(nwk[:, k].sum() + b[k])
        out += sum(lg(nwk[w, k] + b[k] * base[w]) - lg(b[k] * base[w]) for w in range(W))
    return out


def test_conditional_is_the_ratio_of_collapsed_joints():
    rng = np.random.default_rng(3)
    K_, D, W = 3, 4, 5
    word = rng.integers(0, W, 30).astype(np.int32)
    doc = np.sort(rng.integers(0, D, 30)).astype(np.int32)
    z = rng.integers(0, K_, 30).astype(np.int32)
    alpha = np.array([0.3, 0.1, 0.7])
    b = np.array([2.5, 0.7, 9.0])  # every topic its own concentration
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
        topic_weights(ndk, nwk, 1.0 / (nk + b), alpha, b, base[word[t]], doc[t], word[t], cumulative)
        weights = np.diff(np.concatenate([[0.0], cumulative]))
        joints = []
        for k in range(K_):
            zk = z.copy()
            zk[t] = k
            joints.append(brute_force_log_joint(word, doc, zk, K_, D, W, alpha, b, base))
        assert np.allclose(np.log(weights / weights[0]), np.array(joints) - joints[0], atol=1e-10)
        ndk[doc[t], z[t]] += 1
        nwk[word[t], z[t]] += 1
        nk[z[t]] += 1
        assert collapsed_log_joint(ndk, nwk, nk, alpha, b, base) == pytest.approx(joints[z[t]], rel=1e-12)


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
            gibbs_sweep(word, doc, z, ndk, nwk, nk, alpha, np.full(K_, 1.5), base, state)
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
    table_counts(nwk, np.full(20000, 4.0), base, make_rng(5), word_tables, topic_tables)
    exact_mean = sum(bg / (bg + i) for i in range(count))
    exact_var = sum(bg / (bg + i) * (1 - bg / (bg + i)) for i in range(count))
    assert topic_tables.min() >= 1 and topic_tables.max() <= count
    assert abs(topic_tables.mean() - exact_mean) < 4 * math.sqrt(exact_var / 20000)
    assert word_tables[0] == topic_tables.sum()


def test_concentration_sampler_draws_from_its_posterior():
    """b's posterior given two restaurants' customers and tables, by numerical integration on a
    log grid, against the mean and spread of the slice sampler's draws."""
    customers, tables = np.array([40, 15]), np.array([9.0, 6.0])
    shape, scale = 0.1, 10.0
    grid = np.linspace(-8, 8, 20001)
    b = np.exp(grid)
    log_post = ((shape - 1) * grid - b / scale + grid
                + sum(t * grid + np.array([math.lgamma(x) - math.lgamma(x + n) for x in b])
                      for n, t in zip(customers, tables)))
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    exact_mean = (weights * b).sum()
    exact_sd = math.sqrt((weights * (b - exact_mean) ** 2).sum())
    rng = make_rng(11)
    draws, x = [], 1.0
    for _ in range(4000):
        x = sample_concentration(x, customers, tables, shape, scale, rng, 1)
        draws.append(x)
    draws = np.array(draws[200:])
    # the draws are correlated: allow 4 standard errors of about 1 / 10 of the chain as independent
    assert abs(draws.mean() - exact_mean) < 4 * exact_sd / math.sqrt(len(draws) / 10)
    assert abs(draws.std() - exact_sd) < 0.15 * exact_sd


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


def test_gibbs_inference_is_per_document_and_thread_independent(gibbs_model, corpus, vocab, monkeypatch):
    """New documents' proportions by Gibbs sweeps: the same for a document whatever is inferred with
    it and on any number of threads, and on the document's own topic."""
    import numba

    from spacy_ag.topics import topic_model as topic_model_module
    from conftest import record_numba_threads

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    threads_seen = record_numba_threads(monkeypatch, topic_model_module, "infer_documents_gibbs")
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = gibbs_model.infer(corpus[:60])
        numba.set_num_threads(2)
        two = gibbs_model.infer(corpus[:60])
    finally:
        numba.set_num_threads(previous)
    assert set(threads_seen) == {1, 2} and np.array_equal(one, two)
    assert np.array_equal(gibbs_model.infer([corpus[7]])[0], one[7])
    assert np.allclose(one.sum(axis=1), 1.0)
    perm, _ = match_topics(gibbs_model, vocab)
    for d in range(60):
        main = max(range(K), key=lambda t: sum(w in vocab[t] for w in corpus[d]))
        assert one[d].argmax() == perm[main]


def test_gibbs_resumes_from_a_checkpoint_exactly(corpus, tmp_path):
    whole = TopicModel(K, inference="gibbs", sweeps=20, word_adapted=True, history_every=5).fit(corpus, seed=5)
    checkpoint = tmp_path / "gibbs.npz"
    lines = []
    # stops after 13 of 20
    interrupted = TopicModel(K, inference="gibbs", sweeps=13, word_adapted=True, history_every=5)
    interrupted.fit_gibbs(corpus, seed=5, checkpoint=checkpoint, checkpoint_every=6, callback=lines.append)
    assert [line["iteration"] for line in lines] == list(range(1, 14))
    assert all(np.isfinite(line["log_posterior"]) for line in lines)
    resumed = TopicModel(K, inference="gibbs", sweeps=20, word_adapted=True, history_every=5)
    resumed.fit_gibbs(corpus, seed=5, checkpoint=checkpoint, resume=True, callback=lines.append)
    assert [line["iteration"] for line in lines[13:]] == list(range(13, 21))  # from the checkpoint at 12
    assert np.array_equal(resumed.get_topics()[0], whole.get_topics()[0])
    assert np.array_equal(resumed.learner.alpha, whole.learner.alpha)
    # the rankings of sweeps 5 and 10 came back from the checkpoint: the history is the uninterrupted one
    assert [snap["sweep"] for snap in whole.history] == [5, 10, 15, 20]
    assert resumed.history == whole.history
    with pytest.raises(ModelFileError, match="E073"):
        TopicModel(K, inference="gibbs", sweeps=20, word_adapted=True).fit_gibbs(
            corpus, seed=6, checkpoint=checkpoint, resume=True)


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


# ---------------------------------------------------------------------------
# the shared lexicon: an adapted WORD between the topics and the spelling


@pytest.fixture(scope="module")
def lexicon_model(corpus):
    return TopicModel(K, inference="gibbs", sweeps=40, word_adapted=True).fit(corpus, seed=3)


def test_lexicon_model_recovers_topics_and_holds_every_word_once(lexicon_model, corpus, vocab):
    assert min(match_topics(lexicon_model, vocab)[1]) >= 7
    sizes = lexicon_model.learner.grammaton_sizes()
    assert sizes["WORD"] == len({w for doc in corpus for w in doc})


def test_word_weights_add_the_lexicon_to_the_spelling(lexicon_model):
    """P_i(w) = sum of TOPIC_i's entries for w + rho(TOPIC_i -> WORD) (lexicon entry + spelling)."""
    from spacy_ag.core.state import OPEN, yield_length, yield_terms
    from spacy_ag.core.topic_draws import base_log_weight

    L = lexicon_model.learner
    S, V, R = L.state, L.V, L.R
    terms = lexicon_model.compiled.terminals
    spelled = {}
    for k in range(S.tab_adaptor.shape[0]):
        if S.tab_state[k] != OPEN or V.lw[k] == -np.inf:
            continue
        out = np.empty(yield_length(S, S.tab_yield[k]) + 1, np.int32)
        n = yield_terms(S, S.tab_yield[k], out)
        spelled.setdefault("".join(terms[t] for t in out[:n]), []).append(k)
    word = next(w for w, ks in spelled.items() if len(ks) >= 2)
    chars = np.array([lexicon_model.compiled.term_index[c] for c in word], np.int32)
    lexicon = [k for k in spelled[word] if S.tab_adaptor[k] == R.word_adaptor[0]]
    assert len(lexicon) == 1
    word_weight = math.exp(V.lw[lexicon[0]]) + math.exp(base_log_weight(R, V.lrho, chars))
    expected = np.array([math.exp(V.lrho[R.topic_word[i]]) * word_weight for i in range(K)])
    for k in spelled[word]:
        i = R.adaptor_topic[S.tab_adaptor[k]]
        if i >= 0:
            expected[i] += math.exp(V.lw[k])
    assert np.allclose(lexicon_model.word_probabilities([word])[:, 0], expected, rtol=1e-12)


def test_lexicon_model_round_trips_and_learns_online(lexicon_model, corpus, vocab, tmp_path):
    lexicon_model.save(tmp_path / "model")
    loaded = TopicModel.load(tmp_path / "model")
    assert loaded.word_adapted and loaded.topics(10) == lexicon_model.topics(10)
    new_word = "lkjihg"
    loaded.partial_fit([doc + [new_word] * 5 for doc in corpus[:50]], seed=1, corpus_size=len(corpus))
    assert new_word in {w for i in range(K) for w, _ in loaded.top_words(i, None)}
    assert loaded.learner.grammaton_sizes()["WORD"] == len({w for doc in corpus for w in doc}) + 1
    assert min(match_topics(loaded, vocab)[1]) >= 7


def test_online_training_with_a_shared_lexicon(corpus, vocab):
    from test_topics import SETTINGS
    from spacy_ag.topics import default_topic_settings

    model = TopicModel(K, inference="online", word_adapted=True,
                       online=default_topic_settings(**SETTINGS)).fit(corpus, passes=3, seed=0)
    assert model.inference == "online"
    assert min(match_topics(model, vocab)[1]) >= 7
    assert model.learner.grammaton_sizes()["WORD"] > 0


def test_cli_trains_and_resumes_gibbs_topics(tmp_path, corpus, vocab):
    from typer.testing import CliRunner

    (tmp_path / "docs.txt").write_text("\n".join(" ".join(d) for d in corpus) + "\n", encoding="utf8")
    config = tmp_path / "topics.cfg"
    config.write_text(TOPIC_CONFIG.format(docs=tmp_path / "docs.txt"), encoding="utf8")
    gibbs = ["--topics.inference", "gibbs", "--topics.sweeps", "20", "--training.checkpoint_every", "8",
             "--topics.history_every", "5"]
    first = run(CliRunner(), "train", config, "--output", tmp_path / "out", *gibbs)
    assert first.exit_code == 0, first.output
    model = TopicModel.load(tmp_path / "out" / "model")
    assert model.inference == "gibbs" and min(match_topics(model, vocab)[1]) >= 7
    assert [snap["sweep"] for snap in model.history] == [5, 10, 15, 20]
    trace = (tmp_path / "out" / "trace.jsonl").read_text(encoding="utf8").splitlines()
    assert len(trace) == 20
    assert (tmp_path / "out" / "checkpoints" / "gibbs.npz").exists()  # the one of sweep 16
    again = run(CliRunner(), "train", config, "--output", tmp_path / "out", *gibbs, "--resume")
    assert again.exit_code == 0, again.output
    resumed = TopicModel.load(tmp_path / "out" / "model")
    assert np.array_equal(resumed.get_topics()[0], model.get_topics()[0])
    assert resumed.history == model.history  # sweeps 5 and 10 from the checkpoint of sweep 16
    # the rank history of a Gibbs model: one column per recorded sweep, the last the model's own ranking
    shown = run(CliRunner(), "topics", tmp_path / "out" / "model", "--history", 0, "--top", 5)
    assert shown.exit_code == 0, shown.output
    rows = shown.stdout.strip().splitlines()
    assert rows[0].split() == ["word", "5", "10", "15", "20"] and "Gibbs sweeps" in shown.stderr
    assert [r.split()[0] for r in rows[1:]] == model.topics(5)[0]
    assert [r.split()[-1] for r in rows[1:]] == ["1", "2", "3", "4", "5"]


def test_component_learns_gibbs_topics(corpus, vocab):
    import spacy
    from spacy.training import Example

    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_topics", config={"n_topics": K, "inference": "gibbs", "sweeps": 30, "seed": 0})
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(" ".join(d)), {}) for d in corpus])
    model = nlp.get_pipe("ag_topics").model
    assert model.inference == "gibbs" and min(match_topics(model, vocab)[1]) >= 7
    doc = nlp(" ".join(corpus[0]))
    assert abs(sum(doc._.ag_topics) - 1) < 1e-9
