"""Exact identities of the sampler state (docs/algorithms.md 1.2, 3.1, 3.7-3.9, 3.14, 6; Appendix A.1-A.3, A.7).

Hand-made analyses are written into the node pool with `core.build` (tests/conftest.py);
`core.build_detached` produces the library's form of a detached copy holding every
customer of a closed table (the New/Join case of 3.7).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from spacy_ag.archive import MEASUREMENTS
from spacy_ag.core.analyses import (
    SAME_ANALYSIS, SAME_TABLES, SAME_VALUE, add, equal_trees, fill_rho, log_r, remove,
)
from spacy_ag.runs.mcmc_chain import Chain, SamplerSettings, pack_corpus
from spacy_ag.core.chart import inside
from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.core.hyper import log_posterior, log_seating, size_histogram
from spacy_ag.core.sampler import N_STATS, Workspace, sweep, tables_in_yield_order
from spacy_ag.core.state import (
    CLOSED, FREE, N_TRIE, NODE_FREE, NODE_HWM, OPEN, TAB_FREE, TAB_HWM, TABLE, yield_terms,
)
from spacy_ag.synthetic import generate_corpus, make_lexicon


def _toy(core, a=0.0, b=1.0):
    C = CompiledGrammar(core.toy_grammar(a, b))
    S = core.empty_state(C)
    return C, S, core.stack_for(S)


def _assert_empty(S):
    assert not S.ad_m.any() and not S.ad_n.any()
    assert not S.f.any() and not S.fA.any()
    assert not (S.tab_state == OPEN).any()


# ---------------------------------------------------------------------------
# A.1: CRP word-sequence probabilities, summed over seatings with add()


def _seatings(words):
    """Set partitions of the positions in which every block holds one word type."""
    def rec(i, blocks):
        if i == len(words):
            yield [list(b) for b in blocks]
            return
        for b in blocks:
            if words[b[0]] == words[i]:
                b.append(i)
                yield from rec(i + 1, blocks)
                b.pop()
        blocks.append([i])
        yield from rec(i + 1, blocks)
        blocks.pop()
    yield from rec(0, [])


def _segmentation_probability(core, words):
    """Sum over seatings of exp(add(...)) on the empty toy state; also check remove == add."""
    total = 0.0
    for blocks in _seatings(words):
        C, S, stack = _toy(core)
        owner = {i: bi for bi, b in enumerate(blocks) for i in b}
        size = {bi: len(b) for bi, b in enumerate(blocks)}
        spec = core.toy_sentence([
            core.toy_word(w, "SHARED", key=owner[i]) if size[owner[i]] > 1 else core.toy_word(w)
            for i, w in enumerate(words)])
        if any(s > 1 for s in size.values()):
            root = core.build_detached(C, S, spec, False)
        else:
            root = core.build(C, S, spec)
        _assert_empty(S)
        lp = add(C.arrays, S, root, False, stack)
        assert int(S.ad_m[0]) == len(blocks) and int(S.ad_n[0]) == len(words)
        assert remove(C.arrays, S, root, False, stack) == pytest.approx(lp, abs=1e-12)
        _assert_empty(S)
        total += math.exp(lp)
    return total


def _crp_formula(words, b=1.0):
    """A.1's closed form: prod (b P0(w_i) + count)/(b + i - 1) * 0.99^(n-1) * 0.01."""
    p = 0.99 ** (len(words) - 1) * 0.01
    for i, w in enumerate(words):
        p *= (b * 6.0 ** -len(w) + words[:i].count(w)) / (b + i)
    return p


A1_TABLE = [
    (["ab"], 2.7778e-4),
    (["a", "b"], 1.3750e-4),
    (["aa"], 2.7778e-4),
    (["a", "a"], 9.6250e-4),
    (["abab"], 7.7160e-6),
    (["a", "b", "a", "b"], 1.5286e-5),
    (["ab", "ab"], 1.4132e-4),
    (["aba", "b"], 3.8194e-6),
    (["a", "b", "ab"], 1.2604e-6),
]


@pytest.mark.parametrize("words,want", A1_TABLE, ids=[" ".join(w) for w, _ in A1_TABLE])
def test_a1_segmentation_probabilities(core, words, want):
    p = _segmentation_probability(core, words)
    assert p == pytest.approx(_crp_formula(words), rel=1e-12)
    assert p == pytest.approx(want, rel=1e-4)


def test_a1_normalised_and_split_over_seatings(core):
    p = {" ".join(w): _segmentation_probability(core, w) for w in (["ab"], ["a", "b"], ["aa"], ["a", "a"])}
    assert p["ab"] / (p["ab"] + p["a b"]) == pytest.approx(0.6689, abs=5e-5)
    assert p["a b"] / (p["ab"] + p["a b"]) == pytest.approx(0.3311, abs=5e-5)
    assert p["aa"] / (p["aa"] + p["a a"]) == pytest.approx(0.2240, abs=5e-5)
    assert p["a a"] / (p["aa"] + p["a a"]) == pytest.approx(0.7760, abs=5e-5)
    # `a a` = "second a joins the first table" + "second a opens a new table labelled a"
    C, S, stack = _toy(core)
    join = core.build_detached(C, S, core.toy_sentence(
        [core.toy_word("a", "SHARED", 0), core.toy_word("a", "SHARED", 0)]), False)
    assert math.exp(add(C.arrays, S, join, False, stack)) == pytest.approx(0.99 * 0.01 / 6 / 2, rel=1e-12)
    C, S, stack = _toy(core)
    new = core.build(C, S, core.toy_sentence([core.toy_word("a"), core.toy_word("a")]))
    assert math.exp(add(C.arrays, S, new, False, stack)) == pytest.approx(
        0.99 * 0.01 / 6 * (1 / 6) / 2, rel=1e-12)


# ---------------------------------------------------------------------------
# A.2: seating probability


def test_a2_seating_probability():
    sizes, mult = np.array([1, 2], np.int64), np.array([1, 1], np.int64)
    assert log_seating(sizes, mult, 0.5, 1.0) == pytest.approx(math.log(0.125), abs=1e-12)
    assert log_seating(sizes, mult, 0.5, 1.0) == pytest.approx(-2.0794, abs=5e-5)
    assert math.log(1.0) + math.log(1.5) == pytest.approx(
        2 * math.log(0.5) + math.lgamma(4) - math.lgamma(2), abs=1e-12)
    assert log_seating(np.zeros(0, np.int64), np.zeros(0, np.int64), 0.5, 1.0) == 0.0


def _sequential_log_seating(table_sizes, a, b):
    """Product of the predictive probabilities of 1.2, seating table after table."""
    terms, m, n = [], 0, 0
    for size in table_sizes:
        terms.append(math.log((m * a + b) / (n + b)))
        m += 1
        n += 1
        for j in range(1, size):
            terms.append(math.log((j - a) / (n + b)))
            n += 1
    return math.fsum(terms)


@pytest.mark.parametrize("a,b", [(0.0, 1.0), (0.0, 30.0), (0.3, 0.5), (0.9, 5.0), (0.5, 1e-3)])
@pytest.mark.parametrize("sizes", [[2, 1], [1] * 2500, [40, 3, 3, 1, 77, 1, 31], [1, 1, 2, 500]],
                         ids=["A2", "many-tables", "mixed", "big"])
def test_log_seating_equals_sequential_product(a, b, sizes):
    hist = {}
    for s in sizes:
        hist[s] = hist.get(s, 0) + 1
    keys = sorted(hist)
    got = log_seating(np.array(keys, np.int64), np.array([hist[k] for k in keys], np.int64), a, b)
    want = _sequential_log_seating(sizes, a, b)
    assert got == pytest.approx(want, rel=1e-10, abs=1e-9)


def test_size_histogram_reads_open_tables(core):
    C, S, stack = _toy(core, a=0.5, b=1.0)
    r1 = core.build(C, S, core.toy_sentence([core.toy_word("ab")]))
    add(C.arrays, S, r1, False, stack)
    k = core.to_tuple(S, r1)[2][0][1]
    r2 = core.build(C, S, core.toy_sentence([core.toy_word("ab", k), core.toy_word("a")]))
    add(C.arrays, S, r2, False, stack)
    sizes, mult = size_histogram(S, 0)
    assert list(sizes) == [1, 2] and list(mult) == [1, 1]
    # the posterior of this state (3.14, fixed theta): PY part of A.2 plus sum f_r log theta_r
    rules = (0.01 * 0.99) * 0.01 * (1 / 36) * (1 / 6)  # Words rules, then the two labels
    assert log_posterior(C.arrays, S, False) == pytest.approx(math.log(0.125 * rules), abs=1e-12)


# ---------------------------------------------------------------------------
# A.3: telescoping


def _corpus(n_utts, alphabet, seed, collocations=None):
    lex = make_lexicon(12, alphabet=alphabet, min_len=1, max_len=4, seed=seed)
    gold = generate_corpus(lex, n_utts, mean_words=3, seed=seed + 1, collocations=collocations)
    return [tuple("".join(u)) for u in gold]


def _chain(core, kind, collapsed, a, seed=0, n_utts=40, init="incremental", **settings):
    alphabet = "abcdef"
    if kind == "unigram":
        g = core.unigram_grammar(alphabet, a=a, b=2.0)
        sents = _corpus(n_utts, alphabet, seed)
    else:
        g = core.colloc_grammar(alphabet, a=a, b=2.0, a2=a / 2, b2=3.0)
        sents = _corpus(n_utts, alphabet, seed, collocations=3)
    C = CompiledGrammar(g)
    words, ptr = pack_corpus(C, sents)
    opts = dict(collapsed=collapsed, init=init, sample_hyper=False)
    opts.update(settings)
    chain = Chain(C, words, ptr, SamplerSettings(**opts), seed=seed)
    return C, chain, sents


@pytest.mark.parametrize("a", [0.0, 0.3], ids=["a=0", "a>0"])
@pytest.mark.parametrize("collapsed", [False, True], ids=["fixed", "collapsed"])
@pytest.mark.parametrize("kind", ["unigram", "colloc"])
def test_a3_telescoping(core, kind, collapsed, a):
    C, chain, _ = _chain(core, kind, collapsed, a, seed=2, n_utts=30)
    chain.initialize()
    for _ in range(10):
        chain.step()
    G, S = C.arrays, chain.state
    stack = core.stack_for(S)
    before = {name: getattr(S, name).copy() for name in ("f", "fA", "ad_m", "ad_n", "tab_count")}
    target = log_posterior(G, S, collapsed)
    assert np.isfinite(target) and target < 0
    roots = core.live_roots(S)
    assert len(roots) == chain.n_sentences
    rng = np.random.default_rng(0)

    out = [remove(G, S, roots[i], collapsed, stack) for i in rng.permutation(len(roots))]
    assert math.fsum(out) == pytest.approx(target, rel=1e-10, abs=1e-8)
    _assert_empty(S)
    assert log_posterior(G, S, collapsed) == 0.0

    back = [add(G, S, roots[i], collapsed, stack) for i in rng.permutation(len(roots))]
    assert math.fsum(back) == pytest.approx(target, rel=1e-10, abs=1e-8)
    assert log_posterior(G, S, collapsed) == pytest.approx(target, rel=1e-10, abs=1e-8)
    for name, arr in before.items():
        np.testing.assert_array_equal(getattr(S, name), arr, err_msg=name)


def test_a3_join_case(core):
    """`a a` holding both customers of one table: the New/Join bookkeeping of 3.7."""
    C, S, stack = _toy(core)
    G = C.arrays
    root = core.build_detached(C, S, core.toy_sentence(
        [core.toy_word("a", "SHARED", 0), core.toy_word("a", "SHARED", 0)]), False)
    lp = add(G, S, root, False, stack)
    assert lp == pytest.approx(math.log(0.99 * (1 / 6) * (1 / 2) * 0.01), abs=1e-12)
    assert lp == pytest.approx(-7.100127, abs=1e-6)
    assert int(S.ad_m[0]) == 1 and int(S.ad_n[0]) == 2
    k = core.to_tuple(S, root)[2][0][1]
    assert int(S.tab_count[k]) == 2

    assert remove(G, S, root, False, stack) == pytest.approx(lp, abs=1e-12)
    _assert_empty(S)
    # the detached copy: both words still refer to the one closed table (New, then Join)
    t = core.to_tuple(S, root)
    assert t[2][0] == ("CLOSED", k) and t[2][1][2][0] == ("CLOSED", k)
    rho = np.zeros(len(C.grammar.rules))
    fill_rho(G, S, rho, False, -1, 1.0)
    assert log_r(G, S, root, rho, 1.0, stack) == pytest.approx(
        math.log(0.99 * 0.01 * (1 / 6) * (1 / 6)), abs=1e-12)

    assert add(G, S, root, False, stack) == pytest.approx(lp, abs=1e-12)
    assert int(S.ad_m[0]) == 1 and int(S.ad_n[0]) == 2 and int(S.tab_count[k]) == 2
    assert int((S.tab_state == OPEN).sum()) == 1


# ---------------------------------------------------------------------------
# A.7: one MH step by hand


def _a7_setup(core):
    C, S, stack = _toy(core)
    G = C.arrays
    other = core.build(C, S, core.toy_sentence([core.toy_word("ab")]))
    add(G, S, other, False, stack)
    S.sent_root[0] = other
    k0 = core.to_tuple(S, other)[2][0][1]
    analyses = {
        "join": core.build(C, S, core.toy_sentence([core.toy_word("ab", k0)])),
        "new": core.build(C, S, core.toy_sentence([core.toy_word("ab")])),
        "a b": core.build(C, S, core.toy_sentence([core.toy_word("a"), core.toy_word("b")])),
    }
    return C, S, stack, k0, analyses


def test_a7_one_mh_step_by_hand(core):
    C, S, stack, k0, analyses = _a7_setup(core)
    G = C.arrays
    ws = Workspace(C, 2)
    fill_rho(G, S, ws.rho, False, -1, 1.0)
    lr = {name: log_r(G, S, x, ws.rho, 1.0, stack) for name, x in analyses.items()}
    want_r = {"join": 0.01 * 0.5, "new": 0.01 * 0.5 / 36, "a b": 0.99 * 0.01 / 144}
    for name in want_r:
        assert math.exp(lr[name]) == pytest.approx(want_r[name], rel=1e-12), name
    assert math.exp(lr["join"]) == pytest.approx(5.0e-3, rel=1e-4)
    assert math.exp(lr["new"]) == pytest.approx(1.3889e-4, rel=1e-4)
    assert math.exp(lr["a b"]) == pytest.approx(6.875e-5, rel=1e-4)

    words = C.encode(list("ab"))
    logz = inside(G, S, words, 2, ws.rho, ws.chart, ws.scale, ws.ynode, ws.window, G.start, -1, 1.0)
    assert math.exp(logz) == pytest.approx(sum(want_r.values()), rel=1e-12)
    assert math.exp(logz) == pytest.approx(5.20764e-3, rel=1e-5)

    lp = {}
    for name, x in analyses.items():
        lp[name] = add(G, S, x, False, stack)
        assert remove(G, S, x, False, stack) == pytest.approx(lp[name], abs=1e-12)
        assert int(S.ad_m[0]) == 1 and int(S.ad_n[0]) == 1 and int(S.tab_count[k0]) == 1
    assert math.exp(lp["join"]) == pytest.approx(5.0e-3, rel=1e-12)
    assert math.exp(lp["new"]) == pytest.approx(0.01 * 0.5 / 36, rel=1e-12)
    assert math.exp(lp["a b"]) == pytest.approx(0.99 * 0.01 * (1 / 12) * (1 / 18), rel=1e-12)
    assert math.exp(lp["a b"]) == pytest.approx(4.5833e-5, rel=1e-4)

    log_acc = (lp["a b"] - lp["join"]) + (lr["join"] - lr["a b"])
    assert math.exp(log_acc) == pytest.approx(2 / 3, rel=1e-12)


def test_a7_mh_chain_targets_exact_conditional(core):
    """Repeated MH steps on sentence i visit its analyses in proportion to the exact conditionals."""
    C, S, stack, k0, analyses = _a7_setup(core)
    G = C.arrays
    root = analyses["join"]
    add(G, S, root, False, stack)
    S.sent_root[1] = root
    words, ptr = pack_corpus(C, [tuple("ab"), tuple("ab")])
    ws = Workspace(C, 2)
    order = np.array([1], np.int64)
    stats = np.zeros(N_STATS, np.int64)
    r_single = core.rule_id(C, "Words -> Word")
    visits = {"join": 0, "new": 0, "a b": 0}
    n_steps = 20000
    for _ in range(n_steps):
        assert sweep(G, S, words, ptr, order, 0, False, 1.0, True, C.max_unary_chain, ws.rho,
                     ws.chart, ws.scale, ws.ynode, ws.window, ws.tasks, ws.buf, stats) == 1
        t = core.to_tuple(S, int(S.sent_root[1]))
        if t[1] == r_single:
            visits["join" if t[2][0] == ("TAB", k0) else "new"] += 1
        else:
            visits["a b"] += 1
    assert int(stats[:3].sum()) == n_steps
    assert int(S.tab_count[k0]) >= 1 and core.to_tuple(S, int(S.sent_root[0]))[2][0] == ("TAB", k0)
    exact = {"join": 5.0e-3, "new": 0.01 * 0.5 / 36, "a b": 0.99 * 0.01 / 12 / 18}
    z = sum(exact.values())
    for name, w in exact.items():
        p = w / z
        sd = math.sqrt(n_steps * p * (1 - p))
        # visits are mildly autocorrelated (a state persists until a move is accepted): 6 sd
        assert abs(visits[name] - n_steps * p) <= 6 * sd, (name, visits, p)
    # without the MH correction the chain would sit in `a b` with the proposal's 6.875e-5/Z
    q_ab = 0.99 * 0.01 / 144 / 5.20764e-3
    assert abs(visits["a b"] / n_steps - q_ab) > abs(visits["a b"] / n_steps - exact["a b"] / z)


# ---------------------------------------------------------------------------
# 6: bookkeeping invariants after sweeps


def _check_invariants(core, C, S, sents):
    G = C.arrays
    n_ad = G.adaptor_nt.shape[0]
    hwm = int(S.counters[TAB_HWM])
    states = S.tab_state[:hwm]
    assert not (states == CLOSED).any(), "closed tables left after the step"
    open_k = set(int(k) for k in np.flatnonzero(states == OPEN))
    free_k = set(int(k) for k in S.tab_free[: int(S.counters[TAB_FREE])])
    assert free_k == set(int(k) for k in np.flatnonzero(states == FREE)), "table free list"

    roots = [int(r) for r in S.sent_root]
    assert min(roots) >= 0
    for d, r in enumerate(roots):
        assert core.yield_of(S, r) == tuple(C.encode(list(sents[d]))), d
    rc = core.recount(C, S, roots)
    assert set(rc["tables"]) == open_k, "open tables != tables reachable from the analyses"
    np.testing.assert_array_equal(S.f, rc["f"])
    np.testing.assert_array_equal(S.fA, rc["fA"])
    m = np.zeros(n_ad, np.int64)
    n = np.zeros(n_ad, np.int64)
    for k in open_k:
        ad = int(S.tab_adaptor[k])
        assert int(S.tab_count[k]) == rc["customers"][k] >= 1
        m[ad] += 1
        n[ad] += int(S.tab_count[k])
    np.testing.assert_array_equal(S.ad_m, m)
    np.testing.assert_array_equal(S.ad_n, n)
    for ad in range(n_ad):
        A = int(G.adaptor_nt[ad])
        assert int(S.f[G.rule_parent == A].sum()) == int(S.ad_m[ad])
        a, b = S.ad_a[ad], S.ad_b[ad]
        lam = (m[ad] * a + b) / (n[ad] + b)
        omegas = [(S.tab_count[k] - a) / (n[ad] + b) for k in open_k if S.tab_adaptor[k] == ad]
        assert lam + math.fsum(omegas) == pytest.approx(1.0, abs=1e-12)

    # the yield index holds exactly the open tables, each under its own yield
    terms = np.zeros(64, np.int32)
    heads = {}
    for k in open_k:
        y = int(S.tab_yield[k])
        ln = yield_terms(S, y, terms)
        assert tuple(int(t) for t in terms[:ln]) == rc["tables"][k][1], "table under a wrong yield"
        heads.setdefault(y, set()).add(k)
    for y, ks in heads.items():
        listed, k, prev = set(), int(S.trie_head[y]), -1
        while k >= 0:
            assert int(S.tab_prev[k]) == prev
            listed.add(k)
            prev, k = k, int(S.tab_next[k])
        assert listed == ks
    assert int((S.trie_head[: int(S.counters[N_TRIE])] >= 0).sum()) == len(heads)

    # node pool: every live node is reachable exactly once, nothing leaks
    seen = set()
    todo = list(roots) + [int(S.tab_label[k]) for k in open_k]
    while todo:
        x = todo.pop()
        assert x not in seen, f"node {x} is shared between trees"
        seen.add(x)
        if int(S.node_kind[x]) == TABLE:
            assert int(S.node_table[x]) in open_k
            continue
        c = int(S.node_child[x])
        while c >= 0:
            todo.append(c)
            c = int(S.node_sib[c])
    live = int(S.counters[NODE_HWM] - S.counters[NODE_FREE])
    assert not seen & set(int(x) for x in S.node_free[: int(S.counters[NODE_FREE])])
    assert len(seen) == live, f"{live - len(seen)} nodes leaked"
    assert np.isfinite(log_posterior(G, S, True))


@pytest.mark.parametrize("init,n_utts,steps,seed,label_order,label_equality", [
    ("batch", 80, 6, 4, "adaptor", "table"),
    ("incremental", 80, 6, 4, "adaptor", "table"),
    ("batch", 20, 30, 3, "adaptor", "table"),  # a tiny corpus: MH and label rejections do happen
    ("batch", 20, 30, 3, "yield", "table"),
    ("batch", 20, 30, 3, "yield", "value"),  # py-cfg's label pass
])
def test_invariants_after_sweeps_collocation(core, init, n_utts, steps, seed, label_order, label_equality):
    C, chain, sents = _chain(core, "colloc", True, 0.2, seed=seed, n_utts=n_utts, init=init,
                             sample_hyper=True, hyper_start=2, label_resampling=True, label_order=label_order,
                             label_equality=label_equality)
    chain.initialize()
    _check_invariants(core, C, chain.state, sents)
    rejected = 0
    for _ in range(steps):
        trace = chain.step()
        rejected += trace["rejected"] + trace["label_rejected"]
        _check_invariants(core, C, chain.state, sents)
    if steps >= 30:
        assert rejected > 0  # the rejection paths (remove new, re-add old) were exercised


def test_yield_order_lists_every_open_table_once_by_yield(core):
    """py-cfg's label order: yields in the order of their terminals, a yield before its
    extensions, and the Colloc and Word tables of one yield side by side."""
    C, chain, _ = _chain(core, "colloc", True, 0.2, seed=5, n_utts=60, init="batch")
    chain.initialize()
    chain.step()
    S = chain.state
    order = tables_in_yield_order(S, C.arrays.n_term)
    open_k = [k for k in range(int(S.counters[TAB_HWM])) if S.tab_state[k] == OPEN]
    assert sorted(order.tolist()) == open_k
    buf = np.empty(int(S.counters[N_TRIE]), np.int32)
    yields = [tuple(buf[:yield_terms(S, S.tab_yield[k], buf)].tolist()) for k in order]
    assert yields == sorted(yields)  # tuple order puts a prefix first
    adaptors = {int(S.tab_adaptor[k]) for k in order}
    assert len(adaptors) == 2
    by_yield = {}
    for k, y in zip(order, yields):
        by_yield.setdefault(y, set()).add(int(S.tab_adaptor[k]))
    assert any(len(ads) == 2 for ads in by_yield.values())  # a Colloc and a Word table of one yield


def test_equal_trees_by_value_compares_tables_by_count_and_label(core):
    """py-cfg's tree equality: two Colloc labels over the same yield, whose Word children sit at
    different tables with as many customers and equal labels, are equal by value but not the same
    analysis; once one of those tables has another customer they differ."""
    C, chain, _ = _chain(core, "colloc", True, 0.2, seed=5, n_utts=60, init="batch")
    chain.initialize()  # batch: every node has a table of its own, so equal dishes abound
    S = chain.state
    stack = core.stack_for(S)
    marked = np.empty(S.tab_count.shape[0] + 1, np.int32)
    buf = np.empty(int(S.counters[N_TRIE]), np.int32)
    colloc = C.adapted.index("Colloc")
    by_yield = {}
    for k in range(int(S.counters[TAB_HWM])):
        if S.tab_state[k] == OPEN and S.tab_adaptor[k] == colloc:
            y = tuple(buf[:yield_terms(S, S.tab_yield[k], buf)].tolist())
            by_yield.setdefault(y, []).append(k)
    pairs = [(ks[0], ks[1]) for ks in by_yield.values() if len(ks) > 1
             and equal_trees(S, S.tab_label[ks[0]], S.tab_label[ks[1]], stack, marked, SAME_VALUE)]
    assert pairs
    k1, k2 = pairs[0]
    x, y = S.tab_label[k1], S.tab_label[k2]
    assert not equal_trees(S, x, y, stack, marked, SAME_ANALYSIS)
    assert not equal_trees(S, x, y, stack, marked, SAME_TABLES)
    word_tables = []
    node = x
    while node >= 0:  # the first Word table under the label: down the first children
        if S.node_kind[node] == TABLE:
            word_tables.append(int(S.node_table[node]))
            break
        node = S.node_child[node]
    assert word_tables
    S.tab_count[word_tables[0]] += 1
    try:
        assert not equal_trees(S, x, y, stack, marked, SAME_VALUE)
    finally:
        S.tab_count[word_tables[0]] -= 1
    assert equal_trees(S, x, y, stack, marked, SAME_VALUE)


# ---------------------------------------------------------------------------
# seeded reproducibility (6)


def _run(core, seed):
    C, chain, _ = _chain(core, "colloc", True, 0.2, seed=0, n_utts=40, init="batch",
                         sample_hyper=True, hyper_start=2)
    chain = Chain(C, chain.words, chain.sent_ptr, chain.settings, seed=seed)
    chain.initialize()
    traces = []
    for _ in range(4):
        t = chain.step()
        for measurement in MEASUREMENTS:  # time and memory are the machine's, not the chain's
            t.pop(measurement)
        traces.append(t)
    return chain, traces


def test_same_seed_same_chain(core):
    c1, t1 = _run(core, 7)
    c2, t2 = _run(core, 7)
    assert t1 == t2
    for name in c1.state._fields:
        assert np.array_equal(getattr(c1.state, name), getattr(c2.state, name)), name
    seg = c1.compiled.symbol_mask(["Word"])
    assert c1.segmentation_keys(seg) == c2.segmentation_keys(seg)
    c3, t3 = _run(core, 8)
    assert t3 != t1
    assert any(not np.array_equal(getattr(c1.state, n), getattr(c3.state, n)) for n in c1.state._fields)
