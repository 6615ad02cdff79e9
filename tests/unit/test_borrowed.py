"""`core.borrowed`: kernels see the caller's arrays without touching their reference counts.

A kernel that borrows its arguments must leave every array's count as it found
it (a lost reference frees memory the caller still uses; an extra one leaks),
and writes through the borrowed arrays must land in the caller's arrays.
"""
from __future__ import annotations

import sys

import numpy as np
from numba import njit

from spacy_ag.core.borrowed import borrowed
from spacy_ag.runs.mcmc_chain import Chain, SamplerSettings, pack_corpus
from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.grammar import parse_grammar_text
from spacy_ag.synthetic import generate_corpus, make_lexicon


@njit
def _fill_through_borrowed(pair, value):
    """Write `value` into both arrays of a (1-d array, (1-d array, int)) tuple through a borrowed copy."""
    a, (b, n) = borrowed(pair)
    for i in range(a.shape[0]):
        a[i] = value
    for i in range(n):
        b[i] = value
    return a.sum() + b[:n].sum()


def test_writes_through_a_borrowed_tuple_reach_the_callers_arrays():
    a, b = np.zeros(4), np.zeros(6)
    counts = sys.getrefcount(a), sys.getrefcount(b)
    for _ in range(100):
        assert _fill_through_borrowed((a, (b, 3)), 2.0) == 14.0
    assert (a == 2.0).all() and (b[:3] == 2.0).all() and (b[3:] == 0.0).all()
    assert (sys.getrefcount(a), sys.getrefcount(b)) == counts


def test_sweeps_leave_every_state_array_with_its_reference_count():
    grammar = parse_grammar_text("1 1 Sentence --> Word+\nWord --> Char+\n"
                                 + "".join(f"1 1 Char --> {c}\n" for c in "abcdef"),
                                 default_a=1e-4, default_b=1e4)
    compiled = CompiledGrammar(grammar)
    lexicon = make_lexicon(12, alphabet="abcdef", min_len=2, max_len=4, seed=1)
    sentences = [list("".join(u)) for u in generate_corpus(lexicon, 60, seed=2)]
    words, sent_ptr = pack_corpus(compiled, sentences)
    chain = Chain(compiled, words, sent_ptr, SamplerSettings(init="incremental"), seed=3)
    chain.initialize()
    chain.step()  # pools grow in the first sweeps: take the counts once they are settled
    chain.step()
    state = chain.state
    # the workspace's arrays only: its small ints are interpreter-wide objects whose counts move whenever
    # numba compiles (the first run compiles a kernel inside these sweeps)
    scratch = [x for x in chain.ws.__dict__.values() if isinstance(x, np.ndarray)]
    before = [sys.getrefcount(x) for x in state] + [sys.getrefcount(x) for x in scratch]
    accepted = sum(chain.step()["accepted"] for _ in range(5))
    assert chain.state is state  # no pool grew: the very same arrays went through five sweeps
    after = [sys.getrefcount(x) for x in state] + [sys.getrefcount(x) for x in scratch]
    assert after == before
    assert accepted > 0  # the sweeps changed the analyses: their writes reached these arrays
