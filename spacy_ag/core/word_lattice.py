"""Viterbi segmentation specialised to chains of adapted levels.

Most segmentation grammars are, at decoding time, a chain: a start symbol
over a list of adapted level-L units, each of which is reused from a table or
built as a list of level L-1 units, ..., down to level-1 units (words) made
of characters:

    Sentence --> P_L            P_l --> A_l | A_l P_l        (the `A_l+` helpers)
    A_l      --> P_{l-1}        A_1 --> C                    (A_l adapted)
    C        --> K | K C        K   --> each terminal

(`unigram`: L = 1; `colloc`: L = 2; each symbol may have a longest span, as
the chart's band and masks give it.) For such a grammar the general chart
(`viterbi.viterbi_chart`) spends most of its work on cells that can only hold
these few values, so `segment_lattice_batch` computes exactly them: the
characters' base weight C(i, j), the level values A_l(i, j) (the best open
table whose yield is the span, or the base) and the list values P_l, as a
dynamic program over word lattices; a value whose span is longer than its
symbol's is -inf, as the chart masks it. Every value is the same floating-point
expression, evaluated in the same association, as the chart's entry for the
same item, and maxima do not depend on the order they are taken in; the
traceback tests the options in the order, and with the tolerance, of
`viterbi._best_option`. The result (marks and scores) is therefore identical
to `viterbi.segment_batch`, ties included; tests/unit/test_fast_segmentation.py
checks it on generated corpora.

`lattice_plan` recognises such a grammar from its compiled arrays and returns
the chain, or None, and then callers use the general chart. The plan (int64):

    plan[0]             L, the number of adapted levels
    plan[1]             K, the character symbol (the parent of every lexical rule)
    plan[2], plan[3]    rules C --> K and C --> K C
    plan[4]             rule Sentence --> P_L
    plan[5]             m - 1, where A_m is the segmentation category (the one symbol of seg_mask)
    plan[6]             longest span of C
    plan[7 + 6 l ...]   level l + 1 (l = 0 bottom): adaptor index of A_{l+1}, rule A --> below,
                        rule P --> A, rule P --> A P, longest span of A, longest span of P
"""
from collections import namedtuple

import numpy as np
from ..kernel_environment import kernel

from .borrowed import borrowed
from .state import trie_child
from .compiled import KIND_USER, NO_SPAN_LIMIT
from .segmentation import mark_words

NEG_INF = -np.inf
PLAN_HEAD = 7
PLAN_LEVEL = 6
#: Unit codes of `segment_lattice_units` besides terminal ids
UNIT_WORD, UNIT_SPACE = -1, -2

#: The state's arrays the lattice reads (the trie, the tables' lists and labels, the pool trees
#: `mark_words` walks): a kernel call unpacks a dozen arrays instead of the whole state.
LatticeState = namedtuple("LatticeState", [
    "ht_key", "ht_val", "trie_head", "tab_adaptor", "tab_next", "tab_label",
    "node_kind", "node_sym", "node_table", "node_child", "node_sib",
])


def lattice_state(S):
    """The `LatticeState` view of a state (the same arrays, not copies)."""
    return LatticeState(*(getattr(S, name) for name in LatticeState._fields))



def lattice_plan(G, seg_mask):
    """The chain of a grammar decodable by `segment_lattice_batch`, or None (see the module doc).

    G: the compiled grammar's arrays; seg_mask (n_sym,) uint8, the segmentation category."""
    if np.any(G.sym_kind != KIND_USER):
        return None
    unary, binary = {}, {}
    for parent, child, rule in zip(G.un_parent.tolist(), G.un_child.tolist(), G.un_rule.tolist()):
        unary.setdefault(parent, []).append((child, rule))
    for parent, left, right, rule in zip(G.bin_parent.tolist(), G.bin_left.tolist(), G.bin_right.tolist(),
                                         G.bin_rule.tolist()):
        binary.setdefault(parent, []).append((left, right, rule))
    lex_parents = set(G.lex_parent.tolist())
    seg_syms = np.flatnonzero(seg_mask).tolist()
    if len(lex_parents) != 1 or np.any(G.lex_rule < 0) or len(seg_syms) != 1:
        return None
    K = lex_parents.pop()

    def plain(x):
        return int(G.sym_adaptor[x]) < 0

    def only(table, x):
        rules = table.get(x, ())
        return rules[0] if len(rules) == 1 else None

    top = int(G.start)
    if not plain(top) or top in binary or only(unary, top) is None:
        return None
    P, r_top = only(unary, top)
    seen = {top, K}
    levels = []  # top-down: (A symbol, P symbol, rule A --> below, rule P --> A, rule P --> A P)
    while True:
        if P in seen or not plain(P) or only(unary, P) is None or only(binary, P) is None:
            return None
        A, r_single = only(unary, P)
        left, right, r_pair = only(binary, P)
        if left != A or right != P or A in seen or plain(A) or A in binary or only(unary, A) is None:
            return None
        below, r_up = only(unary, A)
        seen.update((P, A))
        levels.append((A, P, r_up, r_single, r_pair))
        if below in seen or not plain(below):
            return None
        if only(unary, below) is not None and only(unary, below)[0] == K:
            C = below
            if only(binary, C) is None or only(binary, C)[:2] != (K, C):
                return None
            r_char, r_chars = only(unary, C)[1], only(binary, C)[2]
            seen.add(C)
            break
        P = below
    if K in unary or K in binary or not plain(K) or len(seen) != int(G.n_sym) or int(G.sym_span[K]) != 1:
        return None
    unbounded = (top, levels[0][1])
    if any(int(G.sym_span[x]) < NO_SPAN_LIMIT for x in unbounded):
        return None
    if any(int(G.sym_suffix[x]) for x in seen if x not in unbounded):
        return None
    levels.reverse()
    level_syms = [a for a, *_ in levels]
    if seg_syms[0] not in level_syms:
        return None
    plan = [len(levels), K, r_char, r_chars, r_top, level_syms.index(seg_syms[0]), int(G.sym_span[C])]
    for A, P, r_up, r_single, r_pair in levels:
        plan += [int(G.sym_adaptor[A]), r_up, r_single, r_pair, int(G.sym_span[A]), int(G.sym_span[P])]
    return np.array(plan, np.int64)


@kernel(cache=True)
def lattice_weights(G, S, lrho, ltab, plan, klw, yield_best, root_child):
    """The weights the lattice reads per terminal and per yield, once per trained state.

    klw[t]: best log weight of the character symbol over terminal t (klw[-1] = -inf, for a terminal the grammar
    does not know); yield_best[y, l]: best log weight of the open tables of level l + 1 whose yield is trie node y
    (-inf for none): the maxima the chart takes over `lex_*` and over the trie's table lists; root_child[t]: the
    trie node of the one-terminal yield t (-1 for none), the first step of every walk down the trie.

    Shapes: klw (n_term + 1,) float64, yield_best (Y, L) float64 and root_child (n_term + 1,) int32, written."""
    root_child[:] = -1
    for t in range(G.n_term):
        root_child[t] = trie_child(S, 0, t, G.n_term)
    klw[:] = NEG_INF
    for t in range(G.n_term):
        for q in range(G.lex_ptr[t], G.lex_ptr[t + 1]):
            v = lrho[G.lex_rule[q]]
            if v > klw[t]:
                klw[t] = v
    yield_best[:] = NEG_INF
    for y in range(yield_best.shape[0]):
        k = S.trie_head[y]
        while k >= 0:
            for lv in range(plan[0]):
                if S.tab_adaptor[k] == plan[PLAN_HEAD + PLAN_LEVEL * lv] and ltab[k] > yield_best[y, lv]:
                    yield_best[y, lv] = ltab[k]
            k = S.tab_next[k]


@kernel(cache=True)
def segment_lattice_batch(LS, n_term, words, ptr, lrho, ltab, plan, klw, yield_best, root_child, seg_mask, marks,
                          scores):
    """`viterbi.segment_batch` for a grammar with a `lattice_plan`: the same marks and scores.

    Shapes: LS a `LatticeState`; words, ptr, lrho, ltab, seg_mask, marks, scores as `viterbi.segment_batch`;
    plan (7 + 6 L,) int64 (`lattice_plan`); klw, yield_best and root_child from `lattice_weights`."""
    LS = borrowed(LS)
    max_n = 1
    for d in range(ptr.shape[0] - 1):
        max_n = max(max_n, ptr[d + 1] - ptr[d])
    av, pv, best, ynode, todo, stack = _lattice_buffers(LS, plan, max_n)
    for d in range(ptr.shape[0] - 1):
        n = ptr[d + 1] - ptr[d]
        w = words[ptr[d]:ptr[d + 1]]
        scores[d] = _lattice_chart(LS, n_term, w, n, lrho, plan, klw, yield_best, root_child, av, pv, best, ynode)
        if scores[d] == NEG_INF:
            continue
        offset = ptr[d] + d
        marks[offset] = 1
        marks[offset + n] = 1
        _lattice_trace(LS, n, lrho, ltab, plan, seg_mask, av, pv, best, ynode, offset, marks, todo, stack)
    return 0


@kernel(cache=True)
def longest_chunk(codes):
    """Length of the longest run of terminals (codes >= 0) in `codes` (`segment_lattice_units`)."""
    longest = 0
    run = 0
    for p in range(codes.shape[0]):
        if codes[p] >= 0:
            run += 1
            if run > longest:
                longest = run
        else:
            run = 0
    return longest


@kernel(cache=True)
def segment_lattice_units(LS, n_term, codes, text_ptr, lrho, ltab, plan, klw, yield_best, root_child, seg_mask,
                          spans, span_ptr):
    """Words of whole texts given as unit codes: `segment_lattice_batch` on each chunk (a run of terminals),
    a word of its own for each hard unit, nothing for whitespace.

    codes[p]: the terminal id of unit p, UNIT_WORD (-1) for a unit that is a word of its own (unknown, a
    control character, a `split_at` character), UNIT_SPACE (-2) for whitespace. A chunk without a parse is
    one word, as in `AdaptorGrammar.segment`.

    Shapes: codes (units,) int32; text_ptr (texts + 1,) int64, text d is codes[text_ptr[d]:text_ptr[d+1]];
    spans (2 units,) int64, written: the words as (start, end) unit positions in their text, text d's are
    spans[2 span_ptr[d]:2 span_ptr[d+1]]; span_ptr (texts + 1,) int64, written. Returns the number of chunks."""
    LS = borrowed(LS)
    max_n = max(1, longest_chunk(codes))
    av, pv, best, ynode, todo, stack = _lattice_buffers(LS, plan, max_n)
    marks = np.zeros(max_n + 1, np.uint8)
    n_words = 0
    n_chunks = 0
    span_ptr[0] = 0
    for d in range(text_ptr.shape[0] - 1):
        base = text_ptr[d]
        p = base
        end = text_ptr[d + 1]
        while p < end:
            c = codes[p]
            if c < 0:
                if c == UNIT_WORD:
                    spans[2 * n_words] = p - base
                    spans[2 * n_words + 1] = p + 1 - base
                    n_words += 1
                p += 1
                continue
            a = p
            while p < end and codes[p] >= 0:
                p += 1
            n = p - a
            w = codes[a:p]
            if _lattice_chart(LS, n_term, w, n, lrho, plan, klw, yield_best, root_child, av, pv, best, ynode) == NEG_INF:
                n_chunks += 1
                spans[2 * n_words] = a - base
                spans[2 * n_words + 1] = p - base
                n_words += 1
                continue
            marks[:n + 1] = 0
            marks[n] = 1
            n_chunks += 1
            _lattice_trace(LS, n, lrho, ltab, plan, seg_mask, av, pv, best, ynode, 0, marks, todo, stack)
            start = 0
            for q in range(1, n + 1):
                if marks[q]:
                    spans[2 * n_words] = a - base + start
                    spans[2 * n_words + 1] = a - base + q
                    n_words += 1
                    start = q
        span_ptr[d + 1] = n_words
    return n_chunks


@kernel(cache=True)
def _lattice_buffers(LS, plan, max_n):
    """The work arrays of the lattice for texts of up to max_n terminals: (av, pv, best, ynode, todo, stack)."""
    n_levels = plan[0]
    # the longest span any value below the top list can have: the band of the lattice
    width = plan[6]
    for lv in range(n_levels):
        width = max(width, plan[PLAN_HEAD + PLAN_LEVEL * lv + 4])
        if lv < n_levels - 1:
            width = max(width, plan[PLAN_HEAD + PLAN_LEVEL * lv + 5])
    width = min(width, max_n)
    # av[l, i, d]: A_{l+1} over (i, i + d); pv[l, j, d]: P_{l+1} over (j - d, j), below the top level
    av = np.empty((n_levels, max_n + 1, width + 1))
    pv = np.empty((max(n_levels - 1, 1), max_n + 1, width + 1))
    best = np.empty(max_n + 1)  # best[i]: P_L over (i, n)
    ynode = np.full((max_n + 1, width + 2), -1, np.int32)
    todo = np.empty((max_n + 1, 3), np.int64)
    # mark_words walks the labels of tables above the segmentation level, if there are such levels
    stack = np.empty(2 * LS.node_kind.shape[0] + 16 if plan[5] < n_levels - 1 else 0, np.int64)
    return av, pv, best, ynode, todo, stack


@kernel(cache=True, inline="always")
def _adapted_value(yield_best, lv, y, base):
    """The better of the best open table of level lv + 1 with trie node y as yield and the base value."""
    if y >= 0:
        v = yield_best[y, lv]
        if v > base:
            return v
    return base


@kernel(cache=True)
def _lattice_chart(LS, n_term, w, n, lrho, plan, klw, yield_best, root_child, av, pv, best, ynode):
    """Fill av, pv and best for one text; return the start symbol's best log weight.

    A value whose span is longer than its symbol's span is -inf, as the chart masks it."""
    n_levels = plan[0]
    width = av.shape[2] - 1
    for i in range(n):  # ynode[i, d]: trie node of w[i:i+d], as `chart.span_yields` gives it
        node = root_child[w[i]]
        ynode[i, 1] = node
        for j in range(i + 2, min(n, i + width) + 1):
            if node >= 0:
                t = w[j - 1]
                node = trie_child(LS, node, t, n_term) if t >= 0 else -1
            ynode[i, j - i] = node
    r_char, r_chars, span_c = lrho[plan[2]], lrho[plan[3]], plan[6]
    up, span_a = lrho[plan[PLAN_HEAD + 1]], plan[PLAN_HEAD + 4]
    for j in range(1, n + 1):
        c = r_char + klw[w[j - 1]]
        for i in range(j - 1, max(0, j - width) - 1, -1):
            length = j - i
            if length > 1:
                c = (r_chars + klw[w[i]]) + c if length <= span_c else NEG_INF
            av[0, i, length] = _adapted_value(yield_best, 0, ynode[i, length], up + c) if length <= span_a else NEG_INF
    for lv in range(1, n_levels):
        below = PLAN_HEAD + PLAN_LEVEL * (lv - 1)
        single, pair, span_p = lrho[plan[below + 2]], lrho[plan[below + 3]], plan[below + 5]
        here = below + PLAN_LEVEL
        up, span_a = lrho[plan[here + 1]], plan[here + 4]
        a = av[lv - 1]
        for j in range(1, n + 1):
            p_end = pv[lv - 1, j]  # p_end[d]: P over (j - d, j), a row the splits read in order
            for i in range(j - 1, max(0, j - width) - 1, -1):
                length = j - i
                v = NEG_INF
                if length <= span_p:
                    a_start = a[i]
                    for d in range(1, length):  # the split s = i + d; a maximum does not depend on the order
                        x = (pair + a_start[d]) + p_end[length - d]
                        if x > v:
                            v = x
                    u = single + a_start[length]
                    if u > v:
                        v = u
                p_end[length] = v
                av[lv, i, length] = _adapted_value(yield_best, lv, ynode[i, length], up + v) if length <= span_a \
                    else NEG_INF
    here = PLAN_HEAD + PLAN_LEVEL * (n_levels - 1)
    single, pair = lrho[plan[here + 2]], lrho[plan[here + 3]]
    a = av[n_levels - 1]
    for i in range(n - 1, -1, -1):
        v = NEG_INF
        for s in range(i + 1, min(n - 1, i + width) + 1):
            x = (pair + a[i, s - i]) + best[s]
            if x > v:
                v = x
        u = single + a[i, n - i] if n - i <= width else NEG_INF
        if u > v:
            v = u
        best[i] = v
    return lrho[plan[4]] + best[0]


@kernel(cache=True, inline="always")
def _within(v, target, tol):
    return abs(v - target) <= tol


@kernel(cache=True)
def _lattice_trace(LS, n, lrho, ltab, plan, seg_mask, av, pv, best, ynode, offset, marks, todo, stack):
    """Mark the words of the best analysis found by `_lattice_chart`, choosing among equal options
    as `viterbi._best_option` does: a table (in trie order) before the base, a whole list before
    a split, the first split within the tolerance."""
    n_levels = plan[0]
    seg_level = plan[5]
    width = av.shape[2] - 1
    top = n_levels - 1
    here = PLAN_HEAD + PLAN_LEVEL * top
    single, pair = lrho[plan[here + 2]], lrho[plan[here + 3]]
    a = av[top]
    n_todo = 0
    i = 0
    while i < n:  # the top list P_L over (i, n): its units go to todo
        target = best[i]
        tol = 1e-9 * max(1.0, abs(target))
        end = n
        if n - i > width or not _within(single + a[i, n - i], target, tol):
            for s in range(i + 1, min(n - 1, i + width) + 1):
                if _within((pair + a[i, s - i]) + best[s], target, tol):
                    end = s
                    break
        todo[n_todo, 0] = top
        todo[n_todo, 1] = i
        todo[n_todo, 2] = end
        n_todo += 1
        i = end
    while n_todo > 0:
        n_todo -= 1
        lv, i, j = todo[n_todo, 0], todo[n_todo, 1], todo[n_todo, 2]
        if lv == seg_level:
            marks[offset + i] = 1
            marks[offset + j] = 1
            continue
        ad = plan[PLAN_HEAD + PLAN_LEVEL * lv]
        target = av[lv, i, j - i]
        tol = 1e-9 * max(1.0, abs(target))
        y = ynode[i, j - i]
        if y >= 0:
            k = LS.trie_head[y]
            while k >= 0:
                if LS.tab_adaptor[k] == ad and _within(ltab[k], target, tol):
                    break
                k = LS.tab_next[k]
            if k >= 0:
                mark_words(LS, LS.tab_label[k], seg_mask, offset + i, marks, stack)
                continue
        # built from the base: the list P_lv over (i, j) of level lv - 1 units
        below = PLAN_HEAD + PLAN_LEVEL * (lv - 1)
        single, pair = lrho[plan[below + 2]], lrho[plan[below + 3]]
        p_end = pv[lv - 1, j]
        a = av[lv - 1]
        start = i
        while start < j:
            target = p_end[j - start]
            tol = 1e-9 * max(1.0, abs(target))
            end = j
            if not _within(single + a[start, j - start], target, tol):
                for s in range(start + 1, j):
                    if _within((pair + a[start, s - start]) + p_end[j - s], target, tol):
                        end = s
                        break
            todo[n_todo, 0] = lv - 1
            todo[n_todo, 1] = start
            todo[n_todo, 2] = end
            n_todo += 1
            start = end
