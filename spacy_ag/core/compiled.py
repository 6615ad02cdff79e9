"""Grammar -> flat arrays for the kernels (docs/algorithms.md 3.4).

Chart symbols are the user's nonterminals, then one pseudo-nonterminal per
terminal that appears inside a longer right-hand side (so every binary rule
combines two chart items), then the intermediate symbols of left-to-right
binarization with shared prefixes. Only user nonterminals ever appear in
output trees; the kernels flatten the others away.

Spans (docs/algorithms.md 3.5): every symbol gets the longest yield it can
have, from `@ NT max_span=N` on adapted nonterminals, from its parents (a
child is never longer than its parent) and from its rules (a symbol without
recursion is never longer than its longest expansion). When every adapted
symbol has a finite span and no symbol of unbounded span is a left child,
the symbols of unbounded span (the `Word+` chain of a sentence) can only
cover spans that end where the sentence ends. The chart is then a band of
width `band` plus one cell per start for those suffixes, which makes parsing
linear in the length of the text instead of cubic.

The arrays (`CompiledGrammar.arrays`, a `GrammarArrays`, built once by
`CompiledGrammar.__init__` and never changed). R original rules (the grammar's,
in file order: rule ids), C their children in all, n_nt user nonterminals (ids
0..n_nt-1), n_sym chart symbols (user, then pseudo, then intermediate), n_term
terminals, A adapted nonterminals (adaptor indices 0..A-1, in grammar order);
chart rules: L lexical, U unary, B binary. -1 stands for none. The scalars are
Python ints (int64 in the kernels).

    field             shape          dtype    meaning
    n_nt              scalar         int      user nonterminals
    n_sym             scalar         int      chart symbols
    n_term            scalar         int      terminals
    start             scalar         int      nonterminal id of the start symbol
    rule_parent       (R,)           int32    parent nonterminal of each rule
    rule_alpha        (R,)           float64  the rule's weight in the grammar file: its Dirichlet pseudo-count
                                              alpha_r
    rule_theta        (R,)           float64  fixed probability: rule_alpha over its parent's nt_alpha_sum
    rule_child_ptr    (R + 1,)       int32    the children of rule r are
                                              rule_children[rule_child_ptr[r]:rule_child_ptr[r+1]]
    rule_children     (C,)           int32    >= 0: a nonterminal id; < 0: terminal t as -(t + 1)
    nt_alpha_sum      (n_nt,)        float64  rule_alpha summed over the nonterminal's rules
    sym_kind          (n_sym,)       int8     KIND_USER 0, KIND_PSEUDO 1, KIND_INTERMEDIATE 2
    sym_adaptor       (n_sym,)       int32    adaptor index of an adapted nonterminal, else -1
    sym_bin           (n_sym,)       int32    an intermediate symbol's one binary chart rule (an index into bin_*),
                                              else -1
    pseudo_term       (n_sym,)       int32    terminal id of a pseudo symbol, else -1
    adaptor_nt        (A,)           int32    nonterminal id of each adaptor
    adaptor_order     (A,)           int32    adaptor indices top-down (general to specific): a before b when b can
                                              occur below a
    adaptor_depth     scalar         int      most adapted nodes on one path from the root to a terminal (0
                                              without adaptors): a tree's new tables add at most this many trie
                                              nodes per terminal
    lex_ptr           (n_term + 1,)  int32    the lexical chart rules of terminal t are lex_ptr[t]:lex_ptr[t+1]
    lex_parent        (L,)           int32    parent symbol: a user nonterminal, or a pseudo symbol
    lex_rule          (L,)           int32    rule id; -1 for a pseudo symbol's rule (weight 1)
    un_parent         (U,)           int32    parent symbol of each unary chart rule; the rules are in closure
                                              order, children first (a rule comes after every rule whose parent is
                                              its child)
    un_child          (U,)           int32    child symbol
    un_rule           (U,)           int32    rule id
    un_ptr            (n_sym + 1,)   int32    the unary rules of symbol X are un_by_parent[un_ptr[X]:un_ptr[X+1]]
    un_by_parent      (U,)           int32    unary chart rule indices sorted by parent
    bin_parent        (B,)           int32    parent symbol of each binary chart rule; the rules are sorted by
                                              parent
    bin_left          (B,)           int32    left child symbol
    bin_right         (B,)           int32    right child symbol
    bin_rule          (B,)           int32    rule id; -1 for an intermediate symbol's rule (weight 1)
    bin_ptr           (n_sym + 1,)   int32    the binary rules of symbol X are bin_ptr[X]:bin_ptr[X+1]
    sym_span          (n_sym,)       int64    longest yield of the symbol, in terminals; NO_SPAN_LIMIT (2**40) if
                                              unbounded, 0 for a symbol the start symbol cannot reach
    sym_suffix        (n_sym,)       int8     1: the symbol only covers spans that end where the text ends; else 0
    band              scalar         int      longest finite span if the chart can be banded, else 0 (a full chart)
    left_span         scalar         int      longest sym_span of a binary rule's left child
    inner_left_span   scalar         int      the same over the rules whose parent is not suffix-only
    inner_right_span  scalar         int      longest sym_span of a right child over the rules whose parent is not
                                              suffix-only
    mask_span         scalar         int      the shortest span at which some symbol's rules build more than its
                                              sym_span (cells past it are masked); NO_SPAN_LIMIT: never
    suffix_syms       (n_suffix,)    int32    the symbols whose sym_suffix is 1
"""
from __future__ import annotations

import heapq
from collections import namedtuple
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..errors import Errors
from ..grammar.rules import CORPUS_CLASS, Grammar, GrammarError

KIND_USER, KIND_PSEUDO, KIND_INTERMEDIATE = 0, 1, 2
#: The span of a symbol whose yield has no bound.
NO_SPAN_LIMIT = 1 << 40

GrammarArrays = namedtuple(
    "GrammarArrays",
    [
        "n_nt",  # user nonterminals (ids 0..n_nt-1)
        "n_sym",  # all chart symbols
        "n_term",
        "start",
        # original rules
        "rule_parent",
        "rule_alpha",
        "rule_theta",  # fixed probabilities w_r / sum over the parent's rules
        "rule_child_ptr",
        "rule_children",  # >= 0: nonterminal id; < 0: terminal -(t+1)
        "nt_alpha_sum",
        # symbols
        "sym_kind",
        "sym_adaptor",  # adaptor index or -1
        "sym_bin",  # the single binary rule of an intermediate symbol
        "pseudo_term",  # terminal of a pseudo symbol, else -1
        "adaptor_nt",
        "adaptor_order",  # adaptor indices top-down (general to specific)
        "adaptor_depth",  # most adapted nodes on one root-to-terminal path
        # chart rules
        "lex_ptr",
        "lex_parent",
        "lex_rule",
        "un_parent",
        "un_child",
        "un_rule",
        "un_ptr",  # unary rules grouped by parent: un_by_parent[un_ptr[X]:un_ptr[X+1]]
        "un_by_parent",
        "bin_parent",
        "bin_left",
        "bin_right",
        "bin_rule",  # original rule id, or -1 for an intermediate rule (weight 1)
        "bin_ptr",  # binary rules sorted by parent: bin rules of X are bin_ptr[X]:bin_ptr[X+1]
        # spans (see the module docstring)
        "sym_span",  # longest yield of each symbol, NO_SPAN_LIMIT if unbounded
        "sym_suffix",  # 1: the symbol only covers spans that end at the end of the text
        "band",  # longest finite span if the chart can be banded, else 0 (a full chart)
        "left_span",  # longest left child of any binary rule
        "inner_left_span",  # the same over rules whose parent is not suffix-only
        "inner_right_span",  # longest right child over rules whose parent is not suffix-only
        "mask_span",  # the shortest span past which some symbol's rules would build more than its span
        "suffix_syms",  # the suffix-only symbols
    ],
)


class CompiledGrammar:
    """The arrays of one grammar plus the names needed to read results back."""

    def __init__(self, grammar: Grammar):
        for rule in grammar.rules:
            if rule.children == (CORPUS_CLASS,):
                raise GrammarError(
                    Errors.E514.format(parent=rule.parent, CORPUS_CLASS=CORPUS_CLASS),
                    grammar.path,
                    rule.line or None,
                )
        self.grammar = grammar
        self.nonterminals: List[str] = grammar.nonterminals
        self.terminals: List[str] = grammar.terminals
        self.nt_index: Dict[str, int] = {s: i for i, s in enumerate(self.nonterminals)}
        self.term_index: Dict[str, int] = {t: i for i, t in enumerate(self.terminals)}
        self.adapted: List[str] = [s for s in self.nonterminals if grammar.is_adapted(s)]
        self.arrays, self.symbol_names, self.max_unary_chain = self._compile(grammar)

    # ------------------------------------------------------------------
    def _compile(self, g: Grammar):
        nt_index, term_index = self.nt_index, self.term_index
        n_nt, n_term = len(self.nonterminals), len(self.terminals)
        names = list(self.nonterminals)
        kinds = [KIND_USER] * n_nt
        pseudo_term = [-1] * n_nt
        sym_bin: List[int] = [-1] * n_nt

        def new_symbol(name, kind, term=-1):
            names.append(name)
            kinds.append(kind)
            pseudo_term.append(term)
            sym_bin.append(-1)
            return len(names) - 1

        pseudo: Dict[int, int] = {}
        prefix_sym: Dict[Tuple[int, ...], int] = {}
        lex: List[Tuple[int, int, int]] = []  # (terminal, parent, rule)
        unary: List[Tuple[int, int, int]] = []  # (parent, child, rule)
        binary: List[Tuple[int, int, int, int]] = []  # (parent, left, right, rule)

        rule_parent, rule_alpha, child_ptr, children = [], [], [0], []
        for r, rule in enumerate(g.rules):
            parent = nt_index[rule.parent]
            rule_parent.append(parent)
            rule_alpha.append(float(rule.weight))
            for c in rule.children:
                children.append(nt_index[c] if c in nt_index else -(term_index[c] + 1))
            child_ptr.append(len(children))
            if len(rule.children) == 1:
                c = rule.children[0]
                if c in nt_index:
                    unary.append((parent, nt_index[c], r))
                else:
                    lex.append((term_index[c], parent, r))
                continue
            syms = []
            for c in rule.children:
                if c in nt_index:
                    syms.append(nt_index[c])
                else:
                    t = term_index[c]
                    if t not in pseudo:
                        pseudo[t] = new_symbol(repr(c), KIND_PSEUDO, t)
                        lex.append((t, pseudo[t], -1))
                    syms.append(pseudo[t])
            left = syms[0]
            for h in range(2, len(syms)):
                key = tuple(syms[:h])
                if key not in prefix_sym:
                    sym = new_symbol("<" + " ".join(names[s] for s in key) + ">", KIND_INTERMEDIATE)
                    prefix_sym[key] = sym
                    sym_bin[sym] = len(binary)
                    binary.append((sym, left, syms[h - 1], -1))
                left = prefix_sym[key]
            binary.append((parent, left, syms[-1], r))

        n_sym = len(names)
        rule_parent_a = np.array(rule_parent, dtype=np.int32)
        rule_alpha_a = np.array(rule_alpha, dtype=np.float64)
        nt_alpha_sum = np.zeros(n_nt, dtype=np.float64)
        np.add.at(nt_alpha_sum, rule_parent_a, rule_alpha_a)
        rule_theta = rule_alpha_a / nt_alpha_sum[rule_parent_a]

        # lexical rules grouped by terminal
        lex.sort(key=lambda x: x[0])
        lex_ptr = np.zeros(n_term + 1, dtype=np.int32)
        for t, _, _ in lex:
            lex_ptr[t + 1] += 1
        lex_ptr = np.cumsum(lex_ptr).astype(np.int32)

        unary, max_chain = self._closure_order(unary, n_sym, names, g)
        un_ptr = np.zeros(n_sym + 1, dtype=np.int32)
        for p, _, _ in unary:
            un_ptr[p + 1] += 1
        un_ptr = np.cumsum(un_ptr).astype(np.int32)
        un_by_parent = np.array(
            sorted(range(len(unary)), key=lambda q: (unary[q][0], q)), dtype=np.int32
        )

        # binary rules sorted by parent; remap sym_bin to the new positions
        order = sorted(range(len(binary)), key=lambda q: (binary[q][0], q))
        new_pos = {q: i for i, q in enumerate(order)}
        binary_sorted = [binary[q] for q in order]
        sym_bin = [new_pos[q] if q >= 0 else -1 for q in sym_bin]
        bin_ptr = np.zeros(n_sym + 1, dtype=np.int32)
        for p, _, _, _ in binary_sorted:
            bin_ptr[p + 1] += 1
        bin_ptr = np.cumsum(bin_ptr).astype(np.int32)

        adaptor_nt = np.array([nt_index[s] for s in self.adapted], dtype=np.int32)
        sym_adaptor = np.full(n_sym, -1, dtype=np.int32)
        for i, s in enumerate(adaptor_nt):
            sym_adaptor[s] = i

        def col(rows, k, dtype=np.int32):
            return np.array([row[k] for row in rows], dtype=dtype)

        spans, built = symbol_spans(n_sym, nt_index[g.start], lex, unary, binary,
                                    {nt_index[s]: int(a.options["max_span"]) for s, a in g.adaptors.items()
                                     if "max_span" in a.options})
        limits = span_limits(spans, built, binary, [int(s) for s in adaptor_nt])

        arrays = GrammarArrays(
            n_nt=n_nt,
            n_sym=n_sym,
            n_term=n_term,
            start=nt_index[g.start],
            rule_parent=rule_parent_a,
            rule_alpha=rule_alpha_a,
            rule_theta=rule_theta,
            rule_child_ptr=np.array(child_ptr, dtype=np.int32),
            rule_children=np.array(children, dtype=np.int32),
            nt_alpha_sum=nt_alpha_sum,
            sym_kind=np.array(kinds, dtype=np.int8),
            sym_adaptor=sym_adaptor,
            sym_bin=np.array(sym_bin, dtype=np.int32),
            pseudo_term=np.array(pseudo_term, dtype=np.int32),
            adaptor_nt=adaptor_nt,
            adaptor_order=self._adaptor_order(g, adaptor_nt),
            adaptor_depth=self._adaptor_depth(g),
            lex_ptr=lex_ptr,
            lex_parent=col(lex, 1),
            lex_rule=col(lex, 2),
            un_parent=col(unary, 0),
            un_child=col(unary, 1),
            un_rule=col(unary, 2),
            un_ptr=un_ptr,
            un_by_parent=un_by_parent,
            bin_parent=col(binary_sorted, 0),
            bin_left=col(binary_sorted, 1),
            bin_right=col(binary_sorted, 2),
            bin_rule=col(binary_sorted, 3),
            bin_ptr=bin_ptr,
            sym_span=np.array(spans, dtype=np.int64),
            **limits,
        )
        return arrays, names, max_chain

    @staticmethod
    def _closure_order(unary, n_sym, names, g):
        """Sort unary rules children-first; also return the longest unary chain."""
        below: Dict[int, List[int]] = {}
        for p, c, _ in unary:
            below.setdefault(p, []).append(c)
        depth: Dict[int, int] = {}
        visiting: List[int] = []

        def visit(x):
            if x in depth:
                return depth[x]
            if x in visiting:
                cycle = visiting[visiting.index(x):] + [x]
                raise GrammarError(Errors.E375.format(cycle=" -> ".join(names[s] for s in cycle)), g.path)
            visiting.append(x)
            d = 0
            for c in below.get(x, []):
                d = max(d, visit(c) + 1)
            visiting.pop()
            depth[x] = d
            return d

        for x in range(n_sym):
            visit(x)
        ordered = sorted(unary, key=lambda u: (depth[u[0]], u[2]))
        return ordered, max(depth.values(), default=0)

    @staticmethod
    def _adaptor_depth(g: Grammar) -> int:
        """Most adapted nodes on one path from the start symbol down.

        The symbols' strongly connected components (Tarjan, iteratively) form a DAG; an adapted
        symbol is a component of its own, since it never reaches itself (E373), so the answer is
        the DAG's longest path counting adapted components. Linear in the grammar's size."""
        nonterminals = set(g.nonterminals)
        below: Dict[str, List[str]] = {}
        for rule in g.rules:
            below.setdefault(rule.parent, []).extend(c for c in rule.children if c in nonterminals)
        index: Dict[str, int] = {}
        low: Dict[str, int] = {}
        comp: Dict[str, int] = {}
        comp_depth: List[int] = []
        stack: List[str] = []
        work = [(g.start, 0)]
        while work:
            x, k = work.pop()
            if k == 0:
                index[x] = low[x] = len(index)
                stack.append(x)
            children = below.get(x, [])
            while k < len(children) and children[k] in index:
                c = children[k]
                if c not in comp:
                    low[x] = min(low[x], index[c])
                k += 1
            if k < len(children):
                work.append((x, k + 1))
                work.append((children[k], 0))
                continue
            for c in children:
                if c not in comp:
                    low[x] = min(low[x], low[c])
            if low[x] == index[x]:
                members = []
                while True:
                    y = stack.pop()
                    comp[y] = len(comp_depth)
                    members.append(y)
                    if y == x:
                        break
                # every component below this one is finished: components finish in reverse topological order
                deeper = max((comp_depth[comp[c]] for y in members for c in below.get(y, ()) if comp[c] != comp[x]),
                             default=0)
                comp_depth.append(deeper + sum(1 for y in members if g.is_adapted(y)))
        return comp_depth[comp[g.start]]

    def _adaptor_order(self, g: Grammar, adaptor_nt) -> np.ndarray:
        """Adapted nonterminals top-down: A before B whenever B can occur below A."""
        edges: Dict[str, set] = {}
        for rule in g.rules:
            edges.setdefault(rule.parent, set()).update(c for c in rule.children if c in self.nt_index)

        def reachable_adapted(a):
            seen, stack = set(), list(edges.get(a, ()))
            while stack:
                x = stack.pop()
                if x not in seen:
                    seen.add(x)
                    stack.extend(edges.get(x, ()))
            return sum(1 for x in seen if g.is_adapted(x))

        counts = [reachable_adapted(self.nonterminals[s]) for s in adaptor_nt]
        return np.array(sorted(range(len(adaptor_nt)), key=lambda i: (-counts[i], i)), dtype=np.int32)

    # ------------------------------------------------------------------
    def symbol_mask(self, names: Sequence[str]) -> np.ndarray:
        """uint8 per chart symbol, 1 for the named nonterminals (a segmentation category's set)."""
        mask = np.zeros(self.arrays.n_sym, np.uint8)
        for name in names:
            mask[self.nt_index[name]] = 1
        return mask

    def encode(self, terminals: Sequence[str]) -> np.ndarray:
        """Terminal ids of a sentence; -1 for a symbol the grammar does not know."""
        index = self.term_index
        return np.array([index.get(t, -1) for t in terminals], dtype=np.int32)

    def adaptor_params(self) -> Tuple[np.ndarray, np.ndarray]:
        g = self.grammar
        a = np.array([g.adaptors[s].a for s in self.adapted], dtype=np.float64)
        b = np.array([g.adaptors[s].b for s in self.adapted], dtype=np.float64)
        return a, b


def symbol_spans(n_sym: int, start: int, lex, unary, binary, limits: Dict[int, int]):
    """The longest yield of every chart symbol: the least of what its parents allow
    (`limits` caps some symbols) and what its rules can build; NO_SPAN_LIMIT if unbounded.
    Also returns what the rules alone can build.

    Both passes take time about linear in the grammar (a grammar of 40,000 rules, a topic
    grammar of 20,000 topics): from above, the widest path from the start symbol; from
    below, one strongly connected component of the rules at a time, children first."""
    children: List[List[int]] = [[] for _ in range(n_sym)]
    for p, c, _ in unary:
        children[p].append(c)
    for p, left, right, _ in binary:
        children[p].append(left)
        children[p].append(right)
    down = _allowed_from_above(n_sym, start, children, limits)
    up = _built_from_below(n_sym, lex, unary, binary, children)
    return [min(d, u) for d, u in zip(down, up)], up


def _allowed_from_above(n_sym: int, start: int, children: List[List[int]], limits: Dict[int, int]) -> List[int]:
    """span(c) = min(limit of c, max over the parents of c of span(parent)), span(start) = its limit,
    0 for a symbol the start cannot reach: the widest (bottleneck) path from the start, found as
    Dijkstra finds shortest ones, widest first."""
    down = [0] * n_sym
    down[start] = limits.get(start, NO_SPAN_LIMIT)
    heap = [(-down[start], start)]
    while heap:
        negative, p = heapq.heappop(heap)
        if -negative < down[p]:
            continue
        for c in children[p]:
            value = min(limits.get(c, NO_SPAN_LIMIT), down[p])
            if value > down[c]:
                down[c] = value
                heapq.heappush(heap, (-value, c))
    return down


def _strongly_connected(n_sym: int, children: List[List[int]]) -> List[List[int]]:
    """The strongly connected components of symbol -> child, each after every component it reaches
    (Tarjan's algorithm, without recursion)."""
    index = [-1] * n_sym
    low = [0] * n_sym
    on_stack = [False] * n_sym
    stack: List[int] = []
    components: List[List[int]] = []
    counter = 0
    for root in range(n_sym):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            kids = children[v]
            while i < len(kids):
                w = kids[i]
                i += 1
                if index[w] < 0:
                    work.append((v, i))
                    work.append((w, 0))
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            else:
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        component.append(w)
                        if w == v:
                            break
                    components.append(component)
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
    return components


def _built_from_below(n_sym: int, lex, unary, binary, children: List[List[int]]) -> List[int]:
    """The longest yield each symbol's rules can build (1 for a lexical rule, a child's for a unary
    one, the sum of both children's for a binary one), NO_SPAN_LIMIT where recursion makes it grow
    without end.

    Within a strongly connected component, every symbol builds what the best of them builds (each
    reaches the others through rules), unless a rule inside it adds length on each turn of a cycle:
    a rule with two children inside, or one inside beside a child outside that builds something.
    Such a component grows without end once it builds anything at all."""
    up = [0] * n_sym
    for _, p, _ in lex:
        up[p] = 1
    rules: List[List[Tuple[int, ...]]] = [[] for _ in range(n_sym)]
    for p, c, _ in unary:
        rules[p].append((c,))
    for p, left, right, _ in binary:
        rules[p].append((left, right))
    member = [-1] * n_sym
    for k, component in enumerate(_strongly_connected(n_sym, children)):
        for v in component:
            member[v] = k
        best, grows, doubles = 0, False, False
        for v in component:
            best = max(best, up[v])
            for kids in rules[v]:
                inside = sum(1 for c in kids if member[c] == k)
                outside = min(NO_SPAN_LIMIT, sum(up[c] for c in kids if member[c] != k))
                if inside == 0:
                    best = max(best, outside)
                elif inside == 1 and outside > 0:
                    grows = True
                elif inside >= 2:
                    doubles = True
        value = NO_SPAN_LIMIT if grows or (doubles and best > 0) else best
        for v in component:
            up[v] = value
    return up


def span_limits(spans: List[int], built: List[int], binary, adapted: List[int]) -> Dict[str, object]:
    """The chart's shape: banded when every adapted symbol is bounded and no unbounded
    symbol is a left child (then unbounded symbols only cover suffixes of the text).

    Only a symbol whose rules build longer spans than it may cover needs its chart cells
    set to 0; `mask_span` is the shortest length at which that can happen, so the passes
    skip the masking below it (in Brent, always)."""
    unbounded = [s >= NO_SPAN_LIMIT for s in spans]
    banded = (not any(unbounded[a] for a in adapted)
              and not any(unbounded[l] for _, l, _, _ in binary))
    suffix = [int(banded and u) for u in unbounded]
    inner = [(l, r) for p, l, r, _ in binary if not suffix[p]]
    finite = [s for s in spans if s < NO_SPAN_LIMIT]
    return dict(
        sym_suffix=np.array(suffix, dtype=np.int8),
        band=max(finite, default=1) if banded else 0,
        left_span=max((spans[l] for _, l, _, _ in binary), default=0),
        inner_left_span=max((spans[l] for l, _ in inner), default=0),
        inner_right_span=max((spans[r] for _, r in inner), default=0),
        mask_span=min((s for s, b in zip(spans, built) if s < b), default=NO_SPAN_LIMIT),
        suffix_syms=np.array([x for x, f in enumerate(suffix) if f], dtype=np.int32),
    )
