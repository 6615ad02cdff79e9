"""Topic coherence (docs/algorithms.md 5.4): window counts, PMI and NPMI checked by hand."""
from __future__ import annotations

import itertools
import math
import random

import pytest

from spacy_ag.topics.coherence import CooccurrenceCounts, coherence, read_documents, split_heldout

# A tiny reference corpus, window 3.
DOCS = [
    ["a", "b", "c", "d", "e"],  # 5 tokens >= 3: windows abc, bcd, cde
    ["a", "b"],  # shorter than the window: one window, the whole document
    ["e", "f", "e"],  # exactly the window: one window (e repeated counts once)
    [],  # empty: no window
]
# The windows of DOCS written out by hand.
WINDOWS = [
    {"a", "b", "c"},
    {"b", "c", "d"},
    {"c", "d", "e"},
    {"a", "b"},
    {"e", "f"},
]


def hand_count(*words):
    return sum(1 for w in WINDOWS if all(x in w for x in words))


def hand_pmi_npmi(w1, w2):
    n = len(WINDOWS)
    joint = (hand_count(w1, w2) + 1) / n
    pmi = math.log(joint / ((hand_count(w1) / n) * (hand_count(w2) / n)))
    return pmi, pmi / -math.log(joint)


def test_window_counts_by_hand():
    c = CooccurrenceCounts(DOCS, "abcdef", window=3)
    assert c.n_windows == 5
    assert c.n_docs == 3  # the empty document is skipped
    assert c.n_tokens == 10
    assert [c.count(w) for w in "abcdef"] == [2, 3, 3, 2, 2, 1]
    assert c.count("zzz") == 0
    for w1, w2 in itertools.combinations("abcdef", 2):
        assert c.pair_count(w1, w2) == hand_count(w1, w2), (w1, w2)
    assert c.pair_count("a", "b") == 2
    assert c.pair_count("a", "d") == 0
    assert c.pair_count("e", "f") == 1
    assert c.pair_count("b", "b") == c.count("b")


def test_exact_pmi_and_npmi():
    res = coherence([["a", "b", "c"]], DOCS, window=3)
    # PMI(a,b) = log((2+1)/5 / (2/5 * 3/5)) = log 2.5; PMI(a,c) = log(2/5 / (6/25)) = log(5/3);
    # PMI(b,c) = log(3/5 / (9/25)) = log(5/3)
    pmis = [math.log(2.5), math.log(5 / 3), math.log(5 / 3)]
    npmis = [math.log(2.5) / -math.log(3 / 5), math.log(5 / 3) / -math.log(2 / 5),
             math.log(5 / 3) / -math.log(3 / 5)]
    assert res["pmi"] == pytest.approx(sum(pmis) / 3)
    assert res["npmi"] == pytest.approx(sum(npmis) / 3)
    for (w1, w2), p, q in zip([("a", "b"), ("a", "c"), ("b", "c")], pmis, npmis):
        assert hand_pmi_npmi(w1, w2) == pytest.approx((p, q))
    t = res["per_topic"][0]
    assert t["n_pairs"] == 3 and t["skipped_pairs"] == 0
    assert res["window"] == 3 and res["n_windows"] == 5
    assert res["n_topics"] == 1 and res["n_topics_scored"] == 1
    assert "in-memory" in res["reference"]


def test_mean_over_topics_and_named_reference():
    topics = [["a", "b", "c"], ["d", "e", "f"]]
    res = coherence(topics, DOCS, window=3, reference="toy")
    per = []
    for t in topics:
        scores = [hand_pmi_npmi(x, y) for x, y in itertools.combinations(t, 2)]
        per.append((sum(s[0] for s in scores) / 3, sum(s[1] for s in scores) / 3))
    assert [t["pmi"] for t in res["per_topic"]] == pytest.approx([p[0] for p in per])
    assert res["pmi"] == pytest.approx((per[0][0] + per[1][0]) / 2)
    assert res["npmi"] == pytest.approx((per[0][1] + per[1][1]) / 2)
    assert res["reference"] == "toy"
    # a never co-occurring pair (d, f) has PMI log((0+1)/5 / (2/5 * 1/5)) = log 2.5 (add-one smoothing)
    assert hand_pmi_npmi("d", "f")[0] == pytest.approx(math.log(2.5))


def test_pairs_are_symmetric():
    c = CooccurrenceCounts(DOCS, "abcdef", window=3)
    for w1, w2 in itertools.permutations("abcdef", 2):
        assert c.pair_count(w1, w2) == c.pair_count(w2, w1)
        assert c.pair_scores(w1, w2) == pytest.approx(c.pair_scores(w2, w1))
    forward = coherence([list("abcde")], DOCS, window=3)
    backward = coherence([list("edcba")], DOCS, window=3)
    assert forward["pmi"] == pytest.approx(backward["pmi"])
    assert forward["npmi"] == pytest.approx(backward["npmi"])


def test_cooccurring_topic_scores_higher():
    rng = random.Random(0)
    filler = [f"f{i}" for i in range(50)]
    docs = []
    for i in range(40):
        doc = [rng.choice(filler) for _ in range(30)]
        if i % 2 == 0:  # x, y, z always together
            doc[10:13] = ["x", "y", "z"]
        else:  # p, q, r each far apart from the others
            doc[0], doc[15], doc[29] = "p", "q", "r"
        docs.append(doc)
    res = coherence([["x", "y", "z"], ["p", "q", "r"]], docs, window=10)
    good, bad = res["per_topic"]
    assert good["pmi"] > bad["pmi"]
    assert good["npmi"] > bad["npmi"]
    assert good["npmi"] > 0.5
    assert bad["npmi"] < 0


def test_window_edge_cases():
    # length == window: one window; length window + 1: two; shorter: one
    assert CooccurrenceCounts([list("abc")], "abc", window=3).n_windows == 1
    assert CooccurrenceCounts([list("abcd")], "abc", window=3).n_windows == 2
    assert CooccurrenceCounts([list("ab")], "abc", window=3).n_windows == 1
    assert CooccurrenceCounts([[], []], "abc", window=3).n_windows == 0
    # the ends of a long document never share a window
    c = CooccurrenceCounts([list("abcd")], "ad", window=3)
    assert c.pair_count("a", "d") == 0
    assert c.count("a") == 1 and c.count("d") == 1
    # windows do not cross documents
    c = CooccurrenceCounts([list("xxa"), list("bxx")], "ab", window=3)
    assert c.pair_count("a", "b") == 0 and c.n_windows == 2
    # window 1: every token is its own window
    c = CooccurrenceCounts([list("abab")], "ab", window=1)
    assert c.n_windows == 4 and c.count("a") == 2 and c.pair_count("a", "b") == 0
    # a word repeated inside a window counts once
    c = CooccurrenceCounts([list("aaab")], "ab", window=4)
    assert c.count("a") == 1 and c.pair_count("a", "b") == 1
    with pytest.raises(ValueError):
        CooccurrenceCounts(DOCS, "ab", window=0)


def test_pair_in_every_window_has_npmi_one():
    # (1 + 1) / 1 >= 1: -log P(w, w') <= 0, NPMI defined as 1
    res = coherence([["a", "b"]], [["a", "b"]], window=10)
    assert res["npmi"] == 1.0
    assert res["pmi"] == pytest.approx(math.log(2))


def test_missing_words():
    skip = coherence([["a", "b", "zz"], ["yy", "zz"]], DOCS, window=3)
    a, b = skip["per_topic"]
    assert a["n_pairs"] == 1 and a["skipped_pairs"] == 2 and a["missing_words"] == ["zz"]
    assert a["pmi"] == pytest.approx(math.log(2.5))
    assert b["pmi"] is None and b["npmi"] is None
    assert skip["n_topics_scored"] == 1 and skip["pmi"] == pytest.approx(math.log(2.5))
    assert skip["missing_words"] == ["yy", "zz"] and skip["skipped_pairs"] == 3
    zero = coherence([["a", "b", "zz"]], DOCS, window=3, missing="zero")
    assert zero["pmi"] == pytest.approx(math.log(2.5) / 3)
    assert zero["per_topic"][0]["zero_pairs"] == 2
    with pytest.raises(ValueError):
        coherence([["a", "b"]], DOCS, missing="nope")


def test_duplicate_word_in_topic():
    c = CooccurrenceCounts(DOCS, "aa", window=3)
    assert c.words == ["a"]
    res = coherence([["a", "a"]], DOCS, window=3)
    # count(a, a) = count(a) = 2: log((2+1)/5 / (2/5)^2) = log(3.75)
    assert res["pmi"] == pytest.approx(math.log(3.75))


def naive_counts(docs, window):
    wins = []
    for d in docs:
        if not d:
            continue
        if len(d) <= window:
            wins.append(set(d))
        else:
            wins.extend(set(d[i:i + window]) for i in range(len(d) - window + 1))
    return wins


@pytest.mark.parametrize("window,chunk", [(1, 0), (4, 0), (10, 0), (10, 7)])
def test_random_corpus_against_naive_count(window, chunk):
    rng = random.Random(window)
    vocab = [f"w{i}" for i in range(30)]
    docs = [[rng.choice(vocab) for _ in range(rng.randint(0, 25))] for _ in range(60)]
    interest = vocab[:12]
    c = CooccurrenceCounts(docs, interest, window=window, chunk_windows=chunk)
    wins = naive_counts(docs, window)
    assert c.n_windows == len(wins)
    for w in interest:
        assert c.count(w) == sum(w in s for s in wins)
    for w1, w2 in itertools.combinations(interest, 2):
        assert c.pair_count(w1, w2) == sum(w1 in s and w2 in s for s in wins)


def test_reference_from_path(tmp_path):
    path = tmp_path / "ref.dat"
    path.write_text("a b c d e\n\na b\ne f e\n", encoding="utf8")
    assert read_documents(path) == [d for d in DOCS if d]
    assert read_documents(path, limit=2) == DOCS[:2]
    from_file = coherence([["a", "b", "c"]], str(path), window=3)
    in_memory = coherence([["a", "b", "c"]], DOCS, window=3)
    assert from_file["pmi"] == pytest.approx(in_memory["pmi"])
    assert str(path) in from_file["reference"]
    counts = CooccurrenceCounts(DOCS, "abc", window=3)
    assert coherence([["a", "b", "c"]], counts)["pmi"] == pytest.approx(in_memory["pmi"])


def test_split_heldout_is_deterministic():
    docs = [[f"d{i}"] for i in range(100)]
    train, held = split_heldout(docs, 0.1, seed=3)
    assert len(held) == 10 and len(train) == 90
    assert sorted(train + held) == sorted(docs)
    assert train == sorted(train, key=docs.index) and held == sorted(held, key=docs.index)
    assert split_heldout(docs, 0.1, seed=3) == (train, held)
    assert split_heldout(docs, 0.1, seed=4)[1] != held
    assert split_heldout(docs, 0.0, seed=3) == (docs, [])
    assert len(split_heldout(docs[:3], 0.01, seed=0)[1]) == 1  # at least one held out
    with pytest.raises(ValueError):
        split_heldout(docs, 1.0, seed=0)
