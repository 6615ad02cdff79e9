"""Most probable analysis of new text under a trained state (Viterbi over G').

Parsing new text never changes the state: the best derivation may reuse a
cached table (whose label is then read from the pool) or build an adapted
node from the base rules, exactly as G' allows. The chart is in log space,
so length never underflows. Results come back as a flat preorder list of
items; a segmentation can be read off inside compiled code for speed.

The item arrays of `viterbi_items` (a node of the best tree per row of items,
in preorder; tasks is its stack of items to expand). Callers size both
8 n (n_sym + 2) + 8 rows for a text of n terminals (`segment_batch`,
`AdaptorGrammar.parse`); -1 stands for none.

    field          shape      dtype  meaning
    items[:, 0]    (rows,)    int64  kind: ITEM_TERM 0, ITEM_RULE 1, ITEM_TABLE 2 (a reused table, whose label is
                                     the subtree)
    items[:, 1]    (rows,)    int64  the item's chart symbol: a user nonterminal, a pseudo symbol for the terminal
                                     item it becomes, or -1 for the terminal under a lexical rule
    items[:, 2]    (rows,)    int64  ITEM_RULE: rule id; ITEM_TABLE: table id; ITEM_TERM: terminal id
    items[:, 3]    (rows,)    int64  start of the span (a terminal position in the text)
    items[:, 4]    (rows,)    int64  end of the span (exclusive)
    items[:, 5]    (rows,)    int64  the parent item's row; -1 for the root
    tasks[:, 0:4]  (rows, 4)  int64  items still to expand: (symbol, start, end, parent row)
"""
import math

import numpy as np
from ..kernel_environment import kernel

from .analyses import log_new_table, table_weight, theta_hat
from .borrowed import borrowed
from .chart import allowed, column, mask_cell, new_viterbi_chart, span_yields, split_bounds
from .compiled import KIND_INTERMEDIATE, KIND_PSEUDO, NO_SPAN_LIMIT
from .segmentation import mark_words
from .state import OPEN

NEG_INF = -np.inf

ITEM_TERM, ITEM_RULE, ITEM_TABLE = 0, 1, 2


@kernel(cache=True)
def viterbi_chart(G, S, words, n, lrho, ltab, vchart, ynode):
    """Fill vchart[i, column(i, j), X] = best log weight (a banded chart, as in `chart`);
    return the best log weight of the start symbol.

    lrho[r] and ltab[k] are the log weights of rule r and of reusing table k in G'.

    Shapes: words (at least n,) int32; lrho (R,) float64; ltab (T,) float64, -inf for a table that is not open;
    vchart (n_max + 1, width + 2, n_sym) float64 and ynode (n_max + 1, width + 2) int32 (`new_viterbi_chart`)."""
    n_bin = G.bin_parent.shape[0]
    sym_span, sym_suffix = G.sym_span, G.sym_suffix
    width = vchart.shape[1] - 2
    span_yields(S, words, n, G.n_term, ynode)
    for length in range(1, n + 1):
        for i in range(0 if length <= width else n - length, n - length + 1):
            j = i + length
            c = column(i, j, width)
            at_end = j == n
            cell = vchart[i, c]
            cell[:] = NEG_INF
            if length == 1:
                t = words[i]
                if t >= 0:
                    for q in range(G.lex_ptr[t], G.lex_ptr[t + 1]):
                        r = G.lex_rule[q]
                        v = 0.0 if r < 0 else lrho[r]
                        X = G.lex_parent[q]
                        if v > cell[X]:
                            cell[X] = v
            else:
                if at_end:
                    lo, hi = split_bounds(i, j, n, width, G.left_span, NO_SPAN_LIMIT)
                else:
                    lo, hi = split_bounds(i, j, n, width, G.inner_left_span, G.inner_right_span)
                for s in range(lo, hi + 1):
                    left = vchart[i, s - i]
                    right = vchart[s, column(s, j, width)]
                    for q in range(n_bin):
                        lv = left[G.bin_left[q]]
                        if lv == NEG_INF:
                            continue
                        rv = right[G.bin_right[q]]
                        if rv == NEG_INF:
                            continue
                        r = G.bin_rule[q]
                        v = (0.0 if r < 0 else lrho[r]) + lv + rv
                        X = G.bin_parent[q]
                        if v > cell[X]:
                            cell[X] = v
            y = ynode[i, c]
            if y >= 0:
                k = S.trie_head[y]
                while k >= 0:
                    X = G.adaptor_nt[S.tab_adaptor[k]]
                    v = ltab[k]
                    if v > cell[X]:
                        cell[X] = v
                    k = S.tab_next[k]
            masking = mask_cell(cell, sym_span, G.suffix_syms, G.mask_span, length, at_end, NEG_INF)
            for q in range(G.un_parent.shape[0]):
                child = cell[G.un_child[q]]
                X = G.un_parent[q]
                if child == NEG_INF or (masking and not allowed(sym_span, sym_suffix, X, length, at_end)):
                    continue
                v = lrho[G.un_rule[q]] + child
                if v > cell[X]:
                    cell[X] = v
    return vchart[0, column(0, n, width), G.start]


@kernel(cache=True)
def _best_option(G, S, words, n, lrho, ltab, vchart, ynode, X, i, j):
    """Re-find the option that gave the best weight of (X, i, j): (kind, index, split).

    Shapes: as `viterbi_chart`, vchart filled by it."""
    width = vchart.shape[1] - 2
    c = column(i, j, width)
    target = vchart[i, c, X]
    tol = 1e-9 * max(1.0, abs(target))
    ad = G.sym_adaptor[X]
    if ad >= 0 and ynode[i, c] >= 0:
        k = S.trie_head[ynode[i, c]]
        while k >= 0:
            if S.tab_adaptor[k] == ad and abs(ltab[k] - target) <= tol:
                return 0, k, -1
            k = S.tab_next[k]
    for p in range(G.un_ptr[X], G.un_ptr[X + 1]):
        q = G.un_by_parent[p]
        if abs(lrho[G.un_rule[q]] + vchart[i, c, G.un_child[q]] - target) <= tol:
            return 1, q, -1
    if j - i == 1 and words[i] >= 0:
        t = words[i]
        for q in range(G.lex_ptr[t], G.lex_ptr[t + 1]):
            r = G.lex_rule[q]
            if G.lex_parent[q] == X and abs((0.0 if r < 0 else lrho[r]) - target) <= tol:
                return 2, q, -1
    for q in range(G.bin_ptr[X], G.bin_ptr[X + 1]):
        r = G.bin_rule[q]
        lw = 0.0 if r < 0 else lrho[r]
        L, R = G.bin_left[q], G.bin_right[q]
        lo, hi = split_bounds(i, j, n, width, G.sym_span[L], G.sym_span[R])
        for s in range(lo, hi + 1):
            v = lw + vchart[i, s - i, L] + vchart[s, column(s, j, width), R]
            if abs(v - target) <= tol:
                return 3, q, s
    return -1, -1, -1


@kernel(cache=True)
def viterbi_items(G, S, words, n, lrho, ltab, vchart, ynode, items, tasks):
    """Trace the best parse back into items[:, (kind, sym, rule/table/terminal, i, j, parent)].

    Returns the number of items (preorder), or -1 if there is no parse.
    Intermediate and pseudo symbols are flattened away.

    Shapes: as `viterbi_chart`; items (rows, 6) int64 and tasks (rows, 4) int64 (the module docstring)."""
    width = vchart.shape[1] - 2
    if vchart[0, column(0, n, width), G.start] == NEG_INF:
        return -1
    n_items = 0
    tasks[0, 0] = G.start
    tasks[0, 1] = 0
    tasks[0, 2] = n
    tasks[0, 3] = -1
    n_tasks = 1
    while n_tasks > 0:
        n_tasks -= 1
        X, i, j, parent = tasks[n_tasks, 0], tasks[n_tasks, 1], tasks[n_tasks, 2], tasks[n_tasks, 3]
        me = n_items
        n_items += 1
        items[me, 1] = X
        items[me, 3] = i
        items[me, 4] = j
        items[me, 5] = parent
        if G.sym_kind[X] == KIND_PSEUDO:
            items[me, 0] = ITEM_TERM
            items[me, 2] = words[i]
            continue
        kind, q, s = _best_option(G, S, words, n, lrho, ltab, vchart, ynode, X, i, j)
        if kind == 0:
            items[me, 0] = ITEM_TABLE
            items[me, 2] = q
            continue
        items[me, 0] = ITEM_RULE
        if kind == 1:
            items[me, 2] = G.un_rule[q]
            n_tasks = _push(tasks, n_tasks, G.un_child[q], i, j, me)
        elif kind == 2:
            items[me, 2] = G.lex_rule[q]
            items[n_items, 0] = ITEM_TERM
            items[n_items, 1] = -1
            items[n_items, 2] = words[i]
            items[n_items, 3] = i
            items[n_items, 4] = j
            items[n_items, 5] = me
            n_items += 1
        else:
            # children are found right to left, and pushed so: the leftmost pops first
            items[me, 2] = G.bin_rule[q]
            n_tasks = _push(tasks, n_tasks, G.bin_right[q], s, j, me)
            cur = G.bin_left[q]
            end = s
            while G.sym_kind[cur] == KIND_INTERMEDIATE:
                q2 = G.sym_bin[cur]
                L2, R2 = G.bin_left[q2], G.bin_right[q2]
                target = vchart[i, end - i, cur]  # an intermediate is a left child: in the band
                tol = 1e-9 * max(1.0, abs(target))
                s2 = -1
                for s3 in range(max(i + 1, end - G.sym_span[R2]), min(end - 1, i + G.sym_span[L2]) + 1):
                    if abs(vchart[i, s3 - i, L2] + vchart[s3, end - s3, R2] - target) <= tol:
                        s2 = s3
                        break
                n_tasks = _push(tasks, n_tasks, R2, s2, end, me)
                cur = L2
                end = s2
            n_tasks = _push(tasks, n_tasks, cur, i, end, me)
    return n_items


@kernel(cache=True, inline="always")
def _push(tasks, n_tasks, sym, i, j, parent):
    """Push the item (sym, i, j) with its parent item on `viterbi_items`' stack; returns the new height.

    Shapes: tasks (rows, 4) int64."""
    tasks[n_tasks, 0] = sym
    tasks[n_tasks, 1] = i
    tasks[n_tasks, 2] = j
    tasks[n_tasks, 3] = parent
    return n_tasks + 1


@kernel(cache=True)
def log_rho(G, S, lrho, collapsed):
    """log theta' of every rule under the full trained state.

    Shapes: lrho (R,) float64, written."""
    for r in range(lrho.shape[0]):
        lw = math.log(theta_hat(G, S, r, collapsed))
        ad = G.sym_adaptor[G.rule_parent[r]]
        if ad >= 0:
            lw += log_new_table(S, ad)
        lrho[r] = lw


@kernel(cache=True)
def log_table_weights(S, ltab):
    """log omega of every open table of an MCMC state (the cache weights of its G').

    Shapes: ltab (T,) float64, written; -inf for a table that is not OPEN."""
    for k in range(ltab.shape[0]):
        ltab[k] = math.log(table_weight(S, k)) if S.tab_state[k] == OPEN else -np.inf


@kernel(cache=True)
def segment_batch(G, S, words, ptr, lrho, ltab, seg_mask, marks, scores):
    """Most probable segmentation of many texts in one call.

    marks gets one slot per terminal plus one per text (as corpus_marks);
    scores[d] is the best log weight of text d (-inf: no parse, marks left 0).

    Shapes: words (n_terminals,) int32; ptr (n_texts + 1,) int64, text d is words[ptr[d]:ptr[d+1]]; lrho (R,)
    float64 (`log_rho`); ltab (T,) float64 (`log_table_weights`); seg_mask (n_sym,) uint8
    (`CompiledGrammar.symbol_mask`); marks (n_terminals + n_texts,) uint8, written where 1; scores (n_texts,)
    float64, written."""
    G, S = borrowed((G, S))
    max_n = 1
    for d in range(ptr.shape[0] - 1):
        max_n = max(max_n, ptr[d + 1] - ptr[d])
    vchart, ynode = new_viterbi_chart(G, max_n)
    items = np.empty((8 * max_n * (G.n_sym + 2) + 8, 6), np.int64)
    tasks = np.empty((8 * max_n * (G.n_sym + 2) + 8, 4), np.int64)
    stack = np.empty(2 * S.node_kind.shape[0] + 16, np.int64)
    for d in range(ptr.shape[0] - 1):
        n = ptr[d + 1] - ptr[d]
        offset = ptr[d] + d
        w = words[ptr[d]:ptr[d + 1]]
        scores[d] = viterbi_chart(G, S, w, n, lrho, ltab, vchart, ynode)
        if scores[d] == NEG_INF:
            continue
        n_items = viterbi_items(G, S, w, n, lrho, ltab, vchart, ynode, items, tasks)
        marks[offset] = 1
        marks[offset + n] = 1
        covered_to = 0
        for it in range(n_items):
            i = items[it, 3]
            if i < covered_to:  # inside a word already marked
                continue
            kind = items[it, 0]
            j = items[it, 4]
            if kind == ITEM_TERM or seg_mask[items[it, 1]]:
                marks[offset + i] = 1
                marks[offset + j] = 1
                covered_to = j
            elif kind == ITEM_TABLE:
                mark_words(S, S.tab_label[items[it, 2]], seg_mask, offset + i, marks, stack)
                covered_to = j
    return 0
