"""The word-lattice decoder (core.word_lattice) gives exactly the general Viterbi's segmentation."""
import random
import re

import numpy as np
import pytest

import spacy_ag.model as model_module
from spacy_ag.components.segmenter import words_and_spaces, words_and_spaces_at
from spacy_ag.core.viterbi import log_rho, log_table_weights, segment_batch
from spacy_ag.core.word_lattice import lattice_plan, lattice_state, lattice_weights, segment_lattice_batch
from spacy_ag.model import AdaptorGrammar
from spacy_ag.runs.mcmc_chain import pack_corpus
from spacy_ag.synthetic import generate_corpus, make_lexicon
from spacy_ag.text_units import alnum_runs, graphemes, text_units

UNIGRAM = """
1 1 Sentence --> Word+
1 0.0001 10000 Word --> Char+
1 1 Char --> [:corpus:]
"""

COLLOC = """
1 1 Sentence --> Colloc+
1 0.0001 10000 Colloc --> Word+
1 0.0001 10000 Word --> Char+
1 1 Char --> [:corpus:]
"""

# not a chain: a word is one or two syllables, so the general chart decodes it
SYLLABLES = """
1 1 Sentence --> Word+
Word --> Syll
Word --> Syll Syll
Syll --> Char+
1 1 Char --> [:corpus:]
"""

ALPHABET = "abcdefghij"


@pytest.fixture(scope="module")
def lines():
    lexicon = make_lexicon(30, alphabet=ALPHABET, seed=5)
    return ["".join(u) for u in generate_corpus(lexicon, 150, seed=6)]


def random_texts(lines, seed):
    """Texts to decode: corpus lines, random strings (unknown characters, spaces, split_at
    characters, some very long), and empty lines."""
    rng = random.Random(seed)
    texts = list(lines[:60]) + ["", " ", "k", "a" * 120]
    for _ in range(120):
        n = rng.choice([1, 2, 5, 12, 30, 90, 250])
        texts.append("".join(rng.choice(ALPHABET * 6 + "xyz  ,") for _ in range(n)))
    texts.append("".join(lines[:40]))  # a long line of real words, no boundary
    return texts


def fitted(grammar, lines, **kwargs):
    return AdaptorGrammar(grammar, split_at=",", **kwargs).fit(lines, iterations=8, seed=3)


def both_kernels(model, texts, category=None):
    """(marks, scores) of the general chart and of the word lattice on the chunks of `texts`."""
    chunks = []
    for text in texts:
        current = []
        for ch in text:
            if ch.isspace() or ch == "," or ch not in model.compiled.term_index:
                if current:
                    chunks.append(current)
                current = []
            else:
                current.append(ch)
        if current:
            chunks.append(current)
    G, S = model.compiled.arrays, model.state
    words, ptr = pack_corpus(model.compiled, chunks)
    seg_mask = model.compiled.symbol_mask([category] if category else model.segment_categories)
    lrho = np.zeros(G.rule_parent.shape[0])
    log_rho(G, S, lrho, model.sampler.collapsed)
    ltab = np.empty(S.tab_state.shape[0])
    log_table_weights(S, ltab)
    plan = lattice_plan(G, seg_mask)
    assert plan is not None
    klw = np.empty(G.n_term + 1)
    yield_best = np.empty((S.trie_head.shape[0], plan[0]))
    root_child = np.empty(G.n_term + 1, np.int32)
    lattice_weights(G, S, lrho, ltab, plan, klw, yield_best, root_child)
    out = []
    for use_lattice in (False, True):
        marks = np.zeros(len(words) + len(chunks), np.uint8)
        scores = np.zeros(len(chunks))
        if use_lattice:
            segment_lattice_batch(lattice_state(S), G.n_term, words, ptr, lrho, ltab, plan, klw, yield_best,
                                  root_child, seg_mask, marks, scores)
        else:
            segment_batch(G, S, words, ptr, lrho, ltab, seg_mask, marks, scores)
        out.append((marks, scores))
    return out, len(chunks)


@pytest.mark.parametrize("grammar,max_span,category", [
    (UNIGRAM, None, None), (UNIGRAM, 4, None), (COLLOC, None, "Word"), (COLLOC, 6, "Word"),
    (COLLOC, None, "Colloc"),
])
def test_lattice_equals_chart(lines, grammar, max_span, category):
    kwargs = {} if max_span is None else {"max_span": max_span}
    model = fitted(grammar, lines, **kwargs)
    (chart, lattice), n_chunks = both_kernels(model, random_texts(lines, seed=len(grammar) + (max_span or 0)),
                                              category)
    assert n_chunks > 300
    assert np.array_equal(chart[0], lattice[0])
    assert np.array_equal(chart[1], lattice[1])  # scores too, bit for bit
    assert np.isfinite(chart[1]).all()


@pytest.mark.parametrize("grammar", [UNIGRAM, COLLOC])
def test_segment_uses_lattice_and_matches_chart(lines, grammar, monkeypatch):
    model = fitted(grammar, lines)
    texts = random_texts(lines, seed=9)
    fast = model.segment(texts)
    assert model.decoded_texts["lattice"] > 300 and model.decoded_texts["chart"] == 0
    assert all("".join(words) == "".join(text.split()) for words, text in zip(fast, texts))
    slow_model = fitted(grammar, lines)
    monkeypatch.setattr(model_module, "lattice_plan", lambda G, seg_mask: None)
    assert slow_model.segment(texts) == fast
    assert slow_model.decoded_texts["lattice"] == 0 and slow_model.decoded_texts["chart"] > 300


def test_other_grammars_use_the_chart(lines):
    model = fitted(SYLLABLES, lines)
    assert lattice_plan(model.compiled.arrays, model.compiled.symbol_mask(["Word"])) is None
    model.segment(lines[:20])
    assert model.decoded_texts == {"lattice": 0, "chart": 20}


def test_segment_offsets_spell_the_words(lines):
    model = fitted(UNIGRAM, lines)
    texts = random_texts(lines, seed=4) + ["  ab\tcd  ef\n", "x１２.５%ab ,", "ab\u0301c d"]
    offsets = model.segment_offsets(texts)
    assert offsets is not None
    words = model.segment(texts)
    assert [[t[o[k]:o[k + 1]] for k in range(0, len(o), 2)] for t, o in zip(texts, offsets)] == words
    for text, o, pieces in zip(texts, offsets, words):
        assert words_and_spaces_at(o, text) == words_and_spaces(pieces, text)


def reference_units(text, units):
    """text_units without its shortcuts: grapheme clusters (whitespace split off), then runs."""
    if units == "codepoints":
        return list(text)
    out = []
    for cluster in graphemes(text):
        if len(cluster) > 1 and any(ch.isspace() for ch in cluster):
            out.extend(filter(None, re.split(r"(\s)", cluster)))
        else:
            out.append(cluster)
    return alnum_runs(out) if units == "alnum-runs" else out


def test_text_units_shortcuts_match_the_clusters():
    rng = random.Random(2)
    pools = ["的一是在年，。、：ａｂＡ１２３4５.,:/．，：／%％ xé٣", "的年１２.%a \u0301\u200d👍🇺🇸가각\u094d\u0915\t\r\n"]
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 25))) for pool in pools for _ in range(3000)]
    for units in ("graphemes", "codepoints", "alnum-runs"):
        for text in texts:
            assert text_units(text, units) == reference_units(text, units), (text, units)
