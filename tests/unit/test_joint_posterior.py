"""The whole MCMC chain samples the exact joint posterior (docs/algorithms.md 1.2, 3.3-3.12).

The identity tests check single moves; these check what the moves add up to.
An independent enumerator lists every generative history of a tiny corpus:
each rule drawn from its Dirichlet-multinomial predictive (theta integrated
out), each adapted node either joining an existing table or opening a new one
whose label is then generated. Histories taken in one fixed order correspond
one to one with final states (seatings and labels), so summing them per
segmentation gives the exact posterior over segmentations. A long chain must
visit the segmentations in those proportions. The enumerator shares no code
with the engine.

The sampler, like py-cfg, never proposes two nodes of one sentence sharing a
table that no other sentence uses (docs/algorithms.md 3.9, a known and tolerated
approximation). The corpus of the main check has no repeated substring
inside an utterance, so there the chain is exact; a separate check pins the
approximation down on a single utterance.
"""
from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict

import pytest

from spacy_ag.runs.mcmc_chain import Chain, SamplerSettings, pack_corpus
from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.runs.marginal_decoding import words_from_key

# no utterance repeats a substring, so no table can be shared inside one utterance
CORPUS = ["ab", "ab", "ba"]
STEPS = 40000
# sampling noise alone leaves a total variation of about 0.01 after STEPS sweeps (27 cells);
# dropping the MH test leaves about 0.03
TV_LIMIT = 0.02


class History:
    """The generative process of a corpus, one utterance after another.

    With share_within_sentence=False a node may join only tables opened by an
    earlier utterance: the space the sampler's proposals can reach.
    `sentence` is the index of the utterance being generated.
    """

    def __init__(self, rules, adaptors, share_within_sentence=True):
        self.rules = rules
        self.share_within_sentence = share_within_sentence
        self.sentence = 0
        self.adaptors = adaptors
        self.by_parent = defaultdict(list)
        for r, rule in enumerate(rules):
            self.by_parent[rule.parent].append(r)
        self.prior_total = {p: sum(rules[r].weight for r in rs) for p, rs in self.by_parent.items()}

    def generate(self, X, s, state):
        """Yield (probability, state, tree) for every way X generates the string s from state.

        state = (rule counts as a tuple, tables as a tuple of (X, yield, customers, label,
        sentence that opened it)). A tree records only what the segmentation needs:
        (X, yield, children).
        """
        counts, tables = state
        if X not in self.by_parent:
            if s == X:
                yield 1.0, state, None
            return
        if X in self.adaptors:
            a, b = self.adaptors[X]
            n = sum(t[2] for t in tables if t[0] == X)
            m = sum(1 for t in tables if t[0] == X)
            for k, (t, y, c, label, origin) in enumerate(tables):
                if t == X and y == s and (self.share_within_sentence or origin < self.sentence):
                    joined = tables[:k] + ((t, y, c + 1, label, origin),) + tables[k + 1:]
                    yield (c - a) / (n + b), (counts, joined), label
            new = (m * a + b) / (n + b)
            for p, (counts2, tables2), tree in self._expand(X, s, (counts, tables)):
                yield new * p, (counts2, tables2 + ((X, s, 1, tree, self.sentence),)), tree
        else:
            yield from self._expand(X, s, state)

    def _expand(self, X, s, state):
        counts, tables = state
        used = sum(counts[r] for r in self.by_parent[X])
        for r in self.by_parent[X]:
            rule = self.rules[r]
            p_rule = (counts[r] + rule.weight) / (used + self.prior_total[X])
            counts2 = counts[:r] + (counts[r] + 1,) + counts[r + 1:]
            for parts in _splits(s, len(rule.children)):
                for p, state2, kids in self._sequence(rule.children, parts, (counts2, tables)):
                    yield p_rule * p, state2, (X, s, kids)

    def _sequence(self, symbols, parts, state):
        if not symbols:
            yield 1.0, state, ()
            return
        for p, state2, tree in self.generate(symbols[0], parts[0], state):
            for q, state3, rest in self._sequence(symbols[1:], parts[1:], state2):
                yield p * q, state3, (tree,) + rest


def _splits(s, k):
    for cuts in itertools.combinations(range(1, len(s)), k - 1):
        bounds = (0,) + cuts + (len(s),)
        yield tuple(s[bounds[i]:bounds[i + 1]] for i in range(k))


def _units(tree, X):
    """The yields of the outermost X nodes of a tree, left to right."""
    if tree is None:
        return ()
    sym, s, kids = tree
    if sym == X:
        return (s,)
    return tuple(u for kid in kids for u in _units(kid, X))


def exact_posterior(grammar, corpus, share_within_sentence=True):
    """{(Colloc segmentation, Word segmentation) of the corpus: posterior probability}."""
    h = History(grammar.rules, {X: (ad.a, ad.b) for X, ad in grammar.adaptors.items()},
                share_within_sentence)
    frontier = [(1.0, (tuple(0 for _ in grammar.rules), ()), ())]
    for d, sentence in enumerate(corpus):
        h.sentence = d
        grown = []
        for p, state, trees in frontier:
            for q, state2, tree in h.generate(grammar.start, sentence, state):
                grown.append((p * q, state2, trees + (tree,)))
        frontier = grown
    mass = defaultdict(float)
    for p, _, trees in frontier:
        key = tuple(tuple(_units(t, X) for t in trees) for X in ("Colloc", "Word"))
        mass[key] += p
    z = math.fsum(mass.values())
    return {key: v / z for key, v in mass.items()}


def chain_frequencies(grammar, corpus, steps, seed=11, **settings):
    """How often a chain (one sweep plus label resampling per step) visits each segmentation."""
    C = CompiledGrammar(grammar)
    words, ptr = pack_corpus(C, [tuple(s) for s in corpus])
    opts = dict(collapsed=True, init="batch", sample_hyper=False, label_resampling=True)
    opts.update(settings)
    chain = Chain(C, words, ptr, SamplerSettings(**opts), seed=seed)
    chain.initialize()
    symbols = [C.symbol_mask([X]) for X in ("Colloc", "Word") if X in C.nt_index]
    visits = Counter()
    for _ in range(steps):
        chain.step()
        # a grammar without Colloc has an empty Colloc segmentation, as in exact_posterior
        keys = [tuple(() for _ in corpus)] * (2 - len(symbols))
        for sym in symbols:
            keys.append(tuple(tuple(words_from_key(text, key))
                              for text, key in zip(corpus, chain.segmentation_keys(sym))))
        visits[tuple(keys)] += 1
    return {key: count / steps for key, count in visits.items()}


def total_variation(p, q):
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


@pytest.fixture(scope="module")
def colloc(core):
    # large b keeps the chain mixing fast; small corpora make within-sentence effects large
    return core.colloc_grammar("ab", a=0.2, b=10.0, a2=0.1, b2=20.0)


def test_enumerator_agrees_with_a_hand_computation(core):
    """Unigram grammar, utterance "aa", Word a = 0.2, b = 0.5, Dirichlet(1) rules.

    One word: Sentence->Word 1/2, Phonemes->Phoneme Phonemes 1/2, a 1/2, Phonemes->Phoneme 1/3,
    a 2/3: 1/36. Two words: Sentence->Word Sentence 1/2, Phonemes->Phoneme 1/2, a 1/2,
    Sentence->Word 1/3, then the second "a" joins the first table ((1 - a)/(1 + b)) or opens
    its own ((a + b)/(1 + b) times Phonemes->Phoneme 2/3 and a 2/3).
    """
    g = core.unigram_grammar("ab", a=0.2, b=0.5)
    one = 1 / 36
    join, new = 0.8 / 1.5, 0.7 / 1.5 * (2 / 3) * (2 / 3)
    two = 1 / 2 * 1 / 2 * 1 / 2 * 1 / 3
    key = lambda *words: (((),), (words,))  # noqa: E731
    full = exact_posterior(g, ["aa"])
    assert full[key("a", "a")] == pytest.approx(two * (join + new) / (one + two * (join + new)))
    assert full[key("aa")] == pytest.approx(one / (one + two * (join + new)))
    restricted = exact_posterior(g, ["aa"], share_within_sentence=False)
    assert restricted[key("a", "a")] == pytest.approx(two * new / (one + two * new))


def test_enumerator_covers_every_segmentation(colloc):
    exact = exact_posterior(colloc, CORPUS)
    # every two-letter utterance: one colloc of one word, one colloc of two words, two collocs
    assert len(exact) == 3 ** len(CORPUS)
    assert math.fsum(exact.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("label_resampling,label_order,label_equality",
                         [(True, "adaptor", "table"), (True, "yield", "table"), (True, "yield", "value"),
                          (False, "adaptor", "table")],
                         ids=["labels", "labels-by-yield", "labels-as-pycfg", "no-labels"])
def test_chain_samples_the_exact_joint_posterior(colloc, label_resampling, label_order, label_equality):
    exact = exact_posterior(colloc, CORPUS)
    visits = chain_frequencies(colloc, CORPUS, STEPS, label_resampling=label_resampling, label_order=label_order,
                               label_equality=label_equality)
    assert set(visits) <= set(exact)
    tv = total_variation(visits, exact)
    assert tv < TV_LIMIT, (tv, sorted(((exact[k], visits.get(k, 0.0)) for k in exact), reverse=True)[:5])


def test_the_check_catches_a_chain_without_the_mh_test(colloc):
    """Without the Metropolis-Hastings test the chain samples G' instead of the posterior."""
    exact = exact_posterior(colloc, CORPUS)
    assert total_variation(chain_frequencies(colloc, CORPUS, STEPS, mh=False), exact) > TV_LIMIT


def test_known_approximation_no_new_table_shared_inside_one_utterance(core):
    """On one utterance "aa" the chain samples the posterior without within-utterance sharing."""
    g = core.unigram_grammar("ab", a=0.2, b=0.5)
    visits = chain_frequencies(g, ["aa"], 20000)
    restricted = exact_posterior(g, ["aa"], share_within_sentence=False)
    full = exact_posterior(g, ["aa"])
    assert total_variation(visits, restricted) < TV_LIMIT
    assert total_variation(visits, full) > 0.2
