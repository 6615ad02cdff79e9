"""Charts of long texts filled and drawn in blocks (docs/algorithms.md 3.5) give exactly the full chart's
results: the same log Z, the same trees from the same random stream, the same chains; and the trie and
chart memory of a long text stays within the bounds the kernels reserve."""
from __future__ import annotations

import numpy as np
import pytest

from spacy_ag.core.chart import (
    chart_block, chart_rows, chart_width, inside, inside_weighted, new_chart, new_chart_blocked, sample_records,
    sample_tree, tables_need, trie_need,
)
from spacy_ag.core.analyses import fill_rho, free_tree
from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.core.rng import make_rng
from spacy_ag.core.sampler import Workspace, need_nodes
from spacy_ag.core.state import N_TRIE, grow
from spacy_ag.grammar.rules import Adaptor, Grammar
from spacy_ag.runs.mcmc_chain import Chain, SamplerSettings, pack_corpus
from spacy_ag.synthetic import generate_corpus, make_lexicon

BLOCKS = (1, 3, 7, 40)


def _spanned(grammar, **spans):
    adaptors = {x: Adaptor(a.a, a.b, {**a.options, "max_span": float(spans[x])}) if x in spans else a
                for x, a in grammar.adaptors.items()}
    return Grammar(grammar.start, list(grammar.rules), adaptors)


def _trained(grammar, seed=3):
    """A compiled grammar and a state with tables, from a short chain on generated text."""
    lexicon = make_lexicon(6, alphabet="ab", min_len=1, max_len=2, seed=4)
    sentences = [tuple("".join(u)) for u in generate_corpus(lexicon, 25, mean_words=3, seed=5, collocations=2)]
    C = CompiledGrammar(grammar)
    words, ptr = pack_corpus(C, sentences)
    chain = Chain(C, words, ptr, SamplerSettings(collapsed=True, init="incremental", sample_hyper=False), seed=seed)
    chain.initialize()
    for _ in range(2):
        chain.step()
    return C, chain.state


@pytest.fixture(scope="module", params=["unigram", "colloc"])
def trained(request, core):
    if request.param == "unigram":
        return _trained(_spanned(core.unigram_grammar("ab"), Word=3))
    return _trained(_spanned(core.colloc_grammar("ab", a=0.2, b=3.0), Word=2, Colloc=3))


def _text(C, n, seed):
    return np.array(C.encode(list(np.random.default_rng(seed).choice(["a", "b"], size=n))), np.int32)


def _draws(C, S, words, arrays, n_draws, seed):
    """log Z and n_draws trees (as tuples, with their log r) from one chart, the state left as it was."""
    G = C.arrays
    rho = np.zeros(G.rule_parent.shape[0])
    fill_rho(G, S, rho, True, -1, 1.0)
    chart, scale, ynode, window = arrays
    n = words.shape[0]
    logz = inside(G, S, words, n, rho, chart, scale, ynode, window, G.start, -1, 1.0)
    ws = Workspace(C, n)
    stack = np.zeros(2 * S.node_kind.shape[0] + 16, np.int32)
    S.rng[:] = make_rng(seed)
    trees = []
    for _ in range(n_draws):
        root, lr = sample_tree(G, S, words, n, rho, chart, scale, ynode, window, G.start, -1, 1.0, S.rng,
                               ws.tasks, ws.buf)
        trees.append((_as_tuple(S, root), lr))
        free_tree(S, root, stack)
    return logz, trees


def _as_tuple(S, x):
    children = []
    c = S.node_child[x]
    while c >= 0:
        children.append(_as_tuple(S, c))
        c = S.node_sib[c]
    return (int(S.node_kind[x]), int(S.node_sym[x]), int(S.node_rule[x]), int(S.node_table[x]), tuple(children))


def test_blocked_chart_gives_the_full_charts_log_z_and_draws(trained):
    C, S = trained
    G = C.arrays
    words = _text(C, 120, seed=1)
    full = new_chart(G, words.shape[0])
    assert full[3][1] >= words.shape[0]  # short text: one block, the whole chart
    logz, trees = _draws(C, S, words, full, 6, seed=8)
    assert np.isfinite(logz)
    for block in BLOCKS:
        arrays = new_chart_blocked(G, words.shape[0], block)
        assert arrays[0].shape[0] == chart_rows(G, words.shape[0], block)
        logz_b, trees_b = _draws(C, S, words, arrays, 6, seed=8)
        assert logz_b == logz, block
        assert trees_b == trees, block


def test_blocked_records_equal_full_records_under_given_weights(trained):
    C, S = trained
    G = C.arrays
    words = _text(C, 90, seed=2)
    n = words.shape[0]
    rho = np.random.default_rng(0).uniform(0.05, 1.0, G.rule_parent.shape[0])
    tab_lw = np.log(np.random.default_rng(1).uniform(0.01, 1.0, S.tab_count.shape[0]))
    results = []
    for block in (n,) + BLOCKS:
        chart, scale, ynode, window = new_chart_blocked(G, n, block)
        logz = inside_weighted(G, S, words, n, rho, chart, scale, ynode, window, G.start, -1, 1.0, tab_lw)
        rec = np.zeros((40 * n, 6), np.int32)
        tasks = np.zeros((40 * n + 8, 3), np.int64)
        buf = np.zeros((n + 3, 3), np.int64)
        rng = make_rng(5)
        at, scores = 0, []
        for _ in range(4):  # each draw starts again at the text's first block
            count, lr = sample_records(G, S, words, n, rho, chart, scale, ynode, window, G.start, -1, tab_lw, rng,
                                       tasks, buf, rec, at, rec.shape[0])
            assert count > 0
            at += count
            scores.append(lr)
        results.append((logz, rec[:at].tobytes(), scores))
    assert all(r == results[0] for r in results[1:])


def test_chain_with_blocked_workspace_equals_chain_with_full_chart(core):
    grammar = _spanned(core.colloc_grammar("ab", a=0.2, b=3.0), Word=2, Colloc=3)
    lexicon = make_lexicon(6, alphabet="ab", min_len=1, max_len=2, seed=4)
    sentences = [tuple("".join(u)) for u in generate_corpus(lexicon, 30, mean_words=8, seed=6, collocations=2)]
    C = CompiledGrammar(grammar)
    words, ptr = pack_corpus(C, sentences)
    states = []
    for block in (None, 2, 5):
        chain = Chain(C, words, ptr, SamplerSettings(collapsed=True, init="incremental"), seed=7)
        if block is not None:
            ws = chain.ws
            ws.chart, ws.scale, ws.ynode, ws.window = new_chart_blocked(C.arrays, ws.max_len, block)
        chain.initialize()
        for _ in range(3):
            chain.step()
        states.append([np.asarray(a).tobytes() for a in chain.state])
    assert states[1] == states[0] and states[2] == states[0]


def test_long_text_chart_is_a_small_fraction_of_the_full_chart(core):
    C = CompiledGrammar(_spanned(core.unigram_grammar("ab"), Word=64))
    G = C.arrays
    n = 100_000
    width = chart_width(G, n)
    assert width == 64
    block = chart_block(G, n)
    assert width < block < n
    chart, scale, ynode, window = new_chart(G, n)
    assert chart.shape[0] == chart_rows(G, n, block)
    used = chart.nbytes + scale.nbytes + ynode.nbytes
    full = (n + 1) * (width + 2) * (G.n_sym * 8 + 8 + 4)
    assert used * 10 < full
    assert used < 40 << 20


@pytest.mark.parametrize("name", ["unigram", "colloc"])
def test_a_tree_adds_at_most_trie_need_trie_nodes(core, name):
    letters = "abcdefghijklmnop"
    grammar = core.unigram_grammar(letters) if name == "unigram" else core.colloc_grammar(letters)
    grammar = _spanned(grammar, Word=4) if name == "unigram" else _spanned(grammar, Word=3, Colloc=6)
    C = CompiledGrammar(grammar)
    G = C.arrays
    n = 300
    words = np.array(C.encode(list(np.random.default_rng(4).choice(list(letters), size=n))), np.int32)
    chain = Chain(C, words, np.array([0, n], np.int64), SamplerSettings(collapsed=True, init="incremental"), seed=2)
    need = trie_need(G, n)
    nodes = need_nodes(G, n, C.max_unary_chain)
    S = grow(chain.state, nodes, nodes, need, G.n_term)  # no tables yet: every table opened has a new yield
    assert int(S.counters[N_TRIE]) + need <= S.trie_parent.shape[0]
    assert need == n * G.adaptor_depth + 1  # tighter than the band's spans
    rho = np.zeros(G.rule_parent.shape[0])
    fill_rho(G, S, rho, True, -1, 1.0)
    chart, scale, ynode, window = new_chart(G, n)
    inside(G, S, words, n, rho, chart, scale, ynode, window, G.start, -1, 1.0)
    before = int(S.counters[N_TRIE])
    ws = Workspace(C, n)
    sample_tree(G, S, words, n, rho, chart, scale, ynode, window, G.start, -1, 1.0, S.rng, ws.tasks, ws.buf)
    added = int(S.counters[N_TRIE]) - before
    assert n // 2 < added < need


@pytest.mark.parametrize("name, depth", [("unigram", 1), ("colloc", 2)])
def test_adaptor_depth_counts_adapted_nodes_on_a_path(core, name, depth):
    grammar = core.unigram_grammar("ab") if name == "unigram" else core.colloc_grammar("ab")
    assert CompiledGrammar(grammar).arrays.adaptor_depth == depth


@pytest.mark.parametrize("name", ["brent-unigram", "brent-colloc", "brent-funcwords-both", "chinese-colloc3"])
def test_a_tree_stays_within_the_node_table_and_trie_bounds(name):
    """The pools' room checks reserve need_nodes, tables_need and trie_need per tree: on an empty
    state (every adapted node a new table with a new yield) trees of the shipped grammars stay within them."""
    from pathlib import Path

    from spacy_ag.core.state import N_TRIE, NODE_HWM, TAB_HWM
    from spacy_ag.core.analyses import add
    from spacy_ag.grammar import expand_corpus_class, read_grammar

    path = Path(__file__).resolve().parents[2] / "configs" / "grammars" / f"{name}.lt"
    C = CompiledGrammar(expand_corpus_class(read_grammar(path), list("abcdefghijkl")))
    letters = C.terminals  # a grammar with its own phoneme classes ignores the letters given
    G = C.arrays
    rng = np.random.default_rng(7)
    drawn = 0
    for n in (1, 2, 7, 40):
        words = np.array(C.encode(list(rng.choice(letters, size=n))), np.int32)
        chain = Chain(C, words, np.array([0, n], np.int64), SamplerSettings(collapsed=True, init="incremental"),
                      seed=n)
        nodes, tables, trie = need_nodes(G, n, C.max_unary_chain), int(tables_need(G, n)), int(trie_need(G, n))
        S = grow(chain.state, 6 * nodes, 6 * tables, 6 * trie, G.n_term)  # room for the five trees kept
        rho = np.zeros(G.rule_parent.shape[0])
        fill_rho(G, S, rho, True, -1, 1.0)
        ws = Workspace(C, n)
        stack = np.zeros(2 * S.node_kind.shape[0] + 16, np.int32)
        for _ in range(5):
            used = [int(S.counters[k]) for k in (NODE_HWM, TAB_HWM, N_TRIE)]
            if inside(G, S, words, n, rho, ws.chart, ws.scale, ws.ynode, ws.window, G.start, -1, 1.0) == -np.inf:
                break  # a function-word grammar parses only some texts
            drawn += 1
            root, _ = sample_tree(G, S, words, n, rho, ws.chart, ws.scale, ws.ynode, ws.window, G.start, -1, 1.0,
                                  S.rng, ws.tasks, ws.buf)
            add(G, S, root, True, stack)
            grew = [int(S.counters[k]) - u for k, u in zip((NODE_HWM, TAB_HWM, N_TRIE), used)]
            assert grew[0] <= nodes - 8 and grew[1] <= tables and grew[2] <= trie, (n, grew)
    assert drawn >= 10
