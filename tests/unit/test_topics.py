"""The infinite-vocabulary topic model (issue 5): InfVocLDA as an adaptor grammar, trained online.

Everything runs on small synthetic corpora generated here: K topics with
disjoint vocabularies of made-up words, and documents that are mixtures
dominated by one topic. Learned topics are matched to the true ones by the
permutation with the largest overlap of top words.
"""
from __future__ import annotations

import itertools
import json
import random
import sys

import numpy as np
import pytest
import spacy
from spacy.tokens import DocBin
from spacy.training import Example
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.config import is_topic_config, load_topic_config
from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.core.expectations import digamma
from spacy_ag.core.topic_draws import relative_weights, _responsibilities, document_topics
from spacy_ag.grammar import Adaptor
from spacy_ag.runs.online_runner import model_arrays
from spacy_ag.topics import TopicModel, default_topic_settings, topic_grammar, topic_grammar_text
from spacy_ag.topics.coherence import read_documents
from spacy_ag.topics.topic_model import topic_rules
from spacy_ag.topics.standard_coherence import topic_coherences
from conftest import assert_one_error_line, record_numba_threads

ALPHABET = "abcdefghijkl"
K = 3
PER_TOPIC = 8
# Small minibatches and frequent refinement so that a few hundred documents see pruning and history.
SETTINGS = dict(batch_size=10, refine_every=5, default_truncation=60)


# ---------------------------------------------------------------------------
# synthetic corpora


def make_vocab(seed=0, n_topics=K, per_topic=PER_TOPIC, alphabet=ALPHABET):
    """Disjoint vocabularies of made-up words (3-5 characters), one list per topic."""
    rng = random.Random(seed)
    seen, vocab = set(), []
    for _ in range(n_topics):
        words = []
        while len(words) < per_topic:
            w = "".join(rng.choice(alphabet) for _ in range(rng.randint(3, 5)))
            if w not in seen:
                seen.add(w)
                words.append(w)
        vocab.append(words)
    return vocab


def make_docs(vocab, n_docs, seed, length=20, main=0.9, topics=None):
    """Documents dominated by one topic: each token comes from the document's topic with
    probability `main`, else from a random topic. Returns (docs, topic labels)."""
    rng = random.Random(seed)
    docs, labels = [], []
    for d in range(n_docs):
        t = rng.randrange(len(vocab)) if topics is None else topics[d % len(topics)]
        doc = [rng.choice(vocab[t if rng.random() < main else rng.randrange(len(vocab))]) for _ in range(length)]
        docs.append(doc)
        labels.append(t)
    return docs, labels


def match_topics(model, vocab, n=PER_TOPIC):
    """The permutation true topic -> learned topic maximising the overlap of the top-n words,
    and the overlap of every matched pair."""
    learned = [set(model.topics(n)[i]) for i in range(model.n_topics)]
    best = max(itertools.permutations(range(model.n_topics), len(vocab)),
               key=lambda p: sum(len(learned[p[t]] & set(vocab[t])) for t in range(len(vocab))))
    return list(best), [len(learned[best[t]] & set(vocab[t])) for t in range(len(vocab))]


def fitted(docs, seed=0, passes=3, **settings):
    # online, without the shared lexicon: the grammar of ZBC14 whose online mechanics these tests pin down
    model = TopicModel(K, inference="online", word_adapted=False,
                       online=default_topic_settings(**{**SETTINGS, **settings}))
    return model.fit(docs, passes=passes, seed=seed)


@pytest.fixture(scope="module")
def vocab():
    return make_vocab(0)


@pytest.fixture(scope="module")
def corpus(vocab):
    return make_docs(vocab, 200, seed=1)[0]


@pytest.fixture(scope="module")
def model(corpus):
    return fitted(corpus, seed=0)


@pytest.fixture(scope="module")
def matching(model, vocab):
    return match_topics(model, vocab)[0]


# ---------------------------------------------------------------------------
# 1. the generated grammar


def test_generated_grammar_exact_rules():
    g = topic_grammar(2, "bca", alpha=0.5, a=0.1, b=5.0, truncation=50)
    assert g.start == "SENT"
    expected = {("SENT", ("DOC",), 1.0), ("DOC", ("TOPIC_0",), 0.5), ("DOC", ("TOPIC_1",), 0.5),
                ("TOPIC_0", ("WORD",), 1.0), ("TOPIC_1", ("WORD",), 1.0), ("WORD", ("CHARS",), 1.0),
                ("CHARS", ("CHAR",), 1.0), ("CHARS", ("CHAR", "CHARS"), 1.0),
                ("CHAR", ("a",), 1.0), ("CHAR", ("b",), 1.0), ("CHAR", ("c",), 1.0)}
    got = [(r.parent, r.children, r.weight) for r in g.rules]
    assert len(got) == len(expected) and set(got) == expected
    # only the topics are adapted, with a, b and the truncation K
    assert g.adaptors == {"TOPIC_0": Adaptor(0.1, 5.0, {"K": 50}), "TOPIC_1": Adaptor(0.1, 5.0, {"K": 50})}
    assert sorted(g.terminals) == ["a", "b", "c"]
    # the text is py-cfg: weight, then a b for adapted parents, `1 1` for unadapted ones
    lines = topic_grammar_text(2, "bca", alpha=0.5, a=0.1, b=5.0, truncation=50).splitlines()
    assert "0.5 1 DOC --> TOPIC_0" in lines and "1 0.1 5.0 TOPIC_1 --> WORD" in lines
    assert "@ TOPIC_1 K=50" in lines and "1 1 WORD --> CHARS" in lines
    assert [ln for ln in lines if ln.endswith(("--> a", "--> b", "--> c"))] == \
        ["1 1 CHAR --> a", "1 1 CHAR --> b", "1 1 CHAR --> c"]
    # it compiles, and the topic kernels find every rule they need
    compiled = CompiledGrammar(g)
    R = topic_rules(compiled)
    assert len(R.doc_topic) == len(R.topic_word) == len(R.topic_adaptor) == 2
    assert sorted(compiled.adapted) == ["TOPIC_0", "TOPIC_1"]
    assert all(R.char_rule[compiled.term_index[c]] >= 0 for c in "abc")


def test_generated_grammar_options():
    # one CHAR rule per distinct character, however often it is given
    g = topic_grammar(4, "abcab", truncation=None, word_adapted=True)
    assert [r.children for r in g.rules if r.parent == "CHAR"] == [("a",), ("b",), ("c",)]
    assert [r.children for r in g.rules if r.parent == "DOC"] == [(f"TOPIC_{i}",) for i in range(4)]
    assert all(r.weight == 0.1 for r in g.rules if r.parent == "DOC")  # default alpha
    assert set(g.adaptors) == {"TOPIC_0", "TOPIC_1", "TOPIC_2", "TOPIC_3", "WORD"}
    assert g.adaptors["TOPIC_2"] == Adaptor(0.0, 10.0, {})  # defaults; no K without truncation
    assert (g.adaptors["WORD"].a, g.adaptors["WORD"].b) == (0.0, 100.0)
    CompiledGrammar(g)
    one = topic_grammar(1, "x")
    assert [r.children for r in one.rules if r.parent == "DOC"] == [("TOPIC_0",)]
    assert one.adaptors["TOPIC_0"].options == {"K": 3000}


@pytest.mark.parametrize("n_topics, alphabet, message", [
    (0, "abc", "at least 1"),
    (-2, "abc", "at least 1"),
    (2, "", "characters"),
    (2, [], "characters"),
    (2, ["ab", "c"], "single non-space"),
    (2, "a c", "single non-space"),
])
def test_generated_grammar_errors(n_topics, alphabet, message):
    with pytest.raises(ValueError, match=message):
        topic_grammar_text(n_topics, alphabet)
    with pytest.raises(ValueError, match=message):
        topic_grammar(n_topics, alphabet)


# ---------------------------------------------------------------------------
# 2. topics recovered from a synthetic corpus drawn from known topics


def test_recovers_known_topics(model, vocab):
    perm, overlaps = match_topics(model, vocab)
    assert min(overlaps) >= 7, (overlaps, model.topics(PER_TOPIC), vocab)
    # probabilities are E_q[pi]: positive, sorted, below 1 in total
    for i in range(K):
        probs = [p for _, p in model.top_words(i, 50)]
        assert all(p > 0 for p in probs) and probs == sorted(probs, reverse=True) and sum(probs) < 1
    # refinement happened: history has snapshots of every topic's top words
    assert model.history and len(model.history[-1]["topics"]) == K


def test_truncation_bounds_every_topic(corpus, vocab):
    """K_Topic = 10 (8 true words + 2): pruning removes the noise entries at each refinement and the
    topics are still recovered."""
    model = fitted(corpus, seed=0, default_truncation=10)
    refinements = [line for line in model.trace if "pruned" in line]
    assert len(refinements) == len(model.history) == 12  # 3 passes x 20 minibatches / 5
    assert sum(line["pruned"] for line in refinements) > 0
    for line in refinements:
        assert all(size <= 10 for size in line["grammaton"].values()), line["grammaton"]
    assert min(match_topics(model, vocab)[1]) == PER_TOPIC
    for i in range(K):
        assert len(model.top_words(i, 100)) <= 10


def test_infer_puts_mass_on_matched_topic(model, vocab, matching):
    held, labels = make_docs(vocab, 30, seed=99, topics=[0, 1, 2])
    theta = model.infer(held)
    assert theta.shape == (30, K)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    for row, t in zip(theta, labels):
        assert row[matching[t]] > 0.75, (row, t, matching)
    # a document of one topic's words only is almost entirely that topic
    for t in range(K):
        assert model.infer([vocab[t] * 3])[0, matching[t]] > 0.9
    # per-token responsibilities: a word of topic t is assigned to topic t
    theta, tokens = model.infer([vocab[0][:4] + vocab[1][:4]], return_tokens=True)
    rows = tokens[0]
    assert len(rows) == 8
    assert [int(np.argmax(r)) for r in rows] == [matching[0]] * 4 + [matching[1]] * 4


def test_heldout_loglik_prefers_in_distribution(model, vocab):
    held, _ = make_docs(vocab, 20, seed=5)
    other = [[w[::-1] + "a" for w in doc] for doc in held]  # same characters, words never seen
    good = model.heldout_loglik(held)
    bad = model.heldout_loglik(other)
    assert good["tokens"] == bad["tokens"] == 400 and good["skipped_tokens"] == 0
    assert good["per_word"] < 0 and bad["per_word"] < good["per_word"] - 2
    assert model.heldout_loglik([["ZZZ", vocab[0][0]]])["skipped_tokens"] == 1


# ---------------------------------------------------------------------------
# 3. a word that first appears late in the stream


def test_late_word_reaches_its_topic(vocab):
    new = "lkjihg"
    assert all(new not in words for words in vocab)
    first, _ = make_docs(vocab, 150, seed=11)
    second, labels = make_docs(vocab, 150, seed=12)
    t = 1
    for doc, label in zip(second, labels):  # in the second half, topic t's documents use the new word a lot
        if label == t:
            for p in range(0, len(doc), 3):
                doc[p] = new
    # a tight truncation (8 words per topic + 4): the new word must win a place at pruning
    model = TopicModel(K, word_adapted=False, online=default_topic_settings(**{**SETTINGS, "default_truncation": 12}))
    model.prepare(ALPHABET)
    model.partial_fit(first, seed=0, corpus_size=300)
    assert all(new not in dict(model.top_words(i, 10 ** 6)) for i in range(K))
    history_before = len(model.history)
    perm, overlaps = match_topics(model, vocab)
    assert min(overlaps) >= 6, overlaps
    model.partial_fit(second, seed=1, corpus_size=300)
    perm, overlaps = match_topics(model, vocab)
    top = [w for w, _ in model.top_words(perm[t], 10)]
    assert new in top[:3], (top, model.topics(10))  # a third of the topic's tokens in the second half
    assert all(new not in model.topics(10)[i] for i in range(K) if i != perm[t])
    # the history records the word's rise: absent from every snapshot of the first half, present at the end
    assert all(new not in [w for w, _ in snap["topics"][i]]
               for snap in model.history[:history_before] for i in range(K))
    assert new in [w for w, _ in model.history[-1]["topics"][perm[t]]]


# ---------------------------------------------------------------------------
# 4. unseen words get a topic from the character base


def test_unseen_word_gets_a_topic(model, vocab, matching):
    unseen = "abcdefg"
    assert all(unseen not in dict(model.top_words(i, 10 ** 6)) for i in range(K))
    for t in range(K):
        theta, tokens = model.infer([vocab[t] + [unseen]], return_tokens=True)
        row = tokens[0][-1]
        assert row is not None and abs(row.sum() - 1) < 1e-9
        # the base is shared by the topics, so the document's proportions decide
        assert int(np.argmax(row)) == matching[t]
    # a token with a character the grammar never saw is not modelled
    theta, tokens = model.infer([[vocab[0][0], "abZ", vocab[0][1]]], return_tokens=True)
    assert tokens[0][1] is None and tokens[0][0] is not None and tokens[0][2] is not None


# ---------------------------------------------------------------------------
# 5. saving and loading


def test_save_load_and_bytes_identical(model, vocab, tmp_path):
    held, _ = make_docs(vocab, 10, seed=7)
    held.append(["abcdefg", vocab[2][0]])
    expected_top = [model.top_words(i, 20) for i in range(K)]
    expected_theta, expected_tokens = model.infer(held, return_tokens=True)
    model.save(tmp_path / "m")
    for again in (TopicModel.load(tmp_path / "m"), TopicModel.from_bytes(model.to_bytes())):
        assert [again.top_words(i, 20) for i in range(K)] == expected_top
        theta, tokens = again.infer(held, return_tokens=True)
        np.testing.assert_array_equal(theta, expected_theta)
        for a, b in zip(tokens, expected_tokens):
            np.testing.assert_array_equal(np.array(a), np.array(b))
        assert again.history == json.loads(json.dumps(model.history))
        assert again.heldout_loglik(held) == model.heldout_loglik(held)
        assert again.to_bytes() == model.to_bytes()


def test_save_load_identical_with_update_alpha(corpus, vocab):
    """update_alpha changes the character and word rules' priors, never the document prior."""
    model = fitted(corpus[:100], seed=0, passes=1, update_alpha=True)
    np.testing.assert_allclose(model.learner.V.alpha[model.learner.R.doc_topic], model.alpha)
    held = [doc[:3] for doc in make_docs(vocab, 5, seed=3)[0]]
    again = TopicModel.from_bytes(model.to_bytes())
    np.testing.assert_allclose(again.learner.alpha, model.learner.alpha)
    np.testing.assert_allclose(again.infer(held), model.infer(held))


def test_training_resumes_identically_after_load(corpus, vocab):
    a = fitted(corpus[:100], seed=0, passes=1)
    b = TopicModel.from_bytes(a.to_bytes())
    a.partial_fit(corpus[100:], seed=5, corpus_size=200)
    b.partial_fit(corpus[100:], seed=5, corpus_size=200)
    assert [b.top_words(i, 20) for i in range(K)] == [a.top_words(i, 20) for i in range(K)]


def _texts(docs):
    return [" ".join(doc) for doc in docs]


def _annotations(doc):
    # DocBin's msgpack gives back the list of proportions as a tuple: compare the values
    return (dict(doc.cats), list(doc._.ag_topics), [t._.ag_topic for t in doc])


@pytest.fixture(scope="module")
def topic_nlp(corpus):
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_topics", config={"n_topics": K, "batch_size": 10, "passes": 3, "seed": 0,
                                      "inference": "online", "word_adapted": False})
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in _texts(corpus)])
    return nlp


def test_component_annotations(topic_nlp, vocab):
    texts = [" ".join(vocab[t] * 2) for t in range(K)]
    docs = list(topic_nlp.pipe(texts + [f"{vocab[0][0]} abcdefg , {vocab[0][1]} {vocab[0][2]}"]))
    tops = []
    for doc in docs:
        assert sorted(doc.cats) == [f"TOPIC_{i}" for i in range(K)]
        assert doc._.ag_topics == [doc.cats[f"TOPIC_{i}"] for i in range(K)]
        assert all(isinstance(p, float) for p in doc._.ag_topics)
        assert abs(sum(doc._.ag_topics) - 1) < 1e-9
        tops.append(int(np.argmax(doc._.ag_topics)))
    # the three pure documents go to three different topics, each with most of the mass
    assert sorted(tops[:K]) == list(range(K))
    assert all(max(doc._.ag_topics) > 0.9 for doc in docs[:K])
    for t, doc in enumerate(docs[:K]):
        assert [tok._.ag_topic for tok in doc] == [tops[t]] * len(doc)
    # the unseen word (known characters) gets the document's topic; punctuation gets None
    mixed = docs[-1]
    assert [tok.text for tok in mixed][1:3] == ["abcdefg", ","]
    assert mixed[1]._.ag_topic == tops[0]
    assert mixed[2]._.ag_topic is None
    assert all(isinstance(tok._.ag_topic, int) for i, tok in enumerate(mixed) if i != 2)


def test_component_documents_without_words(topic_nlp):
    for text in ["", " , . ", "ZZZ qqq"]:  # nothing, punctuation only, characters never seen
        doc = topic_nlp(text)
        np.testing.assert_allclose(doc._.ag_topics, [1 / K] * K)  # the symmetric prior
        assert [t._.ag_topic for t in doc] == [None] * len(doc)


def test_component_docbin_roundtrip(topic_nlp, vocab):
    docs = list(topic_nlp.pipe([" ".join(vocab[t][:5]) + " , abcdefg" for t in range(K)]))
    db = DocBin(store_user_data=True)
    for doc in docs:
        db.add(doc)
    back = list(DocBin().from_bytes(db.to_bytes()).get_docs(topic_nlp.vocab))
    assert [_annotations(d) for d in back] == [_annotations(d) for d in docs]
    assert back[0][-1]._.ag_topic is not None and back[0][-2]._.ag_topic is None


def test_component_to_disk_and_bytes(topic_nlp, vocab, tmp_path):
    texts = [" ".join(random.Random(t).sample(vocab[t] + vocab[(t + 1) % K], 10)) for t in range(K)]
    texts.append("abcdefg hij , " + vocab[1][0])
    expected = [_annotations(d) for d in topic_nlp.pipe(texts)]
    topic_nlp.to_disk(tmp_path / "nlp")
    assert (tmp_path / "nlp" / "ag_topics" / "model" / "arrays.npz").exists()
    loaded = spacy.load(tmp_path / "nlp")
    assert [_annotations(d) for d in loaded.pipe(texts)] == expected
    pipe = topic_nlp.get_pipe("ag_topics")
    assert loaded.get_pipe("ag_topics").model.topics(10) == pipe.model.topics(10)
    nlp3 = spacy.blank("xx", config=loaded.config).from_bytes(topic_nlp.to_bytes())
    assert [_annotations(d) for d in nlp3.pipe(texts)] == expected
    assert nlp3.get_pipe("ag_topics").to_bytes() == pipe.to_bytes()


def test_unfitted_component_errors():
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_topics")
    with pytest.raises(ValueError, match="no topics yet"):
        nlp("abc def")
    with pytest.raises(ValueError, match="attr"):
        spacy.blank("xx").add_pipe("ag_topics", config={"attr": "SHAPE"})
    with pytest.raises(ValueError, match="n_topics"):
        spacy.blank("xx").add_pipe("ag_topics", config={"n_topics": 0})


def test_nlp_update_lowers_the_loss(corpus):
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_topics", config={"n_topics": K, "batch_size": 10, "seed": 0, "online_updates": True})
    nlp.initialize()  # no examples: the topics come from nlp.update alone
    assert nlp.get_pipe("ag_topics").model is None
    examples = [Example.from_dict(nlp.make_doc(t), {}) for t in _texts(corpus[:100])]
    epochs = []
    for _ in range(4):
        losses = {}
        for start in range(0, len(examples), 10):
            nlp.update(examples[start:start + 10], losses=losses)
        epochs.append(losses["ag_topics"])
    assert all(loss > 0 for loss in epochs)
    assert epochs[-1] < epochs[0] * 0.95, epochs
    doc = nlp(" ".join(corpus[0]))
    assert abs(sum(doc._.ag_topics) - 1) < 1e-9


# ---------------------------------------------------------------------------
# 6. the command line


def run(runner, *args):
    return runner.invoke(app, [str(a) for a in args])


TOPIC_CONFIG = """\
[paths]
train = "{docs}"
output = null

[corpus]
path = ${{paths.train}}
heldout_fraction = 0.2

[topics]
n_topics = 3
alpha = 0.1
passes = 2
top_words = 8
inference = "online"
word_adapted = false

[online]
batch_size = 10
refine_every = 5
default_truncation = 60

[training]
seed = 0
"""


def test_default_settings_and_topic_config(tmp_path):
    s = default_topic_settings()
    assert (s.batch_size, s.tau, s.kappa, s.refine_every, s.default_truncation) == (50, 64, 0.8, 20, 3000)
    assert (s.rederive, s.update_alpha, s.update_a, s.update_b) == (False, False, False, False)
    assert default_topic_settings(batch_size=7, update_a=False).batch_size == 7
    assert TopicModel().online == s
    # a topic config takes the topic defaults for what [online] leaves out, and dotted overrides
    (tmp_path / "docs.txt").write_text("ab cd\n", encoding="utf8")
    config = tmp_path / "topics.cfg"
    config.write_text(TOPIC_CONFIG.format(docs=tmp_path / "docs.txt"), encoding="utf8")
    assert is_topic_config(config)
    v = load_topic_config(config, ["--topics.n_topics", "2"])
    assert v["topics"].n_topics == 2 and v["topics"].passes == 2
    o = v["online"]
    assert (o.batch_size, o.refine_every, o.default_truncation) == (10, 5, 60)
    assert (o.tau, o.kappa, o.update_alpha, o.update_a, o.update_b) == (64, 0.8, False, False, False)
    assert v["topics"].b == 10.0
    with pytest.raises(ValueError, match="n_topics"):
        load_topic_config(config, ["--topics.n_topics", "0"])
    with pytest.raises(ValueError, match='topics.b must be a number > 0 or "auto"'):
        load_topic_config(config, ["--topics.b", "-1"])


def test_auto_concentration_is_half_the_tokens_per_topic():
    docs = [["ab", "cd", "ab"], ["cd", "ef"]] * 10  # 50 tokens
    model = TopicModel(5, b="auto", inference="online").fit(docs, passes=1)
    assert model.b == pytest.approx(0.5 * 50 / 5)
    topics = {name: ad for name, ad in model.compiled.grammar.adaptors.items() if name.startswith("TOPIC_")}
    assert len(topics) == 5 and all(ad.b == pytest.approx(5.0) for ad in topics.values())
    assert TopicModel(5, b=3.0).fit(docs).b == 3.0


@pytest.fixture(scope="module")
def trained(tmp_path_factory, vocab):
    root = tmp_path_factory.mktemp("topics_cli")
    docs, _ = make_docs(vocab, 150, seed=3)
    (root / "docs.txt").write_text("\n".join(" ".join(d) for d in docs) + "\n", encoding="utf8")
    config = root / "topics.cfg"
    config.write_text(TOPIC_CONFIG.format(docs=root / "docs.txt"), encoding="utf8")
    result = run(CliRunner(), "train", config, "--output", root / "out")
    return root, result


def test_cli_train(trained, vocab):
    root, result = trained
    assert result.exit_code == 0, result.output
    out = root / "out"
    assert (out / "model" / "arrays.npz").exists() and (out / "model" / "grammar.lt").exists()
    scores = json.loads((out / "scores.json").read_text(encoding="utf8"))
    assert {"pmi", "npmi", "heldout"} <= set(scores)
    assert np.isfinite(scores["pmi"]) and -1 <= scores["npmi"] <= 1
    assert scores["heldout"]["tokens"] == 30 * 20 and scores["heldout"]["per_word"] < 0
    model = TopicModel.load(out / "model")
    assert min(match_topics(model, vocab)[1]) >= 7
    assert "topic  0" in result.output


def test_cli_topics(trained, vocab):
    root, _ = trained
    runner = CliRunner()
    model = TopicModel.load(root / "out" / "model")
    result = run(runner, "topics", root / "out" / "model", "--top", 5, "--json", root / "topics.json")
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("topic")]
    assert len(lines) == K
    for i, line in enumerate(lines):
        assert [w for w, _ in model.top_words(i, 5)] == line.split()[2::2]
    data = json.loads((root / "topics.json").read_text(encoding="utf8"))
    assert [[w for w, _ in t] for t in data["topics"]] == model.topics(5)
    assert len(data["history"]) == len(model.history) > 0
    result = run(runner, "topics", root / "out" / "model", "--history", 0, "--top", 5)
    assert result.exit_code == 0, result.output
    rows = result.stdout.strip().splitlines()
    assert rows[0].split()[0] == "word"
    assert [int(c) for c in rows[0].split()[1:]] == [s["documents_seen"] for s in model.history]
    assert [r.split()[0] for r in rows[1:]] == model.topics(5)[0]
    # the final column is the last snapshot's ranks
    last = [w for w, _ in model.history[-1]["topics"][0]]
    for r in rows[1:]:
        word, rank = r.split()[0], r.split()[-1]
        assert rank == (str(last.index(word) + 1) if word in last else "-")
    assert_one_error_line(run(runner, "topics", root / "out" / "model", "--history", K), "--history")


def test_cli_topics_plot_and_pipeline_directory(trained, topic_nlp, tmp_path):
    root, _ = trained
    runner = CliRunner()
    result = run(runner, "topics", root / "out" / "model", "--history", 1, "--plot", tmp_path / "ranks.png")
    try:
        import matplotlib  # noqa: F401  (a plotting extra, not a dependency)
    except ImportError:
        assert_one_error_line(result, "matplotlib", "spacy-ag[plot]")
    else:
        assert result.exit_code == 0, result.output
        assert (tmp_path / "ranks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a spaCy pipeline directory with an ag_topics component
    topic_nlp.to_disk(tmp_path / "nlp")
    result = run(runner, "topics", tmp_path / "nlp", "--top", 3)
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("topic")]
    assert [ln.split()[2::2] for ln in lines] == topic_nlp.get_pipe("ag_topics").model.topics(3)


def test_cli_evaluate_topics(trained):
    root, _ = trained
    runner = CliRunner()
    ref = root / "docs.txt"
    result = run(runner, "evaluate-topics", root / "out" / "model", "--reference", ref, "--json", root / "ev.json")
    assert result.exit_code == 0, result.output
    scores = json.loads((root / "ev.json").read_text(encoding="utf8"))
    assert {"u_mass", "c_npmi", "c_v", "pmi", "npmi", "heldout"} <= set(scores)
    assert scores["heldout"]["tokens"] == 150 * 20
    # the field's measures first, computed as topic_coherences computes them; the add-one PMI labelled
    model = TopicModel.load(root / "out" / "model")
    standard = topic_coherences(model.topics(10), read_documents(ref))
    for measure in ("u_mass", "c_npmi", "c_v"):
        assert scores[measure] == standard[measure]
        assert f"{measure:<7} {scores[measure]:.4f}" in result.stdout
    assert f"extra: add-one PMI {scores['pmi']:.4f}" in result.stdout
    # a separate held-out file for the likelihood; the scores agree with the library's
    (root / "held.txt").write_text("\n".join(ref.read_text(encoding="utf8").splitlines()[:10]) + "\n", encoding="utf8")
    result = run(runner, "evaluate-topics", root / "out" / "model", "-r", ref, "--heldout", root / "held.txt",
                 "--json", root / "ev2.json")
    assert result.exit_code == 0, result.output
    scores2 = json.loads((root / "ev2.json").read_text(encoding="utf8"))
    model = TopicModel.load(root / "out" / "model")
    assert scores2["heldout"] == model.heldout_loglik(read_documents(root / "held.txt"))
    assert scores2["pmi"] == scores["pmi"] and scores2["heldout"]["tokens"] == 10 * 20
    assert_one_error_line(run(runner, "evaluate-topics", root / "out" / "model", "--reference",
                              root / "missing.txt"), "missing.txt")
    assert_one_error_line(run(runner, "topics", root / "nowhere"))
    # without --reference: the held-out documents that `train` wrote next to the model
    held = root / "out" / "heldout.txt"
    assert held.exists()
    result = run(runner, "evaluate-topics", root / "out" / "model", "--json", root / "ev3.json")
    assert result.exit_code == 0, result.output
    scores3 = json.loads((root / "ev3.json").read_text(encoding="utf8"))
    assert scores3["reference"] == str(held)
    assert scores3["heldout"] == model.heldout_loglik(read_documents(held))


# ---------------------------------------------------------------------------
# 7. reproducibility


def test_same_seed_same_topics(corpus):
    a = fitted(corpus[:120], seed=3, passes=2)
    b = fitted(corpus[:120], seed=3, passes=2)
    c = fitted(corpus[:120], seed=4, passes=2)
    assert [a.top_words(i, 20) for i in range(K)] == [b.top_words(i, 20) for i in range(K)]
    assert a.history == b.history and len(a.history) > 0
    # the whole state and variational statistics, not only the ranking (the trace's timings may differ)
    arrays_a, arrays_b = (model_arrays(m.learner.state, m.learner.V) for m in (a, b))
    assert arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        np.testing.assert_array_equal(arrays_a[key], arrays_b[key], err_msg=key)
    # the seed matters (so the equality above is not vacuous)
    assert [a.top_words(i, 20) for i in range(K)] != [c.top_words(i, 20) for i in range(K)]


def test_get_topics_matrix_and_history_warnings(trained, tmp_path):
    root, _ = trained
    model = TopicModel.load(root / "out" / "model")
    matrix, vocabulary = model.get_topics()
    assert matrix.shape == (model.n_topics, len(vocabulary)) and len(set(vocabulary)) == len(vocabulary)
    assert (matrix >= 0).all() and (matrix.sum(axis=1) <= 1 + 1e-9).all() and (matrix.sum(axis=1) > 0).all()
    for i in range(model.n_topics):  # the rows agree with top_words
        for word, p in model.top_words(i, 5):
            assert matrix[i, vocabulary.index(word)] == pytest.approx(p)
    model.save(tmp_path / "m")
    runner = CliRunner()
    result = runner.invoke(app, ["topics", str(tmp_path / "m"), "--plot", str(tmp_path / "x.png")])
    assert result.exit_code == 0 and "--history" in result.stderr and not (tmp_path / "x.png").exists()
    short = TopicModel.load(tmp_path / "m")
    short.history = short.history[:1]
    short.save(tmp_path / "short")
    result = runner.invoke(app, ["topics", str(tmp_path / "short"), "--history", "0", "--plot",
                                 str(tmp_path / "y.png")])
    assert result.exit_code == 0 and "too few for a history" in result.stderr and not (tmp_path / "y.png").exists()


# ---------------------------------------------------------------------------
# pyLDAvis export


def test_word_probabilities_give_the_heldout_likelihood(model, vocab):
    """log sum_i E[theta_i] P_i(w) over a document's tokens, from word_probabilities and infer,
    is the held-out likelihood; an uncached word has exactly the base weight of every topic."""
    docs = make_docs(vocab, 6, seed=9)[0]
    theta = model.infer(docs)
    total = 0.0
    for d, doc in enumerate(docs):
        probs = model.word_probabilities(doc)
        total += float(np.log(theta[d] @ probs).sum())
    assert total == pytest.approx(model.heldout_loglik(docs)["loglik"], rel=1e-9)
    fresh = "".join(sorted(ALPHABET))[:7]
    assert fresh not in {w for topic in vocab for w in topic}
    L = model.learner
    base = (L.V.lrho[L.R.word_chars[0]] + (len(fresh) - 1) * L.V.lrho[L.R.chars_more[0]]
            + L.V.lrho[L.R.chars_last[0]]
            + sum(L.V.lrho[L.R.char_rule[model.compiled.term_index[c]]] for c in fresh))
    expected = np.exp(L.V.lrho[L.R.topic_word] + base)
    assert model.word_probabilities([fresh, "\u00e9\u00e9"])[:, 0] == pytest.approx(expected, rel=1e-12)
    assert not model.word_probabilities(["\u00e9\u00e9"]).any()  # a character the grammar never saw


def test_pyldavis_data(model, vocab, matching):
    from spacy_ag.topics.ldavis import pyldavis_data

    docs = make_docs(vocab, 30, seed=5)[0]
    docs[0] = docs[0] + ["\u00e9t\u00e9"]  # cannot be spelled: left out of every count
    data = pyldavis_data(model, docs)
    K, V = model.n_topics, len(data["vocab"])
    phi = np.array(data["topic_term_dists"])
    assert phi.shape == (K, V) and np.allclose(phi.sum(axis=1), 1.0) and (phi > 0).all()
    assert np.allclose(data["doc_topic_dists"], model.infer([d[:-1] if i == 0 else d for i, d in enumerate(docs)]))
    assert data["doc_lengths"] == [20] * 30 and sum(data["term_frequency"]) == 600
    assert "\u00e9t\u00e9" not in data["vocab"] and data["term_frequency"] == sorted(data["term_frequency"],
                                                                                     reverse=True)
    # each true topic's words weigh more in its matched topic than in the others, on average
    index = {w: j for j, w in enumerate(data["vocab"])}
    for true, learned in enumerate(matching):
        cols = [index[w] for w in vocab[true] if w in index]
        assert phi[learned, cols].sum() > np.delete(phi[:, cols].sum(axis=1), learned).max()


def test_cli_export_ldavis(trained, tmp_path):
    root, result = trained
    assert result.exit_code == 0, result.output
    out = tmp_path / "vis.json"
    r = run(CliRunner(), "export-ldavis", root / "out" / "model", root / "docs.txt", "--output", out)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text(encoding="utf8"))
    assert set(data) == {"topic_term_dists", "doc_topic_dists", "doc_lengths", "vocab", "term_frequency"}
    assert len(data["doc_lengths"]) == 150 and len(data["topic_term_dists"][0]) == len(data["vocab"])
    r = run(CliRunner(), "export-ldavis", root / "out" / "model", root / "docs.txt", "--output", out,
            "--html", tmp_path / "vis.html")
    assert r.exit_code == 0, r.output
    assert_ldavis_page(tmp_path / "vis.html", data["vocab"][:5])


def assert_ldavis_page(path, words):
    """A pyLDAvis page: its script and the JSON of the prepared topics, with these words in it."""
    page = path.read_text(encoding="utf8")
    assert "LDAvis" in page and '"topic.order"' in page
    assert all(f'"{w}"' in page for w in words)


def test_cli_topics_ldavis_page(trained, tmp_path, monkeypatch):
    """`spacy-ag topics MODEL --ldavis page.html`: over the held-out documents beside MODEL, or --docs;
    one clear line, and no page, without pyLDAvis or without documents."""
    root, result = trained
    assert result.exit_code == 0, result.output
    model = root / "out" / "model"
    heldout = [line.split() for line in (root / "out" / "heldout.txt").read_text(encoding="utf8").splitlines()]
    r = run(CliRunner(), "topics", model, "--ldavis", tmp_path / "held.html")
    assert r.exit_code == 0, r.output
    assert "pyLDAvis page of 3 topics" in r.output
    assert_ldavis_page(tmp_path / "held.html", sorted({w for d in heldout for w in d})[:5])
    r = run(CliRunner(), "topics", model, "--ldavis", tmp_path / "all.html", "--docs", root / "docs.txt")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "all.html").read_text(encoding="utf8") != (tmp_path / "held.html").read_text(encoding="utf8")
    copy = tmp_path / "alone" / "model"
    TopicModel.load(model).save(copy)
    r = run(CliRunner(), "topics", copy, "--ldavis", tmp_path / "none.html")
    assert r.exit_code == 1 and "--docs FILE" in r.output and not (tmp_path / "none.html").exists()
    monkeypatch.setitem(sys.modules, "pyLDAvis", None)  # as if the extra were not installed
    r = run(CliRunner(), "topics", model, "--ldavis", tmp_path / "no.html")
    assert r.exit_code == 1 and "spacy-ag[ldavis]" in r.output and not (tmp_path / "no.html").exists()
    assert "Traceback" not in r.output


def test_training_draws_documents_on_two_threads_with_the_one_thread_model(corpus, monkeypatch):
    """The local E-step of a minibatch runs on the threads (`draw_documents`); the model is the same."""
    import numba

    from spacy_ag.topics import topic_model as topic_model_module

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    threads_seen = record_numba_threads(monkeypatch, topic_model_module, "draw_documents")
    models = [fitted(corpus, seed=2, passes=2, workers=w) for w in (1, 2)]
    assert threads_seen and set(threads_seen) == {1, 2}
    one, two = (model_arrays(m.learner.state, m.learner.V) for m in models)
    assert one.keys() == two.keys() and all(np.array_equal(one[k], two[k]) for k in one)


@pytest.mark.parametrize("ranks", ["trained", "wide span", "repeated"])
def test_all_adaptors_entries_in_one_scan_equal_each_adaptors_entries_by_rank(model, ranks):
    """refresh_weights orders every topic's entries in one scan of the tables, placed by rank
    (or sorted, for ranks an edited file could hold: a huge span, repeats); the same order."""
    from spacy_ag.core.grammatons import entries_by_rank, entries_of_all_adaptors

    S, V = model.learner.state, model.learner.V
    if ranks != "trained":
        rng = np.random.default_rng(1)
        high = 10 ** 15 if ranks == "wide span" else 50
        V = V._replace(rank=rng.integers(0, high, V.rank.shape[0]))
    n_ad = model.learner.G.adaptor_nt.shape[0]
    ptr = np.empty(n_ad + 1, np.int64)
    ordered = entries_of_all_adaptors(S, V, n_ad, ptr)
    assert n_ad == K and ptr[-1] > 10 * K
    for ad in range(n_ad):
        assert np.array_equal(ordered[ptr[ad]:ptr[ad + 1]], entries_by_rank(S, V, ad))


def _fixed_point_in_log_space(alpha, logp, iterations):
    """The local fixed point as docs/algorithms.md 4.4 writes it, every weight in log space."""
    T, K = logp.shape
    gamma = alpha + T / K
    for it in range(iterations + 1):
        elog = np.array([digamma(g) for g in gamma]) - digamma(gamma.sum())
        scores = elog + logp
        phi = np.exp(scores - scores.max(axis=1, keepdims=True))
        phi /= phi.sum(axis=1, keepdims=True)
        if it == iterations:
            break
        new = alpha + phi.sum(axis=0)
        done = np.abs(new - gamma).max() < 1e-3
        gamma = new
        if done:
            phi = None
            break
    if phi is None:  # as the kernel: final responsibilities from the final gamma
        elog = np.array([digamma(g) for g in gamma]) - digamma(gamma.sum())
        scores = elog + logp
        phi = np.exp(scores - scores.max(axis=1, keepdims=True))
        phi /= phi.sum(axis=1, keepdims=True)
    mix = gamma / gamma.sum()
    top = logp.max(axis=1)
    loglik = float(np.sum(top + np.log(np.exp(logp - top[:, None]) @ mix)))
    return gamma, phi, loglik


@pytest.mark.parametrize("alpha_value", [0.1, 1e-200])
def test_document_fixed_point_equals_the_log_space_one(alpha_value):
    """Scaling each token's weights by their largest (K exponentials per iteration) changes no
    result, also where the products underflow (a tiny alpha) and the kernel falls back to logs."""
    rng = np.random.default_rng(5)
    T, K = 40, 6
    logp = rng.normal(-30.0, 15.0, (T, K))
    logp[:, 2] -= 400.0  # a topic under which every word is far less likely
    alpha = np.full(K, alpha_value)
    gamma, phi = np.empty(K), np.empty((T, K))
    loglik = document_topics(alpha, logp, 20, gamma, phi)
    want_gamma, want_phi, want_loglik = _fixed_point_in_log_space(alpha, logp, 20)
    assert np.isfinite(phi).all() and np.allclose(phi.sum(axis=1), 1.0)
    assert np.allclose(gamma, want_gamma, rtol=1e-9, atol=1e-12)
    assert np.allclose(phi, want_phi, rtol=1e-9, atol=1e-12)
    assert loglik == pytest.approx(want_loglik, rel=1e-12)


def test_responsibilities_fall_back_to_log_space_where_the_products_underflow():
    """A topic with gamma near 0 that alone explains a word: every product underflows, and the
    responsibilities must still be those of the log-space formula (the other topics, here)."""
    gamma = np.array([1e-300, 5.0, 3.0])
    logp = np.array([[0.0, -800.0, -801.0], [-2.0, -1.0, -3.0]])
    weights, _ = relative_weights(logp)
    phi, work = np.empty((2, 3)), [np.empty(3) for _ in range(3)]
    _responsibilities(gamma, logp, weights, phi, *work)
    elog = np.array([digamma(g) for g in gamma]) - digamma(gamma.sum())
    scores = elog + logp
    want = np.exp(scores - scores.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    assert weights[0, 1] == 0.0 and phi[0, 1] > 0.5  # the underflowed row follows the log-space one
    assert np.allclose(phi, want, rtol=1e-12, atol=1e-300)
