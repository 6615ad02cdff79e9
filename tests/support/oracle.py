"""An independent Python re-implementation of the model, to check the numba core against.

docs/algorithms.md 1.2, 3.1-3.3, 3.7: a builder that writes hand-made analyses
into the state's node pool, a reader that turns pool trees back into nested
tuples, a recount of all counts from the stored analyses, and `Reference`, a
brute-force enumerator of every G' derivation of a string. Tests reach these
through the `core` fixture of tests/conftest.py (``core.build(...)``).
"""
from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict

import numpy as np

from spacy_ag.core.rng import make_rng
from spacy_ag.core.state import CLOSED, OPEN, RULE, TABLE, TERM, alloc_node, new_state, trie_insert

from .grammars import rule_id


def empty_state(compiled, n_sentences=8, seed=0, node_cap=4096, tab_cap=512, trie_cap=2048):
    G = compiled.arrays
    a, b = compiled.adaptor_params()
    return new_state(G.rule_parent.shape[0], G.n_nt, G.adaptor_nt.shape[0], n_sentences, a, b,
                     make_rng(seed), node_cap=node_cap, tab_cap=tab_cap, trie_cap=trie_cap)


def stack_for(S):
    return np.zeros(2 * S.node_kind.shape[0] + 16, np.int32)


def children(S, x):
    out = []
    c = int(S.node_child[x])
    while c >= 0:
        out.append(c)
        c = int(S.node_sib[c])
    return out


def to_tuple(S, x):
    """Pool tree -> nested tuples ('T', t) / ('R', r, kids) / ('NEW', r, kids) / ('TAB', k) / ('CLOSED', k)."""
    kind = int(S.node_kind[x])
    if kind == TERM:
        return ("T", int(S.node_sym[x]))
    if kind == RULE:
        return ("R", int(S.node_rule[x]), tuple(to_tuple(S, c) for c in children(S, x)))
    assert kind == TABLE, kind
    k = int(S.node_table[x])
    if k < 0:
        label = int(S.node_child[x])
        return ("NEW", int(S.node_rule[label]), tuple(to_tuple(S, c) for c in children(S, label)))
    if int(S.tab_state[k]) == OPEN:
        return ("TAB", k)
    return ("CLOSED", k)


def yield_of(S, x):
    """Terminal ids below pool node x, looking through tables into their labels."""
    out = []
    todo = [x]
    while todo:
        y = todo.pop()
        kind = int(S.node_kind[y])
        if kind == TERM:
            out.append(int(S.node_sym[y]))
        elif kind == RULE:
            todo.extend(reversed(children(S, y)))
        else:
            k = int(S.node_table[y])
            todo.append(int(S.node_child[y]) if k < 0 else int(S.tab_label[k]))
    return tuple(out)


def recount(compiled, S, roots):
    """All counts of 3.1 recomputed from the stored analyses (the trees under `roots`).

    Returns dict(f, fA, customers={table: n}, tables={table: (adaptor, yield, root rule)}).
    A table label counts once however many customers the table has.
    """
    G = compiled.arrays
    f = np.zeros(G.rule_parent.shape[0], np.int64)
    fA = np.zeros(G.n_nt, np.int64)
    customers = Counter()
    tables = {}
    fragments = list(roots)
    while fragments:
        todo = [fragments.pop()]
        while todo:
            x = todo.pop()
            kind = int(S.node_kind[x])
            if kind == TERM:
                continue
            if kind == RULE:
                r = int(S.node_rule[x])
                assert int(G.rule_parent[r]) == int(S.node_sym[x]), "rule node with a foreign rule"
                f[r] += 1
                fA[G.rule_parent[r]] += 1
                todo.extend(children(S, x))
                continue
            k = int(S.node_table[x])
            assert k >= 0, "a stored analysis still holds a NEW node"
            customers[k] += 1
            if k not in tables:
                label = int(S.tab_label[k])
                ad = int(G.sym_adaptor[S.node_sym[x]])
                assert ad >= 0 and int(S.tab_adaptor[k]) == ad
                assert int(S.node_sym[label]) == int(S.node_sym[x])
                tables[k] = (ad, yield_of(S, label), int(S.node_rule[label]))
                fragments.append(label)
    return dict(f=f, fA=fA, customers=dict(customers), tables=tables)


def live_roots(S):
    return [int(r) for r in S.sent_root if r >= 0]


def _spec_yield(compiled, S, spec):
    tag = spec[0]
    if tag == "T":
        return (compiled.term_index[spec[1]],)
    if tag == "TAB":
        return yield_of(S, int(S.tab_label[spec[1]]))
    kids = spec[2] if tag != "SHARED" else spec[3]
    return tuple(t for c in kids for t in _spec_yield(compiled, S, c))


def _trie_node(compiled, S, terms):
    y = 0
    for t in terms:
        y = int(trie_insert(S, y, t, compiled.arrays.n_term))
    return y


def build(compiled, S, spec, shared=None):
    """Write a hand-made analysis into the pool; return its root node.

    spec: ('T', 'a') | ('R', 'A -> B C', [kids]) | ('NEW', 'A -> B', [kids]) (a new table
    for adapted A: TABLE node with table -1 over a label RULE node) | ('TAB', k) (a customer
    of existing table k) | ('SHARED', key, rule, kids) (a customer of the table `shared[key]`).
    """
    tag = spec[0]
    if tag == "T":
        return int(alloc_node(S, TERM, compiled.term_index[spec[1]], -1))
    if tag == "TAB" or tag == "SHARED":
        k = spec[1] if tag == "TAB" else shared[spec[1]]
        label = int(S.tab_label[k])
        x = int(alloc_node(S, TABLE, int(S.node_sym[label]), -1))
        S.node_table[x] = k
        S.node_aux[x] = S.tab_yield[k]
        return x
    r = rule_id(compiled, spec[1])
    A = int(compiled.arrays.rule_parent[r])
    kids = [build(compiled, S, c, shared) for c in spec[2]]
    if tag == "R":
        x = owner = int(alloc_node(S, RULE, A, r))
    else:
        assert tag == "NEW"
        x = int(alloc_node(S, TABLE, A, -1))
        S.node_aux[x] = _trie_node(compiled, S, _spec_yield(compiled, S, spec))
        owner = int(alloc_node(S, RULE, A, r))
        S.node_child[x] = owner
    for c, nxt in zip(kids, kids[1:] + [-1]):
        S.node_sib[c] = nxt
    S.node_child[owner] = kids[0] if kids else -1
    return x


def _shared_specs(spec, out):
    if spec[0] == "SHARED":
        out.setdefault(spec[1], ("NEW", spec[2], spec[3]))
        for c in spec[3]:
            _shared_specs(c, out)
    elif spec[0] in ("R", "NEW"):
        for c in spec[2]:
            _shared_specs(c, out)
    return out


def build_detached(compiled, S, spec, collapsed):
    """Build an analysis whose SHARED nodes are the only customers of CLOSED tables.

    This is the library's form of a detached copy with New/Join nodes (3.7): the
    first reference that `add` visits reopens the table, later ones join it. It
    is produced through the public operations only: each shared table is opened
    by a helper analysis, the target joins it, then both are removed again.
    """
    from spacy_ag.core.analyses import add, remove

    G = compiled.arrays
    stack = stack_for(S)
    specs = _shared_specs(spec, {})
    shared, helpers = {}, []
    for key, new_spec in specs.items():
        h = build(compiled, S, new_spec, shared)
        add(G, S, h, collapsed, stack)
        shared[key] = int(S.node_table[h])
        helpers.append(h)
    root = build(compiled, S, spec, shared)
    add(G, S, root, collapsed, stack)
    for h in helpers:
        remove(G, S, h, collapsed, stack)
    remove(G, S, root, collapsed, stack)
    for k in shared.values():
        assert int(S.tab_state[k]) == CLOSED
    return root


# toy-grammar analyses -------------------------------------------------------


def chars_spec(word, prefix="Chars", char="Char"):
    """Right-branching Chars -> Char Chars spelling of `word`."""
    head = ("R", f"{char} -> {word[0]}", [("T", word[0])])
    if len(word) == 1:
        return ("R", f"{prefix} -> {char}", [head])
    return ("R", f"{prefix} -> {char} {prefix}", [head, chars_spec(word[1:], prefix, char)])


def toy_word(word, how="NEW", key=None):
    """A Word of the toy grammar: a new table, a customer of table `how` (int), or SHARED."""
    if isinstance(how, int):
        return ("TAB", how)
    if how == "SHARED":
        return ("SHARED", key, "Word -> Chars", [chars_spec(word)])
    return ("NEW", "Word -> Chars", [chars_spec(word)])


def toy_sentence(words):
    """Words spine over the given Word specs."""
    if len(words) == 1:
        return ("R", "Words -> Word", [words[0]])
    return ("R", "Words -> Word Words", [words[0], toy_sentence(words[1:])])


# ---------------------------------------------------------------------------
# the brute-force reference model


class Reference:
    """G' of a state (3.3), written from the Grammar object, and all its derivations.

    tables: {k: (adaptor, yield tuple, customers)}; f, fA: rule counts.
    """

    def __init__(self, compiled, tables=None, f=None, fA=None, a=None, b=None, collapsed=False,
                 inv_temp=1.0, skip_ad=-1):
        g = compiled.grammar
        self.compiled = compiled
        self.rules = g.rules
        self.nt = compiled.nt_index
        self.term = compiled.term_index
        self.adapted = compiled.adapted
        n_rules = len(g.rules)
        self.f = np.zeros(n_rules) if f is None else np.asarray(f, float)
        self.fA = np.zeros(len(self.nt)) if fA is None else np.asarray(fA, float)
        pa, pb = compiled.adaptor_params()
        self.a = pa if a is None else np.asarray(a, float)
        self.b = pb if b is None else np.asarray(b, float)
        self.tables = dict(tables or {})
        self.collapsed = collapsed
        self.inv_temp = inv_temp
        self.skip_ad = skip_ad
        self.by_parent = defaultdict(list)
        for r, rule in enumerate(g.rules):
            self.by_parent[rule.parent].append(r)
        #: `@ NT max_span=N`: NT derives no string longer than N
        self.max_span = {x: a.options["max_span"] for x, a in g.adaptors.items() if "max_span" in a.options}
        self.m = np.zeros(len(self.adapted))
        self.n = np.zeros(len(self.adapted))
        for ad, _, cnt in self.tables.values():
            self.m[ad] += 1
            self.n[ad] += cnt
        self._memo = {}

    @classmethod
    def from_state(cls, compiled, S, roots, collapsed=False, **kw):
        rc = recount(compiled, S, roots)
        tables = {k: (ad, y, rc["customers"][k]) for k, (ad, y, _) in rc["tables"].items()}
        return cls(compiled, tables, rc["f"], rc["fA"], np.array(S.ad_a), np.array(S.ad_b),
                   collapsed, **kw)

    def theta(self, r):
        rule = self.rules[r]
        sibs = self.by_parent[rule.parent]
        total = sum(self.rules[q].weight for q in sibs)
        if not self.collapsed:
            return rule.weight / total
        A = self.nt[rule.parent]
        return (self.f[r] + rule.weight) / (self.fA[A] + total)

    def lam(self, ad):
        return (self.m[ad] * self.a[ad] + self.b[ad]) / (self.n[ad] + self.b[ad])

    def omega(self, k):
        ad, _, cnt = self.tables[k]
        return (cnt - self.a[ad]) / (self.n[ad] + self.b[ad])

    def rho(self, r):
        parent = self.rules[r].parent
        w = self.theta(r)
        if parent in self.adapted:
            ad = self.adapted.index(parent)
            if ad != self.skip_ad:
                w *= self.lam(ad)
        return w ** self.inv_temp

    def analyses(self, X, s):
        """[(tree, weight)] for every G' derivation of nonterminal X over terminal ids s."""
        key = (X, s)
        if key in self._memo:
            return self._memo[key]
        out = []
        if len(s) > self.max_span.get(X, len(s)):
            return out
        ad = self.adapted.index(X) if X in self.adapted else -1
        cache_on = ad >= 0 and ad != self.skip_ad
        if cache_on:
            for k, (tad, y, _) in sorted(self.tables.items()):
                if tad == ad and y == s:
                    out.append((("TAB", k), self.omega(k) ** self.inv_temp))
        for r in self.by_parent[X]:
            kids = self.rules[r].children
            w = self.rho(r)
            for parts in _compositions(s, len(kids)):
                options = []
                for c, part in zip(kids, parts):
                    if c in self.nt:
                        options.append(self.analyses(c, part))
                    else:
                        options.append([(("T", self.term[c]), 1.0)] if part == (self.term[c],) else [])
                for combo in itertools.product(*options):
                    tree = ("NEW" if cache_on else "R", r, tuple(t for t, _ in combo))
                    out.append((tree, w * math.prod(v for _, v in combo)))
        self._memo[key] = out
        return out

    def prob(self, X, s):
        """Sum of the weights of all derivations (the same recursion, summing instead of listing)."""
        key = ("p", X, s)
        if key in self._memo:
            return self._memo[key]
        total = 0.0
        if len(s) > self.max_span.get(X, len(s)):
            return total
        ad = self.adapted.index(X) if X in self.adapted else -1
        if ad >= 0 and ad != self.skip_ad:
            for k, (tad, y, _) in sorted(self.tables.items()):
                if tad == ad and y == s:
                    total += self.omega(k) ** self.inv_temp
        for r in self.by_parent[X]:
            kids = self.rules[r].children
            w = self.rho(r)
            for parts in _compositions(s, len(kids)):
                v = w
                for c, part in zip(kids, parts):
                    if c in self.nt:
                        v *= self.prob(c, part)
                    elif part != (self.term[c],):
                        v = 0.0
                    if v == 0.0:
                        break
                total += v
        self._memo[key] = total
        return total


def _compositions(s, k):
    """All ways to cut tuple s into k non-empty consecutive parts."""
    n = len(s)
    if k > n:
        return
    for cuts in itertools.combinations(range(1, n), k - 1):
        bounds = (0,) + cuts + (n,)
        yield tuple(s[bounds[i]:bounds[i + 1]] for i in range(k))
