"""The variational and online engine (docs/algorithms.md 4.1-4.15, Appendix A.5; issue 4 item 7).

Grammatons are checked against an independent recount of N_rule and U from
the entries' labels, the G' weights against Eqs. 7-8 and 11-13 written out
again here (own digamma), batch VB against the counts of the sampled trees,
and the learner end to end on generated corpora: it recovers the lexicon,
streams in bounded memory, learns new words after a resume, saves, warm
starts from MCMC and resumes from checkpoints exactly.
"""
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from spacy_ag.core.analyses import add
from spacy_ag.runs.mcmc_chain import pack_corpus
from spacy_ag.core.chart import REC_CACHED, REC_NEW
from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.core.grammatons import create_entry
from spacy_ag.runs.online_learner import OnlineLearner, OnlineSettings
from spacy_ag.core.state import NODE_FREE, NODE_HWM, OPEN, RULE, TAB_HWM, TABLE, TERM
from spacy_ag.core.variational import refresh_weights
from spacy_ag.evaluation import segmentation_scores
from spacy_ag.model import AdaptorGrammar
from spacy_ag.runs.online_runner import mode_settings, variational_arrays
from spacy_ag.serialize import state_arrays
from spacy_ag.synthetic import generate_corpus, make_lexicon
from spacy_ag.runs.signals import TrainingInterrupted

UNIGRAM = """
1 1 Sentence --> Word+
1 0 100 Word --> Char+
1 1 Char --> [:corpus:]
"""

COLLOC = """
1 1 Sentence --> Colloc+
1 0 50 Colloc --> Word+
1 0 50 Word --> Char+
1 1 Char --> [:corpus:]
@ Colloc K=20
@ Word K=15
"""

COLLOC_CHARS = "abcdef"


def raw(utterances):
    return ["".join(u) for u in utterances]


# ---------------------------------------------------------------------------
# independent reference computations


def psi(x):
    """Digamma written out again (recurrence, then the asymptotic series)."""
    acc = 0.0
    while x < 16.0:
        acc -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return acc + math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))


def test_reference_digamma_is_the_derivative_of_lgamma():
    for x in (0.3, 1.0, 2.5, 15.9, 16.1, 40.0, 1234.5):
        h = 1e-5 * max(1.0, x)
        numeric = (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)
        assert psi(x) == pytest.approx(numeric, rel=1e-7, abs=1e-7)
    assert psi(1.0) == pytest.approx(-0.5772156649015329, abs=1e-13)


def trie_terms(S, y):
    out = []
    while y > 0:
        out.append(int(S.trie_term[y]))
        y = int(S.trie_parent[y])
    return tuple(reversed(out))


def kids(S, x):
    out, c = [], int(S.node_child[x])
    while c >= 0:
        out.append(c)
        c = int(S.node_sib[c])
    return out


def check_grammatons(G, S, unique=True):
    """Recount N_rule (S.f) and U (S.tab_count) from every OPEN entry's label and check the pool.

    Returns {adaptor: [open entries]} and {entry: [entries its label references]}.
    """
    n_tab = int(S.counters[TAB_HWM])
    open_ = [k for k in range(n_tab) if S.tab_state[k] == OPEN]
    f = np.zeros_like(S.f)
    fA = np.zeros_like(S.fA)
    uses = Counter()
    refs = {}
    keys = {}
    label_nodes = set()

    def walk(x, owner):
        assert x not in label_nodes, f"node {x} belongs to two labels"
        label_nodes.add(x)
        kind = int(S.node_kind[x])
        if kind == TERM:
            return (int(S.node_sym[x]),), ("T", int(S.node_sym[x]))
        if kind == TABLE:
            k = int(S.node_table[x])
            assert 0 <= k < n_tab and S.tab_state[k] == OPEN, f"entry {owner} references a removed entry {k}"
            assert int(G.sym_adaptor[S.node_sym[x]]) == int(S.tab_adaptor[k])
            uses[k] += 1
            refs[owner].append(k)
            return trie_terms(S, int(S.tab_yield[k])), ("TAB", k)
        assert kind == RULE
        r = int(S.node_rule[x])
        assert int(G.rule_parent[r]) == int(S.node_sym[x])
        f[r] += 1
        fA[G.rule_parent[r]] += 1
        y, key = (), []
        for c in kids(S, x):
            cy, ck = walk(c, owner)
            y += cy
            key.append(ck)
        return y, ("R", r, tuple(key))

    by_ad = {ad: [] for ad in range(len(G.adaptor_nt))}
    for k in open_:
        label, ad = int(S.tab_label[k]), int(S.tab_adaptor[k])
        by_ad[ad].append(k)
        refs[k] = []
        assert S.node_kind[label] == RULE and int(S.node_sym[label]) == int(G.adaptor_nt[ad])
        y, key = walk(label, k)
        assert y == trie_terms(S, int(S.tab_yield[k])), f"entry {k}: label yield differs from its trie yield"
        if unique:
            assert (ad, key) not in keys, f"entries {keys.get((ad, key))} and {k} have one derivation"
        keys[(ad, key)] = k
        # the entry is a cache option of its yield
        j, listed = int(S.trie_head[S.tab_yield[k]]), []
        while j >= 0:
            listed.append(j)
            j = int(S.tab_next[j])
        assert k in listed
    np.testing.assert_array_equal(S.f, f)  # N_rule
    np.testing.assert_array_equal(S.fA, fA)
    for k in open_:
        assert S.tab_count[k] == uses[k], f"U of entry {k}: {S.tab_count[k]} != {uses[k]}"
    # no node leaks: every node below the high-water mark is in a label or free
    free = {int(x) for x in S.node_free[:S.counters[NODE_FREE]]}
    assert not free & label_nodes
    assert len(free) + len(label_nodes) == S.counters[NODE_HWM]
    assert all(S.sent_root < 0)
    return by_ad, refs


def expected_weights(G, S, V, corr):
    """gamma, E log theta + E log rho (lrho), E log pi (lw) and E log rho from Eqs. 7-8, 11-13."""
    gamma = V.alpha + corr * V.gt + S.f
    totals = Counter()
    for r, A in enumerate(G.rule_parent):
        totals[int(A)] += gamma[r]
    elog_theta = [psi(gamma[r]) - psi(totals[int(A)]) for r, A in enumerate(G.rule_parent)]
    lw, elog_rho = {}, []
    n_tab = int(S.counters[TAB_HWM])
    for ad in range(len(G.adaptor_nt)):
        entries = sorted((k for k in range(n_tab) if S.tab_state[k] == OPEN and S.tab_adaptor[k] == ad),
                         key=lambda k: V.rank[k])
        a, b = float(S.ad_a[ad]), float(S.ad_b[ad])
        F = [corr * V.ft[k] + S.tab_count[k] for k in entries]
        rest = 0.0
        for i, k in enumerate(entries, start=1):
            nu1 = 1 - a + F[i - 1]
            nu2 = b + i * a + sum(F[i:])
            lw[k] = psi(nu1) - psi(nu1 + nu2) + rest
            rest += psi(nu2) - psi(nu1 + nu2)
        elog_rho.append(rest)
    lrho = [elog_theta[r] + (elog_rho[G.sym_adaptor[A]] if G.sym_adaptor[A] >= 0 else 0.0)
            for r, A in enumerate(G.rule_parent)]
    return gamma, np.array(lrho), lw, np.array(elog_rho)


def assert_weights_match(G, S, V, corr):
    gamma, lrho, lw, elog_rho = expected_weights(G, S, V, corr)
    np.testing.assert_allclose(V.gamma, gamma, rtol=1e-12)
    np.testing.assert_allclose(V.elog_rho, elog_rho, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(V.lrho, lrho, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(V.rho, np.exp(lrho), rtol=1e-9)
    ks = sorted(lw)
    np.testing.assert_allclose(V.lw[ks], [lw[k] for k in ks], rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def colloc(core):
    """A two-adaptor grammar (Colloc, Word; a > 0) over a small alphabet, with a generated corpus."""
    compiled = CompiledGrammar(core.colloc_grammar(COLLOC_CHARS, a=0.1, b=5.0, a2=0.2, b2=10.0))
    lexicon = make_lexicon(25, alphabet=COLLOC_CHARS, seed=3)
    gold = generate_corpus(lexicon, 120, seed=5, collocations=8)
    words, ptr = pack_corpus(compiled, [list(s) for s in raw(gold)])
    return compiled, words, ptr


def run_passes(learner, words, ptr, passes, batch_size, after_step=None):
    n = len(ptr) - 1
    for p in range(passes):
        order = learner.shuffled(n, p)
        for s in range(0, n, batch_size):
            line = learner.step(words, ptr, order[s:s + batch_size], n)
            if after_step:
                after_step(line)


def v_arrays(model):
    return variational_arrays(model.variational, model.state.counters[TAB_HWM])


def same_arrays(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


# ---------------------------------------------------------------------------
# expectations and weights (4.3, 4.6-4.7, A.5)


def test_hand_built_grammatons_give_closed_form_weights(core):
    """Word entries 'ab' (f~ 2) and 'c' (f~ 0), Colloc entry 'abc' = [ab][c] (f~ 1), a = 0, b = 1.

    U = 1 for both words, so F = (3, 1): nu1 = (4, 2), nu2 = (2, 1); Colloc: nu1 = 2, nu2 = 1.
    At integer arguments psi(n) - psi(m) = -(1/m + ... + 1/(n-1)), so every weight is a harmonic sum.
    """
    compiled = CompiledGrammar(core.colloc_grammar("abc", a=0.0, b=1.0))
    G = compiled.arrays
    learner = OnlineLearner(compiled, OnlineSettings(), seed=0)
    S, V = learner.state, learner.V
    stack = core.stack_for(S)
    t = compiled.term_index
    word, coll = compiled.adapted.index("Word"), compiled.adapted.index("Colloc")

    def word_entry(w):
        label = core.build(compiled, S, ("R", "Word -> Phonemes", [core.chars_spec(w, "Phonemes", "Phoneme")]))
        return int(create_entry(G, S, V, word, core._trie_node(compiled, S, [t[c] for c in w]), label, stack))

    k_ab, k_c = word_entry("ab"), word_entry("c")
    label = core.build(compiled, S, ("R", "Colloc -> Words", [
        ("R", "Words -> Word Words", [("TAB", k_ab), ("R", "Words -> Word", [("TAB", k_c)])])]))
    k_abc = int(create_entry(G, S, V, coll, core._trie_node(compiled, S, [t["a"], t["b"], t["c"]]), label, stack))
    V.ft[k_ab], V.ft[k_c], V.ft[k_abc] = 2.0, 0.0, 1.0
    refresh_weights(G, S, V, 1.0)

    check_grammatons(G, S)
    assert (S.tab_count[k_ab], S.tab_count[k_c], S.tab_count[k_abc]) == (1, 1, 0)
    h = lambda m, n: sum(1.0 / i for i in range(m, n))  # psi(n) - psi(m)
    assert V.lw[k_ab] == pytest.approx(-h(4, 6), abs=1e-12)  # -(1/4 + 1/5)
    assert V.lw[k_c] == pytest.approx(-h(2, 6) - h(2, 3), abs=1e-12)
    assert V.elog_rho[word] == pytest.approx(-h(2, 6) - h(1, 3), abs=1e-12)
    assert V.lw[k_abc] == pytest.approx(-0.5, abs=1e-12)
    assert V.elog_rho[coll] == pytest.approx(-1.5, abs=1e-12)
    # sub-normalised (Jensen): entries plus base mass below 1
    assert math.exp(V.lw[k_ab]) + math.exp(V.lw[k_c]) + math.exp(V.elog_rho[word]) < 1
    # rules: gamma = alpha (1) + N_rule; adapted parents add E log rho
    rid = lambda text: core.rule_id(compiled, text)
    assert V.lrho[rid("Word -> Phonemes")] == pytest.approx(-h(2, 6) - h(1, 3), abs=1e-12)  # sole rule
    assert V.lrho[rid("Colloc -> Words")] == pytest.approx(-1.5, abs=1e-12)
    assert V.lrho[rid("Words -> Word")] == pytest.approx(-h(2, 4), abs=1e-12)
    assert V.lrho[rid("Phonemes -> Phoneme")] == pytest.approx(-h(3, 5), abs=1e-12)
    assert V.lrho[rid("Phonemes -> Phoneme Phonemes")] == pytest.approx(-h(2, 5), abs=1e-12)
    assert V.lrho[rid("Phoneme -> c")] == pytest.approx(-h(2, 6), abs=1e-12)
    assert V.lrho[rid("Sentence -> Colloc")] == pytest.approx(-1.0, abs=1e-12)
    np.testing.assert_allclose(V.rho, np.exp(V.lrho))
    assert_weights_match(G, S, V, 1.0)


@pytest.mark.parametrize("scale", ["none", "bias"])
def test_weights_after_each_minibatch_follow_eqs_7_8_and_11_to_13(colloc, scale):
    compiled, words, ptr = colloc
    G = compiled.arrays
    settings = OnlineSettings(batch_size=15, tau=4, kappa=0.7, samples=4, refine_every=3,
                              truncation={"Colloc": 10, "Word": 10}, statistics_scale=scale)
    learner = OnlineLearner(compiled, settings, seed=4)
    corrections = []

    def after(line):
        corrections.append(learner.correction())
        assert_weights_match(G, learner.state, learner.V, learner.correction())

    run_passes(learner, words, ptr, 1, 15, after)
    assert (np.array(corrections) > 1.0).all() if scale == "bias" else corrections == [1.0] * len(corrections)
    # the weights were built from real statistics
    assert learner.V.gt.sum() > 0 and (learner.V.ft > 0).sum() >= 10


def test_batch_vb_counts_are_the_plain_sums_of_the_sampled_trees(core):
    """B = D and kappa = 0: f~ of each Word entry is the number of sampled Words with its yield / S."""
    compiled = CompiledGrammar(core.unigram_grammar("abc"))
    G = compiled.arrays
    lexicon = make_lexicon(8, alphabet="abc", seed=2)
    sentences = [list(s) for s in raw(generate_corpus(lexicon, 40, seed=3))]
    words, ptr = pack_corpus(compiled, sentences)
    n = len(sentences)
    settings = mode_settings("vb", OnlineSettings(samples=4, default_truncation=10_000), n)
    assert settings.kappa == 0 and settings.batch_size == n
    learner = OnlineLearner(compiled, settings, seed=7)
    word_sym = compiled.nt_index["Word"]
    rid = lambda text: core.rule_id(compiled, text)
    batch = np.arange(n, dtype=np.int64)
    for it in range(1, 4):
        # the E-step only reads the state: draw the step's trees ourselves first
        rec, rec_ptr, samp_len, _, status = learner.sample(words, ptr, batch, learner.minibatches + 1)
        assert (status == 0).all()
        expected = Counter()
        n_new = 0
        for d in range(n):
            r = rec_ptr[d]
            for s in range(settings.samples):
                for row in rec[r:r + samp_len[d, s]]:
                    if row[1] != word_sym:
                        continue
                    if row[0] == REC_CACHED:
                        expected[trie_terms(learner.state, int(learner.state.tab_yield[row[2]]))] += 0.25
                    elif row[0] == REC_NEW:
                        expected[tuple(int(w) for w in words[ptr[d] + row[4]:ptr[d] + row[5]])] += 0.25
                        n_new += 1
                r += samp_len[d, s]
        learner.step(words, ptr, batch, n)
        S, V = learner.state, learner.V
        by_ad, _ = check_grammatons(G, S)
        got = {trie_terms(S, int(S.tab_yield[k])): V.ft[k] for k in by_ad[0]}
        assert set(got) >= set(expected)
        for y, value in got.items():
            assert value == pytest.approx(expected.get(y, 0.0), abs=1e-9), (it, y)
        # rule counts: one Sentence -> Word per tree, one Sentence rule per Word, one Word -> Phonemes per new Word
        assert V.gt[rid("Sentence -> Word")] == pytest.approx(n)
        assert V.gt[rid("Sentence -> Word")] + V.gt[rid("Sentence -> Word Sentence")] == pytest.approx(
            sum(expected.values()))
        assert V.gt[rid("Word -> Phonemes")] == pytest.approx(n_new / settings.samples)
        assert_weights_match(G, S, V, 1.0)
    assert sum(expected.values()) > n  # sentences were split into several words


# ---------------------------------------------------------------------------
# grammaton invariants and truncation (4.5, 4.9)


@pytest.mark.parametrize("K", [5, 10])
def test_grammaton_invariants_after_every_minibatch_and_truncation_after_refine(colloc, K):
    compiled, words, ptr = colloc
    G = compiled.arrays
    settings = OnlineSettings(batch_size=10, tau=4, kappa=0.7, samples=4, refine_every=3,
                              truncation={"Colloc": K, "Word": K})
    learner = OnlineLearner(compiled, settings, seed=2)
    seen = {"refines": 0, "pruned": 0, "largest": 0, "rederived": 0}

    def after(line):
        S, V = learner.state, learner.V
        by_ad, _ = check_grammatons(G, S)
        for ad, entries in by_ad.items():
            seen["largest"] = max(seen["largest"], len(entries))
            assert np.isfinite(V.lw[entries]).all() and (V.ft[entries] >= 0).all()
            if "pruned" in line:  # entries beyond K are exactly the referenced ones
                assert sum(1 for k in entries if S.tab_count[k] == 0) <= K, (ad, line)
        if "pruned" in line:
            seen["refines"] += 1
            seen["pruned"] += line["pruned"]
            seen["rederived"] += line["rederived"]

    run_passes(learner, words, ptr, 2, 10, after)
    assert seen["refines"] == 8
    assert seen["largest"] > 3 * K and seen["pruned"] > 0  # the truncation had work to do


def test_pruning_keeps_the_top_K_by_score_and_every_referenced_entry(colloc):
    """Lambda = f~ log(eps |z| + 1), top-down; a lower entry used by a kept entry survives beyond K."""
    compiled, words, ptr = colloc
    G = compiled.arrays
    K = {"Colloc": 6, "Word": 4}
    settings = OnlineSettings(batch_size=10, tau=4, kappa=0.7, samples=4, refine_every=0, rederive=False,
                              truncation=K)
    learner = OnlineLearner(compiled, settings, seed=9)
    n = len(ptr) - 1
    order = learner.shuffled(n, 0)
    beyond_k = 0
    for start in (0, 30, 60):
        for s in range(start, start + 30, 10):
            learner.step(words, ptr, order[s:s + 10], n)
        S, V = learner.state, learner.V
        by_ad, refs = check_grammatons(G, S)
        eps = learner.step_size(learner.minibatches)
        score = {k: V.ft[k] * math.log(eps * len(trie_terms(S, int(S.tab_yield[k]))) + 1)
                 for ents in by_ad.values() for k in ents}
        uses = {k: int(S.tab_count[k]) for k in score}
        keep = set()
        for ad in G.adaptor_order:
            ranked = sorted(sorted(by_ad[ad], key=lambda k: V.rank[k]), key=lambda k: -score[k])
            limit = K[compiled.adapted[ad]]
            for i, k in enumerate(ranked):
                if i < limit or uses[k] > 0:
                    keep.add(k)
                    beyond_k += i >= limit
                else:
                    for child in refs[k]:
                        uses[child] -= 1
        learner.refine(eps)
        by_ad, _ = check_grammatons(G, learner.state)
        assert {k for ents in by_ad.values() for k in ents} == keep
        for ents in by_ad.values():  # the new stick order is by decreasing score
            ranked = sorted(ents, key=lambda k: learner.V.rank[k])
            assert all(score[x] >= score[y] for x, y in zip(ranked, ranked[1:]))
        assert_weights_match(G, learner.state, learner.V, 1.0)
    assert beyond_k > 0  # referenced words were kept beyond K


# ---------------------------------------------------------------------------
# reproducibility


def test_each_sentence_seed_is_the_mix_of_seed_minibatch_and_position():
    """The E-step's per-sentence streams (drawn in one kernel) are mix_seeds(seed, stream, i), whatever
    the sign or size of the stream number (held-out batches count down from -1)."""
    from spacy_ag.runs.online_learner import mix_seeds
    from spacy_ag.core.rng import stream_seed, stream_seeds

    for seed, stream in ((3, 1), (2 ** 64 - 1, 2 ** 40), (0, -1), (12345, -7)):
        got = stream_seeds(np.uint64(mix_seeds(seed, stream)), 9)
        assert got.dtype == np.uint64 and [int(x) for x in got] == [mix_seeds(seed, stream, i) for i in range(9)]
        assert int(stream_seed(np.uint64(mix_seeds(seed)), stream)) == mix_seeds(seed, stream)  # the kernel's stream keys
    assert len(set(int(x) for x in stream_seeds(np.uint64(mix_seeds(3, 1)), 1000))) == 1000


def test_batch_loglik_sums_the_best_tree_of_each_parsed_sentence():
    """4.15, as the minibatch kernel and the held-out score compute it: unparsed sentences
    (whose scores are never written) count nothing."""
    from spacy_ag.core.variational import OK, UNPARSEABLE, batch_loglik

    scores = np.array([[-3.0, -1.5, -2.0], [1e9, 1e9, 1e9], [-7.25, -9.0, -7.5]])
    status = np.array([OK, UNPARSEABLE, OK])
    assert batch_loglik(scores, status) == -1.5 + -7.25
    assert batch_loglik(scores, np.full(3, UNPARSEABLE)) == 0.0


def test_minibatches_in_one_call_equal_one_call_each(colloc, monkeypatch):
    """`steps` runs the minibatches up to each refinement in one kernel call. Pools that must grow
    inside a call (started tiny here) and refinements inside the list change nothing: the same
    state, statistics and counters, bit for bit, as `step` on each minibatch."""
    from spacy_ag.runs import online_learner as online
    from spacy_ag.core.rng import make_rng
    from spacy_ag.core.state import new_state

    compiled, words, ptr = colloc
    settings = OnlineSettings(batch_size=6, tau=4, kappa=0.7, refine_every=7, samples=3)
    G, n = compiled.arrays, len(ptr) - 1

    def learner():
        a, b = compiled.adaptor_params()
        tiny = new_state(G.rule_parent.shape[0], G.n_nt, G.adaptor_nt.shape[0], 0, a, b, make_rng(2),
                         node_cap=128, tab_cap=16, trie_cap=32)
        return OnlineLearner(compiled, settings, seed=2, state=tiny)

    calls = []
    kernel = online.minibatches

    def counted(*args):
        out = kernel(*args)
        calls.append((out[0], len(args[6]) - 1))  # minibatches finished whole, minibatches given
        return out

    monkeypatch.setattr(online, "minibatches", counted)
    together, apart = learner(), learner()
    for p in range(2):
        order = together.shuffled(n, p)
        batches = [order[s:s + 6] for s in range(0, n, 6)]
        line = together.steps(words, ptr, batches, n)
        for batch in batches:
            last = apart.step(words, ptr, batch, n)
        assert {k: v for k, v in line.items() if k != "seconds"} == {k: v for k, v in last.items() if k != "seconds"}
    assert any(0 < done < given for done, given in calls)  # the pools grew inside a call
    assert any(given > 1 and done == given for done, given in calls)
    assert same_arrays(state_arrays(together.state), state_arrays(apart.state))
    assert same_arrays(variational_arrays(together.V, together.state.counters[TAB_HWM]),
                       variational_arrays(apart.V, apart.state.counters[TAB_HWM]))
    assert together.progress() == apart.progress() and together.minibatches == 2 * len(batches)
    # a call keeps the stick order up to date as entries join: the weights are those made anew
    weights = together.V.lw.copy(), together.V.rho.copy()
    refresh_weights(G, together.state, together.V, together.correction())
    assert np.array_equal(weights[0], together.V.lw) and np.array_equal(weights[1], together.V.rho)


def test_the_stick_order_with_new_entries_is_the_order_made_anew(colloc):
    """`with_new_entries` after entries joined equals `entries_of_all_adaptors`; given tables
    that are not the new entries in rank order (one missing, out of order, an old entry among
    them), it makes the order anew."""
    from spacy_ag.core.grammatons import NEXT_RANK, entries_of_all_adaptors, with_new_entries
    from spacy_ag.core.state import TAB_FREE, tables_taken_since

    compiled, words, ptr = colloc
    learner = OnlineLearner(compiled, OnlineSettings(batch_size=6, refine_every=0, samples=3), seed=4)
    S, V, n_ad = learner.state, learner.V, compiled.arrays.adaptor_nt.shape[0]
    learner.step(words, ptr, np.arange(12), len(ptr) - 1)
    before_ptr = np.empty(n_ad + 1, np.int64)
    before = entries_of_all_adaptors(S, V, n_ad, before_ptr)
    first_rank = int(V.counters[NEXT_RANK])
    counters = int(S.counters[TAB_FREE]), int(S.counters[TAB_HWM])
    learner.step(words, ptr, np.arange(12, 40), len(ptr) - 1)
    S, V = learner.state, learner.V
    assert V.counters[NEXT_RANK] > first_rank  # entries joined, of both adaptors
    made_anew_ptr = np.empty(n_ad + 1, np.int64)
    made_anew = entries_of_all_adaptors(S, V, n_ad, made_anew_ptr)
    assert np.all(np.diff(made_anew_ptr) > np.diff(before_ptr))
    joined = tables_taken_since(S, *counters)
    assert len(joined) == V.counters[NEXT_RANK] - first_rank
    kept, kept_ptr = with_new_entries(S, V, before, before_ptr, first_rank, joined)
    assert np.array_equal(kept, made_anew) and np.array_equal(kept_ptr, made_anew_ptr)
    swapped = before.copy()  # the order given is kept, not made anew
    swapped[[0, 1]] = swapped[[1, 0]]
    kept, _ = with_new_entries(S, V, swapped, before_ptr, first_rank, joined)
    assert kept[0] == made_anew[1] and kept[1] == made_anew[0] and np.array_equal(kept[2:], made_anew[2:])
    same, same_ptr = with_new_entries(S, V, made_anew, made_anew_ptr, int(V.counters[NEXT_RANK]), joined[:0])
    assert same is made_anew and same_ptr is made_anew_ptr
    sentinel = before[:1], np.array([0, 1] + [1] * (n_ad - 1), np.int64)  # would be kept if trusted
    for wrong in (joined[1:], joined[::-1], np.concatenate([joined[:-1], before[:1]])):
        anew, anew_ptr = with_new_entries(S, V, *sentinel, first_rank, wrong)
        assert np.array_equal(anew, made_anew) and np.array_equal(anew_ptr, made_anew_ptr)


def test_tables_taken_since_lists_reused_then_fresh_tables_in_the_order_taken():
    from spacy_ag.core.rng import make_rng
    from spacy_ag.core.state import TAB_FREE, alloc_table, free_table, new_state, tables_taken_since

    S = new_state(3, 2, 1, 1, np.zeros(1), np.ones(1), make_rng(0), tab_cap=16)
    first = [alloc_table(S) for _ in range(5)]
    free_table(S, first[1])
    free_table(S, first[3])
    counters = int(S.counters[TAB_FREE]), int(S.counters[TAB_HWM])
    taken = [alloc_table(S) for _ in range(4)]
    assert taken == [first[3], first[1], 5, 6]
    assert tables_taken_since(S, *counters).tolist() == taken


def test_same_seed_same_result_whatever_the_number_of_threads():
    gold = generate_corpus(make_lexicon(25, alphabet="abcdefg", seed=7), 120, seed=11, collocations=6)
    settings = OnlineSettings(batch_size=10, tau=2, kappa=0.8, refine_every=3, samples=4, passes=1)
    runs = [AdaptorGrammar(COLLOC, inference="online", online=replace(settings, workers=w)).fit(raw(gold), seed=s)
            for w, s in ((1, 3), (2, 3), (2, 4))]
    one, two, other = runs
    assert same_arrays(v_arrays(one), v_arrays(two))
    assert same_arrays(state_arrays(one.state), state_arrays(two.state))
    assert one.training_segmentation() == two.training_segmentation()
    assert one.segment(raw(gold[:20])) == two.segment(raw(gold[:20]))
    assert not same_arrays(v_arrays(one), v_arrays(other))


# ---------------------------------------------------------------------------
# learning


def test_online_training_recovers_a_generated_lexicon():
    lexicon = make_lexicon(30, alphabet="abcdefghij", seed=1)
    gold = generate_corpus(lexicon, 400, seed=12)
    settings = OnlineSettings(batch_size=20, tau=64, kappa=0.6, refine_every=5, samples=10,
                              default_truncation=100, passes=2)
    model = AdaptorGrammar(UNIGRAM, inference="online", online=settings).fit(raw(gold), seed=1)
    scores = segmentation_scores(model.training_segmentation(), gold)
    # (a learner whose f~ never changes stays below 0.56 with at most 3 true words in its top 30)
    assert scores["token_f"] > 0.65, scores
    learned = {entry["yield"] for entry in model.cache(top=30)}
    assert len(learned & set(lexicon)) >= 14
    assert model.trace and model.trace[-1]["pass"] == 2


def test_partial_fit_streams_lazily_with_bounded_grammatons_and_memory():
    gold = generate_corpus(make_lexicon(25, alphabet="abcdefg", seed=7), 100, seed=11, collocations=6)
    texts = raw(gold)
    settings = OnlineSettings(batch_size=10, tau=8, kappa=0.7, refine_every=5, samples=4)
    # one call over a lazy generator of 12 passes
    consumed = [0]

    def stream(passes):
        for _ in range(passes):
            for t in texts:
                consumed[0] += 1
                yield t

    lines = []
    model = AdaptorGrammar(COLLOC, inference="online", online=settings)
    model.partial_fit(stream(12), corpus_size=100,
                      callback=lambda line: lines.append((line["minibatch"], consumed[0], line["grammaton"])))
    refines = [entry for entry in lines if entry[0] % 5 == 0]
    assert len(refines) >= 24 and model.progress["minibatches"] == 120
    for minibatch, read, sizes in refines:
        assert read <= 10 * (minibatch + 1), "the stream is read ahead of the minibatches"
        assert sizes["Colloc"] <= 20  # nothing references the top adaptor's entries
    assert lines[0][1] < len(texts)
    # many calls: exact truncation and a node pool that stops growing
    model = AdaptorGrammar(COLLOC, inference="online", online=settings)
    hwm = []
    for p in range(12):
        model.partial_fit(iter(texts), corpus_size=100, seed=p)  # 10 minibatches: ends with a refine
        S = model.state
        by_ad, _ = check_grammatons(model.compiled.arrays, S)
        for name, K in (("Colloc", 20), ("Word", 15)):
            assert sum(1 for k in by_ad[model.compiled.adapted.index(name)] if S.tab_count[k] == 0) <= K
        hwm.append((int(S.counters[NODE_HWM]), int(S.counters[TAB_HWM])))
    assert model.progress["minibatches"] == 120
    assert hwm[-1][0] <= 1.05 * hwm[3][0] and hwm[-1][1] <= 1.05 * hwm[3][1], hwm


def test_resume_adds_new_words(tmp_path):
    lexicon = make_lexicon(40, alphabet="abcdefghij", seed=3)
    first, second = lexicon[0::2], lexicon[1::2]
    settings = OnlineSettings(batch_size=20, tau=64, kappa=0.6, refine_every=5, samples=10,
                              default_truncation=100, passes=2)
    model = AdaptorGrammar(UNIGRAM, inference="online", online=settings)
    model.fit(raw(generate_corpus(first, 300, seed=14)), seed=3)
    model.save(tmp_path / "m")
    model = AdaptorGrammar.load(tmp_path / "m")
    test = generate_corpus(second, 60, seed=202)
    before = segmentation_scores(model.segment(raw(test)), test)["token_f"]
    known_before = {e["yield"] for e in model.cache()} & set(second)
    model.partial_fit((t for t in raw(generate_corpus(second, 300, seed=102))), seed=5)
    after = segmentation_scores(model.segment(raw(test)), test)["token_f"]
    known_after = {e["yield"] for e in model.cache()} & set(second)
    assert len(known_before) <= 5 and len(known_after) >= 14, (known_before, known_after)
    assert after > 0.55 and after > before + 0.4, (before, after)
    check_grammatons(model.compiled.arrays, model.state)


# ---------------------------------------------------------------------------
# saving and held-out likelihood (4.15)


@pytest.mark.parametrize("inference", ["vb", "online"])
def test_save_load_round_trip_and_heldout_likelihood(tmp_path, inference):
    lexicon = make_lexicon(20, alphabet="abcdefg", seed=4)
    gold = generate_corpus(lexicon, 100, seed=8)
    settings = OnlineSettings(batch_size=10, tau=4, kappa=0.7, refine_every=3, samples=4, passes=2,
                              default_truncation=60)
    model = AdaptorGrammar(UNIGRAM, inference=inference, online=settings).fit(raw(gold), seed=2)
    model.save(tmp_path / "m")
    loaded = AdaptorGrammar.load(tmp_path / "m")
    texts = raw(generate_corpus(lexicon, 30, seed=9))
    assert loaded.inference == inference and loaded.online == settings
    assert loaded.segment(texts) == model.segment(texts)
    assert loaded.parse(texts[:10]) == model.parse(texts[:10])
    assert same_arrays(v_arrays(loaded), v_arrays(model))
    assert loaded.cache() == model.cache()
    data = model.to_bytes()
    assert loaded.to_bytes() == data and AdaptorGrammar.from_bytes(data).to_bytes() == data
    # held-out likelihood: in-domain text scores higher than random characters of the same lengths
    rng = np.random.default_rng(0)
    noise = ["".join(rng.choice(list("abcdefg"), size=len(t))) for t in texts]
    good, bad = model.heldout_loglik(texts), model.heldout_loglik(noise)
    assert good == loaded.heldout_loglik(texts)
    assert good["heldout_terminals"] == bad["heldout_terminals"] == sum(map(len, texts))
    assert good["heldout_unparseable"] == bad["heldout_unparseable"] == 0
    assert np.isfinite(good["heldout_loglik"]) and good["heldout_loglik"] < 0
    assert bad["heldout_loglik"] < good["heldout_loglik"] - 0.5 * good["heldout_terminals"]


# ---------------------------------------------------------------------------
# warm start from MCMC (4.12)


def _canonical(S, x, memo):
    """A derivation with every table reference replaced by the referenced label's derivation."""
    kind = int(S.node_kind[x])
    if kind == TERM:
        return ("T", int(S.node_sym[x]))
    if kind == TABLE:
        k = int(S.node_table[x])
        if k not in memo:
            memo[k] = (int(S.tab_adaptor[k]), _canonical(S, int(S.tab_label[k]), memo))
        return ("TAB", memo[k])
    return ("R", int(S.node_rule[x]), tuple(_canonical(S, c, memo) for c in kids(S, x)))


def _sentence_uses(S, n_rules):
    """Table nodes (per table) and rule uses in the sentences' own analyses (not inside labels)."""
    tables, rules = Counter(), np.zeros(n_rules)
    for root in S.sent_root:
        todo = [int(root)] if root >= 0 else []
        while todo:
            x = todo.pop()
            if S.node_kind[x] == TABLE:
                tables[int(S.node_table[x])] += 1
            elif S.node_kind[x] == RULE:
                rules[int(S.node_rule[x])] += 1
                todo.extend(kids(S, x))
    return tables, rules


@pytest.fixture(scope="module")
def mcmc_model():
    gold = generate_corpus(make_lexicon(25, alphabet="abcdefg", seed=7), 100, seed=11, collocations=6)
    return AdaptorGrammar(COLLOC).fit(raw(gold), iterations=5, seed=3), gold


def test_warm_start_turns_mcmc_tables_into_entries(mcmc_model):
    model, _ = mcmc_model
    S, compiled = model.state, model.compiled
    G = compiled.arrays
    before = {name: np.array(a) for name, a in state_arrays(S).items()}
    tables, rules = _sentence_uses(S, G.rule_parent.shape[0])
    memo = {}
    dish_customers = Counter()
    n_tab = int(S.counters[TAB_HWM])
    open_tables = [k for k in range(n_tab) if S.tab_state[k] == OPEN]
    for k in open_tables:
        dish_customers[(int(S.tab_adaptor[k]), _canonical(S, int(S.tab_label[k]), memo))] += tables[k]
    learner = OnlineLearner.from_mcmc(compiled, OnlineSettings(), S, seed=0)
    assert same_arrays(state_arrays(S), before)  # the MCMC state is left alone
    T, V = learner.state, learner.V
    by_ad, _ = check_grammatons(G, T)
    entries = [k for ents in by_ad.values() for k in ents]
    assert sum(tables.values()) > len(S.sent_root)
    assert V.ft[entries].sum() == pytest.approx(sum(tables.values()))  # f~ = sentence customers
    np.testing.assert_allclose(V.gt, rules)  # g~ = rule uses of the sentences
    memo_t = {}
    got = Counter()
    for k in entries:
        got[(int(T.tab_adaptor[k]), _canonical(T, int(T.tab_label[k]), memo_t))] += V.ft[k]
    assert set(got) == set(dish_customers) and len(entries) < len(open_tables)
    for dish, n in dish_customers.items():
        assert got[dish] == pytest.approx(n)
    for ad, ents in by_ad.items():  # stick order by decreasing f~ + U
        ranked = sorted(ents, key=lambda k: V.rank[k])
        load = [V.ft[k] + T.tab_count[k] for k in ranked]
        assert load == sorted(load, reverse=True)
    assert_weights_match(G, T, V, 1.0)


def test_warm_start_merges_every_copy_of_a_dish(core):
    compiled = CompiledGrammar(core.unigram_grammar("ab"))
    G = compiled.arrays
    S = core.empty_state(compiled, n_sentences=4)
    stack = core.stack_for(S)
    for d in range(4):  # four sentences "ab", each opening its own Word table labelled ab
        root = core.build(compiled, S, ("R", "Sentence -> Word", [
            ("NEW", "Word -> Phonemes", [core.chars_spec("ab", "Phonemes", "Phoneme")])]))
        add(G, S, root, False, stack)
        S.sent_root[d] = root
    learner = OnlineLearner.from_mcmc(compiled, OnlineSettings(), S, seed=0)
    by_ad, _ = check_grammatons(G, learner.state)
    assert [learner.V.ft[k] for k in by_ad[0]] == [4.0]


def test_mcmc_model_continues_online(mcmc_model, tmp_path):
    model, gold = mcmc_model
    model.save(tmp_path / "mcmc")
    for how in ("partial_fit", "fit"):
        warm = AdaptorGrammar.load(tmp_path / "mcmc")
        n_tables = int((warm.state.tab_state == OPEN).sum())
        warm.inference = "online"
        warm.online = OnlineSettings(batch_size=10, tau=8, kappa=0.7, refine_every=5, samples=4, passes=1)
        if how == "fit":
            warm.fit(raw(gold), seed=1)
        else:
            warm.partial_fit(raw(gold[:50]), seed=1)
        assert warm.variational is not None and warm.progress["minibatches"] >= 5
        S = warm.state
        by_ad, _ = check_grammatons(warm.compiled.arrays, S)
        for name, K in (("Colloc", 20), ("Word", 15)):  # the last minibatch was refined
            ents = by_ad[warm.compiled.adapted.index(name)]
            assert len(ents) > 0 and sum(1 for k in ents if S.tab_count[k] == 0) <= K
        assert len(warm.cache("Word")) < n_tables
        assert len(warm.segment(raw(gold[:5]))) == 5


# ---------------------------------------------------------------------------
# checkpoints (online_training.py)


@pytest.fixture(scope="module")
def small_unigram():
    gold = generate_corpus(make_lexicon(20, alphabet="abcdef", seed=7), 60, seed=11)
    settings = OnlineSettings(batch_size=10, tau=2, kappa=0.8, refine_every=2, default_truncation=50,
                              passes=2, samples=3)
    reference = AdaptorGrammar(UNIGRAM, inference="online", online=settings).fit(raw(gold), seed=1)
    return raw(gold), settings, reference


def _interrupted_then_resumed(texts, settings, tmp_path, stop_at):
    def interrupt(line):
        if line["minibatch"] == stop_at:
            raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted):
        AdaptorGrammar(UNIGRAM, inference="online", online=settings).fit(
            texts, seed=1, callback=interrupt, checkpoint_dir=tmp_path, checkpoint_every=3)
    return AdaptorGrammar(UNIGRAM, inference="online", online=settings).fit(
        texts, seed=1, checkpoint_dir=tmp_path, checkpoint_every=3, resume=True)


def _assert_same_run(resumed, reference, texts):
    assert resumed.progress == reference.progress
    assert same_arrays(v_arrays(resumed), v_arrays(reference))
    assert same_arrays(state_arrays(resumed.state), state_arrays(reference.state))
    assert resumed.training_segmentation() == reference.training_segmentation()
    assert resumed.segment(texts) == reference.segment(texts)


def test_online_fit_resumes_from_its_checkpoint_exactly(small_unigram, tmp_path):
    texts, settings, reference = small_unigram
    assert reference.progress["minibatches"] == 12
    resumed = _interrupted_then_resumed(texts, settings, tmp_path, stop_at=4)  # mid-pass, off the checkpoint grid
    _assert_same_run(resumed, reference, texts)


def test_online_fit_resumes_after_an_interrupt_at_the_end_of_a_pass(small_unigram, tmp_path, monkeypatch):
    texts, settings, reference = small_unigram
    calls = Counter()
    shuffled = OnlineLearner.shuffled

    def guarded(self, n, epoch):  # a resume that never ends calls this again and again
        calls["shuffled"] += 1
        if calls["shuffled"] > 50:
            raise RuntimeError("resume does not advance")
        return shuffled(self, n, epoch)

    monkeypatch.setattr(OnlineLearner, "shuffled", guarded)
    resumed = _interrupted_then_resumed(texts, settings, tmp_path, stop_at=6)  # 60 sentences / 10: end of pass 1
    _assert_same_run(resumed, reference, texts)
