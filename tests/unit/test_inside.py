"""The inside chart and top-down sampling against brute-force enumeration (docs/algorithms.md 3.3-3.6, 3.8, 6, A.4).

The reference (`core.Reference`, tests/conftest.py) enumerates every G'
derivation of a string straight from the Grammar object (no binarization, no
chart), with theta, lambda and omega computed from counts recounted from the
stored trees, so it shares no code with the kernels under test.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from spacy_ag.core.analyses import add, fill_rho, free_tree, log_r
from spacy_ag.runs.mcmc_chain import Chain, SamplerSettings, pack_corpus
from spacy_ag.core.chart import chart_width, inside, sample_tree
from spacy_ag.core.compiled import NO_SPAN_LIMIT, CompiledGrammar
from spacy_ag.core.sampler import Workspace
from spacy_ag.core.state import NODE_FREE, NODE_HWM, TABLE, yield_terms
from spacy_ag.grammar.rules import Adaptor, Grammar, Rule


def _inside(C, S, ws, text, collapsed=False, start=None, skip_ad=-1, inv_temp=1.0):
    """log Z of `text` under G' of state S (fills ws.rho first)."""
    G = C.arrays
    fill_rho(G, S, ws.rho, collapsed, skip_ad, inv_temp)
    words = C.encode(list(text))
    start = G.start if start is None else start
    return float(inside(G, S, words, len(words), ws.rho, ws.chart, ws.scale, ws.ynode, ws.window,
                        start, skip_ad, inv_temp))


def _assert_matches(C, S, ws, ref, strings, start_name=None, **kw):
    """exp(inside) == brute force for every string; return how many strings parse."""
    start_name = start_name or C.grammar.start
    start = C.nt_index[start_name]
    parsed = 0
    for text in strings:
        logz = _inside(C, S, ws, text, start=start, **kw)
        want = ref.prob(start_name, tuple(C.encode(list(text))))
        if want == 0.0:
            assert logz == -np.inf, (text, logz)
        else:
            parsed += 1
            assert np.isfinite(logz), text
            assert math.exp(logz) == pytest.approx(want, rel=1e-10, abs=0), text
    return parsed


GRAMMARS = {
    # name: (factory, alphabet, max length)
    "toy": (lambda core: core.toy_grammar(), "abc", 5),
    "ternary": (lambda core: core.ternary_grammar(), "ab", 5),
    "mixed": (lambda core: core.mixed_grammar(), "ab", 5),
    "unary": (lambda core: core.unary_grammar(), "abc", 4),
    "colloc": (lambda core: core.colloc_grammar("ab", a=0.2, b=3.0), "ab", 5),
}


# ---------------------------------------------------------------------------
# 1. empty state: G' is the base PCFG


@pytest.mark.parametrize("collapsed", [False, True], ids=["fixed", "collapsed"])
@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_inside_equals_enumeration_on_empty_state(core, name, collapsed):
    factory, alphabet, max_len = GRAMMARS[name]
    C = CompiledGrammar(factory(core))
    S = core.empty_state(C)
    ws = Workspace(C, max_len)
    ref = core.Reference(C, collapsed=collapsed)
    fill_rho(C.arrays, S, ws.rho, collapsed, -1, 1.0)
    for r in range(len(C.grammar.rules)):
        assert ws.rho[r] == pytest.approx(ref.rho(r), rel=1e-12), C.grammar.rules[r]
    strings = list(core.all_strings(alphabet, max_len))
    parsed = _assert_matches(C, S, ws, ref, strings, collapsed=collapsed)
    assert parsed >= len(strings) // 4  # the grammars are not vacuous


def test_toy_grammar_fixed_theta(core):
    C = CompiledGrammar(core.toy_grammar())
    theta = dict(zip([(r.parent, r.children) for r in C.grammar.rules], C.arrays.rule_theta))
    assert theta[("Words", ("Word",))] == pytest.approx(0.01)
    assert theta[("Words", ("Word", "Words"))] == pytest.approx(0.99)
    assert theta[("Chars", ("Char",))] == pytest.approx(0.5)
    assert theta[("Char", ("a",))] == pytest.approx(1 / 3)


def test_a4_inside_of_ab_is_base_probability(core):
    """A.4: I[0, 2, Words] of the empty state for `ab` = 0.01/36 + 0.99*0.01/36 = 5.53e-4."""
    C = CompiledGrammar(core.toy_grammar())
    S = core.empty_state(C)
    ws = Workspace(C, 4)
    z = math.exp(_inside(C, S, ws, "ab"))
    assert z == pytest.approx(0.01 / 36 + 0.99 * 0.01 / 36, rel=1e-12)
    assert z == pytest.approx(5.53e-4, rel=1e-3)
    # a word of length L has base probability (1/6)^L (2.6)
    assert math.exp(_inside(C, S, ws, "abc")) == pytest.approx(
        0.01 * 6.0 ** -3 + 2 * 0.99 * 0.01 * 6.0 ** -3 + 0.99 ** 2 * 0.01 * 6.0 ** -3, rel=1e-12)


def test_unknown_character_is_unparseable(core):
    C = CompiledGrammar(core.toy_grammar())
    S = core.empty_state(C)
    ws = Workspace(C, 4)
    assert _inside(C, S, ws, "abz") == -np.inf


def test_unknown_character_is_unparseable_with_tables(core):
    """Z = 0 for a sentence with a character outside the grammar (3.5), whatever tables exist.

    Terminal ids are -1 for unknown characters; the yield lookup must not map a
    span containing one to the yield of some other string.
    """
    C = CompiledGrammar(core.toy_grammar())
    S = core.empty_state(C)
    stack = core.stack_for(S)
    for i, w in enumerate(["a", "c", "bc", "cc"]):
        root = core.build(C, S, core.toy_sentence([core.toy_word(w)]))
        add(C.arrays, S, root, False, stack)
        S.sent_root[i] = root
    ws = Workspace(C, 4)
    for text in ["az", "bz", "cz", "azc", "zz", "abz", "z"]:
        assert _inside(C, S, ws, text) == -np.inf, text


# ---------------------------------------------------------------------------
# 2. non-empty state: cache options and lambda


def _toy_state(core, a=0.0, b=1.0, collapsed=False):
    """Toy grammar with tables ab (2 customers), a second table ab, a, b and abc."""
    C = CompiledGrammar(core.toy_grammar(a, b))
    S = core.empty_state(C)
    G = C.arrays
    stack = core.stack_for(S)
    roots = []

    def put(words):
        root = core.build(C, S, core.toy_sentence(words))
        add(G, S, root, collapsed, stack)
        S.sent_root[len(roots)] = root
        roots.append(root)
        return root

    r1 = put([core.toy_word("ab")])
    k_ab = core.to_tuple(S, r1)[2][0][1]
    put([core.toy_word("ab")])  # a second table with the same yield
    put([core.toy_word("ab", k_ab), core.toy_word("a"), core.toy_word("b")])
    put([core.toy_word("abc"), core.toy_word("c")])
    return C, S


@pytest.mark.parametrize("a,b,collapsed,inv_temp", [
    (0.0, 1.0, False, 1.0),
    (0.0, 1.0, True, 1.0),
    (0.4, 1.5, True, 1.0),
    (0.4, 1.5, False, 0.5),
])
def test_inside_with_tables_equals_enumeration(core, a, b, collapsed, inv_temp):
    C, S = _toy_state(core, a, b, collapsed)
    ref = core.Reference.from_state(C, S, core.live_roots(S), collapsed=collapsed, inv_temp=inv_temp)
    assert sorted(cnt for _, _, cnt in ref.tables.values()) == [1, 1, 1, 1, 1, 2]
    # sanity of G' (3.3, A.4): lambda + sum of omega = 1
    assert ref.lam(0) + sum(ref.omega(k) for k in ref.tables) == pytest.approx(1.0)
    ws = Workspace(C, 4)
    _assert_matches(C, S, ws, ref, core.all_strings("abc", 4), collapsed=collapsed, inv_temp=inv_temp)


def _chain_state(core, grammar, sentences, collapsed=True, steps=2, seed=3):
    C = CompiledGrammar(grammar)
    words, ptr = pack_corpus(C, sentences)
    chain = Chain(C, words, ptr, SamplerSettings(collapsed=collapsed, init="incremental",
                                                 sample_hyper=False), seed=seed)
    chain.initialize()
    for _ in range(steps):
        chain.step()
    return C, chain.state


def _random_strings(alphabet, n, max_len, seed):
    rng = np.random.default_rng(seed)
    return [tuple(rng.choice(list(alphabet), size=int(rng.integers(1, max_len + 1))))
            for _ in range(n)]


def _colloc_state(core, collapsed=True):
    from spacy_ag.synthetic import generate_corpus, make_lexicon
    lex = make_lexicon(6, alphabet="ab", min_len=1, max_len=3, seed=4)
    gold = generate_corpus(lex, 25, mean_words=3, seed=5, collocations=2)
    sents = [tuple("".join(u)) for u in gold]
    return _chain_state(core, core.colloc_grammar("ab", a=0.2, b=3.0), sents, collapsed)


@pytest.mark.parametrize("collapsed", [False, True], ids=["fixed", "collapsed"])
def test_inside_with_nested_adaptors_equals_enumeration(core, collapsed):
    C, S = _colloc_state(core, collapsed)
    ref = core.Reference.from_state(C, S, core.live_roots(S), collapsed=collapsed)
    assert len(ref.tables) >= 4 and set(ad for ad, _, _ in ref.tables.values()) == {0, 1}
    ws = Workspace(C, 5)
    _assert_matches(C, S, ws, ref, core.all_strings("ab", 5), collapsed=collapsed)


def test_inside_with_tables_under_unary_chains(core):
    sents = _random_strings("abc", 30, 5, seed=7)
    C, S = _chain_state(core, core.unary_grammar(a=0.3, b=2.0), sents, collapsed=True)
    ref = core.Reference.from_state(C, S, core.live_roots(S), collapsed=True)
    assert len(ref.tables) >= 3
    ws = Workspace(C, 4)
    _assert_matches(C, S, ws, ref, core.all_strings("abc", 4), collapsed=True)


def test_inside_with_adaptor_switched_off(core):
    """Label resampling parses a yield with start A and A's cache and lambda off (3.12)."""
    C, S = _colloc_state(core, collapsed=True)
    ad = C.adapted.index("Colloc")
    ref = core.Reference.from_state(C, S, core.live_roots(S), collapsed=True, skip_ad=ad)
    ws = Workspace(C, 5)
    _assert_matches(C, S, ws, ref, core.all_strings("ab", 5), start_name="Colloc", collapsed=True,
                    skip_ad=ad)


# ---------------------------------------------------------------------------
# 3. long sentences do not underflow


def _char_rules(chars, parent="Char"):
    return [Rule(parent, (c,)) for c in chars]


CHARS40 = [chr(ord("A") + i) for i in range(26)] + [chr(ord("a") + i) for i in range(14)]


def test_long_sentence_unique_parse_closed_form(core):
    rules = [Rule("Top", ("Chars",)), Rule("Chars", ("Char",), 1.0), Rule("Chars", ("Char", "Chars"), 3.0)]
    C = CompiledGrammar(Grammar("Top", rules + _char_rules(CHARS40), {}))
    S = core.empty_state(C)
    n = 500
    rng = np.random.default_rng(0)
    text = [CHARS40[i] for i in rng.integers(0, 40, size=n)]
    ws = Workspace(C, n)
    logz = _inside(C, S, ws, text)
    want = (n - 1) * math.log(0.75) + math.log(0.25) + n * math.log(1 / 40)
    assert want < -1000  # far below the smallest double
    assert logz == pytest.approx(want, rel=1e-12)


def test_long_sentence_with_tables_matches_log_space_dp(core):
    """500 characters, all 2^499 segmentations, cached words: compare with an O(n^2) log-space DP."""
    C = CompiledGrammar(core.unigram_grammar(CHARS40, a=0.2, b=5.0))
    S = core.empty_state(C)
    G = C.arrays
    stack = core.stack_for(S)
    lexicon = ["ABC", "DE", "FGHIJ", "KL", "ABCD"]

    def word(w, how="NEW"):
        if isinstance(how, int):
            return ("TAB", how)
        return ("NEW", "Word -> Phonemes", [core.chars_spec(w, "Phonemes", "Phoneme")])

    def sentence(ws_):
        if len(ws_) == 1:
            return ("R", "Sentence -> Word", [ws_[0]])
        return ("R", "Sentence -> Word Sentence", [ws_[0], sentence(ws_[1:])])

    for i, w in enumerate(lexicon):
        root = core.build(C, S, sentence([word(w), word("M")]))
        add(G, S, root, False, stack)
        S.sent_root[i] = root
    k_de = [k for k, (_, y, _) in core.recount(C, S, core.live_roots(S))["tables"].items()
            if y == tuple(C.encode(list("DE")))][0]
    root = core.build(C, S, sentence([word("DE", k_de), word("DE", k_de)]))
    add(G, S, root, False, stack)
    S.sent_root[len(lexicon)] = root

    ref = core.Reference.from_state(C, S, core.live_roots(S), collapsed=False)
    cached = {}
    for k, (ad, y, cnt) in ref.tables.items():
        cached[y] = cached.get(y, 0.0) + ref.omega(k)
    assert len(cached) == 6  # five words plus M

    rng = np.random.default_rng(1)
    pieces = lexicon + ["M"] + list(CHARS40)
    text = []
    while len(text) < 500:
        text.extend(pieces[rng.integers(0, len(pieces))])
    text = text[:500]
    n = len(text)
    ids = tuple(C.encode(text))

    half = math.log(0.5)
    log_lam = math.log(ref.lam(0))
    max_cached = max(len(y) for y in cached)

    def log_word(i, j):
        base = log_lam + (j - i) * (half + math.log(1 / 40))  # Phonemes chain: (1/2)^L (1/40)^L
        w = cached.get(ids[i:j])
        return base if w is None else np.logaddexp(base, math.log(w))

    # suffix DP: Z[i] = P(Sentence =>* text[i:]); Sentence -> Word (1/2) | Word Sentence (1/2)
    lengths = np.arange(1, n + 1)
    base_all = log_lam + lengths * (half + math.log(1 / 40))
    Z = np.full(n + 1, -np.inf)
    for i in range(n - 1, -1, -1):
        m = n - i
        terms = half + base_all[:m].copy()
        for L in range(1, min(max_cached, m) + 1):
            terms[L - 1] = half + log_word(i, i + L)
        terms[:m - 1] += Z[i + 1:n][: m - 1]
        Z[i] = np.logaddexp.reduce(terms)
    ws = Workspace(C, n)
    logz = _inside(C, S, ws, text)
    assert Z[0] < -1000
    assert np.isfinite(logz)
    assert logz == pytest.approx(Z[0], rel=1e-11)


# ---------------------------------------------------------------------------
# 4. sampling from the chart


def _sample_check(core, C, S, text, n_draws, collapsed, start_name=None, skip_ad=-1, seed=11):
    G = C.arrays
    start_name = start_name or C.grammar.start
    start = C.nt_index[start_name]
    ws = Workspace(C, len(text))
    ref = core.Reference.from_state(C, S, core.live_roots(S), collapsed=collapsed, skip_ad=skip_ad)
    ids = tuple(C.encode(list(text)))
    trees = dict(ref.analyses(start_name, ids))
    assert len(trees) == len(ref.analyses(start_name, ids)), "reference trees must be distinct"
    Z = sum(trees.values())
    logz = _inside(C, S, ws, text, collapsed=collapsed, start=start, skip_ad=skip_ad)
    assert math.exp(logz) == pytest.approx(Z, rel=1e-10)

    from spacy_ag.core.rng import make_rng
    S.rng[:] = make_rng(seed)
    stack = core.stack_for(S)
    words = np.array(ids, np.int32)
    live_before = int(S.counters[NODE_HWM] - S.counters[NODE_FREE])
    counts = Counter()
    checked = set()
    terms = np.zeros(len(text) + 1, np.int32)
    for _ in range(n_draws):
        root, lr = sample_tree(G, S, words, len(ids), ws.rho, ws.chart, ws.scale, ws.ynode, ws.window, start,
                               skip_ad, 1.0, S.rng, ws.tasks, ws.buf)
        t = core.to_tuple(S, root)
        counts[t] += 1
        if t not in checked:
            checked.add(t)
            assert t in trees, f"sampled a tree that is not a derivation: {t}"
            assert core.yield_of(S, root) == ids
            assert lr == pytest.approx(math.log(trees[t]), rel=1e-10, abs=1e-12)
            assert log_r(G, S, root, ws.rho, 1.0, stack) == pytest.approx(lr, rel=1e-10, abs=1e-12)
            _check_new_yields(core, S, root, terms)
        free_tree(S, root, stack)
    assert int(S.counters[NODE_HWM] - S.counters[NODE_FREE]) == live_before, "free_tree leaks nodes"
    for t, w in trees.items():
        p = w / Z
        sd = math.sqrt(n_draws * p * (1 - p))
        assert abs(counts[t] - n_draws * p) <= 5 * sd + 2, (t, counts[t], n_draws * p)
    return len(trees)


def _check_new_yields(core, S, root, terms):
    """A NEW node's node_aux must be the trie node of its label's yield (it becomes the table's key)."""
    todo = [root]
    while todo:
        x = todo.pop()
        if int(S.node_kind[x]) == TABLE and int(S.node_table[x]) < 0:
            n = yield_terms(S, int(S.node_aux[x]), terms)
            assert tuple(int(v) for v in terms[:n]) == core.yield_of(S, x)
            todo.append(int(S.node_child[x]))
        else:
            c = int(S.node_child[x]) if int(S.node_kind[x]) != TABLE else -1
            while c >= 0:
                todo.append(c)
                c = int(S.node_sib[c])


def test_sampling_frequencies_toy_with_tables(core):
    C, S = _toy_state(core, 0.3, 1.0, collapsed=False)
    n = _sample_check(core, C, S, "abab", 20000, collapsed=False)
    assert n >= 20


@pytest.mark.parametrize("name,text", [("ternary", "aaaaa"), ("mixed", "aabbb"), ("unary", "acbc")])
def test_sampling_frequencies_empty_state(core, name, text):
    factory, _, _ = GRAMMARS[name]
    C = CompiledGrammar(factory(core))
    S = core.empty_state(C)
    n = _sample_check(core, C, S, text, 20000, collapsed=False)
    assert n >= 5


def test_sampling_frequencies_nested_adaptors(core):
    C, S = _colloc_state(core, collapsed=True)
    n = _sample_check(core, C, S, "abba", 20000, collapsed=True)
    assert n >= 10


def test_sampling_with_adaptor_switched_off(core):
    C, S = _colloc_state(core, collapsed=True)
    ad = C.adapted.index("Colloc")
    n = _sample_check(core, C, S, "abab", 10000, collapsed=True, start_name="Colloc", skip_ad=ad)
    assert n >= 5


# ---------------------------------------------------------------------------
# 5. spans: `@ NT max_span=N` and the banded chart (docs/algorithms.md 3.5)


def _with_spans(grammar, **spans):
    """The grammar with max_span = spans[NT] on the named adapted nonterminals."""
    adaptors = {x: Adaptor(a.a, a.b, {**a.options, "max_span": float(spans[x])}) if x in spans else a
                for x, a in grammar.adaptors.items()}
    return Grammar(grammar.start, list(grammar.rules), adaptors)


def _spanned_unary(core):
    grammar = core.unary_grammar()
    return _with_spans(grammar, **{x: 2 for x in grammar.adaptors})


def test_symbol_spans_and_band(core):
    C = CompiledGrammar(_with_spans(core.colloc_grammar("ab"), Word=2, Colloc=3))
    G = C.arrays
    span = {C.symbol_names[x]: int(G.sym_span[x]) for x in range(G.n_sym)}
    assert span == {"Sentence": NO_SPAN_LIMIT, "Colloc": 3, "Words": 3, "Word": 2, "Phonemes": 2,
                    "Phoneme": 1}
    assert [C.symbol_names[x] for x in range(G.n_sym) if G.sym_suffix[x]] == ["Sentence"]
    assert (G.band, G.left_span, G.inner_left_span, G.inner_right_span) == (3, 3, 2, 3)
    assert chart_width(G, 10) == 3 and chart_width(G, 2) == 2
    # an unbounded left child (S -> S X) cannot be banded: a full chart, spans still hold
    unary = CompiledGrammar(_spanned_unary(core))
    assert unary.arrays.band == 0 and chart_width(unary.arrays, 10) == 10
    assert not unary.arrays.sym_suffix.any()
    # without spans: nothing bounded above a terminal, a full chart
    assert CompiledGrammar(core.colloc_grammar("ab")).arrays.band == 0


SPANNED = {
    # name: (grammar with spans, alphabet, longest string): every string longer than the band
    # uses the suffix cells
    "toy": (lambda core: _with_spans(core.toy_grammar(0.3, 1.0), Word=2), "abc", 5),
    "colloc": (lambda core: _with_spans(core.colloc_grammar("ab", a=0.2, b=3.0), Word=2, Colloc=3), "ab", 7),
    "unary-full-chart": (lambda core: _spanned_unary(core), "abc", 4),
}


@pytest.mark.parametrize("name", sorted(SPANNED))
def test_inside_with_spans_equals_enumeration(core, name):
    factory, alphabet, max_len = SPANNED[name]
    C = CompiledGrammar(factory(core))
    S = core.empty_state(C)
    ws = Workspace(C, max_len)
    ref = core.Reference(C)
    assert ref.max_span
    strings = list(core.all_strings(alphabet, max_len))
    assert _assert_matches(C, S, ws, ref, strings) >= len(strings) // 4


def _spanned_colloc_state(core):
    from spacy_ag.synthetic import generate_corpus, make_lexicon
    lex = make_lexicon(6, alphabet="ab", min_len=1, max_len=2, seed=4)
    sents = [tuple("".join(u)) for u in generate_corpus(lex, 25, mean_words=3, seed=5, collocations=2)]
    grammar = _with_spans(core.colloc_grammar("ab", a=0.2, b=3.0), Word=2, Colloc=3)
    return _chain_state(core, grammar, sents, collapsed=True)


def test_inside_and_viterbi_with_spans_and_tables_equal_enumeration(core):
    from spacy_ag.core.chart import new_viterbi_chart
    from spacy_ag.core.viterbi import log_rho, log_table_weights, viterbi_chart

    C, S = _spanned_colloc_state(core)
    G = C.arrays
    ref = core.Reference.from_state(C, S, core.live_roots(S), collapsed=True)
    assert ref.tables and max(len(y) for _, y, _ in ref.tables.values()) <= 3
    ws = Workspace(C, 6)
    strings = list(core.all_strings("ab", 6))
    assert _assert_matches(C, S, ws, ref, strings, collapsed=True) == len(strings)
    lrho = np.empty(G.rule_parent.shape[0])
    log_rho(G, S, lrho, True)
    ltab = np.empty(S.tab_count.shape[0])
    log_table_weights(S, ltab)
    for text in (t for t in strings if len(t) <= 4):  # listing the trees of longer strings takes minutes
        ids = C.encode(list(text))
        vchart, ynode = new_viterbi_chart(G, len(ids))
        best = max(w for _, w in ref.analyses("Sentence", tuple(ids)))
        assert viterbi_chart(G, S, ids, len(ids), lrho, ltab, vchart, ynode) == pytest.approx(
            math.log(best), rel=1e-10), text


def test_sampling_with_spans_past_the_band(core):
    C, S = _spanned_colloc_state(core)
    assert _sample_check(core, C, S, "abbab", 20000, collapsed=True) >= 10


def test_long_sentence_with_spans_matches_word_dp(core):
    """Z of a 300-character string under toy with Word spans <= 3: the banded chart against a
    dynamic programme over the words (whose probabilities come from the enumeration)."""
    C = CompiledGrammar(_with_spans(core.toy_grammar(0.3, 1.0), Word=3))
    S = core.empty_state(C)
    ref = core.Reference(C)
    rng = np.random.default_rng(0)
    text = "".join(rng.choice(list("abc"), size=300))
    one, more = (ref.rho(r) for r in (0, 1))  # Words -> Word, Words -> Word Words
    word = {}
    for length in range(1, 4):
        for w in core.all_strings("abc", length):
            word[w] = ref.prob("Word", tuple(C.encode(list(w))))
    n = len(text)
    logz = [-math.inf] * (n + 1)  # logz[i]: log Z of Words over text[i:]
    for i in range(n - 1, -1, -1):
        terms = []
        for length in range(1, 4):
            if i + length <= n:
                lw = math.log(word[text[i:i + length]])
                if i + length == n:
                    terms.append(math.log(one) + lw)
                else:
                    terms.append(math.log(more) + lw + logz[i + length])
        top = max(terms)
        logz[i] = top + math.log(sum(math.exp(t - top) for t in terms))
    ws = Workspace(C, n)
    assert ws.chart.shape == (n + 1, 3 + 2, C.arrays.n_sym)  # the band, plus the suffix column
    assert _inside(C, S, ws, text) == pytest.approx(logz[0], rel=1e-10)
