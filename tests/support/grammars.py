"""Grammars the core tests build by hand: the toy, unigram, collocation, ternary, mixed and unary
grammars of the spec, rule lookup, and every string over an alphabet (for brute-force sums).

Tests reach them through the `core` fixture (``core.toy_grammar()``) of tests/conftest.py.
"""
from __future__ import annotations

import itertools

from spacy_ag.grammar.rules import Adaptor, Grammar, Rule


def _rules(text):
    """'Parent -> X Y [w]' lines -> Rules (weight 1 unless given in brackets)."""
    out = []
    for line in text.strip().splitlines():
        line = line.strip()
        if not line:
            continue
        w = 1.0
        if line.endswith("]"):
            line, w = line[:-1].rsplit("[", 1)
            w = float(w)
        lhs, rhs = line.split("->")
        out.append(Rule(lhs.strip(), tuple(rhs.split()), w))
    return out


def toy_grammar(a=0.0, b=1.0):
    """docs/algorithms.md 2.6 (fixed theta: Words -> Word 0.01, Words -> Word Words 0.99)."""
    rules = _rules("""
        Words -> Word [1]
        Words -> Word Words [99]
        Word -> Chars
        Chars -> Char
        Chars -> Char Chars
        Char -> a
        Char -> b
        Char -> c
    """)
    return Grammar("Words", rules, {"Word": Adaptor(a, b)})


def unigram_grammar(chars, a=0.0, b=1.0):
    """docs/algorithms.md 2.1, [JG09] form."""
    rules = _rules("""
        Sentence -> Word
        Sentence -> Word Sentence
        Word -> Phonemes
        Phonemes -> Phoneme
        Phonemes -> Phoneme Phonemes
    """) + [Rule("Phoneme", (c,)) for c in chars]
    return Grammar("Sentence", rules, {"Word": Adaptor(a, b)})


def colloc_grammar(chars, a=0.0, b=1.0, a2=None, b2=None):
    """docs/algorithms.md 2.2, [JG09] form (Colloc and Word adapted)."""
    rules = _rules("""
        Sentence -> Colloc
        Sentence -> Colloc Sentence
        Colloc -> Words
        Words -> Word
        Words -> Word Words
        Word -> Phonemes
        Phonemes -> Phoneme
        Phonemes -> Phoneme Phonemes
    """) + [Rule("Phoneme", (c,)) for c in chars]
    a2 = a if a2 is None else a2
    b2 = b if b2 is None else b2
    return Grammar("Sentence", rules, {"Colloc": Adaptor(a, b), "Word": Adaptor(a2, b2)})


def ternary_grammar():
    """Rules of 3 and 4 children sharing prefixes (binarization, 3.4); no terminals inside."""
    rules = _rules("""
        S -> A B C [2]
        S -> A B [1]
        S -> A B C A [3]
        S -> B B B [1]
        S -> A [1]
        A -> a [2]
        A -> A A [1]
        B -> b [1]
        B -> a [1]
        B -> B B [1]
        C -> a [1]
        C -> b [2]
        C -> A [1]
    """)
    return Grammar("S", rules, {})


def mixed_grammar():
    """Terminals inside longer right-hand sides, e.g. A -> a B, S -> a S b."""
    rules = _rules("""
        S -> a S b [1]
        S -> A B [2]
        S -> A [1]
        A -> a B [1]
        A -> a [2]
        A -> b a a [1]
        B -> b [1]
        B -> A b [2]
        B -> b b [1]
    """)
    return Grammar("S", rules, {})


def unary_grammar(a=0.3, b=2.0):
    """Unary chains (S -> X -> Y -> Z, some above binary rules) with an adapted symbol inside."""
    rules = _rules("""
        S -> X [1]
        S -> S X [1]
        X -> Y [2]
        X -> W [4]
        X -> Y c [1]
        Y -> Z [3]
        Y -> Z Z [1]
        W -> Z Y [1]
        W -> Z [1]
        Z -> a [1]
        Z -> b [1]
        Z -> c [1]
    """)
    return Grammar("S", rules, {"W": Adaptor(a, b)})


def rule_id(compiled, text):
    """Id of the rule written 'Parent -> X Y'."""
    lhs, rhs = text.split("->")
    key = (lhs.strip(), tuple(rhs.split()))
    for r, rule in enumerate(compiled.grammar.rules):
        if (rule.parent, rule.children) == key:
            return r
    raise KeyError(text)


def all_strings(alphabet, max_len):
    for n in range(1, max_len + 1):
        for s in itertools.product(alphabet, repeat=n):
            yield "".join(s)
